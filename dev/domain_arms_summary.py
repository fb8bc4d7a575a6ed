"""
The table of dev/domain_arms.sh's folder (docs/domain.md): for each arm and seed the iterations,
the tokens trained and the text they hold (in the plain tokenizer's tokens), grow_kl and the loss
per byte (all at once, and by the chain rule where dev/domain_eval.py scored it); then for each
score each arm's mean and the paired differences from the 'pieces' arm by seed, with 95%
t-intervals over seeds, and where dev/domain_eval.py saved each document's losses, a 95% interval
of the difference over documents (the seeds held); last, for the arms that read pieces' data (the
same tokens), the gap in the runs' own val loss per token at equal iterations, which shows whether
a head start from the new rows' init lasts. The scores are the folder's loss_per_byte.jsonl, or the
file named second (dev/domain_eval.py --unseen_lines's, say).

    python dev/domain_arms_summary.py runs/arms
    python dev/domain_arms_summary.py runs/arms runs/arms/unseen_lines.jsonl
"""
import json
import os
import sys

import numpy as np
from domain_eval import score as score_documents

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from data import load_meta  # noqa: E402

T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228}  # t quantiles by df
DATA = {'pieces': 'data_ext', 'random': 'data_ext', 'scaled': 'data_ext', 'none': 'data_none',
        'warm': 'data_none', 'added': 'data_added'}


def t_interval(values: np.ndarray, spec: str = '.4f') -> str:
    """The mean and its 95% t-interval over the values (seeds), each formatted with spec."""
    if len(values) == 1:
        return f'{values[0]:{spec}} (one seed)'
    mean, half = values.mean(), T975[len(values) - 1] * values.std(ddof=1) / np.sqrt(len(values))
    return f'{mean:{spec}} ({mean - half:{spec}} to {mean + half:{spec}})'


def main() -> None:
    out = sys.argv[1]
    with open(sys.argv[2] if len(sys.argv) > 2 else os.path.join(out, 'loss_per_byte.jsonl')) as f:
        scores = [json.loads(line) for line in f]
    tokens = {d: load_meta(os.path.join(out, d), 'run dev/domain_arms.sh, which prepares it')
              ['train_tokens'] for d in set(DATA.values())}
    rows, per_document, val_curves = {}, {}, {}
    for s in scores:
        run = os.path.basename(os.path.dirname(s['init_from']))
        arm, seed = run.rsplit('_s', 1)
        with open(os.path.join(out, run, 'metrics.jsonl')) as f:
            records = [json.loads(line) for line in f]
        trained = max(r['tokens'] for r in records if 'tokens' in r)
        grown = [r['grow_kl'] for r in records if r.get('op') == 'grow_into_tokenizer']
        val_curves[arm, seed] = {r['iter']: r['val_loss'] for r in records
                                 if 'val_loss' in r and not r.get('after_op')}
        rows.setdefault(arm, {})[seed] = dict(
            iters=max(r['iter'] for r in records), tokens=trained,
            text_in_plain_tokens=round(trained * tokens['data_none'] / tokens[DATA[arm]]),
            grow_kl=grown[0] if grown else None, loss_per_byte=s['loss_per_byte'],
            files_interval=s['interval'], chain_loss_per_byte=s.get('chain_loss_per_byte'))
        if 'document_losses' in s:
            per_document[arm, seed] = np.array(s['document_losses']), np.array(s['document_bytes'])
    for arm, seeds in rows.items():
        for seed, row in sorted(seeds.items()):
            print(arm, seed, row)
    for k, score in enumerate(('loss_per_byte', 'chain_loss_per_byte')):
        if any(r[score] is None for seeds in rows.values() for r in seeds.values()):
            continue
        print(score)
        for arm, seeds in rows.items():
            print(f"{arm}: {t_interval(np.array([r[score] for r in seeds.values()]))}")
        for arm in [a for a in rows if a != 'pieces']:  # in the file's order, run to run
            common = sorted(rows['pieces'].keys() & rows[arm].keys())
            d = np.array([rows['pieces'][s][score] - rows[arm][s][score] for s in common])
            print(f'pieces - {arm}, per seed {np.round(d, 4).tolist()}: {t_interval(d)}')
            if all(('pieces', s) in per_document and (arm, s) in per_document for s in common):
                # the same seeds, documents resampled: how much the 11 files alone could move it
                gap = sum(per_document['pieces', s][0][:, k] - per_document[arm, s][0][:, k]
                          for s in common)
                value, (lo, hi) = score_documents(gap, per_document['pieces', common[0]][1]
                                                  * len(common))
                print(f'  over documents: {value:.4f} ({lo:.4f} to {hi:.4f})')
    print_val_gaps(rows, val_curves)


def print_val_gaps(rows: dict, val_curves: dict) -> None:
    """pieces minus each arm on the same data, in val loss per token, at each evaluation both runs
    of a seed reached (the last, at unequal iterations, left out)."""
    for arm in [a for a in rows if a != 'pieces' and DATA[a] == DATA['pieces']]:
        common = sorted(rows['pieces'].keys() & rows[arm].keys())
        its = sorted(set.intersection(*(set(val_curves[a, s]) for s in common
                                         for a in ('pieces', arm))))
        print(f'val loss per token, pieces - {arm}, by iteration')
        for it in its:
            d = np.array([val_curves['pieces', s][it] - val_curves[arm, s][it] for s in common])
            print(f'  {it}: {t_interval(d, ".3f")}')


if __name__ == '__main__':
    main()
