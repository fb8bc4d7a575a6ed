#!/usr/bin/env bash
# the warm arm, seeds 1 and 2 side by side (what dev/domain_arms.sh's arm function runs), once the
# frozen probes of that session were done
cd /work/main
while [ ! -f /work/runs/probe300/DONE ]; do sleep 5; done
export OMP_NUM_THREADS=1 WANDB_MODE=disabled
out=/work/runs/arms_mb start=/work/runs/p3000mb_s1337/ckpt.pt
for s in 1 2; do
  .venv/bin/python train.py config/domain_cpu.py --time_budget=1200 --eval_interval=250 --seed=$s \
    --out_dir=$out/warm_s$s --init_from=$start --dataset=$out/data_none > $out/warm_s$s.log 2>&1 &
done
wait
OMP_NUM_THREADS=2 .venv/bin/python dev/domain_eval.py $out/data_none $out/warm_s{1,2}/ckpt.pt \
    >> $out/loss_per_byte.jsonl
OMP_NUM_THREADS=2 .venv/bin/python dev/domain_eval.py --unseen_lines $out/data_none \
    $out/warm_s{1,2}/ckpt.pt >> $out/unseen_lines.jsonl
echo done > $out/WARM_DONE
