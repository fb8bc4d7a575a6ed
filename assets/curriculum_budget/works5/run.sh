#!/usr/bin/env bash
# PLAN.md: the five staged 5-minute checkpoints fine-tuned on shakespeare_works and
# shakespeare_lines against random weights, then the swapped arms on works, two processes at a
# time into run caches.
#   bash assets/curriculum_budget/works5/run.sh <pre-training folder> <out folder>
# then the readings, every run read back from the caches (their logs print each run's cache path):
#   bash assets/curriculum_budget/works5/run.sh <pre-training folder> <out folder> readings
set -euo pipefail
export runs=$1 out=$2
mkdir -p "$out"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled HF_HUB_OFFLINE=1 PY=${PY:-.venv/bin/python}
ckpts() {  # file, arm, seeds...: a comma-separated list of checkpoints
    local file=$1 arm=$2 s list=; shift 2
    for s in "$@"; do list+="$runs/${arm}_s$s/$file,"; done
    echo "${list%,}"
}
ft() {  # name, task, file in each checkpoint folder, arm, seeds...
    local name=$1 task=$2; shift 2
    local settings=(--task=shakespeare_works --max_train_samples=300 --epochs=10)
    [ "$task" = lines ] && settings=(--task=shakespeare_lines --max_train_samples=5000 --epochs=2)
    $PY finetune.py --init_from="$(ckpts "$@")" --baseline="${BASE:-scratch}" "${settings[@]}" \
        --pooling=mean --learning_rate="${LR:-1e-3,3e-3}" --seeds=0,1,2 --zero_shot_tokens=0 \
        --cache_dir="$out/cache_$task" --out="$out/$name.json" > "$out/$name.log" 2>&1
}
export -f ckpts ft
three="1337 1338 1339"
five="1337 1338 1339 1340 1341"
if [ "${3:-}" = readings ]; then
    for f in works_staged lines_staged works_body works_embedding; do
        $PY dev/finetune_summary.py "$out/$f.json"
    done
    # the swapped arms against A on the same three checkpoints, paired
    for part in body embedding; do
        BASE=$(ckpts $part.pt staged $three) ft works_staged3_vs_$part works ckpt.pt staged $three
    done
    # the interaction (A - C) - (D - R): setting_change's gap change, first C vs R, then A vs D
    ft works_embedding works embedding.pt staged $three
    $PY dev/setting_change.py "$out/works_embedding.log" "$out/works_embedding.json" \
        "$out/works_staged3_vs_body.log" "$out/works_staged3_vs_body.json"
    # every arm at 3e-3
    for arm in staged:ckpt.pt body:body.pt embedding:embedding.pt; do
        LR=3e-3 ft works_${arm%%:*}_3e-3 works ${arm#*:} staged $three
        $PY dev/finetune_summary.py "$out/works_${arm%%:*}_3e-3.json"
    done
    exit 0
fi
# B, last in the plan's order: the full-vocabulary checkpoints of the same pairs on both tasks,
# then each against the demo's model on the same three seeds, paired, read back from the caches
#   bash assets/curriculum_budget/works5/run.sh <pre-training folder> <out folder> full
if [ "${3:-}" = full ]; then
    ft works_full works ckpt.pt full $three & ft lines_full lines ckpt.pt full $three &
    wait
    for task in works lines; do
        BASE=$(ckpts ckpt.pt full $three) ft ${task}_staged3_vs_full $task ckpt.pt staged $three
    done
    exit 0
fi
# PLAN_rows.md: E, the five staged checkpoints with each row scaled to the initial RMS, on works
# (dev/swap_parts.py row_scale), then against the demo's model, paired, read back from the cache
#   bash assets/curriculum_budget/works5/run.sh <pre-training folder> <out folder> row_scale
if [ "${3:-}" = row_scale ]; then
    for s in $five; do
        $PY dev/swap_parts.py "$runs/staged_s$s/ckpt.pt" row_scale 0 "$runs/staged_s$s/row_scale.pt"
    done
    ft works_row_scale works row_scale.pt staged $five
    BASE=$(ckpts ckpt.pt staged $five) ft works_row_scale_vs_staged works row_scale.pt staged $five
    exit 0
fi
# PLAN_wd.md: W (the staged config with a decoupled weight decay, pretrain.sh's wd mode) and A'
# (the staged config pre-trained beside it) on both tasks, then W against A' (primary) and against
# the demo's model of the earlier rounds, paired by seed, read back from the caches
#   bash assets/curriculum_budget/works5/run.sh <pre-training folder> <out folder> wd
if [ "${3:-}" = wd ]; then
    # the plan's sanity check: each checkpoint's iterations, optimizer decay, last val loss
    for arm in wd staged_beside_wd; do
        for s in $five; do
            $PY -c "import sys, torch
ck = torch.load(sys.argv[1], map_location='cpu', weights_only=False)
print(sys.argv[1], 'iter', ck['iter_num'], 'weight decay', ck['config']['weight_decay'],
      ck['config']['weight_decay_convention'], 'optimizer groups',
      sorted({round(g['weight_decay'], 6) for g in ck['optimizer']['param_groups']}), end=', ')
" "$runs/${arm}_s$s/ckpt.pt"
            grep -o 'val loss [0-9.]*' "$runs/${arm}_s$s.log" | tail -n 1
        done
    done > "$out/wd_check.txt"
    # how much the decay shrank each matrix: its RMS in W over its RMS in A', per seed
    for s in $five; do
        $PY -c "import sys, torch
w, a = (torch.load(p, map_location='cpu', weights_only=False)['model'] for p in sys.argv[1:])
ratios = {k: (w[k].pow(2).mean() / a[k].pow(2).mean()).sqrt().item() for k in w if w[k].dim() > 1}
print(sys.argv[1], ' '.join(f'{k} {r:.2f}' for k, r in ratios.items()))
" "$runs/wd_s$s/ckpt.pt" "$runs/staged_beside_wd_s$s/ckpt.pt"
    done > "$out/wd_matrix_rms.txt"
    printf '%s\n' "lines_wd lines ckpt.pt wd $five" \
        "lines_beside_wd lines ckpt.pt staged_beside_wd $five" "works_wd works ckpt.pt wd $five" \
        "works_beside_wd works ckpt.pt staged_beside_wd $five" | xargs -P 2 -I{} bash -c 'ft {}'
    for task in works lines; do
        for base in staged_beside_wd staged; do
            BASE=$(ckpts ckpt.pt $base $five) ft ${task}_wd_vs_$base $task ckpt.pt wd $five
            $PY dev/finetune_summary.py "$out/${task}_wd_vs_$base.json"
        done
    done
    # lines at each common rate of the grid (the arms chose different ones), from the cache
    for lr in 3e-3 1e-3 0.0003333333333333333; do
        LR=$lr BASE=$(ckpts ckpt.pt staged_beside_wd $five) \
            ft lines_wd_vs_staged_beside_wd_$lr lines ckpt.pt wd $five
        $PY dev/finetune_summary.py "$out/lines_wd_vs_staged_beside_wd_$lr.json"
    done
    exit 0
fi
draw=100
for s in $three; do
    for part in embedding body; do
        $PY dev/swap_parts.py "$runs/staged_s$s/ckpt.pt" $part $draw "$runs/staged_s$s/$part.pt"
    done
    draw=$((draw + 1))
done
printf '%s\n' "lines_staged lines ckpt.pt staged $five" "works_staged works ckpt.pt staged $five" \
    "works_body works body.pt staged 1337 1338 1339" \
    "works_embedding works embedding.pt staged 1337 1338 1339" \
    | xargs -P 2 -I{} bash -c 'ft {}'
