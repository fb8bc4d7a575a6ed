"""PLAN.md's readings of a later session on lines, from readings.py's per-seed lines: the new pair
(NEW, seeds 1460 and 1461 unless set) alone against the plan's thresholds, and, descriptive, all
the seeds on this kind of machine against the ten seeds of ../staged_vs_full by Welch's interval,
and, where BOOTS names the seeds of each boot of the machine (comma-separated, boots apart by
spaces), the interval over the boots' means.

    python assets/curriculum_budget/machine_2700s/welch.py readings_four.txt > welch.txt
    NEW="1470 1471" python assets/curriculum_budget/machine_2700s/welch.py readings_six.txt
    NEW="1490 1491" BOOTS="1450,1451,1460,1461 1470,1471 1480,1481,1490,1491" \
        python assets/curriculum_budget/machine_2700s/welch.py readings_ten.txt
"""
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', '..', 'dev'))
from domain_arms_summary import T975, t_interval  # noqa: E402

NEW = tuple(os.environ.get('NEW', '1460 1461').split())
BOOTS = [boot.split(',') for boot in os.environ.get('BOOTS', '').split()]


def differences(path: str) -> dict[str, float]:
    """seed -> staged - full on shakespeare_lines, from readings.py's per-seed lines."""
    with open(path) as f:
        return {m[1]: float(m[2]) for m in
                re.finditer(r'^seed (\d+):.*?shakespeare_lines \S+ - \S+ = (\S+?)[;\n]', f.read(),
                            re.M)}


here = differences(os.path.join(HERE, sys.argv[1]))
ten = np.array(list(differences(os.path.join(HERE, '..', 'staged_vs_full', 'readings.txt'))
                    .values()))
new = [here[s] for s in NEW if s in here]
if len(new) < 2:
    print(f'the new pair: {len(new)} valid seed(s), not resolved')
else:
    mean = np.mean(new)
    verdict = ('reproduced in this session' if mean <= -0.025 else
               'smaller in this session' if mean > -0.008 else 'not resolved')
    print(f'the new pair ({", ".join(NEW)}): {", ".join(f"{d:+.4f}" for d in new)}, '
          f'mean {mean:+.4f}: {verdict}')
mine = np.array(list(here.values()))
print(f'{len(mine)} seeds on this kind of machine (descriptive): {t_interval(mine, "+.4f")}')
if BOOTS:
    boots = np.array([np.mean([here[s] for s in boot]) for boot in BOOTS])
    print(f"over the {len(boots)} boots' means (descriptive): {t_interval(boots, '+.4f')}")
v_here, v10 = mine.var(ddof=1) / len(mine), ten.var(ddof=1) / len(ten)
df = int((v_here + v10) ** 2 / (v_here ** 2 / (len(mine) - 1) + v10 ** 2 / (len(ten) - 1)))
diff, half = mine.mean() - ten.mean(), T975[min(df, 10)] * np.sqrt(v_here + v10)  # df > 10: t(10)
print(f'minus the ten seeds ({ten.mean():+.4f}), Welch: {diff:+.4f} ({diff - half:+.4f} to '
      f'{diff + half:+.4f}; {df} degrees of freedom{", t at 10" if df > 10 else ""})')
