"""
Attention for both encoders: RoPE, the rule of who attends to whom (padding, documents, the local
window), and the three ways to apply it: SDPA with a boolean mask, SDPA by blocks of queries for
local layers (Band), FlexAttention with a BlockMask on CUDA. model.py builds the masks once per
forward and calls attention() in every layer.
"""
import warnings
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.nn.attention.flex_attention import (BlockMask, and_masks, create_block_mask,
                                               flex_attention, or_masks)


def rope_cos_sin(seq_len: int, head_dim: int, theta: float,
                 device) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin [T, head_dim] in fp32 for half-rotation RoPE (the same arithmetic as
    transformers)."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float, device=device)
                                / head_dim))
    freqs = torch.arange(seq_len, device=device).float()[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Half-rotation RoPE (dim d pairs with d + head_dim/2), computed in fp32 like the reference."""
    xf = x.float()
    x1, x2 = xf.chunk(2, dim=-1)
    return (xf * cos + torch.cat((-x2, x1), dim=-1) * sin).to(x.dtype)


def deinterleave(x: torch.Tensor) -> torch.Tensor:
    """Reorder the last dim (2i, 2i+1) -> (i, head_dim/2 + i): interleaved-pair RoPE on x equals
    half-rotation RoPE on deinterleave(x) up to this same permutation of q and k, which leaves every
    q.k score unchanged."""
    return x.unflatten(-1, (-1, 2)).transpose(-1, -2).flatten(-2)


# Local layers attend by blocks (Band) when the sequence spans at least this many windows.
# `python bench.py --attention --reps=15` on the 2-core CPU (ModernBERT-small's 128-token window,
# B 8, RoPE + SDPA, forward + backward): blocks 1.08x faster than the dense window at T 256, 1.57x
# at 512, 2.20x at 1024; 0.97x at T 192.
BAND_FROM_WINDOWS = 2


@dataclass
class Band:
    """Sliding-window attention by blocks of queries: the queries start:stop attend only to the keys
    their windows reach, lo:hi (views, no copies). masks: one per block, [stop - start, hi - lo] or
    with padding or documents [B, 1, ., .], True = attend. One block spanning the whole sequence is
    the dense [T, T] window."""
    spans: list  # (start, stop, lo, hi) per block
    masks: list


def mask_rule(valid: torch.Tensor | None, document_ids: torch.Tensor | None,
              half_window: int | None):
    """Who attends to whom, as FlexAttention's mask_mod(b, h, q, kv) -> bool; None when every query
    sees every key. The SDPA path evaluates the same rule on index grids, so both paths attend to
    exactly the same keys. valid [B, T] marks real (non-pad) tokens, document_ids [B, T] the
    document of each token, half_window the keys on each side of a local layer's query. A query
    whose keys are all ruled out keeps its diagonal, so no row is empty."""
    def window(b, h, q, kv):
        return (q - kv).abs() <= half_window

    def real_key(b, h, q, kv):
        return valid[b, kv]

    def same_document(b, h, q, kv):
        return document_ids[b, q] == document_ids[b, kv]

    def diagonal(b, h, q, kv):
        return q == kv

    rules = [r for r, on in ((window, half_window is not None), (real_key, valid is not None),
                             (same_document, document_ids is not None)) if on]
    if not rules:
        return None
    rule = and_masks(*rules)
    return rule if valid is None and document_ids is None else or_masks(rule, diagonal)


def rule_grid(rule, q: torch.Tensor, kv: torch.Tensor, batch: int | None) -> torch.Tensor:
    """The boolean SDPA mask of `rule` for the queries q and keys kv (index vectors):
    [len(q), len(kv)], or [batch, 1, len(q), len(kv)] when the rule reads padding or documents."""
    b = torch.arange(batch, device=q.device)[:, None, None, None] if batch else q.new_zeros(())
    return rule(b, 0, q[:, None], kv[None, :])


def band_mask(rule, seq_len: int, half_window: int, block: int, device,
              batch: int | None = None) -> Band:
    """The Band of a local layer's rule (whose window is half_window keys on each side), in blocks
    of `block` queries; batch: the batch size when the rule reads padding or documents."""
    spans, masks = [], []
    for start in range(0, seq_len, block):
        stop = min(seq_len, start + block)
        lo, hi = max(0, start - half_window), min(seq_len, stop + half_window)
        spans.append((start, stop, lo, hi))
        masks.append(rule_grid(rule, torch.arange(start, stop, device=device),
                               torch.arange(lo, hi, device=device), batch))
    return Band(spans, masks)


def padding_and_documents(attention_mask: torch.Tensor | None, document_ids: torch.Tensor | None):
    """valid [B, T] (None without padding) and the batch size the masks need (None when they need
    none)."""
    valid = None
    if attention_mask is not None:
        valid = attention_mask.bool()
        # a fully padded sequence would leave its rows with no key (NaN): let those rows see every
        # key
        valid = valid | ~valid.any(dim=-1, keepdim=True)
    shaped = attention_mask if attention_mask is not None else document_ids
    return valid, None if shaped is None else shaped.shape[0]


def attention_masks(attention_mask: torch.Tensor | None, seq_len: int, half_window: int, kinds: set,
                    device, document_ids: torch.Tensor | None = None) -> dict:
    """Boolean SDPA masks (True = attend), built once per forward and shared by the layers of each
    kind: for global layers [B, 1, 1, T] padding, or [B, 1, T, T] with documents (None with neither:
    SDPA's fastest kernels); for local ones a Band, in blocks of one window when T spans at least
    BAND_FROM_WINDOWS windows, else one block."""
    valid, batch = padding_and_documents(attention_mask, document_ids)
    masks = {'global': None}
    if document_ids is not None:
        positions = torch.arange(seq_len, device=device)
        masks['global'] = rule_grid(mask_rule(valid, document_ids, None), positions, positions,
                                    batch)
    elif valid is not None:
        masks['global'] = valid[:, None, None, :]  # keys only: every query has a real key
    if 'local' in kinds:
        window = 2 * half_window
        block = window if seq_len >= BAND_FROM_WINDOWS * window else seq_len
        masks['local'] = band_mask(mask_rule(valid, document_ids, half_window), seq_len,
                                   half_window, block, device, batch)
    return masks


# (kind, T, half_window, device) -> the BlockMask of an unpadded sliding window
_block_mask_cache = {}


def flex_masks(attention_mask: torch.Tensor | None, seq_len: int, half_window: int, kinds: set,
               device, document_ids: torch.Tensor | None = None) -> dict:
    """FlexAttention BlockMasks of the same rules: built once per forward, or taken from a cache for
    the sliding window of unpadded single-document batches (the training case). Global layers with
    nothing to mask get None: they stay on SDPA, whose unmasked kernels (cuDNN, FlashAttention) are
    the fastest there are."""
    valid, batch = padding_and_documents(attention_mask, document_ids)
    masks = {}
    for kind in kinds:
        rule = mask_rule(valid, document_ids, half_window if kind == 'local' else None)
        key = (kind, seq_len, half_window, str(device))
        if rule is None:
            masks[kind] = None
        elif batch is None and key in _block_mask_cache:
            masks[kind] = _block_mask_cache[key]
        else:
            masks[kind] = create_block_mask(rule, batch, None, seq_len, seq_len, device=device)
            if batch is None and not torch.compiler.is_compiling():
                _block_mask_cache[key] = masks[kind]
    return masks


def banded_attention(q, k, v, band: Band, dropout_p: float) -> torch.Tensor:
    """q, k, v [B, heads, T, head_dim] -> [B, heads, T, head_dim], block by block."""
    ys = [F.scaled_dot_product_attention(q[:, :, start:stop], k[:, :, lo:hi], v[:, :, lo:hi],
                                         attn_mask=mask, dropout_p=dropout_p)
          for (start, stop, lo, hi), mask in zip(band.spans, band.masks)]
    return torch.cat(ys, dim=2) if len(ys) > 1 else ys[0]


_compiled_flex_attention = None


def flex(q, k, v, block_mask: BlockMask) -> torch.Tensor:
    """FlexAttention, compiled: uncompiled it runs a slow reference loop. Inside a compiled model
    dynamo already compiles it; on the CPU (forward only, for tests and inference) the reference is
    what there is."""
    global _compiled_flex_attention
    if torch.compiler.is_compiling():
        return flex_attention(q, k, v, block_mask=block_mask)
    if q.device.type == 'cpu':
        with warnings.catch_warnings():
            warnings.filterwarnings('ignore', message='flex_attention called without torch.compile')
            return flex_attention(q, k, v, block_mask=block_mask)
    if _compiled_flex_attention is None:
        _compiled_flex_attention = torch.compile(flex_attention, dynamic=False)
    return _compiled_flex_attention(q, k, v, block_mask=block_mask)


def attention(q, k, v, rope: tuple, mask, dropout_p: float) -> torch.Tensor:
    """q, k, v [B, heads, T, head_dim] -> [B, T, heads * head_dim]."""
    cos, sin = rope
    q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    if isinstance(mask, Band):
        y = banded_attention(q, k, v, mask, dropout_p)
    elif isinstance(mask, BlockMask):
        y = flex(q, k, v, mask)
    else:
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
    return y.transpose(1, 2).flatten(2)
