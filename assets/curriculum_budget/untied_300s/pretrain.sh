#!/usr/bin/env bash
# PLAN.md: U, the demo's staged config with the decoder untied from the token embedding, beside
# the staged config as it is (A), one seed of each at a time, one thread each, so the pair shares
# the machine's load.
#   bash assets/curriculum_budget/untied_300s/pretrain.sh <folder>
set -euo pipefail
out=$1
mkdir -p "$out"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled
PY=${PY:-.venv/bin/python}
arm() {  # seed, folder name, settings...
    local s=$1 name=$2; shift 2
    $PY train.py config/demo_staged_cpu.py --time_budget=300 --seed="$s" "$@" \
        --out_dir="$out/${name}_s$s" > "$out/${name}_s$s.log" 2>&1
}
for s in 1337 1338 1339 1340 1341; do
    arm "$s" untied "--model_overrides={'tie_word_embeddings': False}" &
    arm "$s" staged &
    wait
done
