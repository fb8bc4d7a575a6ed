#!/usr/bin/env bash
# PLAN.md: config/demo_cpu.py for the one-grow curriculum's iterations of the same seed on the
# curriculum's learning-rate schedule by iteration (untimed), then shakespeare_lines at the study's
# two rates as ../onegrow_vs_full fine-tuned, one seed per core.
#   bash assets/curriculum_budget/equal_tokens_2700s/run.sh <runs folder> <seed>...
set -euo pipefail
runs=$1
shift
here=assets/curriculum_budget/equal_tokens_2700s
mkdir -p "$runs"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled HF_HUB_OFFLINE=1
PY=${PY:-.venv/bin/python}
git rev-parse HEAD > "$here/commit.txt"
one_seed() {  # <seed>: the curriculum's schedule read from its log, the run, the fine-tuning
    local s=$1 log=assets/curriculum_budget/onegrow_vs_full/curriculum_s$1.log iters grow warm lr
    iters=$(grep -o '^iter [0-9]*: saved' "$log" | tail -1 | grep -o '[0-9]*')
    grow=$(grep -o '^iter [0-9]*: operation resize' "$log" | grep -o '[0-9]*')
    warm=$(awk '/^iter [0-9]+: loss/ && / lr 3.00e-03/ {sub(":", "", $2); print $2; exit}' "$log")
    $PY train.py config/demo_cpu.py --seed="$s" --max_iters="$iters" --warmup_iters="$warm" \
        --decay_fraction="$(python3 -c "print(($iters - $grow) / $iters)")" \
        --eval_interval=500 --out_dir="$runs/full_equal_s$s" > "$runs/full_equal_s$s.log" 2>&1
    cp "$runs/full_equal_s$s.log" "$here/"
    cp "$runs/full_equal_s$s/metrics.jsonl" "$here/full_equal_s$s.jsonl"
    for lr in 1e-3 0.0003333333333333333; do
        $PY finetune.py --init_from="$runs/full_equal_s$s/ckpt.pt" --task=shakespeare_lines \
            --max_train_samples=5000 --epochs=2 --pooling=mean --learning_rate="$lr" \
            --seeds=0,1,2,3,4 --zero_shot_tokens=0 --out="$runs/lines_full_equal_s${s}_lr$lr.json" \
            > "$runs/lines_full_equal_s${s}_lr$lr.log" 2>&1
        cp "$runs/lines_full_equal_s${s}_lr$lr".{json,log} "$here/"
    done
}
pids=()
for s in "$@"; do
    one_seed "$s" & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
