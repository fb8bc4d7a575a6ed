"""PLAN.md's addendum 2: the 2 x 2 over the core's rows and the layers (pre-trained or fresh; the
rare group's rows pre-trained in every cell), read per checkpoint from the four arms' finetune.py
results in <out>: each main effect as the mean of its two paired differences, and the interaction,
with t-intervals over the five checkpoints.

    python assets/curriculum_budget/rare_rows_300s/factorial.py <out>
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / 'dev'))
from domain_arms_summary import t_interval  # noqa: E402
from finetune_summary import checkpoint_means  # noqa: E402

out = Path(sys.argv[1])
# (core rows, layers) -> the arm's result: A as it is, K the core's rows fresh, B the layers fresh,
# P both fresh
files = {('pre', 'pre'): 'works_a.json', ('fresh', 'pre'): 'works_core.json',
         ('pre', 'fresh'): 'works_rows_only.json', ('fresh', 'fresh'): 'works_rare_only.json'}
cells = {}
for cell, name in files.items():
    result = json.loads((out / name).read_text())
    cells[cell] = checkpoint_means(result['per_seed'], result['metric'], len(result['seeds']))
for cell, means in cells.items():
    print(f'core rows {cell[0]}, layers {cell[1]}: {means.mean():.4f} by checkpoint',
          ' '.join(f'{m:.4f}' for m in means))
a, k, b, p = (cells[c] for c in files)
print('fresh core rows, mean of (K - A, P - B):', t_interval(((k - a) + (p - b)) / 2, '+.4f'))
print('fresh layers, mean of (B - A, P - K):', t_interval(((b - a) + (p - k)) / 2, '+.4f'))
print('  B - A:', t_interval(b - a, '+.4f'), ' P - K:', t_interval(p - k, '+.4f'))
print('  K - A:', t_interval(k - a, '+.4f'), ' P - B:', t_interval(p - b, '+.4f'))
print('interaction, P - B - K + A:', t_interval(p - b - k + a, '+.4f'))
