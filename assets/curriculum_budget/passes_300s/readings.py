"""PLAN.md's readings: per corpus (tenth/, whole/) ../staged_vs_full/readings.py's validity, rates
chosen on dev and staged - full per seed, with each arm's passes over its corpus; then the
interaction (staged - full on the tenth) - (staged - full on the whole) with a Welch interval, at
the chosen rates and at each common rate, and the plan's verdict.

    python assets/curriculum_budget/passes_300s/readings.py > readings.txt
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.update(FT_SEEDS='0,1,2', TASKS='lines', SCORES='0', BUDGET='300',
                  LINES_RATES='0.0003333333333333333 1e-3')
sys.argv = sys.argv[:1]  # the shared readings take their folder from here, not from argv
sys.path.insert(0, os.path.join(HERE, '..', 'staged_vs_full'))
import readings as shared  # noqa: E402

# corpus: (seeds planned, its train split)
CORPORA = {'tenth': (4, 'data/shakespeare_tenth'), 'whole': (2, 'data/shakespeare')}
LINES = 'shakespeare_lines'


def welch(a: np.ndarray, b: np.ndarray) -> str:
    """mean(a) - mean(b) with its 95% Welch interval (the t quantile at the floor of the df)."""
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    diff, half = a.mean() - b.mean(), shared.T975[max(1, int(df))] * np.sqrt(va + vb)
    return f'{diff:+.4f} ({diff - half:+.4f} to {diff + half:+.4f}; Welch df {df:.1f})'


def main() -> None:
    got = {}
    for corpus, (planned, data) in CORPORA.items():
        print(f'== {corpus} ({data})')
        shared.HERE = os.path.join(HERE, corpus)
        got[corpus] = out = shared.main(planned)
        if out is None:
            continue
        train_tokens = os.path.getsize(os.path.join(data, 'train.bin')) // 2
        for seed in out['valid']:
            print(f'seed {seed} passes: ' + ', '.join(
                f"{arm} {shared.last_eval(seed, arm)['tokens'] / train_tokens:.1f}"
                for arm in shared.ARMS))
        for rate in shared.LINES_RATES:  # reading 3: every seed at one common rate
            rates = {(arm, 'lines'): rate for arm in shared.ARMS}
            out[rate] = np.array([shared.row(s, 'staged', rates)[LINES]
                                  - shared.row(s, 'full', rates)[LINES] for s in out['valid']])
            print(f'at {float(rate):g} both: staged - full {shared.t_interval(out[rate])}')
    if any(out is None for out in got.values()):
        return
    print('== the interaction, (staged - full on the tenth) - (staged - full on the whole)')
    for name in ('val loss', LINES):
        tenth, whole = (np.array(got[c]['diffs'][name]) for c in CORPORA)
        print(f'{name}, each arm at its chosen rate: {welch(tenth, whole)}')
    for rate in shared.LINES_RATES:
        print(f'{LINES} at {float(rate):g}: {welch(got["tenth"][rate], got["whole"][rate])}')
    tenth, whole = (np.mean(got[c]['diffs'][LINES]) for c in CORPORA)
    verdict = ('consistent with the passes lead' if tenth - whole <= -0.03 and tenth <= 0
               else 'against the passes lead' if tenth >= whole else 'not resolved')
    print(f'verdict (PLAN.md): {verdict}')


main()
