# NeoBERT (768 hidden, 28 layers, 12 heads, SwiGLU 3072 -> 2048 units, RMSNorm, RoPE 10k, untied
# decoder) with its recipe: 20% masking, every selected token -> [MASK], AdamW (0.9, 0.95, eps 1e-8,
# wd 0.01 on every parameter), clipping 1.0, 2k warmup steps then cosine to 10%, block 1024
# (docs/recipes.md). NeoBERT uses bert-base-uncased's WordPiece:
#   python prepare.py --dataset=<corpus> --tokenizer=bert-base-uncased --out_dir=data/<corpus>_bert
# torchrun --standalone --nproc_per_node=8 --max-restarts=3 train.py config/neobert.py \
#     --dataset=<corpus>_bert
out_dir = 'out-neobert'
dataset = 'shakespeare_bert'

arch = 'neobert'
hidden_size = 768
intermediate_size = 3072
num_hidden_layers = 28
num_attention_heads = 12

block_size = 1024
batch_size = 32
gradient_accumulation_steps = 64  # 2.1M tokens per step, as NeoBERT

mask_rate = 0.20
mask_token_prob = 1.0
random_token_prob = 0.0
learning_rate = 6e-4
min_lr = 6e-5
beta1, beta2, adam_eps = 0.9, 0.95, 1e-8
weight_decay = 0.01
decay_1d_params = True  # NeoBERT decays norms and biases too
grad_clip = 1.0
lr_schedule = 'cosine'
warmup_iters = 2000
max_iters = 100000

eval_interval = 1000
checkpoint_interval = 250  # a kill loses at most this many steps
init_from = 'auto'  # a torchrun --max-restarts relaunch or a requeued job continues from out_dir
eval_iters = 50
wandb_log = True
wandb_run_name = 'neobert'
