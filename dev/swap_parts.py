"""Which part of a pre-trained checkpoint a downstream deficit lives in: the checkpoint with one
part replaced by a fresh draw of the architecture's own init, to fine-tune like any other.

    python dev/swap_parts.py <ckpt.pt> embedding <draw> <out.pt>  # token embedding rows fresh
    python dev/swap_parts.py <ckpt.pt> body <draw> <out.pt>       # everything but those rows fresh

The two parts split the model: the rows (`tok_embeddings`) on one side; the LayerNorm after them,
the layers, the final norm and the MLM head on the other. `draw` seeds the fresh weights. A tied
decoder follows the rows; fine-tuning reads only the encoder. ModernBERT checkpoints only.
"""
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from checkpoint import checkpoint_encoder, load_checkpoint, save_checkpoint  # noqa: E402
from model import Encoder  # noqa: E402

ROWS = 'model.embeddings.tok_embeddings.weight'

source, part, draw, out = sys.argv[1:]
if part not in ('embedding', 'body'):
    sys.exit(f"unknown part '{part}': use embedding or body")
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
else:
    weights = {**fresh, ROWS: weights[ROWS]}
if trained.decoder.weight is trained.model.tok_embeddings.weight:
    weights['decoder.weight'] = weights[ROWS]
ckpt['model'] = weights
ckpt['swapped'] = dict(source=source, part=part, draw=int(draw))
save_checkpoint(ckpt, out)
# read it back: the rows are the fresh draw's (embedding) or the source's (body)
rows = checkpoint_encoder(load_checkpoint(out)).state_dict()[ROWS]
expected = fresh[ROWS] if part == 'embedding' else trained.state_dict()[ROWS]
assert torch.equal(rows, expected), 'the written rows are not the intended ones'
print(f'{out}: {part} drawn afresh (draw {draw}), checked')
