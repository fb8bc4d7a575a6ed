"""
How much a domain vocabulary's new tokens are used, and how much their start model knows of them
(docs/domain.md): the share of the held-out token positions that are new tokens, and how many of
their pieces (in the base tokenizer) the start model ever read as inputs in pre-training, over the
new tokens and weighted by their use in the held-out text. A piece never read keeps its initial
row, so a mean of such rows says little.

    python dev/new_token_use.py <extended data folder> <start model's pre-training data folder>
    python dev/new_token_use.py runs/arms/data_ext data/shakespeare
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from data import load_counts, load_meta, shard_paths  # noqa: E402
from errors import fail  # noqa: E402

HINT = 'prepare it with prepare.py'


def held_out_counts(folder: str, size: int) -> np.ndarray:
    """How often each id occurs in a prepared dataset's val split."""
    meta = load_meta(folder, HINT)
    ids = np.concatenate([np.fromfile(path, dtype=meta['dtype'])
                          for path in shard_paths(folder, 'val', meta)])
    return np.bincount(ids, minlength=size)


def main() -> None:
    if len(sys.argv) != 3:
        fail('usage: python dev/new_token_use.py <extended data folder> <pre-training data folder>')
    extended, pretraining = sys.argv[1:]
    path = os.path.join(extended, 'tokenizer', 'extension.json')
    if not os.path.exists(path):
        fail(f'{path} not found: give a folder that prepare.py --extend_tokenizer wrote')
    with open(path) as f:
        new = json.load(f)['new_tokens']
    size = 1 + max(t['id'] for t in new)
    held_out = held_out_counts(extended, size)
    counts = load_counts(pretraining, load_meta(pretraining, HINT), HINT)
    seen = np.pad(counts, (0, max(0, size - len(counts)))) > 0
    use = held_out[[t['id'] for t in new]]
    share_seen = np.array([seen[t['pieces']].mean() for t in new])
    all_seen = np.array([seen[t['pieces']].all() for t in new])
    print(json.dumps(dict(
        new_tokens=len(new), held_out_positions=int(held_out.sum()),
        new_token_share_of_held_out=float(use.sum() / held_out.sum()),
        pieces_read_in_pretraining=float(share_seen.mean()),
        pieces_read_in_pretraining_by_use=float(share_seen @ use / use.sum()),
        every_piece_read=float(all_seen.mean()),
        every_piece_read_by_use=float(all_seen @ use / use.sum()))))


if __name__ == '__main__':
    main()
