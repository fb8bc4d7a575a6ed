"""PLAN.md's addendum readings for the 45-minute staged probe, from the runs' metrics copied here:
the balance check (both arms' val loss at the last evaluation both reached before either grew),
each arm's grows and iterations per phase, and the cross-session anchor (this cur4096 run against
../2700s/curriculum_s1337, the same config and seed in an earlier session).

    cd assets/curriculum_budget/staged2700 && python readings.py > readings.txt
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def records(path: str) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f]


def evaluations(recs: list[dict]) -> dict:
    return {r['iter']: r['val_loss'] for r in recs if 'val_loss' in r and not r.get('after_op')}


def final(recs: list[dict]) -> tuple[int, float]:
    last = max(r['iter'] for r in recs)
    return last, evaluations(recs)[last]


runs = {arm: records(os.path.join(HERE, f'{arm}_s1337.jsonl')) for arm in ('cur4096', 'staged')}
grows = {arm: [(r['iter'], round(r['fold_kl'], 4)) for r in recs
               if r.get('op') == 'resize_vocabulary'] for arm, recs in runs.items()}
first_grow = min(g[0][0] for g in grows.values())
common = set.intersection(*(set(evaluations(recs)) for recs in runs.values()))
balance = max(i for i in common if i < first_grow)
for arm, recs in runs.items():
    last, end = final(recs)
    edges = [0] + [i for i, _ in grows[arm]] + [last]
    print(f'{arm}: grows (iteration, fold_kl) {grows[arm]}; iterations per phase '
          f'{[b - a for a, b in zip(edges, edges[1:])]}; last iteration {last}; '
          f'val loss at {balance} (balance check) {evaluations(recs)[balance]:.4f}; '
          f'at the end {end:.4f}')
then, now = final(records(os.path.join(HERE, '..', '2700s', 'curriculum_s1337.jsonl'))), \
    final(runs['cur4096'])
print(f"anchor, the earlier session's curriculum_s1337: last iteration {then[0]}, val loss at the "
      f"end {then[1]:.4f}; this session's cur4096 minus it {now[1] - then[1]:+.4f}")
