#!/usr/bin/env bash
# loop.sh REPO N TAG: run a tiny train.py under torchrun (two gloo ranks) N times in REPO, count the
# runs that exit non-zero and keep their stderr (/tmp/ddp_exit_TAG_fail_I.err); four loops at a
# time load the 2-core machine:
#   for k in 1 2 3 4; do bash loop.sh /path/to/repo 25 $k & done; wait
cd "$1" || exit 1
fails=0
for i in $(seq "$2"); do
    out=/tmp/ddp_exit_$3
    rm -rf "$out"
    PYTHONFAULTHANDLER=1 HF_HUB_OFFLINE=1 WANDB_MODE=disabled timeout 300 \
        .venv/bin/python -m torch.distributed.run --standalone --nproc_per_node=2 train.py \
        --hidden_size=32 --intermediate_size=64 --num_hidden_layers=3 --num_attention_heads=2 \
        --local_attention=16 --block_size=64 --batch_size=4 --eval_iters=2 --log_interval=1 \
        --device=cpu --dtype=float32 --compile=False --warmup_iters=2 --learning_rate=1e-3 \
        --min_lr=1e-4 --dataset=shakespeare --max_iters=4 --eval_interval=4 \
        --gradient_accumulation_steps=4 --out_dir="$out" >"$out.out" 2>"$out.err" ||
        { fails=$((fails + 1)); cp "$out.err" "${out}_fail_$i.err"; }
done
echo "loop $3: $fails of $2 failed"
