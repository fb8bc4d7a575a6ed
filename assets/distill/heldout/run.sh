#!/usr/bin/env bash
# GUIDE + distillation students on the held-out split, docs/guide.md's recipe
cd /work/main
export OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 WANDB_MODE=disabled
PY=.venv/bin/python
R=/work/runs/guide
T=/work/runs/p3000_s1337/ckpt.pt
DIMS="--hidden_size=64 --num_attention_heads=2 --intermediate_size=128 --num_hidden_layers=4"
[ -f $R/guide.pt ] || $PY init_guide.py --teacher=$T --out=$R/guide.pt $DIMS --guide_layers=all > $R/init_guide.log 2>&1 || exit 1
jobs=()
for s in 1 2 3; do
  RUN="config/demo_cpu.py $DIMS --max_iters=400 --eval_interval=100 --eval_iters=20 --seed=$s --wandb_log=False"
  jobs+=("$RUN --out_dir=$R/guide_kd_s$s --init_from=$R/guide.pt --teacher=$T")
  jobs+=("$RUN --out_dir=$R/guide_s$s --init_from=$R/guide.pt")
  jobs+=("$RUN --out_dir=$R/random_s$s")
done
printf '%s\n' "${jobs[@]}" | xargs -P 2 -I{} sh -c "$PY train.py {} > \$(echo '{}' | sed 's/.*--out_dir=\([^ ]*\).*/\1/').log 2>&1"
echo done > $R/DONE
