# config/small_mlm.py in ModernBERT's three phases, as schedule operations (docs/curriculum.md,
# docs/recipes.md):
# 1. batch-size warmup: the micro-batch grows 16 -> 64 sequences over the first 600 steps
#    (ModernBERT warms its batch up over its first 50B tokens; at 8 GPUs the accumulation steps are
#    already one per rank, so the micro-batch is what grows);
# 2. context extension at step 16,000: windows of 8,192 tokens (8 per micro-batch: the same tokens
#    per step), global RoPE theta 160k, local layers keeping 10k, peak learning rate 3e-4
#    (modernbert-base-context-extension.yaml);
# 3. the decay phase: the warmup-stable-decay schedule's last 10% (steps 18,000-20,000), at 8,192
#    tokens.
#   torchrun --standalone --nproc_per_node=8 --max-restarts=3 train.py config/modernbert_phases.py \
#       --dataset=<corpus>
exec(open('config/small_mlm.py').read())
out_dir = 'out-phases'
wandb_run_name = 'modernbert-phases'

batch_size = 16
schedule = [
    {'name': 'set_batch_size', 'value': 32, 'at_iter': 200},
    {'name': 'set_batch_size', 'value': 48, 'at_iter': 400},
    {'name': 'set_batch_size', 'value': 64, 'at_iter': 600},
    {'name': 'set_block_size', 'value': 8192, 'at_iter': 16000},
    {'name': 'set_batch_size', 'value': 8, 'max_wait_iters': 0},
    {'name': 'set_rope_theta', 'value': [160000.0, None], 'max_wait_iters': 0},
    {'name': 'set_lr', 'value': 3e-4, 'max_wait_iters': 0},
]
