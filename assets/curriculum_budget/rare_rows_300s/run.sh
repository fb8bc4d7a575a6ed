#!/usr/bin/env bash
# PLAN.md: R (the rare group's rows fresh) and K (the core's rows fresh), made from untied_300s/'s
# five tied checkpoints, fine-tuned on shakespeare_works at 3e-3, two processes, into that study's
# run cache (which holds A's and random weights' runs at these settings); then every pairing read
# back from it:
#   bash assets/curriculum_budget/rare_rows_300s/run.sh <untied_300s runs> <out> <cache>
#   bash assets/curriculum_budget/rare_rows_300s/run.sh <untied_300s runs> <out> <cache> readings
set -euo pipefail
export runs=$1 out=$2 cache=$3
mkdir -p "$out"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled HF_HUB_OFFLINE=1 PY=${PY:-.venv/bin/python}
export seeds="1337 1338 1339 1340 1341"
ckpts() {  # file (ckpt.pt, rare.pt, core.pt): the five checkpoints, comma-separated
    local s list=
    for s in $seeds; do list+="$runs/staged_s$s/$1,"; done
    echo "${list%,}"
}
ft() {  # name, file, baseline ('scratch' or a file)
    local base=$3
    [ "$base" = scratch ] || base=$(ckpts "$base")
    $PY finetune.py --init_from="$(ckpts "$2")" --baseline="$base" --task=shakespeare_works \
        --max_train_samples=300 --epochs=10 --learning_rate=3e-3 --pooling=mean --seeds=0,1,2 \
        --zero_shot_tokens=0 --cache_dir="$cache" --out="$out/$1.json" > "$out/$1.log" 2>&1
}
export -f ckpts ft
fresh_body() {  # source file, name: the source checkpoints with the body drawn afresh (draw 0) as
    # <name>.pt, fine-tuned in two processes, then read back whole against random weights
    local s a b
    for s in $seeds; do
        $PY dev/swap_parts.py "$runs/staged_s$s/$1" body 0 "$runs/staged_s$s/$2.pt"
    done > "$out/swap_check_$2.txt"
    seeds="1337 1338 1339" ft "works_$2_a" "$2.pt" scratch & a=$!
    seeds="1340 1341" ft "works_$2_b" "$2.pt" scratch & b=$!
    wait "$a"
    wait "$b"
    ft "works_$2" "$2.pt" scratch
}
# the addendum: P, the rare rows alone (K's checkpoints with the body drawn afresh), two processes,
# then read against random weights and K
#   bash assets/curriculum_budget/rare_rows_300s/run.sh <untied_300s runs> <out> <cache> rare_only
if [ "${4:-}" = rare_only ]; then
    fresh_body core.pt rare_only
    ft works_rare_only_vs_core rare_only.pt core.pt
    { for f in works_rare_only works_rare_only_vs_core; do
        echo "== $f"
        grep -A3 'test accuracy on' "$out/$f.log"
      done
      $PY dev/finetune_summary.py "$out"/works_rare_only{,_vs_core}.json
    } > "$out/readings_rare_only.txt"
    exit 0
fi
# addendum 2: B, every row pre-trained and the layers fresh (draw 0), two processes, then the 2 x 2
#   bash assets/curriculum_budget/rare_rows_300s/run.sh <untied_300s runs> <out> <cache> rows_only
if [ "${4:-}" = rows_only ]; then
    fresh_body ckpt.pt rows_only
    ft works_rows_only_vs_a rows_only.pt ckpt.pt
    ft works_rare_only_vs_rows_only rare_only.pt rows_only.pt
    { for f in works_rows_only works_rows_only_vs_a works_rare_only_vs_rows_only; do
        echo "== $f"
        grep -A3 'test accuracy on' "$out/$f.log"
      done
      $PY dev/finetune_summary.py \
          "$out"/works_{rows_only,rows_only_vs_a,rare_only_vs_rows_only}.json
      $PY assets/curriculum_budget/rare_rows_300s/factorial.py "$out"
    } > "$out/readings_rows_only.txt"
    exit 0
fi
if [ "${4:-}" != readings ]; then
    for s in $seeds; do
        for part in rare core; do
            $PY dev/swap_parts.py "$runs/staged_s$s/ckpt.pt" "${part}_rows" 0 \
                "$runs/staged_s$s/$part.pt" data/shakespeare/vocab_4096.pt
        done
    done > "$out/swap_check.txt"
    printf '%s\n' "works_rare rare.pt scratch" "works_core core.pt scratch" \
        | xargs -P 2 -I{} bash -c 'ft {}'
    exit 0
fi
ft works_rare_vs_a rare.pt ckpt.pt
ft works_core_vs_a core.pt ckpt.pt
ft works_a ckpt.pt scratch
if grep -q 'step 100/100' "$out"/works_*_vs_a.log "$out/works_a.log"; then
    echo "a readings run trained: $cache is not the cache of the fine-tuning runs" >&2
    exit 1
fi
for f in works_rare works_core works_a works_rare_vs_a works_core_vs_a; do
    echo "== $f"
    grep -A3 'test accuracy on' "$out/$f.log"
done > "$out/readings.txt"
$PY dev/finetune_summary.py "$out"/works_{rare,core,a,rare_vs_a,core_vs_a}.json \
    >> "$out/readings.txt"
