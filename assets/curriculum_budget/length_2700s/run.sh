#!/usr/bin/env bash
# PLAN.md: make demo's staged config untimed, on the schedule by iteration that a timed 45-minute
# run's log records (its two grows, the end of its warmup, the decay from its first grow to its
# end), one run per core, side by side; then each checkpoint fine-tuned on shakespeare_lines at
# ../staged_vs_full's two rates, fine-tuning seeds 0 to 2, and the raw files copied here.
#   bash assets/curriculum_budget/length_2700s/run.sh <runs folder> <name>:<seed>:<timed log>...
set -euo pipefail
runs=$1
shift
here=assets/curriculum_budget/length_2700s
mkdir -p "$runs"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled HF_HUB_OFFLINE=1
PY=${PY:-.venv/bin/python}
git rev-parse HEAD > "$here/commit.txt"
replay() {  # <name> <seed> <timed log>
    local name=$1 s=$2 log=$3 iters warm grows decay
    iters=$(grep -o '^iter [0-9]*: saved' "$log" | tail -1 | grep -o '[0-9]*')
    grows=$(grep -o '^iter [0-9]*: operation resize' "$log" | grep -o '[0-9]*' | paste -sd,)
    warm=$(awk '/^iter [0-9]+: loss/ && / lr 3.00e-03/ {sub(":", "", $2); print $2; exit}' "$log")
    python3 - "$runs/$name.schedule.json" "$grows" <<'PY'
import json, sys
first, second = map(int, sys.argv[2].split(','))
grow = {'name': 'resize_vocabulary', 'value': [None, 0.0, 'pieces']}
json.dump([dict(grow, at_iter=first),
           {'name': 'set_vocab_remapping', 'value': 'data/shakespeare/vocab_18752.pt',
            'max_wait_iters': 0},
           dict(grow, at_iter=second),
           {'name': 'disable_vocab_remapping', 'value': None, 'max_wait_iters': 0}],
          open(sys.argv[1], 'w'), indent=1)
PY
    decay=$(python3 -c "print(($iters - ${grows%,*}) / $iters)")  # from the first grow to the end
    $PY train.py config/demo_staged_cpu.py --time_budget=None --seed="$s" --max_iters="$iters" \
        --warmup_iters="$warm" --decay_fraction="$decay" \
        --schedule="$runs/$name.schedule.json" --out_dir="$runs/$name" > "$runs/$name.log" 2>&1
    cp "$runs/$name.log" "$runs/$name.schedule.json" "$here/"
    cp "$runs/$name/metrics.jsonl" "$here/$name.jsonl"
    for lr in 0.0003333333333333333 1e-3; do
        $PY finetune.py --init_from="$runs/$name/ckpt.pt" --task=shakespeare_lines \
            --max_train_samples=5000 --epochs=2 --pooling=mean --learning_rate="$lr" \
            --seeds=0,1,2 --zero_shot_tokens=0 --out="$runs/lines_${name}_lr$lr.json" \
            > "$runs/lines_${name}_lr$lr.log" 2>&1
        cp "$runs/lines_${name}_lr$lr".{json,log} "$here/"
    done
}
pids=()
for run in "$@"; do
    IFS=: read -r name seed log <<< "$run"
    replay "$name" "$seed" "$log" & pids+=($!)
done
while true; do echo "$(date +%T) $(cut -d' ' -f1 /proc/loadavg)"; sleep 60; done \
    > "$here/loadavg.txt" &
load=$!
ok=0
for p in "${pids[@]}"; do wait "$p" || ok=1; done
kill $load
exit $ok
