#!/usr/bin/env bash
# PLAN.md: the one-grow curriculum with an early decay (config.py here) against the full vocabulary
# on a 45-minute budget, through ../staged_vs_full/run.sh's steps: lines alone at 3.3e-4 and 1e-3,
# three fine-tuning seeds, no zero-shot scores.
#   bash assets/curriculum_budget/early_decay_2700s/run.sh <runs folder> <seed>...
CONFIG=assets/curriculum_budget/early_decay_2700s/config.py ARM=curriculum \
    HERE=assets/curriculum_budget/early_decay_2700s BUDGET=2700 FT_SEEDS=0,1,2 TASKS=lines \
    LINES_RATES="0.0003333333333333333 1e-3" SCORES=0 \
    exec bash assets/curriculum_budget/staged_vs_full/run.sh "$@"
