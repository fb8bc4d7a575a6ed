#!/usr/bin/env bash
# PLAN.md: U (untied) and A (staged) fine-tuned on shakespeare_works, two processes at a time into
# a run cache, each against random weights of its own architecture (lines was dropped for time:
# the plan's departure).
#   bash assets/curriculum_budget/untied_300s/run.sh <pre-training folder> <out folder>
# then the readings, every run read back from the caches:
#   bash assets/curriculum_budget/untied_300s/run.sh <pre-training folder> <out folder> readings
# and PLAN_center.md's arm (below):
#   bash assets/curriculum_budget/untied_300s/run.sh <pre-training folder> <out folder> center
set -euo pipefail
export runs=$1 out=$2
mkdir -p "$out"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled HF_HUB_OFFLINE=1 PY=${PY:-.venv/bin/python}
export seeds="1337 1338 1339 1340 1341"
ckpts() {  # arm, file (ckpt.pt): its five checkpoints, comma-separated
    local s list=
    for s in $seeds; do list+="$runs/${1}_s$s/${2:-ckpt.pt},"; done
    echo "${list%,}"
}
ft() {  # name, arm, baseline ('scratch' or an arm)
    local name=$1 arm=$2 base=$3
    [ "$base" = scratch ] || base=$(ckpts "$base")
    $PY finetune.py --init_from="$(ckpts "$arm" "${CKPT_FILE:-}")" --baseline="$base" \
        --task=shakespeare_works --max_train_samples=300 --epochs=10 \
        --learning_rate="${LR:-1e-3,3e-3,9e-3}" --pooling=mean --seeds=0,1,2 --zero_shot_tokens=0 \
        --cache_dir="$out/cache_works" --out="$out/$name.json" > "$out/$name.log" 2>&1
}
export -f ckpts ft
# PLAN_center.md: C, A's checkpoints with the mean row taken from every row, on works at 3e-3
# (two processes, then the pairing with A read back from the cache)
#   bash assets/curriculum_budget/untied_300s/run.sh <pre-training folder> <out folder> center
if [ "${3:-}" = center ]; then
    for s in $seeds; do
        $PY dev/swap_parts.py "$runs/staged_s$s/ckpt.pt" row_center 0 "$runs/staged_s$s/center.pt"
    done > "$out/center_check.txt"
    export CKPT_FILE=center.pt LR=3e-3
    seeds="1337 1338 1339" ft works_center_a staged scratch & a=$!
    seeds="1340 1341" ft works_center_b staged scratch & b=$!
    wait "$a"
    wait "$b"
    ft works_center_vs_staged staged staged
    $PY dev/finetune_summary.py "$out/works_center_vs_staged.json"
    # shellcheck disable=SC2046  # one argument per checkpoint
    $PY dev/embedding_rows.py data/shakespeare $(ckpts staged center.pt | tr , ' ') \
        > "$out/embedding_rows_center.txt"
    exit 0
fi
if [ "${3:-}" = readings ]; then
    # each arm's last evaluation (full space) and iterations; U - A in val loss per seed
    for a in untied staged; do
        for s in $seeds; do
            echo "$a $s $(grep -o 'iter [0-9]*: train loss [0-9.]*, val loss [0-9.]*' \
                "$runs/${a}_s$s.log" | tail -n 1)"
        done
    done > "$out/pretrain_check.txt"
    $PY -c "import sys
sys.path.insert(0, 'dev')
import numpy as np
from domain_arms_summary import t_interval
rows = [line.split() for line in open(sys.argv[1])]
val = {(r[0], r[1]): float(r[-1]) for r in rows}
its = {(r[0], r[1]): int(r[3].rstrip(':')) for r in rows}
d = np.array([val['untied', s] - val['staged', s] for s in sys.argv[2].split()])
for s in sys.argv[2].split():
    u, a = its['untied', s], its['staged', s]
    print(s, 'iterations', u, a, 'FLAG' if abs(u - a) > 0.05 * max(u, a) else '',
          'val loss U - A', round(val['untied', s] - val['staged', s], 4))
print('val loss U - A, mean and t-interval over the seeds', t_interval(d))
" "$out/pretrain_check.txt" "$seeds" >> "$out/pretrain_check.txt"
    ft works_untied_vs_staged untied staged
    $PY dev/finetune_summary.py "$out/works_untied.json" "$out/works_staged.json" \
        "$out/works_untied_vs_staged.json"
    LR=3e-3 ft works_untied_vs_staged_3e-3 untied staged
    $PY dev/finetune_summary.py "$out/works_untied_vs_staged_3e-3.json"
    # the rows: RMS against the initial draw, cosines after the LayerNorm, by frequency group
    # shellcheck disable=SC2046  # one argument per checkpoint
    $PY dev/embedding_rows.py data/shakespeare $(ckpts untied | tr , ' ') \
        $(ckpts staged | tr , ' ') > "$out/embedding_rows.txt"
    exit 0
fi
printf '%s\n' "works_untied untied scratch" "works_staged staged scratch" \
    | xargs -P 2 -I{} bash -c 'ft {}'
