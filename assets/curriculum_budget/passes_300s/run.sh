#!/usr/bin/env bash
# PLAN.md: `make demo`'s staged curriculum against the full vocabulary at 300 s, one thread each,
# on a tenth of the corpus (tenth/) and on the whole of it (whole/), through
# ../staged_vs_full/run.sh's steps: lines alone at 3.3e-4 and 1e-3, three fine-tuning seeds. The
# seeds alternate between the corpora so that both see the same hours of the machine.
#   python assets/curriculum_budget/passes_300s/tenth.py
#   bash assets/curriculum_budget/passes_300s/run.sh <runs folder>
set -euo pipefail
runs=$1
here=assets/curriculum_budget/passes_300s
export ARM=staged BUDGET=300 FT_SEEDS=0,1,2 TASKS=lines SCORES=0 \
    LINES_RATES="0.0003333333333333333 1e-3" SESSION=${SESSION:-$(date +%FT%H:%M)}
one() {  # <corpus> <seed>
    if [ "$1" = tenth ]; then
        CONFIG=$here/staged_tenth.py REF_CONFIG=$here/full_tenth.py HERE=$here/tenth \
            bash assets/curriculum_budget/staged_vs_full/run.sh "$runs/tenth" "$2"
    else
        HERE=$here/whole CONFIG=config/demo_staged_cpu.py \
            bash assets/curriculum_budget/staged_vs_full/run.sh "$runs/whole" "$2"
    fi
}
mkdir -p "$here/tenth" "$here/whole"
for step in tenth:1430 whole:1430 tenth:1431 whole:1431 tenth:1432 tenth:1433; do
    one "${step%%:*}" "${step#*:}"
done
