# Continued pre-training on a domain whose tokenizer extends gpt2 (docs/domain.md): the demo model
# pre-trained on Shakespeare (config/downstream_cpu.py) grows into the domain's tokens when the run
# starts, trains the vocabulary rows alone for 100 iterations, then everything.
#   python dev/domain_corpus.py transformers==5.23.0 4 data/raw/code
#   python prepare.py --dataset=data/raw/code --out_dir=data/code --tokenizer=gpt2 \
#       --extend_tokenizer=2000
#   python train.py config/domain_cpu.py
exec(open('config/demo_cpu.py').read())
dataset = 'code'
init_from = 'out-downstream/ckpt.pt'
out_dir = 'out-code'
schedule = [
    {'name': 'set_embedding_finetune_mode', 'value': True, 'at_iter': 0},
    {'name': 'set_embedding_finetune_mode', 'value': False, 'at_iter': 100},
]
