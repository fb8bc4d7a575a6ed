"""How closely each arm fits its 300 passages: the last batch's training loss of every run at 3e-3,
read from the fine-tuning logs (the checkpoints as they are and random weights from untied_300s's
works_staged.log, whose random-weights runs follow the checkpoints' 45 runs).

    python assets/curriculum_budget/rare_rows_300s/fit.py <out> <untied_300s out> > fit.txt
"""
import re
import statistics
import sys
from pathlib import Path

out, untied = Path(sys.argv[1]), Path(sys.argv[2])
LAST = re.compile(r'lr 3e-03, seed \d, epoch 10, step 100/100: loss ([\d.]+)')


def last_losses(text: str) -> list[float]:
    return [float(x) for x in LAST.findall(text)]


staged = (untied / 'works_staged.log').read_text()
# the checkpoints' runs go rate by rate (1e-3, 3e-3, 9e-3); random weights' start after the last
scratch_from = staged.index('lr 1e-03, seed 0', staged.rindex('checkpoint 5 of 5'))
arms = {'as they are': staged[:scratch_from], 'random weights': staged[scratch_from:]}
for name, logs in (('core rows fresh', ['works_core']),
                   ('body fresh', ['works_rows_only_a', 'works_rows_only_b']),
                   ('both fresh', ['works_rare_only_a', 'works_rare_only_b']),
                   ('rare rows fresh', ['works_rare'])):
    arms[name] = ''.join((out / f'{f}.log').read_text() for f in logs)
for name, text in arms.items():
    loss = last_losses(text)
    print(f'{name}: {len(loss)} runs, last-batch loss median {statistics.median(loss):.4f} '
          f'({min(loss):.4f} to {max(loss):.4f})')
