#!/usr/bin/env bash
# PLAN.md: the 5-minute checkpoints. For seeds 1337-1339 the demo's staged config beside the full
# vocabulary, one thread each; then staged seeds 1340 and 1341 side by side.
#   bash assets/curriculum_budget/works5/pretrain.sh <folder>
set -euo pipefail
out=$1
mkdir -p "$out"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled
PY=${PY:-.venv/bin/python}
staged() { $PY train.py config/demo_staged_cpu.py --time_budget=300 --seed="$1" \
    --out_dir="$out/staged_s$1" > "$out/staged_s$1.log" 2>&1; }
# PLAN_wd.md: W, the demo's staged config with a decoupled weight decay of 2e-3 per step, two at a
# time; seed 1342 only keeps the load of seed 1341's round.
#   bash assets/curriculum_budget/works5/pretrain.sh <folder> wd
if [ "${2:-}" = wd ]; then
    wd() { $PY train.py config/demo_staged_cpu.py --time_budget=300 --seed="$1" \
        --weight_decay_convention=decoupled --weight_decay=2e-3 \
        --out_dir="$out/wd_s$1" > "$out/wd_s$1.log" 2>&1; }
    for pair in "1337 1338" "1339 1340" "1341 1342"; do
        for s in $pair; do wd "$s" & done
        wait
    done
    exit 0
fi
for s in 1337 1338 1339; do
    staged "$s" &
    $PY train.py config/demo_cpu.py --time_budget=300 --eval_interval=250 --seed="$s" \
        --out_dir="$out/full_s$s" > "$out/full_s$s.log" 2>&1 &
    wait
done
staged 1340 & staged 1341 &
wait
