#!/usr/bin/env bash
# warm beside none from the gpt2 start, seeds 1-2 (PLAN.md), then the unseen-lines score
set -euo pipefail
out=/work/runs/arms_gpt2_warm src=/work/runs/arms_gpt2_456
mkdir -p $out
for d in data_none data_ext data_added hf_added hf_start; do
    [ -e $out/$d ] || cp -r $src/$d $src/$d.log $out/ 2>/dev/null || cp -r $src/$d $out/
done
PAIRS=warm,none bash dev/domain_arms.sh /work/runs/code /work/runs/p3000_s1337/ckpt.pt 2000 1200 \
    $out 1 2
ckpts=()
for s in 1 2; do ckpts+=("$out/warm_s$s/ckpt.pt" "$out/none_s$s/ckpt.pt"); done
OMP_NUM_THREADS=2 .venv/bin/python dev/domain_eval.py --unseen_lines $out/data_none "${ckpts[@]}" \
    > $out/unseen_lines.jsonl
