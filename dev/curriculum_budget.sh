#!/usr/bin/env bash
# The vocabulary curriculum against the full vocabulary at equal wall-clock: for each seed, the two
# arms side by side, one thread each on the 2 cores (so they share the machine's load), then the
# zero-shot scores of every checkpoint on the held-out text.
#   bash dev/curriculum_budget.sh <folder> <seconds> <seed>...
#   bash dev/curriculum_budget.sh assets/curriculum_budget/300s 300 1337 1338 1339
set -euo pipefail
out=$1 budget=$2
shift 2
mkdir -p "$out"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled
PY=${PY:-.venv/bin/python}
for s in "$@"; do
    $PY train.py config/demo_curriculum_cpu.py --time_budget="$budget" --seed="$s" \
        --out_dir="$out/curriculum_s$s" > "$out/curriculum_s$s.log" 2>&1 &
    $PY train.py config/demo_cpu.py --time_budget="$budget" --eval_interval=250 --seed="$s" \
        --out_dir="$out/full_s$s" > "$out/full_s$s.log" 2>&1 &
    wait
done
$PY dev/zero_shot.py "$out"/*_s*/ckpt.pt > "$out/zero_shot.jsonl"
