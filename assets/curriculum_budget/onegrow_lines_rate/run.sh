#!/usr/bin/env bash
# PLAN.md: the ten checkpoint pairs of ../onegrow_vs_full fine-tuned on shakespeare_lines at 3e-3,
# one rate above that study's grid, through ../lines_lpft/run.sh's steps.
#   bash assets/curriculum_budget/onegrow_lines_rate/run.sh <runs> <checkpoints> <seed>...
FLAGS=--epochs=2 ARM=curriculum LR=3e-3 HERE=assets/curriculum_budget/onegrow_lines_rate \
    exec bash assets/curriculum_budget/lines_lpft/run.sh "$@"
