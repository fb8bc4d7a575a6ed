#!/usr/bin/env bash
# PLAN_finetune.md: the four 45-minute checkpoints of this folder's pairs (staged and cur4096, seeds
# 1340 and 1341) fine-tuned on shakespeare_lines and shakespeare_works under docs/finetune.md's
# protocol, each arm on its own core into a run cache, then staged against cur4096, paired by seed,
# read back from the cache; the raw files are copied here.
#   bash assets/curriculum_budget/staged2700_more/finetune.sh <pre-training folder> <out folder>
set -euo pipefail
runs=$1 out=$2
here=assets/curriculum_budget/staged2700_more
mkdir -p "$out"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled HF_HUB_OFFLINE=1
PY=${PY:-.venv/bin/python}
while true; do echo "$(date +%T) $(cut -d' ' -f1 /proc/loadavg)"; sleep 60; done \
    > "$out/loadavg_ft.txt" &
load=$!
trap 'kill $load' EXIT
ckpts() { echo "$runs/${1}_s1340/ckpt.pt,$runs/${1}_s1341/ckpt.pt"; }
ft() {  # name, task, arm, extra flags...
    local name=$1 task=$2 arm=$3
    shift 3
    local settings=(--task=shakespeare_works --max_train_samples=300 --epochs=10)
    [ "$task" = lines ] && settings=(--task=shakespeare_lines --max_train_samples=5000 --epochs=2)
    $PY finetune.py --init_from="$(ckpts "$arm")" "${settings[@]}" --pooling=mean \
        --learning_rate=1e-3,3e-3 --seeds=0,1,2 --zero_shot_tokens=0 \
        --cache_dir="$out/cache_$task" --out="$out/$name.json" "$@" > "$out/$name.log" 2>&1
}
for task in lines works; do  # a bare wait would wait for the load logger too
    ft ${task}_staged $task staged & one=$!
    ft ${task}_cur4096 $task cur4096 & two=$!
    wait $one
    wait $two
done
# the paired reading: every run comes back from the caches, each arm at the rate it chose on dev
for task in lines works; do
    ft ${task}_staged_vs_cur4096 $task staged --baseline="$(ckpts cur4096)"
done
for f in "$out"/*.log "$out"/*.json "$out"/loadavg_ft.txt; do cp "$f" "$here/"; done
