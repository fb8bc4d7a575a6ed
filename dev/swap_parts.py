"""Which part of a pre-trained checkpoint a downstream deficit lives in: the checkpoint with one
part replaced by a fresh draw of the architecture's own init, to fine-tune like any other.

    python dev/swap_parts.py <ckpt.pt> embedding <draw> <out.pt>  # token embedding rows fresh
    python dev/swap_parts.py <ckpt.pt> body <draw> <out.pt>       # everything but those rows fresh
    python dev/swap_parts.py <ckpt.pt> row_scale <draw> <out.pt>  # rows scaled to the draw's RMS
    python dev/swap_parts.py <ckpt.pt> row_center <draw> <out.pt>  # the mean row taken from each
    python dev/swap_parts.py <ckpt.pt> rare_rows <draw> <out.pt> <vocab_K.pt>  # rare group fresh
    python dev/swap_parts.py <ckpt.pt> core_rows <draw> <out.pt> <vocab_K.pt>  # kept ids fresh

The two parts split the model: the rows (`tok_embeddings`) on one side; the LayerNorm after them,
the layers, the final norm and the MLM head on the other. `draw` seeds the fresh weights. A tied
decoder follows the rows; fine-tuning reads only the encoder. `row_scale` keeps every weight but
rescales each row to the fresh rows' RMS: the LayerNorm after the rows undoes the scale (up to its
eps), so the encoder's function stays, while a fine-tuning step moves the rows more relative to
their size. `row_center` subtracts the mean of all rows from every row, the direction they share
(the first step of Mu and Viswanath's all-but-the-top, 2018); `draw` only seeds the random ids the
moved states are measured on. `rare_rows` and `core_rows` split the rows by a remapping file's
kept ids (the core a curriculum trains from its start; the rare group, every other id, is RARE until
the grow): one group drawn afresh, the other and the rest of the model kept. ModernBERT checkpoints
only.
"""
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from checkpoint import checkpoint_encoder, load_checkpoint, save_checkpoint  # noqa: E402
from model import Encoder  # noqa: E402

ROWS = 'model.embeddings.tok_embeddings.weight'

PARTS = ('embedding', 'body', 'row_scale', 'row_center', 'rare_rows', 'core_rows')
source, part, draw, out, *remapping = sys.argv[1:]
if part not in PARTS:
    sys.exit(f"unknown part '{part}': use one of {', '.join(PARTS)}")
if part.endswith('_rows') != bool(remapping):
    sys.exit(f'{part}: rare_rows and core_rows, and only they, take a remapping file (vocab_K.pt) '
             'after the output file')
if remapping and not os.path.isfile(remapping[0]):
    sys.exit(f'{remapping[0]}: no such remapping file; give a vocab_K.pt that prepare.py wrote')
if os.path.abspath(out) == os.path.abspath(source):
    sys.exit(f'{out} is the source checkpoint; name another output file')
ckpt = load_checkpoint(source)
trained = checkpoint_encoder(ckpt)
if trained.config.arch != 'modernbert':
    sys.exit(f'{source} is a {trained.config.arch} checkpoint; only ModernBERT ones can be swapped')
torch.manual_seed(int(draw))
fresh = Encoder(trained.config).state_dict()
weights = trained.state_dict()
if part == 'embedding':
    weights[ROWS] = fresh[ROWS]
elif part == 'body':
    weights = {**fresh, ROWS: weights[ROWS]}
elif part.endswith('_rows'):
    core = torch.zeros(len(weights[ROWS]), dtype=torch.bool)
    core[torch.load(remapping[0], weights_only=False)['shrunk_to_full']] = True
    group = ~core if part == 'rare_rows' else core
    weights[ROWS] = torch.where(group[:, None], fresh[ROWS], weights[ROWS])
    print(f'{part}: {int(group.sum())} of {len(group)} rows drawn afresh')
elif part == 'row_center':
    weights[ROWS] = weights[ROWS] - weights[ROWS].mean(0, keepdim=True)
else:
    rms = weights[ROWS].pow(2).mean(1, keepdim=True).sqrt().clamp_min(1e-12)
    weights[ROWS] = weights[ROWS] * (fresh[ROWS].pow(2).mean().sqrt() / rms)
if trained.decoder.weight is trained.model.tok_embeddings.weight:
    weights['decoder.weight'] = weights[ROWS]
ckpt['model'] = weights
ckpt['swapped'] = dict(source=source, part=part, draw=int(draw))
save_checkpoint(ckpt, out)
# read it back: the rows are the fresh draw's (embedding), the source's (body), or rescaled or
# centred (row_*)
written = checkpoint_encoder(load_checkpoint(out))
assert torch.equal(written.state_dict()[ROWS], weights[ROWS]), 'the rows written are not intended'
done = {'row_scale': 'rows rescaled to the RMS of',
        'row_center': 'rows centred; random ids below from'}
print(f"{out}: {done.get(part, f'{part} drawn afresh,')} draw {draw}; checked")
if part.startswith('row_'):  # how far the function moved, on random ids
    ids = torch.randint(0, trained.config.vocab_size, (8, 128))
    with torch.no_grad():
        before, after = trained.eval().encode(ids), written.eval().encode(ids)
    cosine = torch.nn.functional.cosine_similarity(before, after, dim=-1).min()
    moved = (before.mean(1) - after.mean(1)).norm() / before.mean(1).norm()
    print(f'encoder states on 8 x 128 random ids: cosine with the source at least {cosine:.5f}, '
          f'mean-pooled states moved by {moved:.2%}')
