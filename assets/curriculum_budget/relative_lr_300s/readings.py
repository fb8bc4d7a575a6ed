"""PLAN.md's readings: the checkpoints fine-tuned with --relative_lr minus the same checkpoints
under the plain protocol, paired by checkpoint, each checkpoint's mean over fine-tuning seeds 0-2,
t-interval over the five; and random weights under each. The last result is the plain arm, every
one before it a relative one (at its chosen rate, or at one rate).

    python assets/curriculum_budget/relative_lr_300s/readings.py works_rel.json \
        works_rel_3e-3.json rare_rows_300s/works_a.json
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / 'dev'))
from domain_arms_summary import t_interval  # noqa: E402
from finetune_summary import checkpoint_means  # noqa: E402


def means(result: dict, part: dict) -> object:
    """An arm's (checkpoints' or random weights') means over the fine-tuning seeds."""
    return checkpoint_means(part['per_seed'], result['metric'], len(result['seeds']))


results = {Path(p).stem: json.loads(Path(p).read_text()) for p in sys.argv[1:]}
for name, result in results.items():
    for arm, part in (('checkpoints', result), ('random weights', result['baseline'])):
        m = means(result, part)
        print(f"{name}, {arm} ({'relative' if result.get('relative_lr') else 'plain'}, "
              f"{part['learning_rate']:g}; dev medians {part['grid']}): {m.mean():.4f}",
              ' '.join(f'{x:.4f}' for x in m) if len(m) > 1 else '')
*relative, plain = results.values()
for name, result in zip(results, relative):
    print(f'{name} minus {list(results)[-1]}, checkpoints:',
          t_interval(means(result, result) - means(plain, plain), '+.4f'), 'over checkpoints')
