#!/usr/bin/env bash
# PLAN.md's amendment: seed 1440's first pair (equal_steps against full), started by run.sh
# (stopped once the pair was running), finished here and fine-tuned at both lines rates; then the
# second pair for the same seed side by side, equal_steps against `make demo`'s staged config,
# fine-tuned the same way into vs_staged/.
#   bash assets/curriculum_budget/equal_steps_2700s/second.sh <runs> <runs 2> <load pid> \
#       <train pids>
set -euo pipefail
runs=$1 runs2=$2 load=$3
shift 3
bash assets/curriculum_budget/staged_vs_full/await_pair.sh "$load" "$@"
here=assets/curriculum_budget/equal_steps_2700s
common=(FT_SEEDS=0,1,2 TASKS=lines SCORES=0 CONFIG=$here/config.py ARM=equal_steps)
env "${common[@]}" HERE=$here PRETRAINED=1 \
    bash assets/curriculum_budget/staged_vs_full/run.sh "$runs" 1440
mkdir -p $here/vs_staged
env "${common[@]}" REF=staged REF_CONFIG=config/demo_staged_cpu.py HERE=$here/vs_staged \
    bash assets/curriculum_budget/staged_vs_full/run.sh "$runs2" 1440
