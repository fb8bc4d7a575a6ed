"""
MLM loss per byte of held-out text, comparable across tokenizers (docs/domain.md). The documents are
the val split of a prepared dataset (the split is by document text, so the same for every tokenizer
of one corpus). Every model masks the same whole words: 15% of the runs of word characters (\\w+) of
each document, chosen by a seed taken from its text; each of its tokens that overlaps a chosen word
becomes [MASK]. The score sums the cross-entropy over those tokens and divides it by the UTF-8 bytes
of the chosen words; the interval resamples documents. One JSON line per checkpoint.

    python dev/domain_eval.py data/code out-a/ckpt.pt out-b/ckpt.pt > scores.jsonl
"""
import hashlib
import json
import os
import random
import re
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from checkpoint import load_model  # noqa: E402
from data import load_dataset, shard_paths  # noqa: E402
from errors import fail  # noqa: E402
from tokenizer import load_tokenizer, recorded_hf_tokenizer  # noqa: E402

WORD_SHARE, BLOCK = 0.15, 128


def documents(data_dir: str, split: str = 'val') -> list[str]:
    """The text of a split's documents, decoded from its token files."""
    meta = load_dataset(data_dir, BLOCK, f'prepare {data_dir} first')
    tok = load_tokenizer(meta['tokenizer'])
    ids = np.concatenate([np.fromfile(p, dtype=meta['dtype'])
                          for p in shard_paths(data_dir, split, meta)]).astype(np.int64)
    ends = np.flatnonzero(ids == meta['sep_token_id'])
    starts = np.concatenate([[0], ends[:-1] + 1])
    return [tok.decode(ids[s + 1:e].tolist()) for s, e in zip(starts, ends)]


def chosen_words(text: str) -> list[tuple[int, int]]:
    spans = [m.span() for m in re.finditer(r'\w+', text)]
    rng = random.Random(hashlib.sha256(text.encode()).hexdigest())
    return sorted(rng.sample(spans, max(1, round(WORD_SHARE * len(spans))))) if spans else []


@torch.no_grad()
def document_loss(model, tok, text: str, words: list[tuple[int, int]]) -> float:
    """The summed cross-entropy of the tokens overlapping words, each window of BLOCK tokens read
    with the chosen words masked."""
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True,
              split_special_tokens=True)
    ids = torch.tensor(enc['input_ids'])
    starts = torch.tensor([a for a, _ in enc['offset_mapping']])
    ends = torch.tensor([b for _, b in enc['offset_mapping']])
    masked = torch.zeros(len(ids), dtype=torch.bool)
    for a, b in words:
        masked |= (starts < b) & (ends > a)
    total = 0.0
    for k in range(0, len(ids), BLOCK - 2):
        window, hide = ids[k:k + BLOCK - 2], masked[k:k + BLOCK - 2]
        if not hide.any():
            continue
        x = torch.cat([torch.tensor([tok.cls_token_id]),
                       torch.where(hide, tok.mask_token_id, window),
                       torch.tensor([tok.sep_token_id])])[None]
        logits, _ = model(x, torch.ones_like(x))
        total += float(torch.nn.functional.cross_entropy(logits[0, 1:-1][hide].double(),
                                                         window[hide], reduction='sum'))
    return total


def main() -> None:
    if len(sys.argv) < 3:
        fail('usage: python dev/domain_eval.py <prepared data folder> <checkpoint>...')
    docs = documents(sys.argv[1])
    words = [chosen_words(d) for d in docs]
    nbytes = np.array([sum(len(d[a:b].encode()) for a, b in w) for d, w in zip(docs, words)])
    for source in sys.argv[2:]:
        loaded = load_model(source)
        tok = recorded_hf_tokenizer(loaded.tokenizer, source)
        model = loaded.model.eval()
        losses = np.array([document_loss(model, tok, d, w) for d, w in zip(docs, words)])
        rng = np.random.default_rng(0)
        draws = rng.integers(0, len(docs), (2000, len(docs)))
        boot = losses[draws].sum(1) / nbytes[draws].sum(1)
        print(json.dumps(dict(init_from=source, documents=len(docs), bytes=int(nbytes.sum()),
                              loss_per_byte=losses.sum() / nbytes.sum(),
                              interval=[float(np.quantile(boot, 0.025)),
                                        float(np.quantile(boot, 0.975))])), flush=True)


if __name__ == '__main__':
    main()
