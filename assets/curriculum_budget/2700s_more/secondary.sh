#!/usr/bin/env bash
# PLAN.md's secondary run, kept out of the primary reading: the full arm on shakespeare_lines at
# 1.1e-4, a step below the rate it took at the low edge of its grid, on the added seeds, one
# checkpoint per core, into the same run cache.
#   bash assets/curriculum_budget/2700s_more/secondary.sh <runs folder> 1340 1341
set -euo pipefail
runs=$1
shift
export OMP_NUM_THREADS=1 WANDB_MODE=disabled
PY=${PY:-.venv/bin/python}
for s in "$@"; do
    $PY finetune.py --init_from="$runs/full_s$s/ckpt.pt" --task=shakespeare_lines \
        --max_train_samples=5000 --epochs=2 --pooling=mean --seeds=0,1,2 --zero_shot_tokens=0 \
        --cache_dir="$runs/ft_cache" --learning_rate=1.1e-4 \
        --out="$runs/lines_full_lr1.1e-4_s$s.json" \
        > "$runs/lines_runs_full_lr1.1e-4_s$s.log" 2>&1 &
done
wait
cp "$runs"/lines_*full_lr1.1e-4_s*.* assets/curriculum_budget/2700s_more/
