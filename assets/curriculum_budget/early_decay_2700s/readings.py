"""PLAN.md's readings (its amendment): the 2x2 on seed 1410, vocabulary (curriculum or full) by
where the decay starts (the last 30% of the budget, or half of it). Per arm its run (iterations,
tokens, passes, val loss at the end, the share of its iterations in the decay, the rate at the grow
and the mean rate after it), its layer matrices' RMS and lines at both rates (dev median and the
mean of three test accuracies), the rate its dev chooses; then the plan's contrasts at each arm's
choice and at each common rate. Descriptive: one seed.

    python assets/curriculum_budget/early_decay_2700s/readings.py <runs> <runs 2> > readings.txt
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'onegrow_lines_rate'))
from weights import sizes  # noqa: E402

SEED = 1410
RATES = ('0.0003333333333333333', '1e-3')
PEAK = 3e-3
TRAIN_TOKENS = os.path.getsize(os.path.join(HERE, '..', '..', '..', 'data', 'shakespeare',
                                            'train.bin')) // 2
# arm: (its raw files here, which runs folder argument holds its checkpoint)
ARMS = {'curriculum_late': ('second', 2), 'curriculum': ('.', 1),
        'full': ('.', 1), 'full_early': ('second', 2)}
CONTRASTS = (('the curriculum\'s deficit here', 'curriculum_late', 'full'),
             ('the early decay, curriculum', 'curriculum', 'curriculum_late'),
             ('the early decay, full vocabulary', 'full_early', 'full'),
             ('curriculum (early) - full, as first planned', 'curriculum', 'full'))


def run(arm: str) -> dict:
    path = os.path.join(HERE, ARMS[arm][0], f'{arm}_s{SEED}.jsonl')
    rows = [json.loads(line) for line in open(path)]
    steps = [r for r in rows if 'lr' in r]
    end = [r for r in rows if 'val_loss' in r and not r.get('after_op')][-1]
    tokens = max(r['tokens'] for r in steps)
    at_peak = [r['lr'] >= PEAK * 0.999 for r in steps]
    decay_from = steps[len(at_peak) - at_peak[::-1].index(True)]['iter']  # after the last at peak
    grow = next((r['iter'] for r in rows if r.get('op') == 'resize_vocabulary'), None)
    after = [r['lr'] for r in steps if grow is not None and r['iter'] >= grow]
    return dict(iters=end['iter'], val_loss=end['val_loss'], tokens=tokens,
                passes=tokens / TRAIN_TOKENS, decay_share=1 - decay_from / end['iter'],
                grow=grow, lr_at_grow=after[0] if after else None,
                lr_after=float(np.mean(after)) if after else None)


def lines(arm: str, rate: str) -> dict:
    out = json.load(open(os.path.join(HERE, ARMS[arm][0], f'lines_{arm}_s{SEED}_lr{rate}.json')))
    assert out['seeds'] == [0, 1, 2], (arm, rate)
    return dict(dev=out['dev'], test=float(np.mean([r['accuracy'] for r in out['per_seed']])))


def main() -> None:
    got = {}
    for arm, (_, runs) in ARMS.items():
        r = run(arm)
        r['rms'] = sizes(os.path.join(sys.argv[runs], f'{arm}_s{SEED}', 'ckpt.pt'))[0]
        r['lines'] = {rate: lines(arm, rate) for rate in RATES}
        r['rate'] = max(RATES, key=lambda rate: r['lines'][rate]['dev'])
        got[arm] = r
        grow = ('' if r['grow'] is None else f", grown at {r['grow']} at rate "
                f"{r['lr_at_grow']:.2e}, mean rate after it {r['lr_after']:.2e}")
        print(f"{arm}: {r['iters']} iterations, {r['tokens']:,} tokens ({r['passes']:.1f} passes), "
              f"val loss {r['val_loss']:.3f}, {r['decay_share']:.0%} of iterations in the decay"
              f"{grow}; layer-matrix RMS {r['rms']:.3f}; lines " + ', '.join(
                  f"{float(rate):.2g}: dev {x['dev']:.4f}, test {x['test']:.4f}"
                  for rate, x in r['lines'].items()) + f"; chosen {float(r['rate']):.2g}")

    def diff(a: str, b: str, key: str, rates: tuple[str, str]) -> float:
        return got[a]['lines'][rates[0]][key] - got[b]['lines'][rates[1]][key]

    for name, a, b in CONTRASTS:
        common = ', '.join(f"at {float(rate):.2g} {diff(a, b, 'test', (rate, rate)):+.4f} "
                           f"(dev {diff(a, b, 'dev', (rate, rate)):+.4f})" for rate in RATES)
        chosen = (got[a]['rate'], got[b]['rate'])
        print(f"{name} ({a} - {b}): val loss {got[a]['val_loss'] - got[b]['val_loss']:+.3f}; lines "
              f"at each one's choice {diff(a, b, 'test', chosen):+.4f} "
              f"(dev {diff(a, b, 'dev', chosen):+.4f}), {common}")
    inter = {rate: diff('curriculum', 'curriculum_late', 'test', (rate, rate))
             - diff('full_early', 'full', 'test', (rate, rate)) for rate in RATES}
    print('interaction on lines (the early decay\'s effect, curriculum minus full): ' + ', '.join(
        f'at {float(rate):.2g} {v:+.4f}' for rate, v in inter.items()))


if __name__ == '__main__':
    main()
