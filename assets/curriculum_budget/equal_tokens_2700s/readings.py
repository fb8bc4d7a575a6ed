"""PLAN.md's readings: per seed, the full vocabulary at the one-grow curriculum's iterations beside
that seed's curriculum and 45-minute full-vocabulary checkpoints of ../onegrow_vs_full: val loss at
the end, shakespeare_lines (mean of fine-tuning seeds 0 to 4) and layer-matrix RMS; then the plan's
rule on the lines gap at 1e-3, and the equal-token model at the rate its dev chooses.

    python assets/curriculum_budget/equal_tokens_2700s/readings.py <runs> <ogf runs> > readings.txt
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OGF = os.path.join(HERE, '..', 'onegrow_vs_full')
sys.path.insert(0, os.path.join(HERE, '..', 'onegrow_lines_rate'))
from weights import sizes  # noqa: E402

SEEDS = (1360, 1361)
RATES = ('1e-3', '0.0003333333333333333')
DEFICIT = -0.025  # the ten-seed study's curriculum - full on lines


def last_eval(path: str) -> tuple[int, float]:
    """The iteration and val loss of the run's last evaluation in its metrics.jsonl."""
    rows = [json.loads(line) for line in open(path)]
    row = [r for r in rows if 'val_loss' in r][-1]
    return row['iter'], row['val_loss']


def lines(raw: str, arm: str, seed: int, rate: str, ckpt: str) -> dict:
    run = json.load(open(os.path.join(raw, f'lines_{arm}_s{seed}_lr{rate}.json')))
    assert run['seeds'] == [0, 1, 2, 3, 4] and run['init_from'] == ckpt, (arm, seed, rate)
    return dict(test=np.array([r['accuracy'] for r in run['per_seed']]), dev=run['dev'])


def main() -> None:
    runs, ogf = sys.argv[1], sys.argv[2]
    arms = (('full, equal tokens', HERE, runs, 'full_equal'),
            ('curriculum, 2,700 s', OGF, ogf, 'curriculum'), ('full, 2,700 s', OGF, ogf, 'full'))
    gaps, variances, eq = [], [], {r: [] for r in RATES}
    for s in SEEDS:
        got = {}
        for name, raw, ckpts, arm in arms:
            it, val = last_eval(os.path.join(raw, f'{arm}_s{s}.jsonl'))
            ckpt = os.path.join(ckpts, f'{arm}_s{s}', 'ckpt.pt')
            got[arm] = lines(raw, arm, s, '1e-3', ckpt)
            for r in RATES if arm == 'full_equal' else ():
                if os.path.exists(os.path.join(raw, f'lines_{arm}_s{s}_lr{r}.json')):
                    eq[r].append(lines(raw, arm, s, r, ckpt))
            if arm == 'curriculum':
                iters = it
            rms, _ = sizes(ckpt)
            per = got[arm]['test']
            print(f'seed {s}, {name}: {it} iterations, val loss {val:.3f}, lines at 1e-3 '
                  f'{per.mean():.3f} ({", ".join(f"{a:.3f}" for a in per)}), '
                  f'layer-matrix RMS {rms:.3f}')
        assert last_eval(os.path.join(HERE, f'full_equal_s{s}.jsonl'))[0] == iters, s
        new, old = got['full_equal']['test'], got['full']['test']
        gaps.append(new.mean() - old.mean())
        variances.append(new.var(ddof=1) / len(new) + old.var(ddof=1) / len(old))
        print(f'seed {s}: lines at 1e-3, equal-token full - 2,700 s full {gaps[-1]:+.3f}, '
              f'curriculum - equal-token full {got["curriculum"]["test"].mean() - new.mean():+.3f}')
    gap, half = np.mean(gaps), 1.96 * np.sqrt(np.sum(variances)) / len(gaps)
    print(f'lines at 1e-3, equal-token full - 2,700 s full, mean of the seeds: {gap:+.3f} '
          f'({gap - half:+.3f} to {gap + half:+.3f}, fine-tuning noise only)')
    print(f'PLAN.md rule: many steps cost lines in the full vocabulary too: {gap + half < 0}; '
          f'part of the deficit is the curriculum\'s own: {gap - half > DEFICIT}')
    if any(len(eq[r]) < len(SEEDS) for r in RATES):
        print('equal-token full at 3.3e-4: not every run has finished; no dev choice')
        return
    dev = {r: np.mean([e['dev'] for e in eq[r]]) for r in RATES}
    pick = max(RATES, key=dev.get)
    print('equal-token full, dev by rate: ' + ', '.join(f'{r} {d:.3f}' for r, d in dev.items())
          + f'; at its choice, {pick}, test ' + ', '.join(
              f'{s} {e["test"].mean():.3f}' for s, e in zip(SEEDS, eq[pick])))


if __name__ == '__main__':
    main()
