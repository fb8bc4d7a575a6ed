"""PLAN.md's readings: shakespeare_lines in a fine-tuning setting (the head trained first, or
longer) against the study's plain fine-tuning at the same rate, checkpoints and fine-tuning seeds
(0 to 2), per checkpoint and over the four pre-training seeds with 95% t-intervals.

    python assets/curriculum_budget/lines_lpft/readings.py > readings.txt
    python assets/curriculum_budget/lines_lpft/readings.py <folder>   # another setting's runs
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..', 'dev'))
from domain_arms_summary import t_interval  # noqa: E402

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
HERE = sys.argv[1] if len(sys.argv) > 1 else SCRIPT_DIR
STUDY = os.path.join(SCRIPT_DIR, '..', 'staged_vs_full')
SEEDS = ('1356', '1357', '1358', '1359')
ARMS = ('staged', 'full')


def accuracies(path: str, n: int = 3) -> float:
    """The mean test accuracy of the first n fine-tuning seeds (0, 1, 2) of a finetune.py result."""
    with open(path) as f:
        out = json.load(f)
    assert out['seeds'][:n] == list(range(n)) and out['held_out'], path
    return float(np.mean([r['accuracy'] for r in out['per_seed'][:n]]))


def main() -> None:
    setting, plain = {}, {}
    print('checkpoint: the setting, plain (mean of fine-tuning seeds 0-2), change')
    for arm in ARMS:
        setting[arm] = np.array([accuracies(os.path.join(HERE, f'lines_{arm}_s{s}.json'))
                                 for s in SEEDS])
        plain[arm] = np.array([accuracies(os.path.join(
            STUDY, f'lines_{arm}_s{s}_lr0.0003333333333333333.json')) for s in SEEDS])
        for s, a, b in zip(SEEDS, setting[arm], plain[arm]):
            print(f'  {arm:7s} {s}  {a:.4f}  {b:.4f}  {a - b:+.4f}')
    change = {arm: setting[arm] - plain[arm] for arm in ARMS}
    print('over the four pre-training seeds, mean (95% t-interval):')
    print(f"  staged - full, setting:    {t_interval(setting['staged'] - setting['full'], '+.4f')}")
    print(f"  staged - full, plain:      {t_interval(plain['staged'] - plain['full'], '+.4f')}")
    for arm in ARMS:
        print(f'  {arm} change, setting - plain: {t_interval(change[arm], "+.4f")}')
    print(f"  difference of the changes, staged - full: "
          f"{t_interval(change['staged'] - change['full'], '+.4f')}")


if __name__ == '__main__':
    main()
