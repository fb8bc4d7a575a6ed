#!/usr/bin/env bash
# What a domain vocabulary buys, at equal wall-clock or at equal steps (docs/domain.md): continued
# pre-training of one start model on a domain corpus in six arms, for each seed two arms side by
# side, one thread each on the 2 cores (so the arms of a pair share the machine's load), then MLM
# loss per byte of the held-out files for each run, added to <out>/loss_per_byte.jsonl. PAIRS says
# which arms run side by side (and which run at all): by default 'pieces,random none,added', so
# that the close comparison shares the load.
#   pieces: prepare.py --extend_tokenizer=N, the new rows from their pieces (train.py's default)
#   random: the same tokens, the new rows drawn as a new model's (--grow_rows=random)
#   scaled: random rows at the start model's mean row length (--grow_rows=random_scaled)
#   none:   the base tokenizer, plain continued pre-training
#   warm:   the base tokenizer, the vocabulary parameters alone for the first 100 iterations as the
#           arms with new rows (config/domain_cpu.py's schedule): none's recipe made theirs
#   added:  the same strings through transformers' add_tokens and resize_token_embeddings
#           (dev/hf_add_tokens.py)
# The three arms with new rows train them alone for their first 100 iterations
# (config/domain_cpu.py), and so does warm; none trains everything from the start.
# The budget is seconds of training steps (--time_budget), or with an 'it' suffix a number of
# iterations (--max_iters, warmup over the first 10% as a budgeted run has it): equal steps.
#   bash dev/domain_arms.sh <corpus folder> <start ckpt> <N> <budget> <out folder> <seed>...
#   bash dev/domain_arms.sh data/raw/code out-downstream/ckpt.pt 2000 600 runs/arms 1 2 3
#   PAIRS=pieces,none bash dev/domain_arms.sh data/raw/code out-downstream/ckpt.pt 2000 1000it \
#       runs/steps 1 2 3
set -euo pipefail
corpus=$1 start=$2 n=$3 budget=$4 out=$5
shift 5
pairs=${PAIRS:-pieces,random none,added}
if [[ $budget =~ ^[1-9][0-9]*it$ ]]; then
    length=(--max_iters="${budget%it}" --warmup_iters=$((${budget%it} / 10)))
elif [[ $budget =~ ^[0-9]*\.?[0-9]+$ ]]; then
    length=(--time_budget="$budget")
else
    echo "budget '$budget': give seconds (1200) or iterations (1000it)" >&2
    exit 1
fi
for pair in $pairs; do
    if [ "${pair%,*}" = "${pair#*,}" ]; then
        echo "PAIRS: '$pair' is not two different arms; write them as a,b (pieces,none)" >&2
        exit 1
    fi
done
for a in ${pairs//,/ }; do
    case $a in pieces|random|scaled|none|warm|added) ;;
        *) echo "PAIRS: unknown arm '$a'; the arms are pieces, random, scaled, none, warm," \
            "added" >&2
            exit 1 ;;
    esac
done
mkdir -p "$out"
export OMP_NUM_THREADS=1 WANDB_MODE=disabled
PY=${PY:-.venv/bin/python}
base=$($PY -c "import sys, torch; print(torch.load(sys.argv[1])['tokenizer']['name'])" "$start")
prep() {  # data folder, then prepare.py arguments
    [ -f "$out/$1/meta.json" ] || $PY prepare.py --dataset="$corpus" --out_dir="$out/$1" \
        --num_proc=1 "${@:2}" > "$out/$1.log" 2>&1
}
prep data_none --tokenizer="$base"
prep data_ext --tokenizer="$base" --extend_tokenizer="$n"
if [ ! -d "$out/hf_added" ]; then
    $PY export_hf.py --ckpt="$start" --out="$out/hf_start"
    $PY dev/hf_add_tokens.py "$out/hf_start" "$out/data_ext/tokenizer" "$out/hf_added"
fi
prep data_added --tokenizer="$out/hf_added"
arm() {  # arm name, seed, then train.py arguments
    $PY train.py config/domain_cpu.py "${length[@]}" --eval_interval=250 --seed="$2" \
        --out_dir="$out/$1_s$2" "${@:3}" > "$out/$1_s$2.log" 2>&1
}
run() {  # arm name, seed
    case $1 in
        pieces) arm pieces "$2" --init_from="$start" --dataset="$out/data_ext" ;;
        random) arm random "$2" --init_from="$start" --dataset="$out/data_ext" --grow_rows=random ;;
        scaled) arm scaled "$2" --init_from="$start" --dataset="$out/data_ext" \
            --grow_rows=random_scaled ;;
        none) arm none "$2" --init_from="$start" --dataset="$out/data_none" --schedule=[] ;;
        warm) arm warm "$2" --init_from="$start" --dataset="$out/data_none" ;;
        added) arm added "$2" --init_from="hf:$out/hf_added" --dataset="$out/data_added" ;;
    esac
}
for s in "$@"; do
    for pair in $pairs; do
        run "${pair%,*}" "$s" &
        run "${pair#*,}" "$s" &
        wait
    done
done
# Score this call's runs, on both cores now that training is done (a forward pass for each token of
# the longest word makes the chain-rule score the slow one), and add them to the folder's scores.
ckpts=()
for s in "$@"; do
    for a in ${pairs//,/ }; do ckpts+=("$out/${a}_s$s/ckpt.pt"); done
done
OMP_NUM_THREADS=2 $PY dev/domain_eval.py "$out/data_none" "${ckpts[@]}" \
    >> "$out/loss_per_byte.jsonl"
