#!/usr/bin/env bash
# PLAN.md's amendment: once the first pair (run.sh, process <pid>) has ended, the second pair on
# seed 1440's timed schedule (7,121 iterations): seed 1356 (b1356) and seed 1440 replayed (r1440).
#   bash assets/curriculum_budget/length_2700s/second.sh <runs folder> <pid>
set -euo pipefail
runs=$1
here=assets/curriculum_budget/length_2700s
while kill -0 "$2" 2>/dev/null; do sleep 30; done
mv "$here/loadavg.txt" "$here/loadavg_first.txt"
mv "$here/commit.txt" "$here/commit_first.txt"
log=assets/curriculum_budget/equal_steps_2700s/vs_staged/staged_s1440.log
bash "$here/run.sh" "$runs" "b1356:1356:$log" "r1440:1440:$log"
