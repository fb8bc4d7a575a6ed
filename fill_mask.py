"""
Fill [MASK] in sentences with a trained model: the encoder's analogue of nanoGPT's sample.py.

    python fill_mask.py --out_dir=out-demo
    python fill_mask.py --ckpt=out-demo/ckpt.pt
        --text="To be, or not to [MASK]: that is the question." --top_k=5
    python fill_mask.py --ckpt=out-demo/hf        # a folder written by export_hf.py
"""
import os
import sys

import torch

from checkpoint import load_model
from configurator import configure
from errors import fail
from tokenizer import load_recorded_tokenizer

DEFAULTS = dict(
    out_dir='out',
    ckpt=None,  # a checkpoint or an export_hf.py folder; None: <out_dir>/ckpt.pt
    text=None,  # None: the sentences below
    top_k=5,
    device='cpu',
)
SENTENCES = [
    'To be, or not to [MASK], that is the question.',
    'O Romeo, Romeo, wherefore art thou [MASK]?',
    "All the world's a [MASK], and all the men and women merely players.",
    'Now is the winter of our [MASK] made glorious summer by this sun of York.',
]


class MaskFiller:
    """A model with its tokenizer, from a train.py checkpoint (in a shrunken-vocabulary phase, ids
    go through its remapping) or from a folder written by export_hf.py (its tokenizer files)."""

    def __init__(self, path: str, device: str = 'cpu'):
        loaded = load_model(path, full_vocabulary=False)
        self.model, self.remap = loaded.model.to(device).eval(), loaded.remap
        self.tokenizer = load_recorded_tokenizer(loaded.tokenizer, path)
        self.device = device

    @torch.no_grad()
    def __call__(self, text: str, top_k: int = 5) -> list[list[tuple[str, float]]]:
        """For each [MASK] in text, the top_k (token, probability) pairs."""
        tok = self.tokenizer
        ids = torch.tensor([[tok.cls_token_id, *tok.encode(text), tok.sep_token_id]])
        if self.remap is not None:
            ids = self.remap['full_to_shrunk'][ids]
        mask_id = tok.mask_token_id if self.remap is None else self.remap['mask_token_id']
        positions = (ids[0] == mask_id).nonzero().squeeze(1)
        if len(positions) == 0:
            fail(f'no [MASK] in {text!r}; write [MASK] where a token should be predicted')
        logits, _ = self.model(ids.to(self.device))
        probs = logits[0, positions].float().softmax(-1)
        top = probs.topk(top_k, dim=-1)
        results = []
        for p_row, i_row in zip(top.values.tolist(), top.indices.tolist()):
            if self.remap is not None:  # the RARE slot decodes as [UNK]
                i_row = self.remap['shrunk_to_full'][i_row].tolist()
            results.append([(tok.decode([i]), p) for i, p in zip(i_row, p_row)])
        return results


def main(argv: list[str]) -> None:
    cfg = configure(DEFAULTS, argv)
    filler = MaskFiller(cfg['ckpt'] or os.path.join(cfg['out_dir'], 'ckpt.pt'), cfg['device'])
    for text in [cfg['text']] if cfg['text'] else SENTENCES:
        print(text)
        for n, candidates in enumerate(filler(text, cfg['top_k'])):
            print(f'  [MASK] {n}: ' + ', '.join(f'{t!r} {p:.3f}' for t, p in candidates))


if __name__ == '__main__':
    main(sys.argv[1:])
