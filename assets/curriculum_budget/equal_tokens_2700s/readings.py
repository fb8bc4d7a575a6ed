"""PLAN.md's readings: per seed, the full vocabulary at the one-grow curriculum's iterations beside
that seed's curriculum and 45-minute full-vocabulary checkpoints of ../onegrow_vs_full: val loss at
the end, shakespeare_lines at 1e-3 (mean of fine-tuning seeds 0 to 4) and layer-matrix RMS.

    python assets/curriculum_budget/equal_tokens_2700s/readings.py <runs> <ogf runs> > readings.txt
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OGF = os.path.join(HERE, '..', 'onegrow_vs_full')
sys.path.insert(0, os.path.join(HERE, '..', 'onegrow_lines_rate'))
from weights import sizes  # noqa: E402

SEEDS = (1360, 1361)


def last_eval(path: str) -> tuple[int, float]:
    """The iteration and val loss of the run's last evaluation in its metrics.jsonl."""
    rows = [json.loads(line) for line in open(path)]
    row = [r for r in rows if 'val_loss' in r][-1]
    return row['iter'], row['val_loss']


def lines(path: str) -> tuple[float, list[float]]:
    run = json.load(open(path))
    assert run['learning_rate'] == 1e-3 and run['seeds'] == [0, 1, 2, 3, 4], path
    return run['mean'], [r['accuracy'] for r in run['per_seed']]


def main() -> None:
    runs, ogf = sys.argv[1], sys.argv[2]
    arms = (('full, equal tokens', HERE, runs, 'full_equal'), ('curriculum, 2,700 s', OGF, ogf,
            'curriculum'), ('full, 2,700 s', OGF, ogf, 'full'))
    gaps = []
    for s in SEEDS:
        got = {}
        for name, raw, ckpts, arm in arms:
            it, val = last_eval(os.path.join(raw, f'{arm}_s{s}.jsonl'))
            mean, per = lines(os.path.join(raw, f'lines_{arm}_s{s}_lr1e-3.json'))
            rms, _ = sizes(os.path.join(ckpts, f'{arm}_s{s}', 'ckpt.pt'))
            got[arm] = mean
            print(f'seed {s}, {name}: {it} iterations, val loss {val:.3f}, lines {mean:.3f} '
                  f'({", ".join(f"{a:.3f}" for a in per)}), layer-matrix RMS {rms:.3f}')
        gaps.append(got['full_equal'] - got['full'])
        print(f'seed {s}: lines, equal-token full - 2,700 s full {gaps[-1]:+.3f}, '
              f'curriculum - equal-token full {got["curriculum"] - got["full_equal"]:+.3f}')
    if all(g < -0.02 for g in gaps):
        verdict = 'many steps cost lines in the full vocabulary too'
    elif all(g > -0.01 for g in gaps):
        verdict = "the deficit is the curriculum's own"
    else:
        verdict = 'not resolved'
    print(f'PLAN.md rule: {verdict}')


if __name__ == '__main__':
    main()
