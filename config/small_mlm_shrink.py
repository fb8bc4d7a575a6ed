# ModernBERT-small with the grow-as-you-go curriculum at GPU scale: train on a 4,096-token
# vocabulary (the embedding and decoder shrink from 19.3M to 1.6M parameters), grow to the full
# 50,368 once the val loss is below 3.0 (or 5,000 iterations in at the latest), train only the
# vocabulary parameters for 500 iterations, then everything.
#   python prepare.py --dataset=<corpus> --tokenizer=gpt2 --shrink_vocab=4096
#   torchrun --standalone --nproc_per_node=8 train.py config/small_mlm_shrink.py \
#       --dataset=<corpus> --vocab_remapping_file=data/<corpus>/vocab_4096.pt
exec(open('config/small_mlm.py').read())
out_dir = 'out-small-shrink'
wandb_run_name = 'small-mlm-shrink'
vocab_remapping_file = 'data/shakespeare/vocab_4096.pt'
schedule = [
    {'name': 'resize_vocabulary', 'value': [None, 0.01], 'trigger_loss': 3.0,
     'max_wait_iters': 5000},
    {'name': 'disable_vocab_remapping', 'value': None, 'max_wait_iters': 0},
    {'name': 'set_embedding_finetune_mode', 'value': True, 'max_wait_iters': 0},
    {'name': 'set_embedding_finetune_mode', 'value': False, 'max_wait_iters': 500},
]
