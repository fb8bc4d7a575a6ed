# `make demo`'s staged curriculum with the batch sized so that a step costs about what a
# full-vocabulary step of 16 windows does: 64 windows in the 4,096 tokens (a step there is about 4
# times cheaper), 32 in the 18,752, 16 back in the full vocabulary. It trains about the tokens of
# the staged config in about the steps of the full-vocabulary one (PLAN.md).
#   OMP_NUM_THREADS=1 python train.py assets/curriculum_budget/equal_steps_2700s/config.py \
#       --time_budget=2700
exec(open('config/demo_staged_cpu.py').read())
out_dir = 'out-demo-equal-steps'
batch_size = 64
schedule = [
    {'name': 'resize_vocabulary', 'value': [None, 0.0, 'pieces'], 'at_fraction': 0.7},
    {'name': 'set_vocab_remapping', 'value': 'data/shakespeare/vocab_18752.pt',
     'max_wait_iters': 0},
    {'name': 'set_batch_size', 'value': 32, 'max_wait_iters': 0},
    {'name': 'resize_vocabulary', 'value': [None, 0.0, 'pieces'], 'at_fraction': 0.97},
    {'name': 'disable_vocab_remapping', 'value': None, 'max_wait_iters': 0},
    {'name': 'set_batch_size', 'value': 16, 'max_wait_iters': 0},
]
