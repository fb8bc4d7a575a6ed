#!/usr/bin/env bash
# PLAN.md: B8 and A fine-tuned on shakespeare_works against random weights, two processes, into the
# run cache of ../untied_300s/ (/work/runs/u300ft/cache_works here), which holds random weights'
# runs at these settings:
#   bash assets/curriculum_budget/batch_300s/run.sh <runs> <out> <cache>
# then the readings, every fine-tuning run read back from the cache:
#   bash assets/curriculum_budget/batch_300s/run.sh <runs> <out> <cache> readings
# PLAN.md's addendum: both arms on shakespeare_lines at 3.3e-4 into their own cache (two
# processes), then B8 - A read back from it:
#   bash assets/curriculum_budget/batch_300s/run.sh <runs> <out> <lines cache> lines
#   bash assets/curriculum_budget/batch_300s/run.sh <runs> <out> <lines cache> lines_readings
set -euo pipefail
export runs=$1 out=$2 cache=$3
mkdir -p "$out"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled HF_HUB_OFFLINE=1 PY=${PY:-.venv/bin/python}
export seeds="1337 1338 1339"
ckpts() {  # arm (b8, a): its checkpoints, comma-separated, in the order of the seeds
    local s list=
    for s in $seeds; do list+="$runs/${1}_s$s/ckpt.pt,"; done
    echo "${list%,}"
}
ft() {  # name, arm, baseline ('scratch', 'none' or an arm)
    local base=$3 task=(--task=shakespeare_works --max_train_samples=300 --epochs=10)
    [ "${LINES:-}" = 1 ] && task=(--task=shakespeare_lines --max_train_samples=5000 --epochs=2)
    [ "$base" = scratch ] || [ "$base" = none ] || base=$(ckpts "$base")
    $PY finetune.py --init_from="$(ckpts "$2")" --baseline="$base" "${task[@]}" \
        --learning_rate="${LR:-1e-3,3e-3,9e-3}" --pooling=mean --seeds=0,1,2 --zero_shot_tokens=0 \
        --cache_dir="$cache" --out="$out/$1.json" > "$out/$1.log" 2>&1
}
export -f ckpts ft
if [ "${4:-}" = lines ]; then
    export LINES=1 LR=3.3e-4
    printf '%s\n' "lines_b8 b8 none" "lines_a a none" | xargs -P 2 -I{} bash -c 'ft {}'
    exit 0
fi
if [ "${4:-}" = lines_readings ]; then
    LINES=1 LR=3.3e-4 ft lines_b8_vs_a b8 a
    if grep -q 'step [0-9]*/[0-9]*: loss' "$out/lines_b8_vs_a.log"; then
        echo "lines_b8_vs_a trained runs: $cache is not the cache of the lines runs" >&2
        exit 1
    fi
    { grep -A3 'test accuracy on' "$out/lines_b8_vs_a.log"
      $PY dev/finetune_summary.py "$out/lines_b8_vs_a.json"; } > "$out/readings_lines.txt"
    exit 0
fi
if [ "${4:-}" != readings ]; then
    printf '%s\n' "works_b8 b8 scratch" "works_a a scratch" | xargs -P 2 -I{} bash -c 'ft {}'
    exit 0
fi
# each run's last evaluation and tokens; then val loss of both arms on A's evaluation sample
for s in $seeds; do
    for a in b8 a; do
        last=$(grep -o 'iter [0-9]*: train loss [0-9.]*, val loss [0-9.]*' "$runs/${a}_s$s.log" \
            | tail -n 1)
        [ -n "$last" ] || { echo "$runs/${a}_s$s.log has no evaluation" >&2; exit 1; }
        echo "$a $s $last"
    done
done > "$out/pretrain_check.txt"
# (and, as a check added after the first read, on B8's own sample)
for sample in a b8; do
    for s in $seeds; do
        $PY dev/val_loss_split.py --sample_of="$runs/${sample}_s$s/ckpt.pt" \
            "$runs/b8_s$s/ckpt.pt" "$runs/a_s$s/ckpt.pt"
    done > "$out/val_loss_split${sample#a}.jsonl"
done
ft works_b8 b8 scratch
ft works_a a scratch
ft works_b8_vs_a b8 a
LR=3e-3 ft works_b8_vs_a_3e-3 b8 a
if grep -q 'step 100/100' "$out"/works_*.log; then
    echo "a readings run trained: $cache is not the cache of the fine-tuning runs" >&2
    exit 1
fi
for f in works_b8 works_a works_b8_vs_a works_b8_vs_a_3e-3; do
    echo "== $f"
    grep -A3 'test accuracy on' "$out/$f.log"
done > "$out/readings.txt"
$PY dev/finetune_summary.py "$out"/works_{b8,a,b8_vs_a,b8_vs_a_3e-3}.json >> "$out/readings.txt"
# PLAN.md rule 2: val loss on A's sample, ids train never holds folded, B8 - A per seed
$PY - "$out/val_loss_split.jsonl" "$out/val_loss_splitb8.jsonl" >> "$out/readings.txt" <<'PY'
import json
import sys

import numpy as np

sys.path.insert(0, 'dev')
from domain_arms_summary import t_interval  # noqa: E402

for path in sys.argv[1:]:
    rows = [json.loads(line) for line in open(path)]
    b8, a = rows[0::2], rows[1::2]
    for key in ('folded', 'val_loss'):
        d = np.array([x[key] - y[key] for x, y in zip(b8, a)])
        print(f'{path}: val loss ({key}) B8 - A per seed', np.round(d, 4).tolist(),
              'mean and t-interval', t_interval(d))
PY
