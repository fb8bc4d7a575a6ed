#!/usr/bin/env bash
# PLAN.md's addendum 3: the three 2,400 s checkpoints on shakespeare_lines against random weights,
# into a fresh cache; a second process fills seed 1339's runs and random weights' first.
#   bash assets/curriculum_budget/works_budget/lines.sh <runs> <out> <cache>
set -euo pipefail
runs=$1 out=$2 cache=$3
mkdir -p "$out"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled HF_HUB_OFFLINE=1
PY=${PY:-.venv/bin/python}
ft() {  # name, checkpoints: against random weights over the lines grid
    $PY finetune.py --init_from="$2" --baseline=scratch \
        --task=shakespeare_lines --max_train_samples=5000 --epochs=2 \
        --learning_rate=1e-3,3e-3 --pooling=mean --seeds=0,1,2 --zero_shot_tokens=0 \
        --cache_dir="$cache" --out="$out/$1.json" > "$out/$1.log" 2>&1
}
ft lines_b2400_prefill "$runs/b2400_s1339/ckpt.pt" &
ft lines_b2400 "$runs/b2400_s1337/ckpt.pt,$runs/b2400_s1338/ckpt.pt,$runs/b2400_s1339/ckpt.pt"
wait
$PY dev/finetune_summary.py "$out/lines_b2400.json" > "$out/readings_lines.txt"
