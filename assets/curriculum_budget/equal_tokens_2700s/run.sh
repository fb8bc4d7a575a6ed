#!/usr/bin/env bash
# PLAN.md: config/demo_cpu.py for the one-grow curriculum's iterations of the same seed (untimed),
# then shakespeare_lines at 1e-3 as ../onegrow_vs_full fine-tuned, one seed per core.
#   bash assets/curriculum_budget/equal_tokens_2700s/run.sh <runs folder> <seed>...
set -euo pipefail
runs=$1
shift
here=assets/curriculum_budget/equal_tokens_2700s
mkdir -p "$runs"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled HF_HUB_OFFLINE=1
PY=${PY:-.venv/bin/python}
one_seed() {  # <seed>: the curriculum's iterations read from its log, then the fine-tuning
    local s=$1 iters
    local log=assets/curriculum_budget/onegrow_vs_full/curriculum_s$s.log
    iters=$(grep -o '^iter [0-9]*: saved' "$log" | tail -1 | grep -o '[0-9]*')
    $PY train.py config/demo_cpu.py --seed="$s" --max_iters="$iters" \
        --warmup_iters=$((iters / 10)) --eval_interval=500 --out_dir="$runs/full_equal_s$s" \
        > "$runs/full_equal_s$s.log" 2>&1
    cp "$runs/full_equal_s$s.log" "$here/"
    cp "$runs/full_equal_s$s/metrics.jsonl" "$here/full_equal_s$s.jsonl"
    $PY finetune.py --init_from="$runs/full_equal_s$s/ckpt.pt" --task=shakespeare_lines \
        --max_train_samples=5000 --epochs=2 --pooling=mean --learning_rate=1e-3 \
        --seeds=0,1,2,3,4 --zero_shot_tokens=0 --out="$runs/lines_full_equal_s${s}_lr1e-3.json" \
        > "$runs/lines_full_equal_s${s}_lr1e-3.log" 2>&1
    cp "$runs/lines_full_equal_s${s}_lr1e-3".{json,log} "$here/"
}
pids=()
for s in "$@"; do
    one_seed "$s" & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
