"""What differs inside the staged and full checkpoints of PLAN.md (exploratory, after its readings):
from the `dev/diagnose.py <ckpt> task=lines labels=5000 seed=0` outputs copied here (probe_*.txt),
each checkpoint's linear-probe test accuracy on the final mean-pooled states, the residual stream's
RMS after its layers, layer 0's attention entropy and the range of its matrices' RMS; staged - full
on the probe with a 95% t-interval over the seeds; beside it what fine-tuning every weight made of
the same checkpoints in ../staged_vs_full (3.3e-4, the rate both arms chose there): fine-tuning seed
0, whose 5,000 labels the probe learned from, and the mean of the five seeds, each minus the probe.
Then, from ../staged_vs_full's fine-tuning logs, the mean logged training loss of each epoch of
lines fine-tuning per arm and rate (ten checkpoints, five fine-tuning seeds, one logged batch of 32
every 50 steps), and staged - full in the second epoch's at 3.3e-4 over the ten seeds.

    python assets/curriculum_budget/lines_seen/inside.py > inside.txt
"""
import glob
import json
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..', 'dev'))
from domain_arms_summary import t_interval  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SEEDS = ('1356', '1357', '1358', '1359')
ARMS = ('staged', 'full')
STUDY = os.path.join(HERE, '..', 'staged_vs_full')
LOW = '0.0003333333333333333'


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


def finetuned(arm: str, seed: str) -> list[float]:
    """The ten-seed study's lines test accuracies of a checkpoint at 3.3e-4, fine-tuning seeds 0 to
    4."""
    with open(os.path.join(STUDY, f'lines_{arm}_s{seed}_lr{LOW}.json')) as f:
        return [r['accuracy'] for r in json.load(f)['per_seed']]


def epoch_losses(arm: str, rate: str, seed: str = '*') -> list[list[float]]:
    """The logged training losses of each epoch of lines fine-tuning at rate, over the logs that
    match."""
    epochs = [[], []]
    for path in glob.glob(os.path.join(STUDY, f'lines_{arm}_s{seed}_lr{rate}.log')):
        with open(path) as f:
            text = f.read()
        for e in (1, 2):
            epochs[e - 1] += [float(x) for x in
                              re.findall(rf'epoch {e}, step \d+/\d+: loss ([\d.]+)', text)]
    return epochs


def main() -> None:
    print('checkpoint: linear probe on the final mean-pooled states (5,000 labels), inside')
    scores = {arm: np.array([probe(arm, s) for s in SEEDS]) for arm in ARMS}
    print(f"staged - full, probe test: {t_interval(scores['staged'] - scores['full'], '+.4f')}")
    print('\nfine-tuned in ../staged_vs_full at 3.3e-4 minus the probe (seed 0; mean of 5 seeds)')
    gain = {}
    for arm in ARMS:
        runs = np.array([finetuned(arm, s) for s in SEEDS])
        gain[arm] = runs[:, 0] - scores[arm], runs.mean(1) - scores[arm]
        for s, run, first, mean in zip(SEEDS, runs, *gain[arm]):
            print(f'  {arm:7s} {s}  seed 0 {run[0]:.4f} ({first:+.4f})  '
                  f'mean {run.mean():.4f} ({mean:+.4f})')
    for k, name in enumerate(('seed 0', 'mean of 5')):
        print(f"staged - full, fine-tuned minus probe, {name}: "
              f"{t_interval(gain['staged'][k] - gain['full'][k], '+.4f')}")
    print('\nlines fine-tuning, mean logged training loss by epoch (../staged_vs_full)')
    for rate in (LOW, '1e-3'):
        for arm in ARMS:
            first, second = epoch_losses(arm, rate)
            print(f'  rate {float(rate):.2g} {arm:7s} epoch 1 {np.mean(first):.4f}, '
                  f'epoch 2 {np.mean(second):.4f}')
    seeds = sorted(re.search(r'_s(\d+)_', p)[1]
                   for p in glob.glob(os.path.join(STUDY, f'lines_full_s*_lr{LOW}.log')))
    gap = np.array([np.mean(epoch_losses('staged', LOW, s)[1])
                    - np.mean(epoch_losses('full', LOW, s)[1]) for s in seeds])
    print(f'staged - full, epoch 2 logged loss at 3.3e-4 over {len(seeds)} seeds: '
          f"{t_interval(gap, '+.4f')}")


if __name__ == '__main__':
    main()
