#!/usr/bin/env bash
# PLAN.md's third amendment: whole-corpus seeds after run.sh's six (1432 alone was run, for time)
#   bash assets/curriculum_budget/passes_300s/more.sh <runs folder> 1432
set -euo pipefail
HERE=assets/curriculum_budget/passes_300s/whole CONFIG=config/demo_staged_cpu.py ARM=staged \
    BUDGET=300 FT_SEEDS=0,1,2 TASKS=lines SCORES=0 LINES_RATES="0.0003333333333333333 1e-3" \
    SESSION=${SESSION:-$(date +%FT%H:%M)} \
    exec bash assets/curriculum_budget/staged_vs_full/run.sh "$1/whole" "${@:2}"
