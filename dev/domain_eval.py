"""
MLM loss per byte of held-out text, comparable across tokenizers (docs/domain.md). The documents are
the val split of a prepared dataset (the split is by document text, so the same for every tokenizer
of one corpus). Every model masks the same whole words: 15% of the runs of word characters (\\w+) of
each document, chosen by a seed taken from its text; each of its tokens that overlaps a chosen word
becomes [MASK]. Two scores divide a cross-entropy summed over those tokens by the UTF-8 bytes of the
chosen words:
- loss_per_byte: every masked token predicted at once, as in training. A word cut into more tokens
  scores worse even under a perfect model, since its tokens are guessed without each other.
- chain_loss_per_byte: by the chain rule, a word's tokens one at a time, left to right, the earlier
  ones shown, so a word in more tokens is no longer guessed blind. Pass j of a window scores token
  j of every masked word with the first j tokens of every masked word shown (one pass per token of
  the longest word, not one per token): neighbouring words' prefixes are context too, which if
  anything helps finer tokenizers.
The intervals resample documents. One JSON line per checkpoint, with each document's bytes and
summed losses (both ways), for intervals over documents of a difference between checkpoints.
--unseen_lines draws the words only from lines that no train document holds (compared stripped):
held-out files of one package share licence headers, imports and idioms with its train files, and
this scores what continued pre-training could not have read.

    python dev/domain_eval.py data/code out-a/ckpt.pt out-b/ckpt.pt > scores.jsonl
    python dev/domain_eval.py --unseen_lines data/code out-a/ckpt.pt > unseen.jsonl
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


def train_lines(data_dir: str) -> set[str]:
    return {line.strip() for d in documents(data_dir, 'train') for line in d.splitlines()} - {''}


def chosen_words(text: str, seen: set[str] = frozenset()) -> list[tuple[int, int]]:
    """15% of the words of text, drawn from its lines outside seen (a word never spans lines)."""
    spans = [(line.start() + a, line.start() + b) for line in re.finditer(r'[^\n]+', text)
             if line.group().strip() not in seen
             for a, b in (m.span() for m in re.finditer(r'\w+', line.group()))]
    rng = random.Random(hashlib.sha256(text.encode()).hexdigest())
    return sorted(rng.sample(spans, max(1, round(WORD_SHARE * len(spans))))) if spans else []


def summed_loss(logits: torch.Tensor, targets: torch.Tensor, pick: torch.Tensor) -> float:
    return float(torch.nn.functional.cross_entropy(logits[pick].double(), targets[pick],
                                                   reduction='sum'))


@torch.no_grad()
def document_loss(model, tok, text: str, words: list[tuple[int, int]]) -> tuple[float, float]:
    """The summed cross-entropy of the tokens overlapping words, each window of BLOCK tokens read
    with the chosen words masked: all at once, and by the chain rule (the module's docstring)."""
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True,
              split_special_tokens=True)
    ids = torch.tensor(enc['input_ids'])
    starts = torch.tensor([a for a, _ in enc['offset_mapping']])
    ends = torch.tensor([b for _, b in enc['offset_mapping']])
    owner = torch.full((len(ids),), -1)  # the chosen word a token overlaps, -1 for none
    for i, (a, b) in enumerate(words):
        owner[(starts < b) & (ends > a) & (owner < 0)] = i
    at_once = chain = 0.0
    for k in range(0, len(ids), BLOCK - 2):
        window, word = ids[k:k + BLOCK - 2], owner[k:k + BLOCK - 2]
        hide = word >= 0
        if not hide.any():
            continue
        first = {}  # a word's tokens are contiguous: its place is the distance from its first
        place = torch.tensor([i - first.setdefault(w, i) for i, w in enumerate(word.tolist())])
        steps = torch.arange(int(place[hide].max()) + 1)[:, None]  # step j shows places < j
        shown = torch.where(hide & (place >= steps), tok.mask_token_id, window)
        edge = torch.ones(len(steps), 1, dtype=torch.long)
        x = torch.cat([edge * tok.cls_token_id, shown, edge * tok.sep_token_id], 1)
        logits = model(x, torch.ones_like(x))[0][:, 1:-1]
        targets = window.expand(len(steps), -1)
        at_once += summed_loss(logits, targets, hide & (steps == 0))
        chain += summed_loss(logits, targets, hide & (place == steps))
    return at_once, chain


def score(losses: np.ndarray, nbytes: np.ndarray) -> tuple[float, list[float]]:
    """Loss per byte and its 95% interval, resampling documents."""
    draws = np.random.default_rng(0).integers(0, len(losses), (2000, len(losses)))
    boot = losses[draws].sum(1) / nbytes[draws].sum(1)
    return losses.sum() / nbytes.sum(), np.quantile(boot, [0.025, 0.975]).tolist()


def main() -> None:
    args = sys.argv[1:]
    unseen = args[:1] == ['--unseen_lines']
    args = args[unseen:]
    if len(args) < 2:
        fail('usage: python dev/domain_eval.py [--unseen_lines] <prepared data folder> '
             '<checkpoint>...')
    docs = documents(args[0])
    seen = train_lines(args[0]) if unseen else frozenset()
    words = [chosen_words(d, seen) for d in docs]
    nbytes = np.array([sum(len(d[a:b].encode()) for a, b in w) for d, w in zip(docs, words)])
    for source in args[1:]:
        loaded = load_model(source)
        tok = recorded_hf_tokenizer(loaded.tokenizer, source)
        model = loaded.model.eval()
        losses = np.array([document_loss(model, tok, d, w) for d, w in zip(docs, words)])
        at_once, interval = score(losses[:, 0], nbytes)
        chain, chain_interval = score(losses[:, 1], nbytes)
        print(json.dumps(dict(init_from=source, unseen_lines=unseen, documents=len(docs),
                              bytes=int(nbytes.sum()),
                              loss_per_byte=at_once, interval=interval,
                              chain_loss_per_byte=chain, chain_interval=chain_interval,
                              document_bytes=nbytes.tolist(), document_losses=losses.tolist())),
              flush=True)


if __name__ == '__main__':
    main()
