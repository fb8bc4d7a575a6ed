#!/usr/bin/env bash
# The GPU measurements still to take (docs/gpu/README.md, "Left to measure"), run unattended in order of what they
# decide. Each step has a time limit and its own log; a failing step does not stop the next. Needs the embedded
# corpus prepared with its shrunken vocabularies (python prepare.py --shrink_vocab=2048,4096,8192).
#   bash docs/gpu/measure.sh results/     # about 30 minutes on one H100; `tail results/progress` to follow
set -u
R=${1:?give a folder for the logs}
mkdir -p "$R"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 WANDB_MODE=disabled
PY=${PYTHON:-python3}
step() {  # step NAME SECONDS COMMAND...
    local name=$1 limit=$2
    shift 2
    echo "$(date +%T) start $name" >>"$R/progress"
    timeout --kill-after=30 "$limit" "$@" >"$R/$name.log" 2>&1
    echo "$(date +%T) end $name rc=$?" >>"$R/progress"
}
# 0. the CUDA tests: correctness first (FlexAttention, one graph, the optimizer step without a host sync)
step test_cuda 300 $PY -m pytest -q tests/test_cuda.py
# 1. where train.py loses against the bench step: as is, without document packing, with fused AdamW
#    (StableAdamW, as is, compiles its update too: a longer limit)
SHORT=(--max_iters=150 --warmup_iters=20 --gradient_accumulation_steps=1 --wandb_log=False --eval_interval=1000
       --eval_iters=2 --checkpoint_interval=0 --always_save_checkpoint=False --init_from=scratch --overwrite=True)
step train_as_is 300 $PY train.py config/small_mlm.py "${SHORT[@]}" --out_dir="$R/out"
step train_no_packing 300 $PY train.py config/small_mlm.py "${SHORT[@]}" --out_dir="$R/out" --pack_documents=False
step train_fused_adamw 240 $PY train.py config/small_mlm.py "${SHORT[@]}" --out_dir="$R/out" \
    --optimizer_name=adamw --weight_decay_convention=torch --weight_decay=0.0125
step bench_optimizer 240 $PY bench.py --optimizer --shapes=small,base --out="$R/bench_optimizer.json"
# 2. the phases, moved early: one compile per new shape, and steps at 8,192 tokens
cat >"$R/phases.json" <<'EOF'
[{"name": "set_batch_size", "value": 32, "at_iter": 20},
 {"name": "set_batch_size", "value": 64, "at_iter": 40},
 {"name": "set_block_size", "value": 8192, "at_iter": 100},
 {"name": "set_batch_size", "value": 8, "max_wait_iters": 0},
 {"name": "set_rope_theta", "value": [160000.0, null], "max_wait_iters": 0},
 {"name": "set_lr", "value": 0.0003, "max_wait_iters": 0}]
EOF
step phases 420 $PY train.py config/modernbert_phases.py --schedule="$R/phases.json" --max_iters=200 \
    --warmup_iters=20 --gradient_accumulation_steps=1 --eval_interval=20 --eval_iters=2 --wandb_log=False \
    --out_dir="$R/out-phases" --init_from=scratch --overwrite=True
# 3. and 4. ModernBERT-base at 8,192 tokens, and the attention alone
step bench_base8192 540 $PY bench.py --shapes=base --block_sizes=8192 --batch_size=4 --shrunk_vocab=0 \
    --out="$R/bench_base8192.json"
step bench_attention 300 $PY bench.py --attention --block_sizes=1024,8192 --shapes=small,base \
    --out="$R/bench_attention.json"
# 5. the curriculum compiled through every operation, stopped (SIGTERM) after one and resumed
cat >"$R/curriculum.json" <<'EOF'
[{"name": "resize_vocabulary", "value": [null, 0.01], "at_iter": 100},
 {"name": "disable_vocab_remapping", "value": null, "max_wait_iters": 0},
 {"name": "set_embedding_finetune_mode", "value": true, "max_wait_iters": 0},
 {"name": "set_embedding_finetune_mode", "value": false, "max_wait_iters": 100}]
EOF
CURRICULUM=(config/small_mlm_shrink.py --schedule="$R/curriculum.json" --max_iters=300 --warmup_iters=30
            --gradient_accumulation_steps=1 --eval_interval=50 --eval_iters=5 --checkpoint_interval=50
            --wandb_log=False --out_dir="$R/out-curriculum")
echo "$(date +%T) start curriculum" >>"$R/progress"
$PY train.py "${CURRICULUM[@]}" >"$R/curriculum_1.log" 2>&1 &
pid=$!
for _ in $(seq 300); do
    grep -q "set_embedding_finetune_mode(True)" "$R/curriculum_1.log" && break
    kill -0 $pid 2>/dev/null || break
    sleep 1
done
kill -TERM $pid 2>/dev/null
wait $pid
step curriculum_2 300 $PY train.py "${CURRICULUM[@]}"
# 6. if time is left: the small step again, now with ours on packed documents beside the rest (document packing's
# cost in the bench, side by side with HF best)
step bench_small_packed 480 $PY bench.py --shapes=small --block_sizes=1024 --batch_size=64 --shrunk_vocab=0 \
    --out="$R/bench_small_packed.json"
touch "$R/DONE"
