#!/usr/bin/env bash
# PLAN.md: make demo's staged config at batch 8 (B8) beside it as it is (A), 300 s each, one pair
# per round, one thread each.
#   bash assets/curriculum_budget/batch_300s/pretrain.sh <folder> [seed...]
set -euo pipefail
out=$1
shift
mkdir -p "$out"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled
PY=${PY:-.venv/bin/python}
seeds=${*:-1337 1338 1339}
for s in $seeds; do
    $PY train.py config/demo_staged_cpu.py --batch_size=8 --eval_iters=20 --eval_interval=500 \
        --seed="$s" --out_dir="$out/b8_s$s" > "$out/b8_s$s.log" 2>&1 &
    b8=$!
    $PY train.py config/demo_staged_cpu.py --seed="$s" --out_dir="$out/a_s$s" \
        > "$out/a_s$s.log" 2>&1
    wait "$b8"
done
