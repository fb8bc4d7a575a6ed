"""
NeoBERT for Hugging Face transformers, loaded with trust_remote_code=True:

    NeoBERTConfig   AutoConfig
    NeoBERT         AutoModel: the bare encoder, last_hidden_state after the final RMSNorm
    NeoBERTLMHead   AutoModelForMaskedLM: the encoder and its untied decoder (logits over the
                    vocabulary)

nanoBERT's export_hf.py copies this file into every NeoBERT folder it writes. It is standalone
(torch and transformers only). Config keys and parameter names are those of the official
chandar-lab/NeoBERT checkpoints: token embedding `model.encoder`, blocks
`model.transformer_encoder.N` (pre-norm, RMSNorm; `qkv` rows per head [q k v]; packed SwiGLU
`ffn.w12` = [w1 (gets SiLU); w2] and `ffn.w3`), final `model.layer_norm`, `decoder` with bias.
RoPE rotates interleaved pairs (2i, 2i+1), in fp32. Every layer attends globally.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from transformers import PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput, MaskedLMOutput


class NeoBERTConfig(PretrainedConfig):
    model_type = 'neobert'

    def __init__(self, vocab_size: int = 30522, hidden_size: int = 768, num_hidden_layers: int = 28,
                 num_attention_heads: int = 12, intermediate_size: int = 3072,
                 max_length: int = 4096, norm_eps: float = 1e-5, rope_theta: float = 10000.0,
                 attention_bias: bool = False, mlp_bias: bool = False, decoder_bias: bool = True,
                 embedding_dropout: float = 0.0, attention_dropout: float = 0.0,
                 mlp_dropout: float = 0.0, embedding_init_range: float = 0.02,
                 decoder_init_range: float = 0.02, pad_token_id: int = 0, **kwargs):
        if hidden_size % num_attention_heads or (hidden_size // num_attention_heads) % 2:
            raise ValueError(f'hidden_size={hidden_size} must split into '
                             f'num_attention_heads={num_attention_heads} '
                             'heads of even size (RoPE rotates pairs)')
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.max_length = max_length
        self.norm_eps = norm_eps
        self.rope_theta = rope_theta
        self.attention_bias = attention_bias
        self.mlp_bias = mlp_bias
        self.decoder_bias = decoder_bias
        self.embedding_dropout = embedding_dropout
        self.attention_dropout = attention_dropout
        self.mlp_dropout = mlp_dropout
        self.embedding_init_range = embedding_init_range
        self.decoder_init_range = decoder_init_range
        # the decoder is its own matrix (transformers 4.x ties by default)
        kwargs['tie_word_embeddings'] = False
        super().__init__(pad_token_id=pad_token_id, **kwargs)


def rope(x: torch.Tensor, theta: float) -> torch.Tensor:
    """Rotate the pairs (2i, 2i+1) of x [B, heads, T, head_dim] by position *
    theta^(-2i / head_dim)."""
    T, head_dim = x.shape[-2], x.shape[-1]
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float, device=x.device)
                                / head_dim))
    angles = torch.arange(T, dtype=torch.float, device=x.device)[:, None] * inv_freq[None, :]
    cos, sin = angles.cos(), angles.sin()
    x0, x1 = x.float().unflatten(-1, (-1, 2)).unbind(-1)
    return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2).to(x.dtype)


class SwiGLU(nn.Module):
    def __init__(self, config: NeoBERTConfig):
        super().__init__()
        # two thirds of intermediate_size (the compute of a 4x GELU MLP), rounded up to a multiple
        # of 8
        hidden = 8 * ((int(2 * config.intermediate_size / 3) + 7) // 8)
        self.w12 = nn.Linear(config.hidden_size, 2 * hidden, bias=config.mlp_bias)
        self.w3 = nn.Linear(hidden, config.hidden_size, bias=config.mlp_bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x1, x2 = self.w12(x).chunk(2, dim=-1)
        return self.w3(F.silu(x1) * x2)


class EncoderBlock(nn.Module):
    def __init__(self, config: NeoBERTConfig):
        super().__init__()
        self.n_head, self.theta = config.num_attention_heads, config.rope_theta
        self.attention_dropout = config.attention_dropout
        self.attention_norm = nn.RMSNorm(config.hidden_size, config.norm_eps)
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size,
                             bias=config.attention_bias)
        self.wo = nn.Linear(config.hidden_size, config.hidden_size, bias=config.attention_bias)
        self.resid_drop = nn.Dropout(config.attention_dropout)
        self.ffn_norm = nn.RMSNorm(config.hidden_size, config.norm_eps)
        self.ffn = SwiGLU(config)
        self.ffn_drop = nn.Dropout(config.mlp_dropout)

    def attention(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        B, T, H = x.shape
        q, k, v = self.qkv(x).view(B, T, self.n_head, -1).transpose(1, 2).chunk(3, dim=-1)
        y = F.scaled_dot_product_attention(rope(q, self.theta), rope(k, self.theta), v,
                                           attn_mask=mask,
                                           dropout_p=self.attention_dropout if self.training
                                           else 0.0)
        return self.resid_drop(self.wo(y.transpose(1, 2).reshape(B, T, H)))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x), mask)
        return x + self.ffn_drop(self.ffn(self.ffn_norm(x)))


class NeoBERTPreTrainedModel(PreTrainedModel):
    config_class = NeoBERTConfig
    base_model_prefix = 'model'
    _no_split_modules = ['EncoderBlock']

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.uniform_(module.weight, -self.config.decoder_init_range,
                             self.config.decoder_init_range)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.uniform_(module.weight, -self.config.embedding_init_range,
                             self.config.embedding_init_range)
        elif isinstance(module, nn.RMSNorm):
            nn.init.ones_(module.weight)


class NeoBERT(NeoBERTPreTrainedModel):
    def __init__(self, config: NeoBERTConfig):
        super().__init__(config)
        self.encoder = nn.Embedding(config.vocab_size, config.hidden_size,
                                    padding_idx=config.pad_token_id)
        self.drop = nn.Dropout(config.embedding_dropout)
        self.transformer_encoder = nn.ModuleList(EncoderBlock(config)
                                                 for _ in range(config.num_hidden_layers))
        self.layer_norm = nn.RMSNorm(config.hidden_size, config.norm_eps)
        self.post_init()

    def get_input_embeddings(self) -> nn.Embedding:
        return self.encoder

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.encoder = value

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                output_hidden_states: bool | None = None,
                return_dict: bool | None = None) -> BaseModelOutput:
        if input_ids.shape[1] > self.config.max_length:
            raise ValueError(f'sequence length {input_ids.shape[1]} exceeds '
                             f'max_length={self.config.max_length}')
        mask = None
        if attention_mask is not None:
            keep = attention_mask.bool()
            # a fully padded row sees every key rather than none (NaN)
            keep = keep | ~keep.any(dim=-1, keepdim=True)
            mask = keep[:, None, None, :]
        x = self.drop(self.encoder(input_ids))
        hidden_states = [x]
        for block in self.transformer_encoder:
            x = block(x, mask)
            hidden_states.append(x)
        if output_hidden_states is None:
            output_hidden_states = self.config.output_hidden_states
        output = BaseModelOutput(last_hidden_state=self.layer_norm(x),
                                 hidden_states=tuple(hidden_states) if output_hidden_states
                                 else None)
        return output if return_dict is not False else output.to_tuple()


class NeoBERTLMHead(NeoBERTPreTrainedModel):
    def __init__(self, config: NeoBERTConfig):
        super().__init__(config)
        self.model = NeoBERT(config)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=config.decoder_bias)
        self.post_init()

    def get_output_embeddings(self) -> nn.Linear:
        return self.decoder

    def set_output_embeddings(self, value: nn.Linear) -> None:
        self.decoder = value

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                labels: torch.Tensor | None = None, output_hidden_states: bool | None = None,
                return_dict: bool | None = None) -> MaskedLMOutput:
        encoded = self.model(input_ids, attention_mask, output_hidden_states=output_hidden_states)
        logits = self.decoder(encoded.last_hidden_state)
        loss = None
        if labels is not None:  # mean over the positions whose label is not -100
            loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten().to(logits.device))
        output = MaskedLMOutput(loss=loss, logits=logits, hidden_states=encoded.hidden_states)
        return output if return_dict is not False else output.to_tuple()
