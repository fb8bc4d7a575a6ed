#!/usr/bin/env bash
# PLAN.md's rate rule: if any arm's best dev mean on either corpus is at 3.3e-4, the grid's lower
# edge, every checkpoint is fine-tuned at 1e-4 as well (as ../staged_vs_full/run.sh's finetune
# does), two at a time, into the runs folder and copied here.
#   bash assets/curriculum_budget/passes_300s/ext.sh <runs folder>
set -euo pipefail
runs=$1
here=assets/curriculum_budget/passes_300s
PY=${PY:-.venv/bin/python}
export OMP_NUM_THREADS=1 WANDB_MODE=disabled HF_HUB_OFFLINE=1
edge=$($PY - "$here" <<'PY'
import glob, json, sys
from collections import defaultdict
dev = defaultdict(list)  # (corpus, arm, rate): dev medians over seeds
for path in glob.glob(f'{sys.argv[1]}/*/lines_*_lr*.json'):
    corpus, name = path.split('/')[-2:]
    _, arm, _, rate = name[:-5].split('_', 3)
    dev[corpus, arm, rate[2:]].append(json.load(open(path))['dev'])
best = {}
for (corpus, arm, rate), values in dev.items():
    mean = sum(values) / len(values)
    if mean > best.get((corpus, arm), ('', -1))[1]:
        best[corpus, arm] = (rate, mean)
print(' '.join(f'{c}/{a}:{r}' for (c, a), (r, _) in sorted(best.items())), file=sys.stderr)
print(int(any(r == '0.0003333333333333333' for r, _ in best.values())))
PY
)
[ "$edge" = 1 ] || { echo "no arm at the lower edge: no 1e-4 runs"; exit 0; }
ckpts=$(ls -d "$runs"/{tenth,whole}/{staged,full}_s*/)
echo "$ckpts" | xargs -P 2 -I{} bash -c '
    d=${1%/}; name=$(basename "$d"); corpus=$(basename "$(dirname "$d")")
    '"$PY"' finetune.py --init_from="$d/ckpt.pt" --task=shakespeare_lines \
        --max_train_samples=5000 --epochs=2 --seeds=0,1,2 --pooling=mean --learning_rate=1e-4 \
        --zero_shot_tokens=0 --out="$(dirname "$d")/lines_${name%_s*}_s${name##*_s}_lr1e-4.json" \
        > "$(dirname "$d")/lines_${name%_s*}_s${name##*_s}_lr1e-4.log" 2>&1
    cp "$(dirname "$d")/lines_${name%_s*}_s${name##*_s}_lr1e-4".{json,log} '"$here"'/"$corpus"/
' _ {}
