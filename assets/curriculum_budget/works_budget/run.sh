#!/usr/bin/env bash
# PLAN.md: each budget's two checkpoints fine-tuned on shakespeare_works as one arm against random
# weights, exactly as ../untied_300s/run.sh, into that study's run cache (/work/runs/u300ft/
# cache_works here), so its 300 s staged runs and the random-weights runs are read back.
#   bash assets/curriculum_budget/works_budget/run.sh <runs> <300 s runs> <out> <cache> <arm>
# (arm: b600, b1200, or the amendment's b2400)
# then the readings (every run read back from the cache; it stops if any run trained):
#   bash assets/curriculum_budget/works_budget/run.sh <runs> <300 s runs> <out> <cache> readings
set -euo pipefail
case "${5:-}" in
    b600 | b1200 | b2400 | readings) ;;
    *) echo "usage: run.sh <runs> <300 s runs> <out> <cache> b600|b1200|b2400|readings" >&2
       exit 2 ;;
esac
runs=$1 runs300=$2 out=$3 cache=$4
mkdir -p "$out"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled HF_HUB_OFFLINE=1
PY=${PY:-.venv/bin/python}
seeds="1337 1338"
arm_seeds() {  # arm: its pre-training seeds (b2400: the amendment's 1337 and addendum 2's two)
    if [ "$1" = b2400 ]; then echo 1337 1338 1339; else echo "$seeds"; fi
}
ckpts() {  # arm (b300, b600, b1200, b2400): its checkpoints, comma-separated
    local s list=
    for s in $(arm_seeds "$1"); do
        if [ "$1" = b300 ]; then list+="$runs300/staged_s$s/ckpt.pt,"
        else list+="$runs/$1_s$s/ckpt.pt,"; fi
    done
    echo "${list%,}"
}
ft() {  # name, arm: the arm's checkpoints against random weights over the grid
    $PY finetune.py --init_from="$(ckpts "$2")" --baseline=scratch \
        --task=shakespeare_works --max_train_samples=300 --epochs=10 \
        --learning_rate=1e-3,3e-3,9e-3 --pooling=mean --seeds=0,1,2 --zero_shot_tokens=0 \
        --cache_dir="$cache" --out="$out/$1.json" > "$out/$1.log" 2>&1
}
if [ "$5" != readings ]; then
    ft "works_$5" "$5"
    exit 0
fi
for b in 300 600 1200 2400; do
    for s in $(arm_seeds "b$b"); do
        log=$runs/b${b}_s$s.log
        [ "$b" = 300 ] && log=$runs300/staged_s$s.log
        last=$(grep -o 'iter [0-9]*: train loss [0-9.]*, val loss [0-9.]*' "$log" | tail -n 1)
        [ -n "$last" ] || { echo "$log has no evaluation: did the run finish?" >&2; exit 1; }
        echo "b$b $s $last"
    done
done > "$out/pretrain_check.txt"
ft works_b300 b300
if grep -q 'step 100/100' "$out/works_b300.log"; then
    echo "works_b300 trained runs: $cache is not the 300 s study's cache" >&2
    exit 1
fi
# each arm at its dev-chosen rate, as finetune.py printed it: dev and test, random weights' dev and
# test at their own rate, and the paired difference
for b in 300 600 1200 2400; do
    grep -A3 'test accuracy on' "$out/works_b$b.log"
done > "$out/readings.txt"
$PY dev/finetune_summary.py "$out"/works_b{300,600,1200,2400}.json >> "$out/readings.txt"
