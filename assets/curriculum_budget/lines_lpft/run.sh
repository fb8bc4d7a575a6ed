#!/usr/bin/env bash
# PLAN.md: the kept checkpoints of ../staged_vs_full fine-tuned on shakespeare_lines with the head
# trained first (--head_epochs=2), one process per arm, one thread each.
#   bash assets/curriculum_budget/lines_lpft/run.sh <runs folder> <checkpoints folder> <seed>...
# (another setting of the same comparison: FLAGS=<finetune.py flags> HERE=<its folder>, as
# ../lines_epochs/run.sh does; another study's curriculum arm and rate: ARM=<name> LR=<rate>, as
# ../onegrow_lines_rate/run.sh does)
set -euo pipefail
runs=$1 ckpts=$2
shift 2
here=${HERE:-assets/curriculum_budget/lines_lpft}
read -ra flags <<< "${FLAGS:---epochs=2 --head_epochs=2}"
cur=${ARM:-staged}
lr=${LR:-0.0003333333333333333}
mkdir -p "$runs"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled HF_HUB_OFFLINE=1
PY=${PY:-.venv/bin/python}
arm() {  # <arm> <seed>...: each checkpoint on its own, as the study fine-tuned them
    local a=$1 s
    shift
    for s in "$@"; do
        $PY finetune.py --init_from="$ckpts/${a}_s$s/ckpt.pt" --task=shakespeare_lines \
            --max_train_samples=5000 "${flags[@]}" --pooling=mean \
            --learning_rate="$lr" --seeds=0,1,2 --zero_shot_tokens=0 \
            --out="$runs/lines_${a}_s$s.json" > "$runs/lines_${a}_s$s.log" 2>&1
        cp "$runs/lines_${a}_s$s.json" "$runs/lines_${a}_s$s.log" "$here/"
    done
}
arm "$cur" "$@" & one=$!
arm full "$@" & two=$!
wait $one
wait $two
