#!/usr/bin/env bash
# waits for the start model, then pieces beside scaled for seeds 1-3 (assets/domain/arms1200/scaled/PLAN.md)
cd /work/main
while pgrep -f 'out_dir=/work/runs/p3000_s1337' >/dev/null; do sleep 5; done
date
PAIRS=pieces,scaled bash dev/domain_arms.sh /work/runs/code /work/runs/p3000_s1337/ckpt.pt 2000 1200 /work/runs/arms_scaled 1 2 3
date
#!/usr/bin/env bash
# after scaled.sh: the unseen-lines scores (two processes, one thread each), then both summaries
cd /work/main
O=/work/runs/arms_scaled
while pgrep -f '/work/runs/scaled.sh' >/dev/null; do sleep 5; done
date
export OMP_NUM_THREADS=1
.venv/bin/python dev/domain_eval.py --unseen_lines $O/data_none $O/pieces_s1/ckpt.pt $O/scaled_s1/ckpt.pt $O/pieces_s2/ckpt.pt > $O/unseen_a.jsonl 2> $O/unseen_a.err &
.venv/bin/python dev/domain_eval.py --unseen_lines $O/data_none $O/scaled_s2/ckpt.pt $O/pieces_s3/ckpt.pt $O/scaled_s3/ckpt.pt > $O/unseen_b.jsonl 2> $O/unseen_b.err &
wait
cat $O/unseen_a.jsonl $O/unseen_b.jsonl > $O/unseen_lines.jsonl
.venv/bin/python dev/domain_arms_summary.py $O > $O/summary.txt 2>&1
.venv/bin/python dev/domain_arms_summary.py $O $O/unseen_lines.jsonl > $O/summary_unseen_lines.txt 2>&1
date
