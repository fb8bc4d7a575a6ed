#!/usr/bin/env bash
# PLAN.md: more pre-training seeds of the 45-minute comparison (../2700s), the two arms side by
# side, one thread each, then both tasks fine-tuned at the rates the first three seeds chose on
# dev, each arm on its own core, into a run cache; the raw files are copied here.
#   bash assets/curriculum_budget/2700s_more/run.sh <runs folder> 1340 1341
set -euo pipefail
runs=$1
shift
here=assets/curriculum_budget/2700s_more
mkdir -p "$runs"
while true; do echo "$(date +%T) $(cut -d' ' -f1 /proc/loadavg)"; sleep 60; done \
    > "$runs/loadavg.txt" &
load=$!
bash dev/curriculum_budget.sh "$runs" 2700 "$@"
kill $load
export OMP_NUM_THREADS=1 WANDB_MODE=disabled
PY=${PY:-.venv/bin/python}
ckpts() { local arm=$1 s list=; shift; for s in "$@"; do list+=,$runs/${arm}_s$s/ckpt.pt; done
          echo "${list#,}"; }
common=(--pooling=mean --seeds=0,1,2 --zero_shot_tokens=0 --cache_dir="$runs/ft_cache")
finetune() {  # <task name> <arm> <rate> <task flags>...
    local name=$1 arm=$2 rate=$3
    shift 3
    $PY finetune.py --init_from="$(ckpts "$arm" $seeds)" "$@" "${common[@]}" \
        --learning_rate="$rate" --out="$runs/${name}_$arm.json" > "$runs/${name}_runs_$arm.log" 2>&1
}
seeds="$*"
lines=(--task=shakespeare_lines --max_train_samples=5000 --epochs=2)
works=(--task=shakespeare_works --max_train_samples=300 --epochs=10)
finetune lines curriculum 1e-3 "${lines[@]}" &
finetune lines full 0.0003333333333333333 "${lines[@]}" &
wait
finetune works10 curriculum 3e-3 "${works[@]}" &
finetune works10 full 3e-3 "${works[@]}" &
wait
for f in "$runs"/*.log "$runs"/loadavg.txt "$runs"/*.json "$runs"/zero_shot.jsonl; do
    cp "$f" "$here/"
done
for d in "$runs"/*_s*/; do cp "$d/metrics.jsonl" "$here/$(basename "$d").jsonl"; done
