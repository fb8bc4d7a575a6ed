# The 5-minute curriculum of config/demo_curriculum_cpu.py with a staged grow: 70% of the budget in
# the 4,096 most frequent tokens, then the learning-rate decay in the 18,752 that cover every token
# train holds (a step costs about half a full-vocabulary one), and the grow to the full vocabulary
# at 97%, so that the model reads and predicts every token. docs/curriculum.md compares the two.
#   python prepare.py --dataset=shakespeare --tokenizer=gpt2 --shrink_vocab=4096,18752
#   OMP_NUM_THREADS=1 python train.py config/demo_staged_cpu.py
exec(open('config/demo_curriculum_cpu.py').read())
out_dir = 'out-demo-staged'
schedule = [
    {'name': 'resize_vocabulary', 'value': [None, 0.0, 'pieces'], 'at_fraction': 0.7},
    {'name': 'set_vocab_remapping', 'value': 'data/shakespeare/vocab_18752.pt',
     'max_wait_iters': 0},
    {'name': 'resize_vocabulary', 'value': [None, 0.0, 'pieces'], 'at_fraction': 0.97},
    {'name': 'disable_vocab_remapping', 'value': None, 'max_wait_iters': 0},
]
