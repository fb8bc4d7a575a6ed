"""The test of the rare-token explanation: a pre-trained checkpoint whose embedding rows of rare
tokens (seen fewer than `below` times in train.bin) are drawn again from the model's initial
distribution, the rest kept. With a tied decoder the decoder's rows change with them. Fine-tune the
result like any checkpoint.

    python dev/reinit_rare.py out-downstream/ckpt.pt data/shakespeare/counts.npy 50 rare50.pt
"""
import sys

import numpy as np
import torch

source, counts_path, below, out = sys.argv[1:]
ckpt = torch.load(source, map_location='cpu', weights_only=False)
counts = torch.from_numpy(np.load(counts_path))
rows = ckpt['model']['model.embeddings.tok_embeddings.weight']
rare = (counts < int(below)).nonzero().squeeze(1)
std = ckpt['model_args']['initializer_range']
cut = ckpt['model_args']['initializer_cutoff_factor'] * std
torch.manual_seed(0)
rows[rare] = torch.nn.init.trunc_normal_(torch.empty(len(rare), rows.shape[1]),
                                         std=std, a=-cut, b=cut)
seen = int((counts[rare] > 0).sum())
print(f"{len(rare)} rows drawn again ({seen} of them seen in train.bin); std of the kept rows "
      f"{rows[counts >= int(below)].std():.4f}, of the new ones {rows[rare].std():.4f}")
torch.save(ckpt, out)
