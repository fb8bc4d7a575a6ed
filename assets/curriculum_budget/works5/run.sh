#!/usr/bin/env bash
# PLAN.md: the five staged 5-minute checkpoints fine-tuned on shakespeare_works and
# shakespeare_lines against random weights, then the swapped arms on works, two processes at a
# time into run caches.
#   bash assets/curriculum_budget/works5/run.sh <pre-training folder> <out folder>
set -euo pipefail
export runs=$1 out=$2
mkdir -p "$out"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled HF_HUB_OFFLINE=1 PY=${PY:-.venv/bin/python}
draw=100
for s in 1337 1338 1339; do
    for part in embedding body; do
        $PY dev/swap_parts.py "$runs/staged_s$s/ckpt.pt" $part $draw "$runs/staged_s$s/$part.pt"
    done
    draw=$((draw + 1))
done
ft() {  # name, task, file in each checkpoint folder, arm, seeds...
    local name=$1 task=$2 file=$3 arm=$4 s init=; shift 4
    for s in "$@"; do init+="$runs/${arm}_s$s/$file,"; done
    local settings=(--task=shakespeare_works --max_train_samples=300 --epochs=10)
    [ "$task" = lines ] && settings=(--task=shakespeare_lines --max_train_samples=5000 --epochs=2)
    $PY finetune.py --init_from="${init%,}" --baseline="${BASE:-scratch}" "${settings[@]}" \
        --pooling=mean --learning_rate="${LR:-1e-3,3e-3}" --seeds=0,1,2 --zero_shot_tokens=0 \
        --cache_dir="$out/cache_$task" --out="$out/$name.json" > "$out/$name.log" 2>&1
}
export -f ft
five="1337 1338 1339 1340 1341"
printf '%s\n' "lines_staged lines ckpt.pt staged $five" "works_staged works ckpt.pt staged $five" \
    "works_body works body.pt staged 1337 1338 1339" \
    "works_embedding works embedding.pt staged 1337 1338 1339" \
    | xargs -P 2 -I{} bash -c 'ft {}'
