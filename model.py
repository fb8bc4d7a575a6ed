"""
Encoder models for masked-language modelling, in one file.

- ModernBERT with exactly the parameter names and maths of transformers' ModernBertForMaskedLM, so
  state dicts load strictly in both directions (hf.load_pretrained / hf.save_pretrained).
- NeoBERT with the official chandar-lab checkpoint layout (per-head interleaved qkv, packed SwiGLU,
  RMSNorm, interleaved-pair RoPE, untied decoder with bias).

Both share attention.py (RoPE, the masks, built once per forward, and the attention kernels) and the
sparse MLM head: with labels only the predicted rows go through the head and decoder.
"""

import dataclasses
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from attention import attention, attention_masks, deinterleave, flex_masks, rope_cos_sin

IGNORE_INDEX = -100

# Per-architecture values of the fields left at None (reference section 1 and 2: the official
# configs).
ARCH_DEFAULTS = {
    'modernbert': dict(vocab_size=50368, intermediate_size=1152, num_hidden_layers=22,
                       max_position_embeddings=8192, global_attn_every_n_layers=3,
                       global_rope_theta=160000.0, local_rope_theta=10000.0,
                       tie_word_embeddings=True, pad_token_id=50283, cls_token_id=50281,
                       sep_token_id=50282, mask_token_id=50284),
    # every layer global; intermediate_size means what NeoBERT's config means (3072 -> 2048 SwiGLU
    # units)
    'neobert': dict(vocab_size=30522, intermediate_size=3072, num_hidden_layers=28,
                    max_position_embeddings=4096, global_attn_every_n_layers=1,
                    global_rope_theta=10000.0, local_rope_theta=10000.0, tie_word_embeddings=False,
                    pad_token_id=0, cls_token_id=101, sep_token_id=102, mask_token_id=103),
}
SPECIAL_IDS = ('pad_token_id', 'cls_token_id', 'sep_token_id', 'mask_token_id')
ATTN_IMPLEMENTATIONS = ('auto', 'sdpa', 'flex')


@dataclass
class EncoderConfig:
    arch: str = 'modernbert'  # "modernbert" | "neobert"
    vocab_size: int | None = None
    hidden_size: int = 768
    intermediate_size: int | None = None
    num_hidden_layers: int | None = None
    num_attention_heads: int = 12
    max_position_embeddings: int | None = None
    # layer i is global when i % n == 0, else sliding-window
    global_attn_every_n_layers: int | None = None
    local_attention: int = 128  # window size: token i sees j when |i - j| <= local_attention // 2
    global_rope_theta: float | None = None
    local_rope_theta: float | None = None
    norm_eps: float = 1e-5
    norm_bias: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False
    classifier_bias: bool = False
    decoder_bias: bool = True
    tie_word_embeddings: bool | None = None
    pad_token_id: int | None = None
    cls_token_id: int | None = None
    sep_token_id: int | None = None
    mask_token_id: int | None = None
    embedding_dropout: float = 0.0
    attention_dropout: float = 0.0
    mlp_dropout: float = 0.0
    initializer_range: float = 0.02
    initializer_cutoff_factor: float = 2.0
    # "sdpa": F.scaled_dot_product_attention (local layers by blocks, see Band); "flex":
    # FlexAttention for every masked layer; "auto": flex when training on CUDA (where its kernel is
    # fastest), sdpa elsewhere
    attn_implementation: str = 'auto'

    def __post_init__(self):
        if self.arch not in ARCH_DEFAULTS:
            raise ValueError(f'arch={self.arch!r} is unknown: use one of {sorted(ARCH_DEFAULTS)}')
        for name, value in ARCH_DEFAULTS[self.arch].items():
            # a special id of the architecture's own tokenizer that this vocabulary lacks stays
            # unset: the network needs none of them (pad only for padding_idx), and train.py sets
            # each one from the data
            if getattr(self, name) is None and not (name in SPECIAL_IDS
                                                    and value >= self.vocab_size):
                setattr(self, name, value)
        self._validate()

    def _validate(self):
        for name in ('vocab_size', 'hidden_size', 'intermediate_size', 'num_hidden_layers',
                     'num_attention_heads', 'max_position_embeddings',
                     'global_attn_every_n_layers'):
            if getattr(self, name) < 1:
                raise ValueError(f'{name}={getattr(self, name)} must be a positive integer')
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f'hidden_size={self.hidden_size} is not divisible by '
                             f'num_attention_heads={self.num_attention_heads}: '
                             f'choose heads that divide it')
        if self.head_dim % 2:
            raise ValueError(f'head_dim={self.head_dim} (hidden_size / num_attention_heads) '
                             'is odd: RoPE needs an even head_dim')
        if self.local_attention < 2 or self.local_attention % 2:
            raise ValueError(f'local_attention={self.local_attention} must be a positive even '
                             'window (half of it on each side)')
        for name in ('global_rope_theta', 'local_rope_theta', 'norm_eps', 'initializer_range',
                     'initializer_cutoff_factor'):
            if getattr(self, name) <= 0:
                raise ValueError(f'{name}={getattr(self, name)} must be positive')
        for name in ('embedding_dropout', 'attention_dropout', 'mlp_dropout'):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f'{name}={getattr(self, name)} must lie in [0, 1)')
        for name in SPECIAL_IDS:
            if getattr(self, name) is not None and not 0 <= getattr(self, name) < self.vocab_size:
                raise ValueError(f'{name}={getattr(self, name)} is outside the vocabulary '
                                 f"(vocab_size={self.vocab_size}): "
                                 f"set {name} to the tokenizer's id")
        if self.attn_implementation not in ATTN_IMPLEMENTATIONS:
            raise ValueError(f'attn_implementation={self.attn_implementation!r} is unknown: '
                             f"use one of {', '.join(ATTN_IMPLEMENTATIONS)}")
        if self.attn_implementation == 'flex' and self.attention_dropout:
            raise ValueError('FlexAttention has no attention dropout: set attention_dropout=0 or '
                             "attn_implementation='sdpa'")
        if self.arch == 'neobert' and (self.norm_bias or self.classifier_bias):
            raise ValueError('neobert has RMSNorm (no bias) and no head transform: '
                             'set norm_bias=False and classifier_bias=False')

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def layer_kind(self, i: int) -> str:
        return 'global' if i % self.global_attn_every_n_layers == 0 else 'local'


# --------------------------------------------------------------------------------------------------
# The last layer at the predicted rows: with labels only those rows reach the loss, so past its
# attention (which still reads the keys and values of every token) the last layer's output
# projection, its MLP and the final norm run at those rows alone, as in MosaicBERT and ModernBERT's
# own trainer.

def at_rows(x: torch.Tensor, rows: torch.Tensor | None) -> torch.Tensor:
    """x [B, T, ...] at the flat positions rows ([len(rows), ...]); x itself when rows is None."""
    return x if rows is None else x.flatten(0, 1)[rows]


def last_layer_rows(layers: nn.ModuleList, i: int,
                    rows: torch.Tensor | None) -> torch.Tensor | None:
    """The rows layer i computes past its attention: the given ones for the last layer, every row
    (None) before."""
    return rows if i == len(layers) - 1 else None


# --------------------------------------------------------------------------------------------------
# ModernBERT (names as transformers' ModernBertForMaskedLM)

class ModernBertAttention(nn.Module):
    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.n_head, self.head_dim = config.num_attention_heads, config.head_dim
        self.dropout = config.attention_dropout
        self.Wqkv = nn.Linear(config.hidden_size, 3 * config.hidden_size,
                              bias=config.attention_bias)
        self.Wo = nn.Linear(config.hidden_size, config.hidden_size, bias=config.attention_bias)
        self.out_drop = nn.Dropout(config.attention_dropout)

    def forward(self, x, rope, mask, rows=None):
        B, T, _ = x.shape
        # rows are [Q of all heads; K of all heads; V of all heads]
        q, k, v = self.Wqkv(x).view(B, T, 3, self.n_head, self.head_dim).permute(2, 0, 3, 1, 4)
        y = attention(q, k, v, rope, mask, self.dropout if self.training else 0.0)
        return self.out_drop(self.Wo(at_rows(y, rows)))


class ModernBertMLP(nn.Module):
    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.Wi = nn.Linear(config.hidden_size, 2 * config.intermediate_size, bias=config.mlp_bias)
        self.drop = nn.Dropout(config.mlp_dropout)
        self.Wo = nn.Linear(config.intermediate_size, config.hidden_size, bias=config.mlp_bias)

    def forward(self, x):
        inp, gate = self.Wi(x).chunk(2, dim=-1)  # GeGLU: the first half is activated
        return self.Wo(self.drop(F.gelu(inp) * gate))


class ModernBertLayer(nn.Module):
    def __init__(self, config: EncoderConfig, i: int):
        super().__init__()
        self.kind = config.layer_kind(i)
        # layer 0 reads the already normalized embeddings
        self.attn_norm = (nn.Identity() if i == 0
                          else nn.LayerNorm(config.hidden_size, config.norm_eps,
                                            bias=config.norm_bias))
        self.attn = ModernBertAttention(config)
        self.mlp_norm = nn.LayerNorm(config.hidden_size, config.norm_eps, bias=config.norm_bias)
        self.mlp = ModernBertMLP(config)

    def forward(self, x, rope, mask, rows=None):
        x = at_rows(x, rows) + self.attn(self.attn_norm(x), rope, mask, rows)
        return x + self.mlp(self.mlp_norm(x))


class ModernBertEmbeddings(nn.Module):
    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.tok_embeddings = nn.Embedding(config.vocab_size, config.hidden_size,
                                           padding_idx=config.pad_token_id)
        self.norm = nn.LayerNorm(config.hidden_size, config.norm_eps, bias=config.norm_bias)
        self.drop = nn.Dropout(config.embedding_dropout)

    def forward(self, idx):
        return self.drop(self.norm(self.tok_embeddings(idx)))


class ModernBertModel(nn.Module):
    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.embeddings = ModernBertEmbeddings(config)
        self.layers = nn.ModuleList(ModernBertLayer(config, i)
                                    for i in range(config.num_hidden_layers))
        self.final_norm = nn.LayerNorm(config.hidden_size, config.norm_eps, bias=config.norm_bias)

    @property
    def tok_embeddings(self) -> nn.Embedding:
        return self.embeddings.tok_embeddings

    def forward(self, idx, ropes, masks, rows=None):
        x = self.embeddings(idx)
        for i, layer in enumerate(self.layers):
            x = layer(x, ropes[layer.kind], masks[layer.kind],
                      last_layer_rows(self.layers, i, rows))
        return self.final_norm(x)


class ModernBertHead(nn.Module):
    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size, bias=config.classifier_bias)
        self.norm = nn.LayerNorm(config.hidden_size, config.norm_eps, bias=config.norm_bias)

    def forward(self, x):
        return self.norm(F.gelu(self.dense(x)))


# --------------------------------------------------------------------------------------------------
# NeoBERT (names as the official checkpoints)

def swiglu_size(intermediate_size: int) -> int:
    """NeoBERT keeps SwiGLU's compute equal to a 4x MLP: 2/3 of intermediate_size, rounded up to a
    multiple of 8."""
    return 8 * ((int(2 * intermediate_size / 3) + 7) // 8)


class NeoBertFFN(nn.Module):
    def __init__(self, config: EncoderConfig):
        super().__init__()
        hidden = swiglu_size(config.intermediate_size)
        # [w1 (gets SiLU); w2]
        self.w12 = nn.Linear(config.hidden_size, 2 * hidden, bias=config.mlp_bias)
        self.w3 = nn.Linear(hidden, config.hidden_size, bias=config.mlp_bias)

    def forward(self, x):
        x1, x2 = self.w12(x).chunk(2, dim=-1)
        return self.w3(F.silu(x1) * x2)


class NeoBertLayer(nn.Module):
    def __init__(self, config: EncoderConfig, i: int):
        super().__init__()
        self.kind = config.layer_kind(i)
        self.n_head, self.head_dim = config.num_attention_heads, config.head_dim
        self.dropout = config.attention_dropout
        self.attention_norm = nn.RMSNorm(config.hidden_size, config.norm_eps)
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size,
                             bias=config.attention_bias)
        self.wo = nn.Linear(config.hidden_size, config.hidden_size, bias=config.attention_bias)
        self.resid_drop = nn.Dropout(config.attention_dropout)
        self.ffn_norm = nn.RMSNorm(config.hidden_size, config.norm_eps)
        self.ffn = NeoBertFFN(config)
        self.ffn_drop = nn.Dropout(config.mlp_dropout)

    def attn(self, x, rope, mask, rows=None):
        B, T, _ = x.shape
        # per head: q, k, v rows follow each other (head_dim each)
        q, k, v = (self.qkv(x).view(B, T, self.n_head, 3 * self.head_dim).transpose(1, 2)
                   .chunk(3, dim=-1))
        y = attention(deinterleave(q), deinterleave(k), v, rope, mask,
                      self.dropout if self.training else 0.0)
        return self.resid_drop(self.wo(at_rows(y, rows)))

    def forward(self, x, rope, mask, rows=None):
        x = at_rows(x, rows) + self.attn(self.attention_norm(x), rope, mask, rows)
        return x + self.ffn_drop(self.ffn(self.ffn_norm(x)))


class NeoBertModel(nn.Module):
    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.encoder = nn.Embedding(config.vocab_size, config.hidden_size,
                                    padding_idx=config.pad_token_id)
        self.drop = nn.Dropout(config.embedding_dropout)
        self.transformer_encoder = nn.ModuleList(NeoBertLayer(config, i)
                                                 for i in range(config.num_hidden_layers))
        self.layer_norm = nn.RMSNorm(config.hidden_size, config.norm_eps)

    @property
    def tok_embeddings(self) -> nn.Embedding:
        return self.encoder

    # ModernBertModel's name for them, so callers need not ask which model
    @property
    def layers(self) -> nn.ModuleList:
        return self.transformer_encoder

    def forward(self, idx, ropes, masks, rows=None):
        x = self.drop(self.encoder(idx))
        for i, layer in enumerate(self.transformer_encoder):
            x = layer(x, ropes[layer.kind], masks[layer.kind],
                      last_layer_rows(self.transformer_encoder, i, rows))
        return self.layer_norm(x)


# --------------------------------------------------------------------------------------------------
# Vocabulary resizing (grow-as-you-go): one implementation for weights and for optimizer moments

def vocab_index(old_vocab_size: int, new_vocab_size: int, source_token_id: int,
                full_to_shrunk: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(index, is_new), both [new_vocab_size]: new row t takes old row index[t]; is_new marks rows
    that did not exist before. With full_to_shrunk, index = full_to_shrunk and the new rows are the
    rare group (every full id mapped to source_token_id, the RARE slot). Without, rows are kept and
    appended ones copy source_token_id."""
    if not 0 <= source_token_id < old_vocab_size:
        raise ValueError(f'source_token_id={source_token_id} is outside the current vocabulary '
                         f'({old_vocab_size})')
    if full_to_shrunk is None:
        if new_vocab_size < old_vocab_size:
            raise ValueError(f'new_vocab_size={new_vocab_size} is smaller than the current '
                             f'{old_vocab_size}: appending cannot shrink; '
                             'pass full_to_shrunk to remap')
        index = torch.arange(new_vocab_size)
        is_new = index >= old_vocab_size
        return index.masked_fill(is_new, source_token_id), is_new
    if (full_to_shrunk.dim() != 1 or len(full_to_shrunk) != new_vocab_size
            or full_to_shrunk.is_floating_point()):
        raise ValueError(f'full_to_shrunk must be an integer tensor of length '
                         f'new_vocab_size={new_vocab_size}, '
                         f'got {full_to_shrunk.dtype} {tuple(full_to_shrunk.shape)}')
    index = full_to_shrunk.long().cpu()
    if index.min() < 0 or index.max() >= old_vocab_size:
        raise ValueError(f'full_to_shrunk values must lie in [0, {old_vocab_size}), '
                         'the current vocabulary')
    return index, index == source_token_id


def gather_vocab_rows(old: torch.Tensor, new_vocab_size: int, source_token_id: int,
                      full_to_shrunk: torch.Tensor | None = None,
                      zero_new_rows: bool = False) -> torch.Tensor:
    """A vocabulary-indexed tensor (rows = token ids: embedding, decoder weight or bias, or their
    AdamW moments) in the new vocabulary: row t = old[full_to_shrunk[t]] (or old[t], appended
    rows = old[source_token_id]). zero_new_rows=True zeroes the rows that did not exist before (for
    optimizer moments)."""
    index, is_new = vocab_index(old.shape[0], new_vocab_size, source_token_id, full_to_shrunk)
    new = old[index.to(old.device)]
    if zero_new_rows:
        new[is_new.to(old.device)] = 0
    return new


# --------------------------------------------------------------------------------------------------
# The model

def predicted_rows(labels: torch.Tensor,
                   max_predictions: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The flat positions of the labels (IGNORE_INDEX: nothing predicted) and their targets. With
    max_predictions, exactly that many, padded with position 0 whose target is IGNORE_INDEX: shapes
    that do not depend on the batch."""
    labels = labels.reshape(-1)
    keep = labels != IGNORE_INDEX
    if max_predictions is None:
        return keep.nonzero().squeeze(1), labels[keep]
    rows = torch.nonzero_static(keep, size=max_predictions, fill_value=0).squeeze(1)
    filled = torch.arange(max_predictions, device=rows.device) < keep.sum()
    return rows, torch.where(filled, labels[rows], IGNORE_INDEX)


class Encoder(nn.Module):

    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.config = dataclasses.replace(config)  # its own: changing it leaves other models alone
        if config.arch == 'modernbert':
            self.model = ModernBertModel(config)
            self.head = ModernBertHead(config)
        else:
            self.model = NeoBertModel(config)
            self.head = nn.Identity()  # NeoBERT's decoder reads the final norm directly
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=config.decoder_bias)
        if config.tie_word_embeddings:
            self.decoder.weight = self.model.tok_embeddings.weight
        self._init_weights()
        self.set_rope_theta(config.global_rope_theta, config.local_rope_theta)

    def set_rope_theta(self, global_theta: float, local_theta: float) -> None:
        """Set the rotary bases of the global and local layers, and compute their cos/sin tables for
        every position once, as buffers (not saved: they follow from the config). Computed inside a
        compiled step instead, they get inlined by inductor into every layer's RoPE kernel, forward
        and backward, each element recomputing a power, a sine and a cosine."""
        c = self.config
        c.global_rope_theta, c.local_rope_theta = float(global_theta), float(local_theta)
        for kind, theta in (('global', c.global_rope_theta), ('local', c.local_rope_theta)):
            cos, sin = rope_cos_sin(c.max_position_embeddings, c.head_dim, theta,
                                    self.decoder.weight.device)
            self.register_buffer(f'rope_{kind}', torch.stack((cos, sin)), persistent=False)

    def _stds(self) -> tuple[float, float]:
        """The init std of the matrices that read the residual stream and of those that write it."""
        c = self.config
        return c.initializer_range, c.initializer_range / math.sqrt(2.0 * c.num_hidden_layers)

    def _draw(self, w: torch.Tensor, std: float) -> None:
        c = self.config
        if c.arch == 'neobert':  # official: uniform
            nn.init.uniform_(w, -c.initializer_range, c.initializer_range)
        else:
            cut = c.initializer_cutoff_factor * std
            nn.init.trunc_normal_(w, mean=0.0, std=std, a=-cut, b=cut)

    @torch.no_grad()
    def _init_weights(self):
        c = self.config
        if c.arch == 'neobert':  # official: uniform for every Linear and the embedding, zero biases
            for m in self.modules():
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    self._draw(m.weight, c.initializer_range)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    nn.init.zeros_(m.bias)
            return
        std_in, std_out = self._stds()
        inits = [(self.model.tok_embeddings, std_in), (self.head.dense, std_out)]
        for layer in self.model.layers:
            inits += [(layer.attn.Wqkv, std_in), (layer.attn.Wo, std_out), (layer.mlp.Wi, std_in),
                      (layer.mlp.Wo, std_out)]
        if not c.tie_word_embeddings:  # a tied decoder keeps the embedding init
            inits.append((self.decoder, std_out))
        for m, std in inits:
            self._draw(m.weight, std)
        for m in self.modules():
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def attention_summary(self, device: torch.device) -> str:
        """Which kernels attend on device, for the training log."""
        masked = 'FlexAttention' if self.uses_flex(device) else 'SDPA with boolean masks'
        if device.type != 'cuda':
            return f'masked layers {masked}, unmasked ones SDPA'
        # SDPA takes the first enabled backend that fits the call
        backends = [name for name, on in (('cudnn', torch.backends.cuda.cudnn_sdp_enabled()),
                                          ('flash', torch.backends.cuda.flash_sdp_enabled()),
                                          ('mem_efficient',
                                           torch.backends.cuda.mem_efficient_sdp_enabled())) if on]
        return f"masked layers {masked}; unmasked ones SDPA ({', '.join(backends)}, in that order)"

    def uses_flex(self, device: torch.device) -> bool:
        """Whether this forward attends with FlexAttention (attn_implementation, resolved for
        'auto')."""
        impl = self.config.attn_implementation
        if impl == 'auto':
            return device.type == 'cuda' and self.training and not self.config.attention_dropout
        return impl == 'flex'

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
               document_ids: torch.Tensor | None = None,
               rows: torch.Tensor | None = None) -> torch.Tensor:
        """The final hidden states [B, T, hidden_size] (after the final norm): what a task head or
        pooling reads. rows (flat positions in B * T): the hidden states at those rows only,
        [len(rows), hidden_size]."""
        c = self.config
        T = input_ids.shape[1]
        if T > c.max_position_embeddings:
            raise ValueError(f'sequence length {T} exceeds '
                             f'max_position_embeddings={c.max_position_embeddings}')
        kinds = {c.layer_kind(i) for i in range(c.num_hidden_layers)}
        tables = {'global': self.rope_global, 'local': self.rope_local}
        ropes = {k: tuple(tables[k][:, :T]) for k in kinds}  # (cos, sin) of the first T positions
        build_masks = flex_masks if self.uses_flex(input_ids.device) else attention_masks
        masks = build_masks(attention_mask, T, c.local_attention // 2, kinds, input_ids.device,
                            document_ids)
        return self.model(input_ids, ropes, masks, rows)

    def forward(self, input_ids, attention_mask=None, labels=None, document_ids=None,
                max_predictions=None, return_hidden=False):
        """Logits [B, T, V] without labels; with labels (IGNORE_INDEX where nothing is predicted)
        the logits of the predicted rows and their mean cross-entropy. document_ids [B, T]: tokens
        attend only within their document. max_predictions: a fixed number of predicted rows (at
        least the number of labels), so that the shapes do not depend on the batch: the forward then
        compiles to one graph with no host sync; the logits have max_predictions rows, those past
        the real ones predicting nothing. return_hidden: also the final hidden states the logits are
        made from ([B, T, hidden_size], or [rows, hidden_size] with labels), a distillation
        target."""
        rows = None
        # sparse prediction: only rows with a label go through the head and the decoder
        if labels is not None:
            rows, targets = predicted_rows(labels, max_predictions)
        h = self.encode(input_ids, attention_mask, document_ids, rows)
        logits = self.decoder(self.head(h))
        loss = None
        if labels is not None:  # mean over predicted rows; a batch with none gives 0, not NaN
            n = (targets != IGNORE_INDEX).sum()
            loss = F.cross_entropy(logits.float(), targets, reduction='sum') / n.clamp(min=1)
        return (logits, loss, h) if return_hidden else (logits, loss)

    # ---- parameters and optimizer

    def vocab_parameter_names(self) -> list[str]:
        """Names (as in named_parameters) of the token embedding and the decoder weight and bias; a
        tied decoder weight is the embedding and appears once."""
        vocab = {id(self.model.tok_embeddings.weight), id(self.decoder.weight)}
        if self.decoder.bias is not None:
            vocab.add(id(self.decoder.bias))
        return [n for n, p in self.named_parameters() if id(p) in vocab]

    def get_num_params(self, non_embedding: bool = False) -> int:
        """Parameter count (tied weights once); non_embedding leaves out the vocabulary
        parameters."""
        skip = set(self.vocab_parameter_names()) if non_embedding else set()
        return sum(p.numel() for n, p in self.named_parameters() if n not in skip)

    def estimate_mfu(self, tokens_per_iter, predicted_per_iter, dt, peak_flops,
                     seq_len=None) -> float:
        """Model FLOPs utilization (reference section 6): 6 * N_body per real token,
        12 * H * context per token and layer for attention (T for global layers, the window for
        local ones), head and decoder on predicted rows. Like the reference it counts the last layer
        at every token, although past its attention that layer runs at the predicted rows only (at
        30% of them, 2.6% of ModernBERT-small's FLOPs, 1.7% of base's are not computed). seq_len is
        the sequence length T (default max_position_embeddings)."""
        c = self.config
        T = seq_len or c.max_position_embeddings
        n_body = sum(p.numel() for p in self.model.layers.parameters() if p.dim() >= 2)
        context = sum(T if c.layer_kind(i) == 'global' else min(T, c.local_attention)
                      for i in range(c.num_hidden_layers))
        n_head = (sum(p.numel() for p in self.head.parameters() if p.dim() >= 2)
                  + self.decoder.weight.numel())
        flops = ((6 * n_body + 12 * c.hidden_size * context) * tokens_per_iter
                 + 6 * n_head * predicted_per_iter)
        return flops / dt / peak_flops

    # ---- grow-as-you-go vocabulary

    @torch.no_grad()
    def resize_vocabulary(self, new_vocab_size: int, source_token_id: int, noise_std: float = 0.01,
                          full_to_shrunk: torch.Tensor | None = None,
                          special_ids: dict | None = None) -> None:
        """Resize the token embedding and decoder to new_vocab_size.

        With full_to_shrunk (length new_vocab_size, full id -> current id) it is a gather: full
        token t gets the current row full_to_shrunk[t]. The rare group (full ids mapped to
        source_token_id, the RARE slot) starts from RARE's rows plus noise_std * randn, and its
        decoder bias is RARE's minus log(group size), so the probability of the group is unchanged
        (with noise 0 the model computes the same function; without a decoder bias there is nothing
        to offset and the group's mass grows with its size). The special ids follow their rows (the
        unique full id mapped to each); pass special_ids to set them explicitly. Without
        full_to_shrunk, rows are appended as copies of source_token_id plus noise (ids unchanged). A
        tied decoder stays tied."""
        emb = self.model.tok_embeddings
        index, is_new = vocab_index(emb.num_embeddings, new_vocab_size, source_token_id,
                                    full_to_shrunk)
        ids = dict(special_ids or {})
        for name in SPECIAL_IDS if full_to_shrunk is not None else ():
            if name in ids or getattr(self.config, name) is None:
                continue
            full = (index == getattr(self.config, name)).nonzero().flatten()
            if len(full) != 1 or is_new[full[0]]:
                raise ValueError(f'{name}={getattr(self.config, name)} has no unique core row in '
                                 f"full_to_shrunk: pass special_ids={{'{name}': <its full id>}}")
            ids[name] = int(full[0])
        # validates before changes
        new_config = dataclasses.replace(self.config, vocab_size=new_vocab_size, **ids)

        def resized(p: nn.Parameter) -> nn.Parameter:
            w = gather_vocab_rows(p.data, new_vocab_size, source_token_id, full_to_shrunk)
            new = is_new.to(w.device)
            if w.dim() == 2:
                w[new] += noise_std * torch.randn_like(w[new])
            elif full_to_shrunk is not None and new.any():  # decoder bias of the rare group
                w[new] -= math.log(int(new.sum()))
            return nn.Parameter(w, requires_grad=p.requires_grad)

        emb.weight = resized(emb.weight)
        emb.num_embeddings, emb.padding_idx = new_vocab_size, new_config.pad_token_id
        self.decoder.weight = (emb.weight if self.config.tie_word_embeddings
                               else resized(self.decoder.weight))
        if self.decoder.bias is not None:
            self.decoder.bias = resized(self.decoder.bias)
        self.decoder.out_features = new_vocab_size
        self.config = new_config

    @torch.no_grad()
    def init_rows_from_pieces(self, ids: list[int], pieces: list[list[int]],
                              mean_input: torch.Tensor | None = None,
                              logits: torch.Tensor | None = None) -> None:
        """Start tokens new to the model from the tokens their text splits into (Fast Vocabulary
        Transfer): the input embedding of ids[i] (and its decoder row, when untied) becomes the
        mean of the rows of pieces[i]; a token without pieces keeps its rows. With mean_input (the
        decoder's mean input over masked positions) and logits, the decoder bias of ids[i] is set
        so that its logit at mean_input is logits[i]: the caller decides how much probability
        the new tokens take, and they keep it on average over positions."""
        lengths = torch.tensor([len(p) for p in pieces], dtype=torch.long)
        has = lengths > 0
        rows = torch.tensor(ids, dtype=torch.long)
        flat = torch.tensor([t for p in pieces for t in p], dtype=torch.long)
        owner = torch.repeat_interleave(torch.arange(len(ids)), lengths)
        matrices = {id(w): w for w in (self.model.tok_embeddings.weight, self.decoder.weight)}
        for w in matrices.values():
            sums = torch.zeros(len(ids), w.shape[1], dtype=torch.float64)
            sums.index_add_(0, owner, w[flat.to(w.device)].double().cpu())
            mean = sums[has] / lengths[has, None]
            w[rows[has].to(w.device)] = mean.to(w)
        if mean_input is not None and self.decoder.bias is not None:  # in float64: logits of
            # about -20 keep their probabilities to a few parts per million
            w = self.decoder.weight[rows.to(self.decoder.weight.device)].double()
            bias = logits.to(w) - w @ mean_input.to(w)
            self.decoder.bias[rows.to(w.device)] = bias.to(self.decoder.bias)

    @torch.no_grad()
    def init_rows_randomly(self, ids: list[int], norms: tuple[float, float] | None = None) -> None:
        """Draw the input embedding rows of ids (and their decoder rows, when untied) as a new
        model's init draws them, or with norms (input, decoder) each drawn row rescaled to that
        length: random directions at a trained model's scale. Decoder biases are left to the
        caller."""
        rows, (std_in, std_out) = torch.tensor(ids, dtype=torch.long), self._stds()
        untied = [] if self.config.tie_word_embeddings else [(self.decoder.weight, std_out)]
        for k, (w, std) in enumerate([(self.model.tok_embeddings.weight, std_in)] + untied):
            fresh = torch.empty(len(ids), w.shape[1], dtype=w.dtype)
            self._draw(fresh, std)
            if norms is not None:
                fresh *= norms[k] / fresh.norm(dim=1, keepdim=True)
            w[rows.to(w.device)] = fresh.to(w.device)

    def set_embedding_finetune_mode(self, enabled: bool) -> None:
        """enabled: only the token embedding and the decoder (weight, bias) train; False: everything
        trains."""
        vocab = set(self.vocab_parameter_names())
        for name, p in self.named_parameters():
            p.requires_grad = not enabled or name in vocab
