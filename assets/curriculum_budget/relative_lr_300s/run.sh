#!/usr/bin/env bash
# PLAN.md: the five tied 300 s checkpoints of untied_300s/ fine-tuned on shakespeare_works with
# --relative_lr, grid 1e-3, 3e-3, against random weights under the same option, two processes into
# one run cache; then the whole comparison read back from it, and paired with the plain runs:
#   bash assets/curriculum_budget/relative_lr_300s/run.sh <untied_300s runs> <out> <cache>
set -euo pipefail
runs=$1 out=$2 cache=$3
here=assets/curriculum_budget/relative_lr_300s
mkdir -p "$out"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled HF_HUB_OFFLINE=1
PY=${PY:-.venv/bin/python}
export runs out cache PY
ckpts() {  # seeds: their checkpoints, comma-separated
    local s list=
    for s in "$@"; do list+="$runs/staged_s$s/ckpt.pt,"; done
    echo "${list%,}"
}
ft() {  # name, baseline, rates, seeds...
    local name=$1 base=$2 rates=$3
    shift 3
    $PY finetune.py --init_from="$(ckpts "$@")" --baseline="$base" --task=shakespeare_works \
        --max_train_samples=300 --epochs=10 --learning_rate="$rates" --pooling=mean \
        --seeds=0,1,2 --relative_lr="${relative-True}" --zero_shot_tokens=0 --cache_dir="$cache" \
        --out="$out/$name.json" > "$out/$name.log" 2>&1
}
export -f ckpts ft
# the addendum: the plain protocol at 1e-3, into the untied_300s cache (two processes), read back
#   bash assets/curriculum_budget/relative_lr_300s/run.sh <untied_300s runs> <out> <cache> \
#       plain_1e-3 <untied_300s cache>
if [ "${4:-}" = plain_1e-3 ]; then
    plain=(env relative=False cache="$5")
    "${plain[@]}" bash -c 'ft works_plain_1e-3_a scratch 1e-3 1337 1338 1339' & a=$!
    "${plain[@]}" bash -c 'ft works_plain_1e-3_b none 1e-3 1340 1341' & b=$!
    wait "$a"
    wait "$b"
    "${plain[@]}" bash -c 'ft works_plain_1e-3 scratch 1e-3 1337 1338 1339 1340 1341'
    ft works_rel_1e-3 scratch 1e-3 1337 1338 1339 1340 1341
    $PY $here/readings.py "$out"/works_rel_1e-3.json "$out"/works_plain_1e-3.json \
        > "$out/readings_1e-3.txt"
    exit 0
fi
# addendum 2: 1.7e-3 in both protocols (relative into <cache>, plain into the untied_300s cache),
# one process each, then each protocol's grid with it read back
#   bash assets/curriculum_budget/relative_lr_300s/run.sh <untied_300s runs> <out> <cache> mid \
#       <untied_300s cache>
if [ "${4:-}" = mid ]; then
    ft works_rel_mid scratch 1.7e-3 1337 1338 1339 1340 1341 & a=$!
    env relative=False cache="$5" bash -c \
        'ft works_plain_mid scratch 1.7e-3 1337 1338 1339 1340 1341' & b=$!
    wait "$a"
    wait "$b"
    # 1e-3 / 3, the extension the first call ran, exactly, so that its runs read back
    ft works_rel_grid scratch 0.0003333333333333333,1e-3,1.7e-3,3e-3 1337 1338 1339 1340 1341
    env relative=False cache="$5" bash -c \
        'ft works_plain_grid scratch 1e-3,1.7e-3,3e-3,9e-3 1337 1338 1339 1340 1341'
    $PY $here/readings.py "$out"/works_{rel_grid,rel_mid,plain_grid}.json > "$out/readings_mid.txt"
    $PY $here/readings.py "$out"/works_{rel_mid,plain_mid}.json >> "$out/readings_mid.txt"
    exit 0
fi
# the fit: the relative runs of the checkpoints made again into a fresh cache, for their training
# logs (a second call of the default mode reads the runs back and keeps no loss), then ratios.py
#   bash assets/curriculum_budget/relative_lr_300s/run.sh <untied_300s runs> <out> <cache> fit
if [ "${4:-}" = fit ]; then
    export cache=$out/cache_fit
    ft works_fit_a none 1e-3,3e-3 1337 1338 1339 & a=$!
    ft works_fit_b none 1e-3,3e-3 1340 1341 & b=$!
    wait "$a"
    wait "$b"
    $PY $here/ratios.py "$runs" "$out"/works_fit_{a,b}.log \
        assets/curriculum_budget/untied_300s/works_staged.log > "$out/ratios.txt"
    exit 0
fi
ft works_rel_a scratch 1e-3,3e-3 1337 1338 1339 & a=$!
ft works_rel_b none 1e-3,3e-3 1340 1341 & b=$!
wait "$a"
wait "$b"
ft works_rel scratch 1e-3,3e-3 1337 1338 1339 1340 1341
ft works_rel_3e-3 scratch 3e-3 1337 1338 1339 1340 1341  # read back: the plain runs' rate
{ grep -A3 'test accuracy on' "$out/works_rel.log"
  $PY dev/finetune_summary.py "$out/works_rel.json" "$out/works_rel_3e-3.json"
  $PY $here/readings.py "$out"/works_rel{,_3e-3}.json \
      assets/curriculum_budget/rare_rows_300s/works_a.json
} > "$out/readings.txt"
