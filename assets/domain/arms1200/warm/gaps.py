"""The readings warm/PLAN.md fixes, from dev/domain_eval.py's lines: warm - none (side by side), the
warm-up's share of pieces - none, pieces - warm across sessions, and none here minus none then.

    python gaps.py <first session's scores (jsonl)> <this folder's scores (jsonl)>
"""
import json
import os
import sys

import numpy as np
from scipy import stats


def load(path: str) -> dict:
    """{(arm, seed): score line}."""
    runs = {}
    for line in open(path):
        s = json.loads(line)
        arm, seed = os.path.basename(os.path.dirname(s['init_from'])).rsplit('_s', 1)
        runs[arm, int(seed)] = s
    return runs


def report(name: str, a: dict, b: dict, seeds: list[int], k: int) -> float:
    """a - b per seed, its 95% t-interval over seeds and its interval over files (seeds held)."""
    key = ('loss_per_byte', 'chain_loss_per_byte')[k]
    d = np.array([a[s][key] - b[s][key] for s in seeds])
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    losses = sum(np.array(a[s]['document_losses'])[:, k] - np.array(b[s]['document_losses'])[:, k]
                 for s in seeds)
    nbytes = np.array(a[seeds[0]]['document_bytes']) * len(seeds)
    draws = np.random.default_rng(0).integers(0, len(losses), (4000, len(losses)))
    lo, hi = np.quantile(losses[draws].sum(1) / nbytes[draws].sum(1), [0.025, 0.975])
    print(f'  {name}: per seed {np.round(d, 4).tolist()}, {d.mean():+.4f} (95% t over seeds '
          f'{d.mean() - half:+.4f} to {d.mean() + half:+.4f}; over files {lo:+.4f} to {hi:+.4f})')
    return d.mean()


def main() -> None:
    then, now = load(sys.argv[1]), load(sys.argv[2])
    seeds = sorted(s for name, s in now if name == 'warm')

    def arm(runs: dict, name: str) -> dict:
        return {s: runs[name, s] for s in seeds}

    for k, score in enumerate(('all at once', 'chain rule')):
        print(f'{score}, seeds {seeds}')
        warm_none = report('warm - none', arm(now, 'warm'), arm(now, 'none'), seeds, k)
        pieces_none = report('pieces (then) - none (then)', arm(then, 'pieces'),
                             arm(then, 'none'), seeds, k)
        print(f'  the warm-up\'s share of pieces - none on these seeds: '
              f'{warm_none / pieces_none:.2f}')
        report('pieces (then) - warm', arm(then, 'pieces'), arm(now, 'warm'), seeds, k)
        report('none (now) - none (then)', arm(now, 'none'), arm(then, 'none'), seeds, k)


if __name__ == '__main__':
    main()
