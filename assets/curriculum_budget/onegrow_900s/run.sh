#!/usr/bin/env bash
# PLAN.md: the one-grow curriculum (config/demo_curriculum_cpu.py) against the full vocabulary on a
# 15-minute budget, through ../staged_vs_full/run.sh's steps, three fine-tuning seeds.
#   bash assets/curriculum_budget/onegrow_900s/run.sh <runs folder> <seed>...
CONFIG=config/demo_curriculum_cpu.py ARM=curriculum HERE=assets/curriculum_budget/onegrow_900s \
    BUDGET=900 FT_SEEDS=0,1,2 exec bash assets/curriculum_budget/staged_vs_full/run.sh "$@"
