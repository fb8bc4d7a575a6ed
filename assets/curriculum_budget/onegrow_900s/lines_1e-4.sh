#!/usr/bin/env bash
# PLAN.md's amendment: shakespeare_lines at 1e-4 for both arms' checkpoints, the runner's other
# settings, one process per arm; the results copied beside the others.
#   bash assets/curriculum_budget/onegrow_900s/lines_1e-4.sh <runs folder> <seed>...
set -euo pipefail
runs=$1
shift
here=assets/curriculum_budget/onegrow_900s
export OMP_NUM_THREADS=1 WANDB_MODE=disabled HF_HUB_OFFLINE=1
lines() {  # <arm> <seed>...
    local arm=$1 s
    shift
    for s in "$@"; do
        .venv/bin/python finetune.py --init_from="$runs/${arm}_s$s/ckpt.pt" \
            --task=shakespeare_lines --max_train_samples=5000 --epochs=2 --seeds=0,1,2 \
            --pooling=mean --learning_rate=1e-4 --zero_shot_tokens=0 \
            --out="$runs/lines_${arm}_s${s}_lr1e-4.json" \
            > "$runs/lines_${arm}_s${s}_lr1e-4.log" 2>&1
        cp "$runs/lines_${arm}_s${s}_lr1e-4".{json,log} "$here/"
    done
}
lines curriculum "$@" &
lines full "$@"
wait
