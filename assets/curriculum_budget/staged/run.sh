#!/usr/bin/env bash
# The staged grow against the one-step grow at 5 minutes (PLAN.md): for each seed the two arms side
# by side, one thread each, then zero-shot scores and the paired summary.
#   bash assets/curriculum_budget/staged/run.sh <out folder> 1337 1338 1339
set -euo pipefail
out=$1
shift
here=assets/curriculum_budget/staged
mkdir -p "$out"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled
PY=${PY:-.venv/bin/python}
for s in "$@"; do
    $PY train.py config/demo_curriculum_cpu.py --seed="$s" --out_dir="$out/cur4096_s$s" \
        > "$out/cur4096_s$s.log" 2>&1 &
    $PY train.py config/demo_curriculum_cpu.py --seed="$s" --out_dir="$out/staged_s$s" \
        --schedule=$here/staged.json > "$out/staged_s$s.log" 2>&1 &
    wait
done
# this call's checkpoints, scored on the two cores and appended (a later call adds its seeds)
ckpts=$(for s in "$@"; do echo "$out"/*_s"$s"/ckpt.pt; done)
$PY dev/zero_shot.py $ckpts >> "$out/zero_shot.jsonl" &
$PY dev/val_loss_split.py $ckpts >> "$out/val_loss_split.jsonl" &
wait
$PY dev/curriculum_budget_summary.py "$out" staged,cur4096 zero_shot.jsonl > "$out/summary.txt"
