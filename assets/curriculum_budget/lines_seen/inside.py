"""What differs inside the staged and full checkpoints of PLAN.md (exploratory, after its readings):
from the `dev/diagnose.py <ckpt> task=lines labels=5000 seed=0` outputs copied here (probe_*.txt),
each checkpoint's linear-probe test accuracy on the final mean-pooled states, the residual stream's
RMS after its layers, layer 0's attention entropy and the range of its matrices' RMS; staged - full
on the probe with a 95% t-interval over the seeds; then, from ../staged_vs_full's fine-tuning logs,
the mean logged training loss of each epoch of lines fine-tuning per arm and rate (ten checkpoints,
five fine-tuning seeds, one logged batch every 50 steps).

    python assets/curriculum_budget/lines_seen/inside.py > inside.txt
"""
import glob
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..', 'dev'))
from domain_arms_summary import t_interval  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SEEDS = ('1356', '1357', '1358', '1359')
ARMS = ('staged', 'full')


def probe(arm: str, seed: str) -> float:
    with open(os.path.join(HERE, f'probe_{arm}_s{seed}.txt')) as f:
        text = f.read()
    test = float(re.search(r'test ([\d.]+)', text)[1])
    residual = ' '.join(re.findall(r'^L\d .*rms ([\d.]+)$', text, re.M))
    entropy = re.search(r'per layer: ([\d.]+)', text)[1]
    matrices = [float(x) for x in re.findall(r'weight=([\d.]+)/', text)]
    print(f'  {arm:7s} {seed}  probe test {test:.4f}  residual RMS {residual}  layer 0 entropy '
          f'{entropy}  matrix RMS {min(matrices):.3f} to {max(matrices):.3f}')
    return test


def main() -> None:
    print('checkpoint: linear probe on the final mean-pooled states (5,000 labels), inside')
    scores = {arm: np.array([probe(arm, s) for s in SEEDS]) for arm in ARMS}
    print(f"staged - full, probe test: {t_interval(scores['staged'] - scores['full'], '+.4f')}")
    print('\nlines fine-tuning, mean logged training loss by epoch (../staged_vs_full)')
    for rate in ('0.0003333333333333333', '1e-3'):
        for arm in ARMS:
            epochs = [[], []]
            for path in glob.glob(os.path.join(HERE, '..', 'staged_vs_full',
                                               f'lines_{arm}_s*_lr{rate}.log')):
                with open(path) as f:
                    text = f.read()
                for e in (1, 2):
                    epochs[e - 1] += [float(x) for x in
                                      re.findall(rf'epoch {e}, step \d+/\d+: loss ([\d.]+)', text)]
            print(f'  rate {float(rate):.2g} {arm:7s} epoch 1 {np.mean(epochs[0]):.4f}, '
                  f'epoch 2 {np.mean(epochs[1]):.4f}')


if __name__ == '__main__':
    main()
