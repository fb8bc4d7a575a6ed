#!/usr/bin/env bash
# PLAN.md: the one-grow curriculum (config/demo_curriculum_cpu.py) against the full vocabulary on a
# 45-minute budget, through ../staged_vs_full/run.sh's steps.
#   bash assets/curriculum_budget/onegrow_vs_full/run.sh <runs folder> <seed>...
CONFIG=config/demo_curriculum_cpu.py ARM=curriculum HERE=assets/curriculum_budget/onegrow_vs_full \
    exec bash assets/curriculum_budget/staged_vs_full/run.sh "$@"
