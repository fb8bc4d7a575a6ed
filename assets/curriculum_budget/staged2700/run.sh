#!/usr/bin/env bash
# The staged grow against the one-step grow at 45 minutes (PLAN.md): the two arms side by side, one
# thread each, then zero-shot scores and the val loss split, as at 5 minutes (../staged/run.sh).
#   bash assets/curriculum_budget/staged2700/run.sh <out folder> 1337
set -euo pipefail
out=$1
shift
mkdir -p "$out"
here=${HERE:-assets/curriculum_budget/staged2700}  # where the results are copied
while true; do echo "$(date +%T) $(cut -d' ' -f1 /proc/loadavg)"; sleep 60; done \
    > "$out/loadavg.txt" &
load=$!
export OMP_NUM_THREADS=1 WANDB_MODE=disabled
PY=${PY:-.venv/bin/python}
for s in "$@"; do
    $PY train.py config/demo_curriculum_cpu.py --time_budget=2700 --seed="$s" \
        --out_dir="$out/cur4096_s$s" > "$out/cur4096_s$s.log" 2>&1 &
    one=$!
    $PY train.py config/demo_staged_cpu.py --time_budget=2700 --seed="$s" \
        --out_dir="$out/staged_s$s" > "$out/staged_s$s.log" 2>&1 &
    wait $one $!
done
kill $load
ckpts=$(for s in "$@"; do echo "$out"/*_s"$s"/ckpt.pt; done)
$PY dev/zero_shot.py $ckpts >> "$out/zero_shot.jsonl" &
$PY dev/val_loss_split.py $ckpts >> "$out/val_loss_split.jsonl" &
wait
$PY dev/curriculum_budget_summary.py "$out" staged,cur4096 zero_shot.jsonl > "$out/summary.txt"
for f in "$out"/*.log "$out"/loadavg.txt "$out"/summary.txt "$out"/*.jsonl; do
    cp "$f" "$here/"
done
for d in "$out"/*_s*/; do cp "$d/metrics.jsonl" "$here/$(basename "$d").jsonl"; done
