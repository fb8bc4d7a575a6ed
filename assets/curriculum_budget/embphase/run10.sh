#!/usr/bin/env bash
# waits for the scoring on both cores, then the embedding-phase pairs, then zero-shot
set -uo pipefail
cd /work/main
while pgrep -f "dev/domain_eval.py" > /dev/null; do sleep 10; done
echo start $(date)
export OMP_NUM_THREADS=1 WANDB_MODE=disabled
out=/work/runs/embphase10
mkdir -p $out && cp assets/curriculum_budget/embphase/phase10.json $out/
for s in 1337 1338 1339; do
    .venv/bin/python train.py config/demo_curriculum_cpu.py --seed=$s \
        --out_dir=$out/curriculum_s$s > $out/curriculum_s$s.log 2>&1 &
    .venv/bin/python train.py config/demo_curriculum_cpu.py --seed=$s --schedule=$out/phase10.json \
        --out_dir=$out/phase10_s$s > $out/phase10_s$s.log 2>&1 &
    wait
done
OMP_NUM_THREADS=2 .venv/bin/python dev/zero_shot.py $out/*_s*/ckpt.pt > $out/zero_shot.jsonl
echo done $(date)
