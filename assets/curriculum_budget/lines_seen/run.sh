#!/usr/bin/env bash
# PLAN.md: the staged and full checkpoints of ../staged_vs_full/ fine-tuned on shakespeare_lines
# with a test set of pairs from text pre-training read beside the held-out test pairs, one process
# per arm, one thread each; then each checkpoint's MLM loss on the training text.
#   bash assets/curriculum_budget/lines_seen/run.sh <runs folder> <checkpoints folder> <seed>...
set -euo pipefail
runs=$1 ckpts=$2
shift 2
here=assets/curriculum_budget/lines_seen
mkdir -p "$runs"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled HF_HUB_OFFLINE=1
PY=${PY:-.venv/bin/python}
$PY finetune.py --task=shakespeare_lines --write_task="$runs/lines"
$PY - "$runs" <<'PYEOF'
import sys

import numpy as np

runs = sys.argv[1]
train = open(f'{runs}/lines/train.jsonl').readlines()
seen = set(np.random.default_rng(0).permutation(len(train))[:3000].tolist())
with open(f'{runs}/pool.jsonl', 'w') as pool, open(f'{runs}/test.jsonl', 'w') as test:
    for k, line in enumerate(train):
        (test if k in seen else pool).write(line)
    test.writelines(open(f'{runs}/lines/test.jsonl').readlines())
PYEOF
arm() {  # <arm>: its checkpoints as one arm, every run kept in the cache
    local a=$1 s list=()
    for s in "${seeds[@]}"; do list+=("$ckpts/${a}_s$s/ckpt.pt"); done
    local ft=(finetune.py --task=files --train_file="$runs/pool.jsonl"
              --validation_file="$runs/lines/dev.jsonl" --test_file="$runs/test.jsonl"
              --init_from="$(IFS=,; echo "${list[*]}")" --max_train_samples=5000 --epochs=2
              --pooling=mean --learning_rate=0.0003333333333333333 --seeds=0,1,2
              --zero_shot_tokens=0 --cache_dir="$runs/cache_$a")
    $PY "${ft[@]}" --out="$runs/$a.json" > "$runs/$a.log" 2>&1
    # the same command again reads every run back from the cache, printing its file: readings.py
    # finds each checkpoint's test predictions through this log
    $PY "${ft[@]}" > "$runs/$a.cached.log" 2>&1
    $PY dev/val_loss_split.py --split=train "${list[@]}" > "$runs/train_loss_$a.jsonl"
}
seeds=("$@")
arm staged & one=$!
arm full & two=$!
wait $one
wait $two
cp "$runs"/{staged,full}.{json,log} "$runs"/{staged,full}.cached.log "$runs"/train_loss_*.jsonl \
    "$here/"
