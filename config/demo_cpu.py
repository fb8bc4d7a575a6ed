# A tiny ModernBERT that visibly learns on the embedded Shakespeare corpus in about five minutes
# on 2 CPU cores.
# python prepare.py --dataset=shakespeare --tokenizer=gpt2 && python train.py config/demo_cpu.py
out_dir = 'out-demo'
dataset = 'shakespeare'
device = 'cpu'
dtype = 'float32'
compile = False

hidden_size = 128
intermediate_size = 256
num_hidden_layers = 4
num_attention_heads = 4
local_attention = 64  # layers 1 and 2 see 32 tokens each side; 0 and 3 are global

block_size = 128
pack_documents = True  # every window starts with [CLS], as fine-tuning reads it (ModernBERT packs
#                        documents too)
batch_size = 16
gradient_accumulation_steps = 1

learning_rate = 3e-3
min_lr = 3e-4
max_iters = 300
warmup_iters = 30
lr_schedule = 'wsd'
decay_fraction = 0.3
# torch's convention (lr * wd per step): in effect none here. A decoupled 2e-3, ModernBERT's decay
# time scaled to this run, cost 0.1 of val loss and helped only on works (docs/curriculum.md)
weight_decay = 1e-5

eval_interval = 50
eval_iters = 10
log_interval = 10
