#!/usr/bin/env bash
set -uo pipefail
cd /work/main
sleep 30; while pgrep -f "dev/domain_arms.sh|embphase/run.sh" > /dev/null; do sleep 10; done
echo start $(date)
for s in 1 2 3; do
    PAIRS=pieces,random bash dev/domain_arms.sh /work/runs/code /work/runs/p3000mb_s1337/ckpt.pt \
        2000 1200 /work/runs/arms_mb_pr $s
    echo seed $s done $(date)
done
