"""PLAN.md's readings: shakespeare_lines at 3e-3 beside the ten-seed study's 3.3e-4 and 1e-3, all on
fine-tuning seeds 0 to 2; each arm's rate chosen on dev, curriculum - full with 95% t-intervals.

    python assets/curriculum_budget/onegrow_lines_rate/readings.py > readings.txt
"""
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
STUDY = os.path.join(HERE, '..', 'onegrow_vs_full')
sys.path.insert(0, os.path.join(HERE, '..', 'lines_lpft'))
sys.path.insert(0, os.path.join(HERE, '..', '..', '..', 'dev'))
from domain_arms_summary import t_interval  # noqa: E402
from readings import accuracies  # noqa: E402

ARMS = ('curriculum', 'full')
SEEDS = [str(s) for s in range(1360, 1370)]
RATES = ('0.0003333333333333333', '1e-3', '3e-3')


def stem(arm: str, seed: str, rate: str) -> str:
    """The result's path without its extension: the study's runs, or this folder's at 3e-3."""
    if rate == '3e-3':
        return os.path.join(HERE, f'lines_{arm}_s{seed}')
    return os.path.join(STUDY, f'lines_{arm}_s{seed}_lr{rate}')


def dev_median(arm: str, seed: str, rate: str) -> float:
    """The median dev accuracy of fine-tuning seeds 0 to 2, read from the run's log."""
    with open(stem(arm, seed, rate) + '.log') as f:
        dev = {int(s): float(d) for s, d in re.findall(r'seed (\d+): dev ([0-9.]+)', f.read())}
    return float(np.median([dev[s] for s in range(3)]))


def main() -> None:
    seeds = [s for s in SEEDS if all(os.path.exists(stem(a, s, '3e-3') + '.json') for a in ARMS)]
    print(f'{len(seeds)} of {len(SEEDS)} pre-training seeds complete in both arms: {seeds}')
    test, chosen = {}, {}
    for arm in ARMS:
        dev = {r: np.mean([dev_median(arm, s, r) for s in seeds]) for r in RATES}
        chosen[arm] = max(RATES, key=dev.get)
        print(f'{arm}, dev (mean over checkpoints of the median of seeds 0-2): '
              + ', '.join(f'{float(r):.2g} {d:.4f}' for r, d in dev.items())
              + f'; chosen {float(chosen[arm]):.2g}')
        test[arm] = {r: np.array([accuracies(stem(arm, s, r) + '.json') for s in seeds])
                     for r in RATES}
        print(f'{arm}, test (seeds 0-2): ' + ', '.join(
            f'{float(r):.2g} {t_interval(a)}' for r, a in test[arm].items()))
    for r in RATES:
        d = test['curriculum'][r] - test['full'][r]
        print(f'curriculum - full at {float(r):.2g}: per seed {np.round(d, 4).tolist()}; '
              f'{t_interval(d, "+.4f")}')
    d = test['curriculum'][chosen['curriculum']] - test['full'][chosen['full']]
    print(f'curriculum - full at the rates chosen on dev: {t_interval(d, "+.4f")}')


if __name__ == '__main__':
    main()
