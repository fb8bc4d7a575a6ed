# ModernBERT-base (768 hidden, 22 layers, 12 heads, 1152 intermediate, 149.7M parameters) with the paper's recipe
# scaled to one 8-GPU node: 30% masking, AdamW (0.9, 0.98, eps 1e-6, decoupled wd 1e-5, none on 1-D params),
# no gradient clipping, warmup-stable-decay at 8e-4 with 1-sqrt decay, block 1024.
# Data: prepare with the ModernBERT tokenizer, e.g.
#   python prepare.py --dataset=<corpus> --tokenizer=modernbert --out_dir=data/<corpus>_modernbert
# torchrun --standalone --nproc_per_node=8 train.py config/modernbert_base.py --dataset=<corpus>_modernbert
out_dir = 'out-base'
dataset = 'shakespeare'

hidden_size = 768
intermediate_size = 1152
num_hidden_layers = 22
num_attention_heads = 12

block_size = 1024
batch_size = 32
gradient_accumulation_steps = 32  # 32 * 1024 * 32 = 1.05M tokens per step (the paper: 4.7M at full scale)

mask_rate = 0.30
learning_rate = 8e-4
min_lr = 0.0
beta1, beta2, adam_eps = 0.9, 0.98, 1e-6
weight_decay = 1e-5
grad_clip = 0.0
lr_schedule = 'wsd'
decay_shape = 'sqrt'
decay_fraction = 0.1
warmup_iters = 3000  # about 3B tokens
max_iters = 100000

eval_interval = 1000
eval_iters = 50
wandb_log = True
wandb_run_name = 'modernbert-base'
