#!/usr/bin/env bash
# pieces beside scaled for seeds 1-3, after the start model (PLAN.md), then the unseen-lines
# scores in two processes, one thread each, and both summaries
cd /work/main
while pgrep -f 'out_dir=/work/runs/p3000_s1337' >/dev/null; do sleep 5; done
O=/work/runs/arms_scaled
PAIRS=pieces,scaled bash dev/domain_arms.sh /work/runs/code /work/runs/p3000_s1337/ckpt.pt \
    2000 1200 $O 1 2 3
export OMP_NUM_THREADS=1
E=(.venv/bin/python dev/domain_eval.py --unseen_lines $O/data_none)
"${E[@]}" $O/pieces_s1/ckpt.pt $O/scaled_s1/ckpt.pt $O/pieces_s2/ckpt.pt > $O/unseen_a.jsonl &
"${E[@]}" $O/scaled_s2/ckpt.pt $O/pieces_s3/ckpt.pt $O/scaled_s3/ckpt.pt > $O/unseen_b.jsonl &
wait
cat $O/unseen_a.jsonl $O/unseen_b.jsonl > $O/unseen_lines.jsonl
.venv/bin/python dev/domain_arms_summary.py $O > $O/summary.txt
.venv/bin/python dev/domain_arms_summary.py $O $O/unseen_lines.jsonl > $O/summary_unseen_lines.txt
