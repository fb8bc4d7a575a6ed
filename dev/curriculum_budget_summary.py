"""
The table of dev/curriculum_budget.sh's folder (docs/curriculum.md): for each run its iterations,
tokens trained, full-space val loss at the end, fold_kl and the val loss right after the grow (the
curriculum), and its zero-shot scores; then the paired differences curriculum minus full
vocabulary by seed, with 95% t-intervals over seeds. Two other arms of the folder, and the file of
their zero-shot scores, may be named (the curriculum against a control that ran beside it).

    python dev/curriculum_budget_summary.py runs/budget300
    python dev/curriculum_budget_summary.py runs/budget300 cur4096,trainvocab \
        zero_shot_trainvocab.jsonl
"""
import json
import os
import sys

import numpy as np
from domain_arms_summary import t_interval

READINGS = {'val': 'val loss', 'zs': 'zero-shot accuracy', 'pll': 'pseudo-log-likelihood'}


def metrics(folder: str, run: str) -> list[dict]:
    """A run's records: its own folder's metrics.jsonl, or the copy beside it in the assets."""
    path = os.path.join(folder, run, 'metrics.jsonl')
    with open(path if os.path.exists(path) else os.path.join(folder, f'{run}.jsonl')) as f:
        return [json.loads(line) for line in f]


def run_row(records: list[dict], scores: dict) -> dict:
    evals = [r for r in records if 'val_loss' in r and not r.get('after_op')]
    grow = [r for r in records if r.get('op') == 'resize_vocabulary']
    after = [r['val_loss'] for r in records if r.get('after_op')]
    return dict(val=evals[-1]['val_loss'], iters=evals[-1]['iter'],
                tokens=max(r['tokens'] for r in records if 'tokens' in r),
                fold_kl=grow[0]['fold_kl'] if grow else None, after=after[0] if after else None,
                zs=scores['masked_accuracy'], pll=scores['pseudo_log_likelihood'])


def main() -> None:
    folder = sys.argv[1]
    first, second = (sys.argv[2] if len(sys.argv) > 2 else 'curriculum,full').split(',')
    with open(os.path.join(folder, sys.argv[3] if len(sys.argv) > 3 else 'zero_shot.jsonl')) as f:
        scores = [json.loads(line) for line in f]
    rows = {}
    for s in scores:
        run = os.path.basename(os.path.dirname(s['init_from']))
        rows[run] = run_row(metrics(folder, run), s)
        print(run, {k: round(v, 4) if isinstance(v, float) else v for k, v in rows[run].items()})
    seeds = sorted({run.rsplit('_s', 1)[1] for run in rows})
    for key, name in READINGS.items():
        d = np.array([rows[f'{first}_s{s}'][key] - rows[f'{second}_s{s}'][key] for s in seeds])
        print(f'{name}, {first} - {second}, seeds {seeds} {np.round(d, 4).tolist()}: '
              f'{t_interval(d)}')


if __name__ == '__main__':
    main()
