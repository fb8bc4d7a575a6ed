"""PLAN.md's readings (with its amendments): per corpus (tenth/, whole/) ../staged_vs_full/
readings.py's validity, rates chosen on dev and staged - full per seed, with each arm's passes over
its corpus; each arm's own change across corpora; the interaction (staged - full on the tenth) -
(staged - full on the whole) at the chosen and at each common rate; the plan's verdict.

    python assets/curriculum_budget/passes_300s/readings.py > readings.txt
"""
import hashlib
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
RATES = ['0.0003333333333333333', '1e-3']
os.environ.update(FT_SEEDS='0,1,2', TASKS='lines', SCORES='0', BUDGET='300',
                  LINES_RATES=' '.join(RATES))
sys.argv = sys.argv[:1]  # the shared readings take their folder from here, not from argv
sys.path.insert(0, os.path.join(HERE, '..', 'staged_vs_full'))
import readings as shared  # noqa: E402

CORPORA = {'tenth': 'data/shakespeare_tenth', 'whole': 'data/shakespeare'}
LINES, RANDOM = 'shakespeare_lines', 0.514  # random weights' stored lines test score
ARMS = ('staged', 'full')
read_json = shared.read


def provenance() -> bool:
    """The tenth is every tenth document of the whole's train.bin with the same val.bin and split:
    what finetune.py cannot check, since it knows the embedded corpus only by its name."""
    tenth, whole = (np.fromfile(os.path.join(d, 'train.bin'), dtype=np.uint16)
                    for d in CORPORA.values())
    cls = shared.json.load(open(os.path.join(CORPORA['whole'], 'meta.json')))['cls_token_id']
    docs = np.split(whole, np.flatnonzero(whole == cls)[1:])  # documents start with [CLS]
    checks = {
        "train.bin every tenth document of the whole's": np.array_equal(
            tenth, np.concatenate(docs[::10])),
        'val.bin the same': len({open(os.path.join(d, 'val.bin'), 'rb').read()
                                 for d in CORPORA.values()}) == 1,
        'one split rule': len({shared.json.load(open(os.path.join(d, 'meta.json')))['split']
                               for d in CORPORA.values()}) == 1}
    print('provenance of the tenth: ' + ', '.join(f'{k} {v}' for k, v in checks.items())
          + f'; its train.bin sha256 {hashlib.sha256(tenth.tobytes()).hexdigest()}')
    return all(checks.values())


def read_tenth(name: str):
    """The tenth's fine-tuning files say held_out false (finetune.py does not know the corpus's
    name); the provenance check stands in for finetune.py's."""
    out = read_json(name)
    if name.startswith('lines_') and name.endswith('.json'):
        assert out['held_out'] is False, name
        out['held_out'] = PROVENANCE
    return out


def interval(a: np.ndarray, b: np.ndarray) -> str:
    """mean(a) - mean(b) with its 95% Welch interval and, beside it, the pooled-variance one."""
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    pooled = (((len(a) - 1) * a.var(ddof=1) + (len(b) - 1) * b.var(ddof=1))
              / (len(a) + len(b) - 2) * (1 / len(a) + 1 / len(b)))
    d = a.mean() - b.mean()
    welch, pool = (shared.T975[max(1, int(k))] * np.sqrt(v)
                   for k, v in ((df, va + vb), (len(a) + len(b) - 2, pooled)))
    return (f'{d:+.4f} (Welch {d - welch:+.4f} to {d + welch:+.4f}, df {df:.1f}; pooled '
            f'{d - pool:+.4f} to {d + pool:+.4f})')


def corpus(name: str) -> dict | None:
    print(f'== {name} ({CORPORA[name]})')
    shared.HERE = os.path.join(HERE, name)
    shared.read = read_tenth if name == 'tenth' else read_json
    out = shared.main(None)  # every valid seed that finished
    if out is None:
        return None
    train_tokens = os.path.getsize(os.path.join(CORPORA[name], 'train.bin')) // 2
    out['passes'] = {arm: [shared.last_eval(s, arm)['tokens'] / train_tokens for s in out['valid']]
                     for arm in ARMS}
    print('passes over its train split: ' + '; '.join(
        f"{arm} {', '.join(f'{p:.1f}' for p in ps)}" for arm, ps in out['passes'].items()))
    out['at'] = {}  # lines test per (arm, rate) over the seeds, the chosen rate as 'chosen'
    for rate in ['chosen', *RATES]:
        for arm in ARMS:
            rates = {(a, 'lines'): out['rates'][arm, 'lines'] if rate == 'chosen' else rate
                     for a in ARMS}
            out['at'][arm, rate] = np.array([shared.row(s, arm, rates)[LINES]
                                             for s in out['valid']])
        if rate != 'chosen':
            print(f'at {float(rate):g} both: staged - full '
                  + shared.t_interval(out['at']['staged', rate] - out['at']['full', rate]))
    return out


def main() -> None:
    global PROVENANCE
    PROVENANCE = provenance()
    got = {name: corpus(name) for name in CORPORA}
    if any(out is None for out in got.values()):
        print('verdict (PLAN.md): not resolved (a corpus with fewer than two valid seeds)')
        return
    tenth, whole = got['tenth'], got['whole']
    print('== each arm across corpora, tenth - whole, lines at its chosen rates '
          f'(random weights {RANDOM})')
    for arm in ARMS:
        print(f"{arm}: {tenth['at'][arm, 'chosen'].mean():.4f} - "
              f"{whole['at'][arm, 'chosen'].mean():.4f} = "
              f"{interval(tenth['at'][arm, 'chosen'], whole['at'][arm, 'chosen'])}")
    print('== the interaction, (staged - full on the tenth) - (staged - full on the whole)')
    calls = []
    for rate in ['chosen', *RATES]:
        a, b = (g['at']['staged', rate] - g['at']['full', rate] for g in (tenth, whole))
        calls.append(a.mean() - b.mean())
        paired = [f'{s} {a[tenth["valid"].index(s)] - b[whole["valid"].index(s)]:+.4f}'
                  for s in whole['valid'] if s in tenth['valid']]
        label = 'each arm at its chosen rate' if rate == 'chosen' else f'both at {float(rate):g}'
        print(f"lines, {label}: {interval(a, b)}; per seed {', '.join(paired)}")
    a, b = (np.array(g['diffs']['val loss']) for g in (tenth, whole))
    print(f'val loss (not interpretable as passes: coverage, PLAN.md): {interval(a, b)}')
    verdict = ('consistent with the passes lead' if max(calls) <= -0.03
               else 'no sign of the passes effect at this size' if min(calls) >= 0
               else 'not resolved')
    regime = np.mean(tenth['passes']['staged'])
    print(f'verdict (PLAN.md): {verdict}'
          + (f'; the staged arm made {regime:.1f} passes on the tenth, under 8: not the '
             '45-minute regime' if regime < 8 else ''))


main()
