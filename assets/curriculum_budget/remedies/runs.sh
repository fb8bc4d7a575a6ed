#!/bin/bash
# issue 48: fine-tuning remedies on the 5- and 45-minute checkpoints (PLAN.md beside this file)
cd /work/main
O=/work/runs/remedies; mkdir -p $O
ckpts() {  # folder, arm: the three pre-training seeds' checkpoints
  echo $1/$2_s1337/ckpt.pt,$1/$2_s1338/ckpt.pt,$1/$2_s1339/ckpt.pt
}
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
(run s1_cur $(ckpts /work/runs/b300 curriculum) $S1; run s1_full $(ckpts /work/runs/b300 full) $S1
 run s1_full45 $(ckpts /work/runs/b2700 full) $S1) &
(run s2_cur $(ckpts /work/runs/b300 curriculum) $S2; run s2_full $(ckpts /work/runs/b300 full) $S2
 run s1_cur45 $(ckpts /work/runs/b2700 curriculum) $S1) &
wait
# each comparison again, read back from its cache, prints every run's cache path for
# dev/setting_change.py (the *_cached.log files)
