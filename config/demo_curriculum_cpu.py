# The demo model with the grow-as-you-go vocabulary on a budget of 5 minutes of training on one
# CPU core: 70% of the budget in the 4,096 most frequent tokens (the rest remapped to RARE), where a
# step costs a quarter of a full-vocabulary one, then the grow, the tokens RARE stood for starting
# from their pieces, and the learning-rate decay in the full vocabulary. docs/curriculum.md compares
# it with config/demo_cpu.py on the same budget.
#   python prepare.py --dataset=shakespeare --tokenizer=gpt2 --shrink_vocab=4096
#   OMP_NUM_THREADS=1 python train.py config/demo_curriculum_cpu.py
#   OMP_NUM_THREADS=1 python train.py config/demo_cpu.py --time_budget=300   # the full vocabulary
exec(open('config/demo_cpu.py').read())
out_dir = 'out-demo-curriculum'
time_budget = 300  # seconds of training steps; max_iters now only shapes the learning rate
eval_interval = 250
vocab_remapping_file = 'data/shakespeare/vocab_4096.pt'
schedule = [
    # wsd decays over the last 30% (demo_cpu.py): the full vocabulary gets the whole decay
    {'name': 'resize_vocabulary', 'value': [None, 0.0, 'pieces'], 'at_fraction': 0.7},
    {'name': 'disable_vocab_remapping', 'value': None, 'max_wait_iters': 0},
]
