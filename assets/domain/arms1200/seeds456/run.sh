#!/usr/bin/env bash
# seeds 4-6 of pieces beside random from the gpt2 start (issue 49), then the unseen-lines score
cd /work/main
echo start $(date) >> /work/runs/arms_gpt2_456.log
PAIRS=pieces,random bash dev/domain_arms.sh /work/runs/code /work/runs/p3000_s1337/ckpt.pt \
    2000 1200 /work/runs/arms_gpt2_456 4 5 6 >> /work/runs/arms_gpt2_456.log 2>&1
echo trained_and_scored $(date) >> /work/runs/arms_gpt2_456.log
