"""
PLAN.md's readings: the 45-minute comparison over every valid pre-training seed, the first three
(../2700s) and the ones this folder adds; for each seed its runs, then curriculum - full paired by
seed with a 95% t-interval over the seeds, and the added seeds' mean alone. Fine-tuned scores are
each checkpoint's mean over its fine-tuning seeds.

    python assets/curriculum_budget/2700s_more/readings.py 1340 1341
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, 'dev')
from curriculum_budget_summary import metrics, run_row  # noqa: E402
from domain_arms_summary import t_interval  # noqa: E402
from finetune_summary import checkpoint_means  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIRST = os.path.join(HERE, '..', '2700s')
ARMS = ('curriculum', 'full')


def load(path: str) -> dict | list:
    with open(path) as f:
        return json.load(f) if path.endswith('.json') else [json.loads(line) for line in f]


def pretraining_rows(folder: str) -> dict:
    """Each run of a folder by name: iterations, tokens, val loss, fold_kl, zero-shot."""
    rows = {}
    for s in load(os.path.join(folder, 'zero_shot.jsonl')):
        run = os.path.basename(os.path.dirname(s['init_from']))
        rows[run] = run_row(metrics(folder, run), s, {})
    return rows


def finetuned(task: str, seeds: list[str]) -> dict:
    """Each arm's fine-tuned mean by pre-training seed: the first three from ../2700s's paired
    result (the curriculum and its baseline), the added ones from this folder's per-arm results."""
    first = load(os.path.join(FIRST, f'{task}_cur2700.json'))
    scores = {arm: dict(zip(('1337', '1338', '1339'), checkpoint_means(per_seed, 'accuracy', 3)))
              for arm, per_seed in zip(ARMS, (first['per_seed'], first['baseline']['per_seed']))}
    for arm in ARMS:
        added = load(os.path.join(HERE, f'{task}_{arm}.json'))
        scores[arm].update(zip(seeds, checkpoint_means(added['per_seed'], 'accuracy', 3)))
    return scores


def main() -> None:
    added = sys.argv[1:]
    rows = {**pretraining_rows(FIRST), **pretraining_rows(HERE)}
    for run in sorted(rows, key=lambda r: (r.rsplit('_s', 1)[1], r)):
        print(run, {k: np.round(v, 4).tolist() if isinstance(v, float) else v
                    for k, v in rows[run].items() if v is not None})
    every = ['1337', '1338', '1339', *added]
    readings = {name: {arm: {s: rows[f'{arm}_s{s}'][key] for s in every} for arm in ARMS}
                for name, key in (('val loss', 'val'), ('zero-shot accuracy', 'zs'),
                                  ('pseudo-log-likelihood', 'pll'))}
    for task, name in (('lines', 'shakespeare_lines'), ('works10', 'shakespeare_works')):
        readings[name] = finetuned(task, added)
    for name, by_arm in readings.items():
        for arm in ARMS:
            print(f'{name}, {arm}:', [round(float(by_arm[arm][s]), 4) for s in every])
        for seeds in (every, added):
            d = np.array([by_arm['curriculum'][s] - by_arm['full'][s] for s in seeds])
            mean = t_interval(d) if seeds is every else f'{d.mean():.4f} (no interval from two)'
            print(f'  curriculum - full, seeds {seeds} {np.round(d, 4).tolist()}: {mean}')


if __name__ == '__main__':
    main()
