"""
The masked-language-modelling data path, shared by train.py and bench.py: random windows of the
token files written by prepare.py, the token space masking works in, MLM corruption, the rows the
sparse head predicts, the weighting that makes gradient accumulation exact, and the evaluation on a
fixed sample.
"""
import functools
import math
from contextlib import AbstractContextManager
from typing import Callable

import numpy as np
import torch
import torch.distributed as dist

from distributed import all_reduce
from errors import fail
from model import IGNORE_INDEX

# What a seed is for comes right after the run's seed in seed_for(seed, STREAM, ...), so no two uses
# of randomness ever share a stream, and each is reproducible from its key alone (a resumed run
# draws the same numbers).
EVAL_BATCHES, TRAIN_BATCHES, DROPOUT, RESIZE_NOISE = 0, 1, 2, 3


def seed_for(*parts: int) -> int:
    """A 63-bit seed mixed from non-negative integers such as (seed, iteration, micro-batch)."""
    return int(np.random.SeedSequence(list(parts)).generate_state(2, np.uint64)[0] >> np.uint64(1))


def _to_device(x: torch.Tensor, device: str) -> torch.Tensor:
    if device.startswith('cuda'):
        return x.pin_memory().to(device, non_blocking=True)
    return x


def get_windows(paths: list[str], dtype: str, batch_size: int, block_size: int,
                gen: torch.Generator, device: str) -> torch.Tensor:
    """batch_size random windows of block_size tokens from a split's token files (data.shard_paths),
    on device (nanoGPT's get_batch). A window lies within one file; each start is drawn uniformly
    over all of them."""
    # a fresh memmap per batch avoids the memory leak of a long-lived one
    files = [np.memmap(p, dtype=dtype, mode='r') for p in paths]
    # the starts each file offers, running total
    ends = np.cumsum([max(len(f) - block_size, 0) for f in files])
    ix = torch.randint(int(ends[-1]), (batch_size,), generator=gen).numpy()
    which = np.searchsorted(ends, ix, side='right')
    rows = [files[k][i - (ends[k - 1] if k else 0):][:block_size]
            for k, i in zip(which.tolist(), ix.tolist())]
    return _to_device(torch.from_numpy(np.stack([r.astype(np.int64) for r in rows])), device)


SCAN_CHUNK = 1 << 26  # tokens read at a time when finding the documents of a token file


# every shard's index for the whole run: windows are drawn across all shards at every batch
@functools.cache
def document_pieces(path: str, dtype: str, cls_token_id: int,
                    block_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where the windows of document packing may start: (piece start offsets, whether the piece
    needs a [CLS] put in front, the running total of the pieces' lengths, to draw them by). Every
    document ([CLS] ... [SEP] in the file) starts a piece; one longer than a window is cut into
    further pieces of block_size - 1 tokens, each of which starts its window with a [CLS] of its
    own. Read once per process and file: 17 bytes a piece."""
    data = np.memmap(path, dtype=dtype, mode='r')
    # a chunk at a time: `data == cls_token_id` on the whole file would hold one byte per token
    # in memory
    doc_starts = np.concatenate([np.flatnonzero(data[i:i + SCAN_CHUNK] == cls_token_id) + i
                                 for i in range(0, len(data), SCAN_CHUNK)]
                                + [np.zeros(0, np.int64)])
    lengths = np.diff(doc_starts, append=len(data))
    # further pieces of each document
    extra = -(-np.maximum(lengths - block_size, 0) // (block_size - 1))
    doc_of_piece = np.repeat(np.arange(len(doc_starts)), 1 + extra)
    # piece k of its doc
    k = np.arange(len(doc_of_piece)) - np.repeat(np.cumsum(1 + extra) - (1 + extra), 1 + extra)
    starts = doc_starts[doc_of_piece] + np.where(k > 0, block_size + (k - 1) * (block_size - 1), 0)
    needs_cls = k > 0
    # the last pieces of the file may not fill a window
    fits = starts + block_size - needs_cls <= len(data)
    starts, needs_cls = starts[fits], needs_cls[fits]
    if not len(starts):  # a file too short for one window
        return starts, needs_cls, np.zeros(0, np.int64)
    lengths = np.minimum(np.diff(starts, append=starts[-1] + block_size), block_size)
    return starts, needs_cls, np.cumsum(lengths)


def get_document_windows(paths: list[str], dtype: str, batch_size: int, block_size: int,
                         cls_token_id: int, gen: torch.Generator,
                         device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Document packing: windows that each start at the beginning of a document (or of a piece of a
    long one, then with a [CLS] in front) and go on into the documents after it in the same file,
    with document_ids [B, T] numbering the documents in each window so that attention stays within
    them (Encoder.forward(document_ids=...)). A piece is drawn with probability proportional to its
    length, so every token is as likely to be trained on as with get_windows."""
    pieces = [document_pieces(p, dtype, cls_token_id, block_size) for p in paths]
    offsets = np.cumsum([0] + [int(total[-1]) if len(total) else 0 for _, _, total in pieces])
    # a uniform token, then the file and the piece that hold it: O(batch log pieces) per batch,
    # whatever the size
    tokens = torch.randint(int(offsets[-1]), (batch_size,), generator=gen).numpy()
    which = np.searchsorted(offsets, tokens, side='right') - 1
    files = [np.memmap(p, dtype=dtype, mode='r') for p in paths]
    rows = []
    for k, t in zip(which.tolist(), tokens.tolist()):
        starts, needs_cls, total = pieces[k]
        p = int(np.searchsorted(total, t - offsets[k], side='right'))
        s, data = int(starts[p]), files[k]
        row = data[s:s + block_size - 1] if needs_cls[p] else data[s:s + block_size]
        rows.append(np.concatenate([[cls_token_id], row]) if needs_cls[p] else row)
    x = torch.from_numpy(np.stack(rows).astype(np.int64))
    # [CLS] only ever starts a document: prepare.py's corpus encoding never produces it inside one
    return _to_device(x, device), _to_device(torch.cumsum(x == cls_token_id, dim=1), device)


class TokenSpace:
    """The ids masking needs in one token space: the full one (meta.json) or a shrunken one
    (vocab_K.pt)."""

    def __init__(self, src: dict, device: str):
        self.size = src.get('shrunk_vocab_size', src['vocab_size'])
        self.mask_token_id = src['mask_token_id']
        special = torch.zeros(self.size, dtype=torch.bool)
        special[torch.tensor(src['special_token_ids'], dtype=torch.long)] = True
        self.special = special.to(device)
        self.random_ids = torch.nonzero(~special).squeeze(1).to(device)
        # a shrunken space's ids as full ids (RARE as [UNK]); None for the full space
        self.to_full = src['shrunk_to_full'].to(device) if 'shrunk_to_full' in src else None


def unigram_logits(counts: np.ndarray, space: TokenSpace,
                   full_to_shrunk: torch.Tensor | None = None) -> torch.Tensor:
    """Log-frequencies [space.size] of the tokens MLM predicts (non-special ones, counted in
    train.bin; in a shrunken space RARE gets the count of every token it stands for), add-one
    smoothed; special tokens, never predicted, get the floor of an unseen token. As the decoder's
    initial bias, they make the untrained model predict the unigram distribution, so training need
    not grow that prior out of its weights."""
    counts = torch.as_tensor(counts, dtype=torch.float64)
    if full_to_shrunk is not None:
        counts = torch.zeros(space.size, dtype=torch.float64).index_add_(0, full_to_shrunk.cpu(),
                                                                          counts)
    counts = counts.masked_fill(space.special.cpu(), 0) + 1
    return (counts / counts.sum()).log().float()


def mask_tokens(x: torch.Tensor, space: TokenSpace, rate: float, mask_token_prob: float,
                random_token_prob: float, gen: torch.Generator,
                full_to_shrunk: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """MLM corruption. Each non-special token is selected with probability `rate`; a selected token
    becomes [MASK] with mask_token_prob, a random non-special token with random_token_prob, else
    stays. Returns (inputs, labels) with labels IGNORE_INDEX (-100) where nothing is predicted.
    With full_to_shrunk, x is first mapped into the shrunken space (then `space`): labels are made
    after the lookup, so -100 never goes through it."""
    if full_to_shrunk is not None:
        x = full_to_shrunk[x]
    probs = torch.rand(x.shape, device=x.device, generator=gen)
    action = torch.rand(x.shape, device=x.device, generator=gen)
    random_ids = space.random_ids[torch.randint(len(space.random_ids), x.shape, device=x.device,
                                                generator=gen)]
    selected = (probs < rate) & ~space.special[x]
    labels = torch.where(selected, x, IGNORE_INDEX)
    inputs = torch.where(selected & (action < mask_token_prob), space.mask_token_id, x)
    use_random = selected & (action >= mask_token_prob) & \
        (action < mask_token_prob + random_token_prob)
    return torch.where(use_random, random_ids, inputs), labels


def masked_batch(paths: list[str], meta: dict, shape: tuple[int, int], space: TokenSpace,
                 full_to_shrunk: torch.Tensor | None, rate: float, probs: tuple[float, float],
                 seed: int, device: str, pack_documents: bool = False
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """An MLM micro-batch reproducible from seed alone: shape = (batch, block) windows of a split's
    token files (whole documents with pack_documents), masked at rate with probs = (mask_token_prob,
    random_token_prob). Returns inputs, labels and the document ids of packing (None without it)."""
    gen = torch.Generator().manual_seed(seed)
    if pack_documents:
        x, documents = get_document_windows(paths, meta['dtype'], *shape, meta['cls_token_id'], gen,
                                            device)
    else:
        x, documents = get_windows(paths, meta['dtype'], *shape, gen, device), None
    # windows are drawn on the CPU; on a GPU the masks are drawn there, from a seed of their own
    dgen = gen if torch.device(device).type == 'cpu' else \
        torch.Generator(device).manual_seed(seed_for(seed, 1))
    return *mask_tokens(x, space, rate, *probs, dgen, full_to_shrunk), documents


def prediction_counts(logits: torch.Tensor, loss: torch.Tensor, labels: torch.Tensor,
                      rare_id: int | None) -> torch.Tensor:
    """What an evaluation sums over batches (float64, to all-reduce): loss * predicted, correct,
    predicted, and the same two on targets that are not RARE (every target when rare_id is None).
    logits are the sparse head's rows."""
    target = labels[labels != IGNORE_INDEX]
    hit = logits.argmax(-1) == target
    core = target != rare_id if rare_id is not None else torch.ones_like(hit)
    counts = (loss.detach() * len(target), hit.sum(), len(target), (hit & core).sum(), core.sum())
    return torch.stack([torch.as_tensor(c, dtype=torch.float64, device=labels.device)
                        for c in counts])


def prediction_capacity(n_tokens: int, rate: float) -> int:
    """Rows the sparse head reserves for a micro-batch of n_tokens masked at `rate`: the mean number
    of masked tokens plus 7 standard deviations of that binomial count, rounded up to a multiple of
    64. Exceeding it has a probability under 1e-11 per micro-batch; the few percent of padding rows
    cost less than the recompiles and host syncs of a data-dependent shape."""
    mean, std = n_tokens * rate, math.sqrt(n_tokens * rate * (1 - rate))
    return min(n_tokens, 64 * math.ceil((mean + 7 * std) / 64))


class SparseHeadRows:
    """How many rows the sparse head predicts in a step's micro-batches. Eager, as many as each has
    labels. Compiled, a fixed number (prediction_capacity): a count that changes with the masks
    would give the graph a data-dependent shape, which means recompiles or a host sync per step, so
    the head pads to a static size instead. A micro-batch with more labels than that would lose
    some; the flag is read at log points (reading it waits for the GPU), every rank agreeing, and
    stops the run."""

    def __init__(self, compiled: bool, device: str):
        self.compiled = compiled
        self.overflow = torch.zeros((), dtype=torch.bool, device=device)

    def rows(self, counts: torch.Tensor, n_tokens: int, rate: float) -> int | None:
        """The rows for micro-batches of n_tokens masked at rate with counts labels each; None: no
        fixed number."""
        if not self.compiled:
            return None
        capacity = prediction_capacity(n_tokens, rate)
        self.overflow |= counts.max() > capacity
        return capacity

    def check(self, n_tokens: int, rate: float) -> None:
        if all_reduce(self.overflow.float(), dist.ReduceOp.MAX).item():
            fail(f'a micro-batch had more masked tokens than prediction_capacity({n_tokens}, '
                 f'{rate}) = {prediction_capacity(n_tokens, rate)}; this should never happen: '
                 'report it, and use --compile=False')


def micro_batch_loss(mean_loss: torch.Tensor, n_predicted: torch.Tensor,
                     n_step: torch.Tensor) -> torch.Tensor:
    """A micro-batch's share of the step loss: its mean loss weighted by its predicted tokens over
    those of the whole step (all micro-batches, all ranks), so accumulation equals one big batch. No
    prediction, no share."""
    return torch.where(n_predicted > 0, mean_loss.float(), 0.0) * (n_predicted / n_step)


@torch.no_grad()
def evaluate(model: torch.nn.Module, get_batch: Callable, eval_iters: int, rare_id: int | None,
             autocast: AbstractContextManager) -> dict:
    """Loss and masked-token accuracy of each split on eval_iters fixed batches (get_batch(split, k)
    with fixed masks), summed over the ranks, which share the batches; with rare_id (the shrunken
    phase) also the accuracy on targets that are not RARE and the share of targets that are."""
    rank, world_size = (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)
    device = next(model.parameters()).device
    model.eval()
    out = {}
    for split in ('train', 'val'):
        sums = torch.zeros(5, dtype=torch.float64, device=device)
        for k in range(rank, eval_iters, world_size):
            x, y, documents = get_batch(split, k)
            with autocast:
                logits, loss = model(x, labels=y, document_ids=documents)
            sums += prediction_counts(logits, loss, y, rare_id)
        loss_sum, correct, n, core_correct, core_n = all_reduce(sums).tolist()
        out[f'{split}_loss'], out[f'{split}_acc'] = loss_sum / n, correct / n
        if rare_id is not None:
            out[f'{split}_core_acc'], out[f'{split}_rare_frac'] = \
                core_correct / core_n, 1 - core_n / n
    model.train()
    return out
