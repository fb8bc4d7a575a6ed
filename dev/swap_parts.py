"""Which part of a pre-trained checkpoint a downstream deficit lives in: the checkpoint with one
part replaced, to fine-tune like any other.

    python dev/swap_parts.py <ckpt.pt> embedding <out.pt>   # token embedding rows drawn afresh
    python dev/swap_parts.py <ckpt.pt> body <out.pt>        # all but the embedding drawn afresh
    python dev/swap_parts.py <ckpt.pt> row_scale <out.pt>   # each embedding row scaled to the
                                                            # initial RMS (the encoder's function
                                                            # barely moves: a LayerNorm follows)

Fresh weights are the architecture's own initial draw (seed 0). `body` keeps the embedding module
(the rows and the LayerNorm after them) and draws the layers, the final norm and the MLM head.
With a tied decoder its rows follow the embedding's; fine-tuning reads only the encoder.
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from checkpoint import checkpoint_encoder, load_checkpoint, save_checkpoint  # noqa: E402
from model import Encoder, EncoderConfig  # noqa: E402

source, part, out = sys.argv[1:]
ckpt = load_checkpoint(source)
trained = checkpoint_encoder(ckpt).state_dict()
torch.manual_seed(0)
fresh = Encoder(EncoderConfig(**ckpt['model_args'])).state_dict()
rows = 'model.embeddings.tok_embeddings.weight'
if part == 'embedding':
    trained[rows] = fresh[rows]
elif part == 'body':
    kept = {k: v for k, v in trained.items() if k.startswith('model.embeddings.')}
    trained = {**fresh, **kept}
elif part == 'row_scale':
    w = trained[rows]
    target = fresh[rows].pow(2).mean().sqrt()
    trained[rows] = w * (target / w.pow(2).mean(1, keepdim=True).sqrt().clamp_min(1e-12))
else:
    sys.exit(f"unknown part '{part}': use embedding, body or row_scale")
if 'decoder.weight' in trained and ckpt['model_args'].get('tie_word_embeddings', True):
    trained['decoder.weight'] = trained[rows]  # the tied decoder is the embedding
ckpt['model'] = trained
save_checkpoint(ckpt, out)
w = trained[rows]
print(f'{part}: {out}; embedding row RMS median {w.pow(2).mean(1).sqrt().median():.4f}')
