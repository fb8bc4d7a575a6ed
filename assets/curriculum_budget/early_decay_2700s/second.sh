#!/usr/bin/env bash
# PLAN.md's amendment: seed 1410's first pair, started by run.sh (stopped once the pair was
# running), finished here and fine-tuned at both lines rates; then the factorial's other two arms
# for seed 1410 side by side, the one-grow curriculum as configured (the decay over the last 30%)
# and the full vocabulary with the early decay (full_config.py), fine-tuned the same way.
#   bash assets/curriculum_budget/early_decay_2700s/second.sh <runs> <runs 2> <load pid> \
#       <train pids>
set -euo pipefail
runs=$1 runs2=$2 load=$3
shift 3
bash assets/curriculum_budget/staged_vs_full/await_pair.sh "$load" "$@"
here=assets/curriculum_budget/early_decay_2700s
common=(BUDGET=2700 FT_SEEDS=0,1,2 TASKS=lines SCORES=0
        LINES_RATES="0.0003333333333333333 1e-3")
env "${common[@]}" CONFIG=$here/config.py ARM=curriculum HERE=$here PRETRAINED=1 \
    bash assets/curriculum_budget/staged_vs_full/run.sh "$runs" 1410
mkdir -p $here/second
env "${common[@]}" CONFIG=config/demo_curriculum_cpu.py ARM=curriculum_late REF=full_early \
    REF_CONFIG=$here/full_config.py HERE=$here/second \
    bash assets/curriculum_budget/staged_vs_full/run.sh "$runs2" 1410
