"""
The table of dev/curriculum_budget.sh's folder (docs/curriculum.md): for each run its iterations,
tokens trained, full-space val loss at the end, fold_kl and the val loss right after the grow (the
curriculum), and its zero-shot scores; then the paired differences curriculum minus full
vocabulary by seed, with 95% t-intervals over seeds. Two other arms of the folder, and the file of
their zero-shot scores, may be named (the curriculum against a control that ran beside it). A run
that grows more than once lists each grow's fold_kl and after-grow val loss. With the folder's
val_loss_split.jsonl (dev/val_loss_split.py) the val loss with the ids train never holds folded
into one class, and over the targets train holds, are compared too.

    python dev/curriculum_budget_summary.py runs/budget300
    python dev/curriculum_budget_summary.py runs/budget300 cur4096,trainvocab \
        zero_shot_trainvocab.jsonl
"""
import json
import os
import sys

import numpy as np
from domain_arms_summary import t_interval

READINGS = {'val': 'val loss', 'folded': 'val loss, unseen ids folded',
            'held': 'val loss, held targets', 'zs': 'zero-shot accuracy',
            'pll': 'pseudo-log-likelihood'}


def metrics(folder: str, run: str) -> list[dict]:
    """A run's records: its own folder's metrics.jsonl, or the copy beside it in the assets."""
    path = os.path.join(folder, run, 'metrics.jsonl')
    with open(path if os.path.exists(path) else os.path.join(folder, f'{run}.jsonl')) as f:
        return [json.loads(line) for line in f]


def one_or_all(values: list):
    """None, the one value, or the list of them."""
    return None if not values else values[0] if len(values) == 1 else values


def run_row(records: list[dict], scores: dict, split: dict) -> dict:
    evals = [r for r in records if 'val_loss' in r and not r.get('after_op')]
    grow = [r['fold_kl'] for r in records if r.get('op') == 'resize_vocabulary']
    after = [r['val_loss'] for r in records if r.get('after_op')]
    return dict(val=evals[-1]['val_loss'], iters=evals[-1]['iter'],
                tokens=max(r['tokens'] for r in records if 'tokens' in r),
                fold_kl=one_or_all(grow), after=one_or_all(after),
                zs=scores['masked_accuracy'], pll=scores['pseudo_log_likelihood'],
                **{k: split[k] for k in ('folded', 'held') if k in split})


def main() -> None:
    folder = sys.argv[1]
    first, second = (sys.argv[2] if len(sys.argv) > 2 else 'curriculum,full').split(',')
    with open(os.path.join(folder, sys.argv[3] if len(sys.argv) > 3 else 'zero_shot.jsonl')) as f:
        scores = [json.loads(line) for line in f]
    split_path = os.path.join(folder, 'val_loss_split.jsonl')
    splits = {}
    if os.path.exists(split_path):
        with open(split_path) as f:
            splits = {os.path.basename(os.path.dirname(r['ckpt'])): r for r in map(json.loads, f)}
    rows = {}
    for s in scores:
        run = os.path.basename(os.path.dirname(s['init_from']))
        rows[run] = run_row(metrics(folder, run), s, splits.get(run, {}))
        print(run, {k: np.round(v, 4).tolist() if isinstance(v, (float, list)) else v
                    for k, v in rows[run].items()})
    seeds = sorted({run.rsplit('_s', 1)[1] for run in rows})
    for key, name in READINGS.items():
        if any(key not in row for row in rows.values()):
            continue
        d = np.array([rows[f'{first}_s{s}'][key] - rows[f'{second}_s{s}'][key] for s in seeds])
        print(f'{name}, {first} - {second}, seeds {seeds} {np.round(d, 4).tolist()}: '
              f'{t_interval(d)}')


if __name__ == '__main__':
    main()
