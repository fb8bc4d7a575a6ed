"""The equal-step gap beside the 20-minute one (PLAN.md's addendum): pieces - none per seed, paired
and unpaired (Welch), and the change Delta = gap at 1,000 steps - gap at 20 minutes, for each score
and for the chain rule on the lines train never held.

    python assets/domain/steps1000/delta.py > assets/domain/steps1000/delta.txt
"""
import json
import os

import numpy as np
from scipy import stats

HERE = os.path.dirname(os.path.abspath(__file__))
BEFORE = os.path.join(HERE, '..', 'arms1200')


def read(path: str, score: str) -> dict:
    """{(arm, seed): score} for the pieces and none runs of seeds 1-3 in a scores file."""
    out = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            arm, seed = os.path.basename(os.path.dirname(r['init_from'])).rsplit('_s', 1)
            if arm in ('pieces', 'none') and seed in '123':
                out[arm, int(seed)] = r[score]
    return out


def t95(x: np.ndarray) -> str:
    half = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
    return f'{x.mean():+.4f} ({x.mean() - half:+.4f} to {x.mean() + half:+.4f})'


def welch(a: np.ndarray, b: np.ndarray) -> str:
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    d, half = a.mean() - b.mean(), stats.t.ppf(0.975, df) * np.sqrt(va + vb)
    return f'{d:+.4f} ({d - half:+.4f} to {d + half:+.4f}; {df:.1f} df)'


for name, score in (('loss_per_byte', 'chain_loss_per_byte'), ('loss_per_byte', 'loss_per_byte'),
                    ('unseen_lines', 'chain_loss_per_byte')):
    now = read(os.path.join(HERE, f'{name}.jsonl'), score)
    then = read(os.path.join(BEFORE, f'{name}.jsonl'), score)
    print(f'{name}.jsonl, {score}')
    gaps = {}
    for label, s in (('1,000 steps', now), ('20 minutes', then)):
        p = np.array([s['pieces', k] for k in (1, 2, 3)])
        n = np.array([s['none', k] for k in (1, 2, 3)])
        gaps[label] = p - n
        print(f'  {label}: pieces {np.round(p, 4).tolist()}, none {np.round(n, 4).tolist()}')
        print(f'    pieces - none per seed {np.round(p - n, 4).tolist()}: paired {t95(p - n)};'
              f' Welch {welch(p, n)}')
    delta = gaps['1,000 steps'] - gaps['20 minutes']
    print(f'  Delta (1,000 steps - 20 minutes) per seed {np.round(delta, 4).tolist()}:',
          t95(delta))
