#!/usr/bin/env bash
# seeds 4-6 of none beside added from the modernbert-tokenizer start (the protocol's second pair)
cd /work/main
echo start $(date) >> /work/runs/none_added456.log
PAIRS=none,added bash dev/domain_arms.sh /work/runs/code /work/runs/p3000mb_s1337/ckpt.pt \
    2000 1200 /work/runs/arms_mb_pr 4 5 6 >> /work/runs/none_added456.log 2>&1
echo end $(date) >> /work/runs/none_added456.log
