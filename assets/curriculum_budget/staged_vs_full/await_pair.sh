#!/usr/bin/env bash
# Waits for a pair run.sh started (and was stopped from, the pair left running) to finish: ends the
# load window when the first arm does, as run.sh has it, then waits for the other. A study's
# second.sh calls it before fine-tuning the pair with PRETRAINED=1.
#   bash assets/curriculum_budget/staged_vs_full/await_pair.sh <load pid> <train pids>
set -euo pipefail
load=$1
shift
alive() { local n=0 p; for p in "$@"; do kill -0 "$p" 2>/dev/null && n=$((n + 1)); done; echo $n; }
while [ "$(alive "$@")" = 2 ]; do sleep 5; done
kill "$load"
while [ "$(alive "$@")" != 0 ]; do sleep 5; done
