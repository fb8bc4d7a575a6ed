#!/usr/bin/env bash
# the code-family task from the modernbert start, arms random and added
# (seeds456/PLAN.md, section 2)
cd /work/main
export OMP_NUM_THREADS=1 WANDB_MODE=disabled HF_HUB_OFFLINE=1
R=/work/runs/arms_mb_pr
T=/work/runs/tasks/code_family
common="--task=files --train_file=$T/train.jsonl --validation_file=$T/dev.jsonl
 --test_file=$T/test.jsonl --pooling=mean --epochs=5 --learning_rate=1e-3,3e-3 --seeds=0,1,2
 --cache_dir=/work/runs/family_cache_mb"
ck() { echo $R/$1_s4/ckpt.pt,$R/$1_s5/ckpt.pt,$R/$1_s6/ckpt.pt; }
# (it first waited for a CPU run of another experiment to finish)
echo start random $(date) >> /work/runs/family_ra.log
.venv/bin/python finetune.py $common --init_from=$(ck random) > $R/family_runs_random.log 2>&1 &
until [ -f /work/runs/eqsched/DONE ]; do sleep 20; done
echo start added $(date) >> /work/runs/family_ra.log
.venv/bin/python finetune.py $common --init_from=$(ck added) > $R/family_runs_added.log 2>&1
wait
for b in random added; do
    .venv/bin/python finetune.py $common --init_from=$(ck pieces) --baseline=$(ck $b) \
        --out=$R/family_pieces_$b.json > $R/family_pieces_$b.log 2>&1
done
echo end $(date) >> /work/runs/family_ra.log
