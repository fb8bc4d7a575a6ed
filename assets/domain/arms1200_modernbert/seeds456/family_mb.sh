#!/usr/bin/env bash
# the code-family task from the modernbert start
# (assets/domain/arms1200_modernbert/seeds456/PLAN.md)
cd /work/main
export OMP_NUM_THREADS=1 WANDB_MODE=disabled HF_HUB_OFFLINE=1
until grep -q '^end' /work/runs/none_added456.log 2>/dev/null; do sleep 20; done
until [ -f /work/runs/tasks/code_family/test.jsonl ]; do sleep 20; done
R=/work/runs/arms_mb_pr
T=/work/runs/tasks/code_family
common="--task=files --train_file=$T/train.jsonl --validation_file=$T/dev.jsonl
 --test_file=$T/test.jsonl --pooling=mean --epochs=5 --learning_rate=1e-3,3e-3 --seeds=0,1,2
 --cache_dir=/work/runs/family_cache_mb"
ck() { echo $R/$1_s4/ckpt.pt,$R/$1_s5/ckpt.pt,$R/$1_s6/ckpt.pt; }
echo start $(date) >> /work/runs/family_mb.log
.venv/bin/python finetune.py $common --init_from=$(ck pieces) > $R/family_runs_pieces.log 2>&1 &
.venv/bin/python finetune.py $common --init_from=$(ck none) > $R/family_runs_none.log 2>&1
wait
.venv/bin/python finetune.py $common --init_from=$(ck pieces) --baseline=$(ck none) \
    --out=$R/family_pieces_none.json > $R/family_pieces_none.log 2>&1
echo primary $(date) >> /work/runs/family_mb.log
.venv/bin/python finetune.py $common --init_from=$(ck random) > $R/family_runs_random.log 2>&1 &
.venv/bin/python finetune.py $common --init_from=$(ck added) > $R/family_runs_added.log 2>&1
wait
for b in random added; do
    .venv/bin/python finetune.py $common --init_from=$(ck pieces) --baseline=$(ck $b) \
        --out=$R/family_pieces_$b.json > $R/family_pieces_$b.log 2>&1
done
echo end $(date) >> /work/runs/family_mb.log
