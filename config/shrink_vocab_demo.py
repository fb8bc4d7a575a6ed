# The grow-as-you-go curriculum on the embedded corpus, on 2 CPU cores in a few minutes:
# train on a 4,096-token vocabulary (rare tokens -> RARE), grow to the full 50,368 when the val loss
# drops below 5.0 (or after 150 iterations at the latest), briefly train only the vocabulary
# parameters, then train everything. A new model starts at the unigram loss (5.6 in the 4,096-token
# space: the decoder bias holds the log-frequencies), so the trigger must lie below it or the resize
# fires at iteration 0.
#   python prepare.py --dataset=shakespeare --tokenizer=gpt2 --shrink_vocab=4096
#   python train.py config/shrink_vocab_demo.py
exec(open('config/demo_cpu.py').read())
out_dir = 'out-shrink-demo'
max_iters = 400
vocab_remapping_file = 'data/shakespeare/vocab_4096.pt'
schedule = [
    # source None: the new rows start from RARE's row
    {'name': 'resize_vocabulary', 'value': [None, 0.0], 'trigger_loss': 5.0, 'max_wait_iters': 150},
    {'name': 'disable_vocab_remapping', 'value': None, 'max_wait_iters': 0},
    {'name': 'set_embedding_finetune_mode', 'value': True, 'max_wait_iters': 0},
    {'name': 'set_embedding_finetune_mode', 'value': False, 'max_wait_iters': 50},
]
