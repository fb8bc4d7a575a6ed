"""A checkpoint's token embedding rows by how often train holds their token (the data folder's
counts.npy, written by prepare.py): the median row RMS and the mean pairwise cosine of the rows
after the LayerNorm that follows them (at most 2,000 rows of a group, drawn with seed 0), beside the
same readings of the architecture's initial draw; then how many rows are so small (RMS under 0.005)
that the LayerNorm's eps starts to matter.

    python dev/embedding_rows.py <data folder> <ckpt.pt>...
"""
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from checkpoint import checkpoint_encoder, load_checkpoint  # noqa: E402
from model import Encoder  # noqa: E402

SMALL_RMS = 0.005
GROUPS = ((1000, None), (50, 1000), (5, 50), (1, 5), (0, 1))  # times train holds the token


def readings(rows: torch.Tensor, counts: np.ndarray) -> str:
    out, rms = [], rows.pow(2).mean(1).sqrt()
    for low, high in GROUPS:
        members = torch.from_numpy((counts >= low) & (counts < (high or np.inf)))
        group = rows[members]
        torch.manual_seed(0)
        x = F.normalize(F.layer_norm(group, group.shape[1:]), dim=1)
        x = x[torch.randperm(len(x))[:2000]]
        n = len(x)
        cosine = ((x @ x.T).sum() - n) / (n * n - n)
        name = f'{low}+' if high is None else f'{low}' if high == low + 1 else f'{low}-{high - 1}'
        out.append(f'seen {name} ({len(group)}): RMS {rms[members].median():.3f}, '
                   f'cosine {cosine:.2f}')
    return '; '.join(out) + f'; rows under RMS {SMALL_RMS}: {int((rms < SMALL_RMS).sum())}'


data, paths = Path(sys.argv[1]), sys.argv[2:]
if not paths:
    sys.exit('usage: python dev/embedding_rows.py <data folder> <ckpt.pt>...')
if not (data / 'counts.npy').is_file():
    sys.exit(f'{data} has no counts.npy; prepare the data with prepare.py first')
counts = np.load(data / 'counts.npy')
for i, path in enumerate(paths):
    model = checkpoint_encoder(load_checkpoint(path))
    if i == 0:
        torch.manual_seed(0)
        fresh = Encoder(model.config).model.tok_embeddings.weight.detach()
        print(f'initial draw: {readings(fresh, counts)}')
    print(f'{path}: {readings(model.model.tok_embeddings.weight.detach(), counts)}')
