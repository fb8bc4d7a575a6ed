# ModernBERT-base (768 hidden, 22 layers, 12 heads, 1152 intermediate, 149.7M parameters) with the
# paper's pre-training phase scaled to one 8-GPU node: config/small_mlm.py's recipe at base size and
# a longer warmup.
# Values against ModernBERT's own yaml files: docs/recipes.md.
#   python prepare.py --dataset=<corpus> --tokenizer=modernbert --out_dir=data/<corpus>_modernbert
#   torchrun --standalone --nproc_per_node=8 train.py config/modernbert_base.py \
#       --dataset=<corpus>_modernbert
exec(open('config/small_mlm.py').read())
out_dir = 'out-base'

hidden_size = 768
intermediate_size = 1152
num_hidden_layers = 22
num_attention_heads = 12

batch_size = 32
gradient_accumulation_steps = 32  # 32 * 1024 * 32 = 1.05M tokens per step (the paper: 4.7M at
#                                   full scale)
min_lr = 0.0
warmup_iters = 3000  # about 3B tokens
max_iters = 100000

eval_interval = 1000
wandb_run_name = 'modernbert-base'
