#!/usr/bin/env bash
# pieces at N of 500 and of 8,000 side by side, 600 s, seed 1 (PLAN.md), then both scored
set -euo pipefail
out=${1:-/work/runs/n_probe} start=/work/runs/p3000_s1337/ckpt.pt
export OMP_NUM_THREADS=1 WANDB_MODE=disabled
mkdir -p $out
[ -d $out/data_none ] || cp -r /work/runs/arms_gpt2_456/data_none $out/
for n in 500 8000; do
    [ -f $out/data_n$n/meta.json ] || .venv/bin/python prepare.py --dataset=/work/runs/code \
        --out_dir=$out/data_n$n --num_proc=1 --tokenizer=gpt2 --extend_tokenizer=$n \
        > $out/data_n$n.log 2>&1 &
done
wait
for n in 500 8000; do
    .venv/bin/python train.py config/domain_cpu.py --time_budget=600 --eval_interval=250 --seed=1 \
        --out_dir=$out/pieces_n${n}_s1 --init_from=$start --dataset=$out/data_n$n \
        > $out/pieces_n${n}_s1.log 2>&1 &
done
wait
OMP_NUM_THREADS=2 .venv/bin/python dev/domain_eval.py $out/data_none $out/pieces_n500_s1/ckpt.pt \
    $out/pieces_n8000_s1/ckpt.pt > $out/loss_per_byte.jsonl
