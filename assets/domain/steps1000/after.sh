#!/usr/bin/env bash
# After dev/domain_arms.sh's equal-step runs (PLAN.md): the unseen-lines score, both summaries, the
# sanity check against the 20-minute runs, and the raw files copied here.
#   bash assets/domain/steps1000/after.sh /work/runs/steps1000
set -euo pipefail
out=$1
here=assets/domain/steps1000
PY=${PY:-.venv/bin/python}
ckpts=()
for s in 1 2 3; do ckpts+=("$out/pieces_s$s/ckpt.pt" "$out/none_s$s/ckpt.pt"); done
[ -f "$out/unseen_lines.jsonl" ] || OMP_NUM_THREADS=2 $PY dev/domain_eval.py --unseen_lines \
    "$out/data_none" "${ckpts[@]}" > "$out/unseen_lines.jsonl"
$PY dev/domain_arms_summary.py "$out" > "$here/summary.txt"
$PY dev/domain_arms_summary.py "$out" "$out/unseen_lines.jsonl" > "$here/summary_unseen_lines.txt"
{
    start=$(head -1 "$out/pieces_s1/metrics.jsonl" | grep -o '"init_from": "[^"]*"' | cut -d'"' -f4)
    sha256sum "$start"
    for s in 1 2 3; do
        for arm in pieces none; do
            old=assets/domain/arms1200/${arm}_s$s.jsonl
            echo "$arm seed $s at 20 minutes: $(sed -n 2,3p "$old" | tr '\n' ' ')"
            echo "$arm seed $s at 1,000 steps: $(sed -n 2,3p "$out/${arm}_s$s/metrics.jsonl" \
                | tr '\n' ' ')"
        done
    done
} > "$here/sanity.txt"
cp "$out/loss_per_byte.jsonl" "$out/unseen_lines.jsonl" "$here/"
for s in 1 2 3; do
    for arm in pieces none; do
        cp "$out/${arm}_s$s.log" "$here/"
        cp "$out/${arm}_s$s/metrics.jsonl" "$here/${arm}_s$s.jsonl"
    done
done
