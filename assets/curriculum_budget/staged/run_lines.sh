#!/usr/bin/env bash
# PLAN_lines.md: each arm fine-tuned on shakespeare_lines into a run cache on its own core, then
# the staged grow against one grow, paired, read back from the cache.
#   bash assets/curriculum_budget/staged/run_lines.sh <runs folder> <out folder>
set -euo pipefail
runs=$1 out=$2
mkdir -p "$out"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled
PY=${PY:-.venv/bin/python}
ckpts() { echo "$runs/$1_s1337/ckpt.pt,$runs/$1_s1338/ckpt.pt,$runs/$1_s1339/ckpt.pt"; }
task=(--task=shakespeare_lines --max_train_samples=5000 --epochs=2 --pooling=mean
      --learning_rate=1e-3,3e-3 --seeds=0,1,2 --cache_dir="$out/cache")
for arm in staged cur4096; do
    $PY finetune.py --init_from="$(ckpts $arm)" "${task[@]}" --out="$out/lines_$arm.json" \
        > "$out/lines_runs_$arm.log" 2>&1 &
done
wait
# every run is in the cache now; the zero-shot scores are dev/zero_shot.py's (zero_shot.jsonl)
$PY finetune.py --init_from="$(ckpts staged)" --baseline="$(ckpts cur4096)" "${task[@]}" \
    --zero_shot_tokens=0 --out="$out/lines_staged_vs_cur.json" > "$out/lines_staged_vs_cur.log" 2>&1
