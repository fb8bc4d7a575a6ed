#!/usr/bin/env bash
# PLAN.md: `make demo`'s staged curriculum against the full vocabulary on a 45-minute budget, one
# pre-training seed at a time: the two arms side by side, one thread each (the load logged while
# both run), then each checkpoint fine-tuned on both tasks at each rate of the plan's grid (one
# process per arm), zero-shot scores and the val loss split; each seed's raw files are copied
# here as soon as they exist.
#   bash assets/curriculum_budget/staged_vs_full/run.sh <runs folder> <seed>...
# (SESSION=<id> files the seeds under an earlier invocation's session, session_s<seed>.txt; another
# study runs another curriculum config under another arm name into its own folder through
# CONFIG=<config> ARM=<name> HERE=<folder>, as ../onegrow_vs_full/run.sh does, and on another budget
# with BUDGET=<seconds> FT_SEEDS=<fine-tuning seeds>, as ../onegrow_900s/run.sh does; TASKS=lines
# fine-tunes on lines alone, LINES_RATES=<rates> and WORKS_RATES=<rates> set the tasks' grids and
# SCORES=0 leaves out the zero-shot scores and the val loss split, as ../early_decay_2700s/run.sh
# does; REF=<name> REF_CONFIG=<config> pairs it with another arm than the full vocabulary, and
# PRETRAINED=1 fine-tunes a pair already trained into the runs folder, as
# ../early_decay_2700s/second.sh does)
set -euo pipefail
runs=$1
shift
here=${HERE:-assets/curriculum_budget/staged_vs_full}
config=${CONFIG:-config/demo_staged_cpu.py}
cur=${ARM:-staged}
ref=${REF:-full}  # the other arm, config/demo_cpu.py unless REF_CONFIG names another
ref_config=${REF_CONFIG:-config/demo_cpu.py}
budget=${BUDGET:-2700}
mkdir -p "$runs"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled HF_HUB_OFFLINE=1
PY=${PY:-.venv/bin/python}
# docs/finetune.md's settings; each arm's rate is chosen on dev over all seeds (PLAN.md)
lines=(--task=shakespeare_lines --max_train_samples=5000 --epochs=2)
works=(--task=shakespeare_works --max_train_samples=300 --epochs=10)
lines_rates=${LINES_RATES:-"0.0003333333333333333 1e-3"}
works_rates=${WORKS_RATES:-"1e-3 3e-3 9e-3"}
finetune() {  # <seed> <arm>: both tasks at each rate, one after the other, on one core
    local s=$1 arm=$2 lr task
    for task in ${TASKS:-lines works}; do
        local -n settings=$task rates=${task}_rates
        for lr in $rates; do
            $PY finetune.py --init_from="$runs/${arm}_s$s/ckpt.pt" "${settings[@]}" \
                --seeds="${FT_SEEDS:-0,1,2,3,4}" --pooling=mean --learning_rate="$lr" \
                --zero_shot_tokens=0 \
                --out="$runs/${task}_${arm}_s${s}_lr$lr.json" \
                > "$runs/${task}_${arm}_s${s}_lr$lr.log" 2>&1
        done
    done
}
session=${SESSION:-$(date +%FT%H:%M)}  # for the plan's interval over sessions
one= two= load=
trap 'kill $one $two $load 2>/dev/null || true' EXIT
for s in "$@"; do
    ok=1
    if [ "${PRETRAINED:-0}" != 1 ]; then
        while true; do echo "$(date +%T) $(cut -d' ' -f1 /proc/loadavg)"; sleep 60; done \
            > "$runs/loadavg_s$s.txt" &
        load=$!
        echo "$session" > "$runs/session_s$s.txt"
        $PY train.py "$config" --time_budget="$budget" --seed="$s" \
            --out_dir="$runs/${cur}_s$s" > "$runs/${cur}_s$s.log" 2>&1 &
        one=$!
        $PY train.py "$ref_config" --time_budget="$budget" --eval_interval=250 --seed="$s" \
            --out_dir="$runs/${ref}_s$s" > "$runs/${ref}_s$s.log" 2>&1 &
        two=$!
        wait -n $one $two || true
        kill $load  # the load window ends when the first arm does: the other then runs alone
        wait $one || ok=0
        wait $two || ok=0
    fi
    cp "$runs"/{${cur}_s$s.log,${ref}_s$s.log,loadavg_s$s.txt,session_s$s.txt} "$here/"
    for arm in "$cur" "$ref"; do
        if [ -f "$runs/${arm}_s$s/metrics.jsonl" ]; then
            cp "$runs/${arm}_s$s/metrics.jsonl" "$here/${arm}_s$s.jsonl"
        fi
    done
    [ $ok = 1 ] || { echo "seed $s: an arm failed, no fine-tuning (void by its log)"; continue; }
    finetune "$s" "$cur" & one=$!
    finetune "$s" "$ref" & two=$!
    wait $one
    wait $two
    cp "$runs"/*_s"$s"_lr*.json "$runs"/*_s"$s"_lr*.log "$here/"
    [ "${SCORES:-1}" = 1 ] || continue
    ckpts=("$runs/${cur}_s$s/ckpt.pt" "$runs/${ref}_s$s/ckpt.pt")
    $PY dev/zero_shot.py "${ckpts[@]}" > "$runs/zero_shot_s$s.jsonl" & one=$!
    $PY dev/val_loss_split.py "${ckpts[@]}" > "$runs/val_loss_split_s$s.jsonl" & two=$!
    wait $one
    wait $two
    cp "$runs"/*_s"$s".jsonl "$here/"
done
