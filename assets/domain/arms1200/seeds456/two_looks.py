"""The readings PLAN.md fixes for pieces - random over seeds 1-6, from dev/domain_eval.py's lines.

    python two_looks.py <scores of seeds 1-3 (jsonl)> <scores of seeds 4-6 (jsonl)>
"""
import json
import os
import sys

import numpy as np
from scipy import stats


def gaps(paths: list[str]) -> dict:
    """{seed: (pieces - random per score, per-document loss gaps, document bytes)}."""
    runs = {}
    for path in paths:
        for line in open(path):
            s = json.loads(line)
            arm, seed = os.path.basename(os.path.dirname(s['init_from'])).rsplit('_s', 1)
            if arm in ('pieces', 'random'):
                runs[arm, int(seed)] = s
    out = {}
    for seed in sorted({k[1] for k in runs}):
        p, r = runs['pieces', seed], runs['random', seed]
        out[seed] = (np.array([p['loss_per_byte'] - r['loss_per_byte'],
                               p['chain_loss_per_byte'] - r['chain_loss_per_byte']]),
                     np.array(p['document_losses']) - np.array(r['document_losses']),
                     np.array(p['document_bytes']))
    return out


def t_interval(d: np.ndarray, level: float) -> str:
    half = stats.t.ppf(0.5 + level / 2, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    return f'{d.mean():+.4f} ({level:.2%} t, {len(d) - 1} df: {d.mean() - half:+.4f} to ' \
           f'{d.mean() + half:+.4f})'


def main() -> None:
    per_seed = gaps(sys.argv[1:3])
    seeds = sorted(per_seed)
    print('seeds', seeds)
    rng = np.random.default_rng(0)
    for k, name in enumerate(('all at once', 'chain rule')):
        d = np.array([per_seed[s][0][k] for s in seeds])
        first, second = d[np.isin(seeds, [1, 2, 3])], d[np.isin(seeds, [4, 5, 6])]
        print(f'\n{name}: per seed {np.round(d, 4).tolist()}; below 0: {(d < 0).sum()} of {len(d)}')
        print('  seeds 4-6 alone:', t_interval(second, 0.95))
        print('  six seeds:', t_interval(d, 0.95), ';', t_interval(d, 0.9706))
        pooled = np.sqrt((first.var(ddof=1) + second.var(ddof=1)) / 2)
        half = stats.t.ppf(0.975, 4) * pooled * np.sqrt(2 / 3)
        diff = first.mean() - second.mean()
        print(f'  session check, seeds 1-3 minus 4-6: {diff:+.4f} (95% t, 4 df: {diff - half:+.4f}'
              f' to {diff + half:+.4f})')
        losses = sum(per_seed[s][1][:, k] for s in seeds)
        nbytes = per_seed[seeds[0]][2] * len(seeds)
        draws = rng.integers(0, len(losses), (4000, len(losses)))
        lo, hi = np.quantile(losses[draws].sum(1) / nbytes[draws].sum(1), [0.025, 0.975])
        print(f'  over files, six seeds held: {losses.sum() / nbytes.sum():+.4f} ({lo:+.4f} to '
              f'{hi:+.4f})')
        both = []
        for _ in range(4000):  # seeds and files resampled together
            ss = rng.choice(seeds, len(seeds))
            ff = rng.integers(0, len(losses), len(losses))
            both.append(sum(per_seed[s][1][ff, k] for s in ss).sum()
                        / (per_seed[seeds[0]][2][ff].sum() * len(ss)))
        lo, hi = np.quantile(both, [0.025, 0.975])
        print(f'  bootstrap over seeds and files together: {lo:+.4f} to {hi:+.4f}')
        nb = per_seed[seeds[0]][2]
        for f in np.argsort(-nb)[:3]:
            g = [per_seed[s][1][f, k] / nb[f] for s in seeds]
            print(f'  file of {nb[f]} bytes, per seed: {np.round(g, 4).tolist()}')


if __name__ == '__main__':
    main()
