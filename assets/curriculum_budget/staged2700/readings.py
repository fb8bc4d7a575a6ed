"""PLAN.md's addendum readings for the 45-minute staged runs, from their metrics copied into a
folder (this one by default, seed 1337 by default), per seed: the balance check (both arms' val loss
at the last evaluation both reached before either grew), each arm's grows and iterations per phase,
the level at the last evaluation both reached after the first grow (cur4096's folded by its
end-of-run fold gap, as the staged arm's space folds those ids), and the cross-session anchor (the
cur4096 run against ../2700s/curriculum_s<seed>, the same config and seed in an earlier session).

    cd assets/curriculum_budget/staged2700 && python readings.py > readings.txt
    cd assets/curriculum_budget/staged2700_seeds && python ../staged2700/readings.py . 1338 1339 \
        > readings.txt
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FOLDER = sys.argv[1] if len(sys.argv) > 1 else HERE
SEEDS = sys.argv[2:] or ['1337']


def records(path: str) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f]


def evaluations(recs: list[dict]) -> dict:
    return {r['iter']: r['val_loss'] for r in recs if 'val_loss' in r and not r.get('after_op')}


def final(recs: list[dict]) -> tuple[int, float]:
    last = max(r['iter'] for r in recs)
    return last, evaluations(recs)[last]


def readings(seed: str) -> None:
    runs = {arm: records(os.path.join(FOLDER, f'{arm}_s{seed}.jsonl'))
            for arm in ('cur4096', 'staged')}
    grows = {arm: [(r['iter'], round(r['fold_kl'], 4)) for r in recs
                   if r.get('op') == 'resize_vocabulary'] for arm, recs in runs.items()}
    first_grow = min(g[0][0] for g in grows.values())
    common = set.intersection(*(set(evaluations(recs)) for recs in runs.values()))
    balance = max(i for i in common if i < first_grow)
    level = max(i for i in common if i > max(g[0][0] for g in grows.values()))
    for arm, recs in runs.items():
        last, end = final(recs)
        edges = [0] + [i for i, _ in grows[arm]] + [last]
        print(f'seed {seed}, {arm}: grows (iteration, fold_kl) {grows[arm]}; iterations per phase '
              f'{[b - a for a, b in zip(edges, edges[1:])]}; last iteration {last}; '
              f'val loss at {balance} (balance check) {evaluations(recs)[balance]:.4f}; '
              f'at {level} (after the first grow) {evaluations(recs)[level]:.4f}; '
              f'at the end {end:.4f}')
    # between its grows the staged arm evaluates in 18,752 tokens, where the ids train never holds
    # are already one class; cur4096 evaluates in the full space: fold it by its end-of-run fold gap
    split = {os.path.basename(os.path.dirname(r['ckpt'])): r['val_loss'] - r['folded']
             for r in records(os.path.join(FOLDER, 'val_loss_split.jsonl'))}
    folded = evaluations(runs['cur4096'])[level] - split[f'cur4096_s{seed}']
    print(f"seed {seed}, at {level}, cur4096 folded by its end-of-run gap (approximate) "
          f"{folded:.4f}; staged minus it {evaluations(runs['staged'])[level] - folded:+.4f}")
    # seeds 1337-1339 ran in ../2700s, 1340 and 1341 in ../2700s_more
    anchors = [os.path.join(HERE, '..', folder, f'curriculum_s{seed}.jsonl')
               for folder in ('2700s', '2700s_more')]
    then = final(records(next(p for p in anchors if os.path.exists(p))))
    now = final(runs['cur4096'])
    print(f"seed {seed}, anchor, the earlier session's curriculum_s{seed}: last iteration "
          f"{then[0]}, val loss at the end {then[1]:.4f}; this cur4096 minus it "
          f"{now[1] - then[1]:+.4f}")


for seed in SEEDS:
    readings(seed)
