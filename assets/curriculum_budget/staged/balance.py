"""The balance of each pair: before the first grow the two arms run the same config and seed, but
the learning rate follows each one's own clock, so their steps part from iteration 10 on; their
evaluations before the grow, and each phase's median tokens/s (what the other arm's load allowed).
    python assets/curriculum_budget/staged/balance.py assets/curriculum_budget/staged"""
import json
import sys


def records(run: str) -> list:
    with open(f'{sys.argv[1]}/{run}.jsonl') as f:
        return [json.loads(line) for line in f]


def median_speed(recs: list, lo: int, hi: int) -> int:
    v = sorted(r['tokens_per_s'] for r in recs
               if r.get('tokens_per_s') and lo < r['iter'] < hi)
    return round(v[len(v) // 2])


for s in range(1337, 1343):
    cur, staged = records(f'cur4096_s{s}'), records(f'staged_s{s}')
    grow_c = [r['iter'] for r in cur if r.get('op')]
    grow_s = [r['iter'] for r in staged if r.get('op')]
    first = min(grow_c[0], grow_s[0])
    evals = [(r['iter'], round(r['val_loss'], 4)) for r in cur
             if 'val_loss' in r and r['iter'] < first and not r.get('after_op')]
    evals_s = {r['iter']: round(r['val_loss'], 4) for r in staged
               if 'val_loss' in r and r['iter'] < first and not r.get('after_op')}
    print(f'seed {s}: grows at {grow_c[0]} (cur4096), {grow_s[0]} and {grow_s[2]} (staged); '
          f'ends {cur[-1]["iter"]}, {staged[-1]["iter"]}')
    print('  val loss before the grow, cur4096 / staged:',
          ', '.join(f'{i}: {v} / {evals_s.get(i)}' for i, v in evals))
    print(f'  median tokens/s: 4,096 tokens {median_speed(cur, 50, first)} / '
          f'{median_speed(staged, 50, first)}; after the grow, full vocabulary '
          f'{median_speed(cur, grow_c[0] + 2, 10**9)}; staged in 18,752 '
          f'{median_speed(staged, grow_s[0] + 2, grow_s[2])}')
