#!/usr/bin/env bash
# PLAN.md: the kept checkpoints of ../staged_vs_full fine-tuned on shakespeare_lines for 4 epochs,
# through ../lines_lpft/run.sh's steps.
#   bash assets/curriculum_budget/lines_epochs/run.sh <runs folder> <checkpoints folder> <seed>...
FLAGS=--epochs=4 HERE=assets/curriculum_budget/lines_epochs \
    exec bash assets/curriculum_budget/lines_lpft/run.sh "$@"
