#!/bin/bash
# issue 48: fine-tuning remedies on the 5-minute checkpoints (PLAN.md beside this file)
cd /work/main
B=/work/runs/b300; O=/work/runs/remedies; mkdir -p $O
CUR=$B/curriculum_s1337/ckpt.pt,$B/curriculum_s1338/ckpt.pt,$B/curriculum_s1339/ckpt.pt
FULL=$B/full_s1337/ckpt.pt,$B/full_s1338/ckpt.pt,$B/full_s1339/ckpt.pt
COMMON="--task=shakespeare_works --max_train_samples=300 --epochs=10 --pooling=mean"
COMMON="$COMMON --learning_rate=1e-3,3e-3 --seeds=0,1,2 --baseline=scratch --device=cpu"
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 WANDB_MODE=disabled
run() {  # name, init, settings...
  local name=$1 init=$2; shift 2
  .venv/bin/python finetune.py --init_from=$init $COMMON "$@" \
      --out=$O/$name.json > $O/$name.log 2>&1
}
S1="--standardize --cache_dir=$O/cache_s1"
S2="--standardize --head_epochs=10 --cache_dir=$O/cache_s2"
(run s1_cur $CUR $S1; run s1_full $FULL $S1) &
(run s2_cur $CUR $S2; run s2_full $FULL $S2) &
wait
echo done
