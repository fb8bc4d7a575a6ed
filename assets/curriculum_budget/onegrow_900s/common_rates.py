"""PLAN.md's amendment: both arms at each common rate of every task's grid (per seed, the mean test
accuracy of the fine-tuning seeds), the checkpoints below 0.545 on lines at each arm's chosen rate,
and the load readings outside 1.5 to 2.6.

    python assets/curriculum_budget/onegrow_900s/common_rates.py > readings_common.txt
"""
import glob
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SEEDS = ('1400', '1401')
GRID = {'lines': ('1e-4', '0.0003333333333333333', '1e-3'), 'works': ('1e-3', '3e-3', '9e-3')}
CHOSEN_LINES = {'curriculum': '1e-3', 'full': '0.0003333333333333333'}  # readings.txt


def test(task: str, arm: str, seed: str, rate: str) -> float:
    with open(os.path.join(HERE, f'{task}_{arm}_s{seed}_lr{rate}.json')) as f:
        return float(np.mean([r['accuracy'] for r in json.load(f)['per_seed']]))


for task, grid in GRID.items():
    for rate in grid:
        pairs = [(test(task, 'curriculum', s, rate), test(task, 'full', s, rate)) for s in SEEDS]
        print(f'{task} at {float(rate):g}: ' + '; '.join(
            f'seed {s} {c:.4f} - {f:.4f} = {c - f:+.4f}' for s, (c, f) in zip(SEEDS, pairs))
              + f'; mean {np.mean([c - f for c, f in pairs]):+.4f}')
for arm, rate in CHOSEN_LINES.items():
    low = [s for s in SEEDS if test('lines', arm, s, rate) < 0.545]
    print(f'{arm}: {len(low)} of {len(SEEDS)} checkpoints below 0.545 on lines at {float(rate):g}')
for path in sorted(glob.glob(os.path.join(HERE, 'loadavg_s*.txt'))):
    with open(path) as f:
        out = [line.strip() for line in f if not 1.5 <= float(line.split()[1]) <= 2.6]
    print(f'{os.path.basename(path)}: outside 1.5 to 2.6: {", ".join(out) or "none"}')
