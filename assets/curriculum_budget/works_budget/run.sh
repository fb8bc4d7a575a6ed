#!/usr/bin/env bash
# PLAN.md: each budget's two checkpoints fine-tuned on shakespeare_works as one arm against random
# weights, exactly as ../untied_300s/run.sh, into that study's run cache (so its 300 s staged runs
# and the random-weights runs are read back, not run again).
#   bash assets/curriculum_budget/works_budget/run.sh <runs> <300 s runs> <out> <cache> b600|b1200
# then the readings (every run read back from the cache):
#   bash assets/curriculum_budget/works_budget/run.sh <runs> <300 s runs> <out> <cache> readings
set -euo pipefail
runs=$1 runs300=$2 out=$3 cache=$4
mkdir -p "$out"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled HF_HUB_OFFLINE=1
PY=${PY:-.venv/bin/python}
seeds="1337 1338"
ckpts() {  # arm (b300, b600, b1200): its checkpoints, comma-separated
    local s list=
    for s in $seeds; do
        if [ "$1" = b300 ]; then list+="$runs300/staged_s$s/ckpt.pt,"
        else list+="$runs/$1_s$s/ckpt.pt,"; fi
    done
    echo "${list%,}"
}
ft() {  # name, arm, baseline ('scratch' or an arm), rates
    local base=$3
    [ "$base" = scratch ] || base=$(ckpts "$base")
    $PY finetune.py --init_from="$(ckpts "$2")" --baseline="$base" \
        --task=shakespeare_works --max_train_samples=300 --epochs=10 \
        --learning_rate="$4" --pooling=mean --seeds=0,1,2 --zero_shot_tokens=0 \
        --cache_dir="$cache" --out="$out/$1.json" > "$out/$1.log" 2>&1
}
grid=1e-3,3e-3,9e-3
if [ "$5" != readings ]; then
    ft "works_$5" "$5" scratch "$grid"
    exit 0
fi
for b in 300 600 1200; do
    for s in $seeds; do
        log=$runs/b${b}_s$s.log
        [ "$b" = 300 ] && log=$runs300/staged_s$s.log
        echo "b$b $s $(grep -o 'iter [0-9]*: train loss [0-9.]*, val loss [0-9.]*' "$log" \
            | tail -n 1)"
    done
done > "$out/pretrain_check.txt"
ft works_b300 b300 scratch "$grid"
$PY dev/finetune_summary.py "$out"/works_b{300,600,1200}.json > "$out/readings.txt"
