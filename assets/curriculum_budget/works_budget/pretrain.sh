#!/usr/bin/env bash
# PLAN.md: make demo's staged config at 600 s and 1,200 s, seeds 1337 and 1338, one thread each; the
# 1,200 s runs on one core, the 600 s runs on the other.
#   bash assets/curriculum_budget/works_budget/pretrain.sh <folder>
# and the amendment's one-seed fourth budget (PLAN.md):
#   bash assets/curriculum_budget/works_budget/pretrain.sh <folder> b2400
# and addendum 2's two more seeds at 2,400 s, side by side:
#   bash assets/curriculum_budget/works_budget/pretrain.sh <folder> b2400_more
set -euo pipefail
out=$1
mkdir -p "$out"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled
PY=${PY:-.venv/bin/python}
arm() {  # budget in seconds, seed
    $PY train.py config/demo_staged_cpu.py --time_budget="$1" --seed="$2" \
        --out_dir="$out/b$1_s$2" > "$out/b$1_s$2.log" 2>&1
}
if [ "${2:-}" = b2400 ]; then
    arm 2400 1337
    exit 0
fi
if [ "${2:-}" = b2400_more ]; then
    arm 2400 1338 &
    arm 2400 1339
    wait
    exit 0
fi
(arm 1200 1337; arm 1200 1338) &
long=$!
arm 600 1337
arm 600 1338
wait "$long"
