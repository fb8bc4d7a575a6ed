# ModernBERT-small (384 hidden, 12 layers, 6 heads, 768 intermediate, vocabulary 50,368: about 37M
# parameters) with ModernBERT's pre-training recipe on one GPU node; the rest of it (30% masking
# with 80/10/10, betas (0.9, 0.98), eps 1e-6, warmup-stable-decay with 1-sqrt decay over the last
# 10%) is train.py's defaults.
# Values against ModernBERT's own yaml files: docs/recipes.md.
#   python prepare.py --dataset=<corpus> --tokenizer=modernbert
#   torchrun --standalone --nproc_per_node=8 --max-restarts=3 train.py config/small_mlm.py \
#       --dataset=<corpus>
out_dir = 'out-small'
dataset = 'shakespeare'

hidden_size = 384
intermediate_size = 768
num_hidden_layers = 12
num_attention_heads = 6
# pre-training runs at 1,024 tokens with theta 10k on every layer; 160k is the context-extension
# phase's global theta
global_rope_theta = 10000.0

block_size = 1024
pack_documents = True  # windows of whole documents, attention within each (ModernBERT packs and
#                        unpads them)
batch_size = 64
gradient_accumulation_steps = 8  # 64 * 1024 * 8 = 524k tokens per step, over all ranks

eval_mask_rate = 0.15  # ModernBERT trains at 30% and evaluates at 15% "for consistent comparison"
optimizer_name = 'stable_adamw'
weight_decay_convention = 'decoupled'  # as ModernBERT states it: 1e-5 per step at the peak
#                                        learning rate
weight_decay = 1e-5
grad_clip = 0.0
warmup_iters = 1000
max_iters = 20000

eval_interval = 500
checkpoint_interval = 250  # a kill loses at most this many steps
init_from = 'auto'  # a torchrun --max-restarts relaunch or a requeued job continues from out_dir
eval_iters = 50
wandb_log = True
wandb_run_name = 'small-mlm'
