#!/usr/bin/env bash
# PLAN.md: the 5-minute checkpoints. For seeds 1337-1339 the demo's staged config beside the full
# vocabulary, one thread each; then staged seeds 1340 and 1341 side by side.
#   bash assets/curriculum_budget/works5/pretrain.sh <folder>
set -euo pipefail
out=$1
mkdir -p "$out"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled
PY=${PY:-.venv/bin/python}
staged() {  # seed, folder name, settings...
    local s=$1 name=$2; shift 2
    $PY train.py config/demo_staged_cpu.py --time_budget=300 --seed="$s" "$@" \
        --out_dir="$out/${name}_s$s" > "$out/${name}_s$s.log" 2>&1
}
# PLAN_wd.md: W, the demo's staged config with a decoupled weight decay of 2e-3 per step, beside
# the staged config as it is (A'), one seed of each at a time, so the pair shares the load
#   bash assets/curriculum_budget/works5/pretrain.sh <folder> wd
if [ "${2:-}" = wd ]; then
    for s in 1337 1338 1339 1340 1341; do
        staged "$s" wd --weight_decay_convention=decoupled --weight_decay=2e-3 &
        staged "$s" staged_beside_wd &
        wait
    done
    exit 0
fi
for s in 1337 1338 1339; do
    staged "$s" staged &
    $PY train.py config/demo_cpu.py --time_budget=300 --eval_interval=250 --seed="$s" \
        --out_dir="$out/full_s$s" > "$out/full_s$s.log" 2>&1 &
    wait
done
staged 1340 staged & staged 1341 staged &
wait
