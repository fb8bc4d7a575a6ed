#!/usr/bin/env bash
cd /work/main
export OMP_NUM_THREADS=1 WANDB_MODE=disabled
o=/work/runs/eqsched
mkdir -p $o
run() {  # seed N W D
    df=$(python3 -c "print(($2-$4+0.5)/$2)")
    .venv/bin/python train.py config/demo_cpu.py --seed=$1 --max_iters=$2 --warmup_iters=$3 \
        --decay_fraction=$df --eval_interval=250 --out_dir=$o/full_sched_s$1 \
        > $o/full_sched_s$1.log 2>&1
}
run 1337 1191 164 1071 &
run 1338 1251 168 1131
wait
run 1339 1191 159 1081
OMP_NUM_THREADS=2 .venv/bin/python dev/zero_shot.py $o/full_sched_s*/ckpt.pt > $o/zero_shot.jsonl \
    2> $o/zero_shot.err
echo done > $o/DONE
