# ModernBERT-small (384 hidden, 12 layers, 6 heads, 768 intermediate, vocabulary 50,368: about 37M parameters),
# the ModernBERT recipe (30% masking, warmup-stable-decay with 1-sqrt decay, sparse prediction) on one GPU node.
# torchrun --standalone --nproc_per_node=8 train.py config/small_mlm.py --dataset=<your prepared dataset>
out_dir = 'out-small'
dataset = 'shakespeare'

hidden_size = 384
intermediate_size = 768
num_hidden_layers = 12
num_attention_heads = 6

block_size = 1024
batch_size = 64
gradient_accumulation_steps = 8  # 64 * 1024 * 8 = 524k tokens per step, over all ranks

mask_rate = 0.30
learning_rate = 8e-4
min_lr = 8e-5
beta1, beta2, adam_eps = 0.9, 0.98, 1e-6
weight_decay = 1e-5
grad_clip = 0.0
lr_schedule = 'wsd'
decay_shape = 'sqrt'
decay_fraction = 0.1
warmup_iters = 1000
max_iters = 20000

eval_interval = 500
eval_iters = 50
log_interval = 10
wandb_log = True
wandb_project = 'nanobert'
wandb_run_name = 'small-mlm'
