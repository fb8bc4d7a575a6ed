"""model.py: exact parity with transformers' ModernBertForMaskedLM, the official NeoBERT layout and
RoPE convention, sparse prediction, masks, config validation, optimizer groups and the FLOPs
formula."""

import dataclasses
import json
import re

import pytest
import torch
import torch.nn.functional as F
from transformers import AutoModelForMaskedLM, ModernBertConfig, ModernBertForMaskedLM

import attention as attention_module
import model as model_module
from attention import attention_masks, flex_masks
from hf import config_from_hf, config_to_hf, load_pretrained, save_pretrained
from mlm import prediction_capacity
from model import IGNORE_INDEX, Encoder, EncoderConfig
from optim import configure_optimizers

TOL = 1e-5
SPECIAL = dict(pad_token_id=0, cls_token_id=1, sep_token_id=2, mask_token_id=3)

# Random-weight transformers configs: >= 4 layers (global and local layers both run), windows
# shorter than the sequences, every bias flag on and off, non-default windows and thetas, both
# config.json styles.
HF_CONFIGS = {
    'all_biases_4.48_style': dict(vocab_size=211, hidden_size=48, intermediate_size=40,
                                  num_hidden_layers=5, num_attention_heads=4, local_attention=8,
                                  global_attn_every_n_layers=2, global_rope_theta=5000.0,
                                  local_rope_theta=77.0, norm_bias=True, attention_bias=True,
                                  mlp_bias=True, classifier_bias=True, decoder_bias=True),
    'no_biases_untied': dict(vocab_size=150, hidden_size=32, intermediate_size=64,
                             num_hidden_layers=4, num_attention_heads=2, local_attention=16,
                             global_attn_every_n_layers=3, global_rope_theta=10000.0,
                             local_rope_theta=500.0, norm_bias=False, attention_bias=False,
                             mlp_bias=False, classifier_bias=False, decoder_bias=False,
                             tie_word_embeddings=False),
    'mixed_biases_eps': dict(vocab_size=300, hidden_size=64, intermediate_size=48,
                             num_hidden_layers=6, num_attention_heads=8, local_attention=6,
                             global_attn_every_n_layers=3, global_rope_theta=1234.0,
                             local_rope_theta=321.0, norm_eps=1e-6, norm_bias=True,
                             attention_bias=False, mlp_bias=True, classifier_bias=False,
                             decoder_bias=True),
    'default_thetas_every4': dict(vocab_size=97, hidden_size=32, intermediate_size=56,
                                  num_hidden_layers=5, num_attention_heads=4, local_attention=10,
                                  global_attn_every_n_layers=4, norm_bias=False,
                                  attention_bias=True, mlp_bias=False, classifier_bias=True,
                                  decoder_bias=True),
}


@torch.no_grad()
def perturb(module: torch.nn.Module, scale: float = 0.1, seed: int = 0) -> None:
    """Move every parameter off its init, so norms and biases are not trivially 1 and 0."""
    g = torch.Generator().manual_seed(seed)
    for p in module.parameters():
        p.add_(torch.randn(p.shape, generator=g) * scale)


def padded_batch(vocab_size: int, lengths: list[int], seq_len: int, seed: int = 0):
    """ids (pads = 0) and attention mask; short rows make padded queries whose window holds
    only padding."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, vocab_size, (len(lengths), seq_len), generator=g)
    mask = (torch.arange(seq_len)[None, :] < torch.tensor(lengths)[:, None]).long()
    return ids.masked_fill(mask == 0, 0), mask


def random_labels(ids, mask, rate=0.3, seed=1):
    g = torch.Generator().manual_seed(seed)
    chosen = (torch.rand(ids.shape, generator=g) < rate) & mask.bool()
    return torch.where(chosen, ids, torch.full_like(ids, IGNORE_INDEX))


def hf_folder(tmp_path, name: str) -> str:
    torch.manual_seed(0)
    hf = ModernBertForMaskedLM(ModernBertConfig(**HF_CONFIGS[name], **SPECIAL,
                                                bos_token_id=1, eos_token_id=2))
    perturb(hf)
    folder = str(tmp_path / name)
    hf.save_pretrained(folder)
    if name.endswith('4.48_style'):  # rewrite config.json as transformers 4.48 wrote it
        path = f'{folder}/config.json'
        with open(path) as f:
            hf_config = json.load(f)
        before = config_from_hf(hf_config)
        rope = hf_config.pop('rope_parameters')
        hf_config.pop('layer_types')
        hf_config.update(global_rope_theta=rope['full_attention']['rope_theta'],
                         local_rope_theta=rope['sliding_attention']['rope_theta'],
                         global_attn_every_n_layers=HF_CONFIGS[name]['global_attn_every_n_layers'])
        assert config_from_hf(hf_config) == before
        with open(path, 'w') as f:
            json.dump(hf_config, f)
    return folder


@pytest.mark.parametrize('name', sorted(HF_CONFIGS))
def test_parity_with_transformers(tmp_path, monkeypatch, name):
    folder = hf_folder(tmp_path, name)
    ours = load_pretrained(folder).eval()
    cfg = HF_CONFIGS[name]
    assert ours.config.local_attention == cfg['local_attention']
    assert ours.config.global_rope_theta == cfg.get('global_rope_theta', 160000.0)
    ids, mask = padded_batch(cfg['vocab_size'], [40, 29, 6], seq_len=40)
    labels = random_labels(ids, mask)
    real = mask.bool()
    # local layers: by blocks (40 tokens span at least 2 windows in every config) and with the
    # dense [T, T] mask
    outputs = {}
    for path, windows in (('banded', attention_module.BAND_FROM_WINDOWS), ('dense', 10**6)):
        monkeypatch.setattr(attention_module, 'BAND_FROM_WINDOWS', windows)
        blocks = len(attention_masks(mask, 40, cfg['local_attention'] // 2,
                                     {'local'}, 'cpu')['local'].spans)
        assert (blocks > 1) == (path == 'banded')
        with torch.no_grad():
            outputs[path] = ours(ids, mask)[0], *ours(ids, mask, labels)
    ours.config.attn_implementation = 'flex'  # FlexAttention: its forward runs on the CPU too
    with torch.no_grad():
        outputs['flex'] = ours(ids, mask)[0], *ours(ids, mask, labels)
    for impl in ('sdpa', 'eager'):
        hf = AutoModelForMaskedLM.from_pretrained(folder, attn_implementation=impl).eval()
        with torch.no_grad():
            out = hf(input_ids=ids, attention_mask=mask, labels=labels)
            hf.sparse_prediction = True
            hf_sparse = hf(input_ids=ids, attention_mask=mask, labels=labels).logits
        for path, (dense, sparse, loss) in outputs.items():
            diff = (out.logits - dense).abs()[real].max().item()
            print(f'parity {name} {impl} {path}: max |logit diff| = {diff:.2e}, '
                  f'loss diff = {abs(out.loss - loss).item():.2e}')
            assert diff <= TOL
            assert (hf_sparse - sparse).abs().max().item() <= TOL
            assert abs(out.loss.item() - loss.item()) <= TOL


@pytest.mark.parametrize('vocab_size', [30522, 1000])
def test_hf_folders_as_transformers_saves_them(tmp_path, vocab_size):
    """ModernBertConfig has no mask_token_id, so no saved config.json holds one; community
    ModernBERTs have other vocabularies (BERT's 30,522 WordPiece) where ModernBERT's default ids do
    not exist. [MASK] comes from the folder's tokenizer, or stays unset without one, and the logits
    are transformers'."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordPiece
    from transformers import BertTokenizerFast
    cls_id, sep_id = (101, 102) if vocab_size == 30522 else (1, 2)
    torch.manual_seed(0)
    hf = ModernBertForMaskedLM(ModernBertConfig(
        vocab_size=vocab_size, hidden_size=32, intermediate_size=48, num_hidden_layers=4,
        num_attention_heads=2, local_attention=8, global_attn_every_n_layers=2, pad_token_id=0,
        cls_token_id=cls_id, sep_token_id=sep_id, bos_token_id=cls_id, eos_token_id=sep_id))
    perturb(hf)
    folder = tmp_path / 'hf'
    hf.save_pretrained(str(folder))
    assert 'mask_token_id' not in json.loads((folder / 'config.json').read_text())
    # BERT's layout: [PAD] 0, [unused0..98], [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103
    if vocab_size == 30522:
        words = ['[PAD]', *(f'[unused{i}]' for i in range(99)), '[UNK]', '[CLS]', '[SEP]', '[MASK]']
        vocab = {w: i for i, w in enumerate(words + [f'w{i}' for i in range(vocab_size - 104)])}
        BertTokenizerFast(tokenizer_object=Tokenizer(WordPiece(vocab, unk_token='[UNK]')),
                          unk_token='[UNK]', cls_token='[CLS]', sep_token='[SEP]',
                          pad_token='[PAD]', mask_token='[MASK]').save_pretrained(str(folder))
    ours = load_pretrained(str(folder)).eval()
    assert ours.config.mask_token_id == (103 if vocab_size == 30522 else None)
    assert (ours.config.pad_token_id, ours.config.cls_token_id, ours.config.sep_token_id) == \
        (0, cls_id, sep_id)
    ids, mask = padded_batch(vocab_size, [40, 23], seq_len=40)
    with torch.no_grad():
        diff = (hf.eval()(input_ids=ids, attention_mask=mask).logits
                - ours(ids, mask)[0]).abs()[mask.bool()].max()
    assert diff <= TOL


@pytest.mark.parametrize('arch', ['modernbert', 'neobert'])
def test_sparse_equals_dense(arch):
    # with labels, only the predicted rows go through the head, and through the last layer past its
    # attention: the logits, the loss and every gradient are still the dense forward's at those rows
    # (the last layer is a local one in the ModernBERT model here, a global one in the NeoBERT
    # model)
    m = small_encoder(arch).train()
    ids, mask = padded_batch(120, [33, 20], seq_len=33)
    labels = random_labels(ids, mask)
    keep = labels != IGNORE_INDEX
    params = list(m.parameters())
    dense, none = m(ids, mask)
    assert none is None and dense.shape == (2, 33, 120)
    dense_loss = F.cross_entropy(dense[keep], labels[keep])
    dense_grads = torch.autograd.grad(dense_loss, params)
    last = m.model.layers[-1]
    rows_seen = []  # the rows the last layer's MLP computes
    (last.mlp if arch == 'modernbert' else last.ffn).register_forward_hook(
        lambda module, args, out: rows_seen.append(args[0].shape[:-1]))
    sparse, loss = m(ids, mask, labels)
    assert sparse.shape == (int(keep.sum()), 120) and rows_seen == [(int(keep.sum()),)]
    assert torch.allclose(sparse, dense[keep], atol=TOL)
    assert abs(dense_loss.item() - loss.item()) <= TOL
    assert all(torch.allclose(a, b, atol=TOL)
               for a, b in zip(dense_grads, torch.autograd.grad(loss, params)))
    h = m(ids, mask, labels, return_hidden=True)[2]
    assert torch.allclose(h, m.encode(ids, mask)[keep], atol=TOL)


def small_encoder(arch: str, seed: int = 0) -> Encoder:
    torch.manual_seed(seed)
    layers = dict(global_attn_every_n_layers=2) if arch == 'modernbert' else {}
    m = Encoder(EncoderConfig(arch=arch, vocab_size=120, hidden_size=32, intermediate_size=48,
                              num_hidden_layers=4, num_attention_heads=4, local_attention=8,
                              **layers, **SPECIAL)).eval()
    perturb(m)
    return m


@pytest.mark.parametrize('arch', ['modernbert', 'neobert'])
def test_documents_attend_only_within_themselves(arch):
    # RoPE scores depend only on the distance between tokens, so a document packed with others and
    # kept to itself by document_ids gives the logits it gives alone: an independent check of the
    # masks, on both paths
    m = small_encoder(arch)
    ids, mask = padded_batch(120, [37, 30], seq_len=37)
    # row r: documents [0, a), [a, b), then a third one or padding
    cuts = [(0, 11, 30), (0, 20, 30)]
    document_ids = torch.stack([(torch.arange(37) >= a).long() + (torch.arange(37) >= b).long()
                                for _, a, b in cuts])
    for impl in ('sdpa', 'flex'):
        m.config.attn_implementation = impl
        with torch.no_grad():
            packed = m(ids, mask, document_ids=document_ids)[0]
            unpacked = m(ids, mask)[0]
            for r, (start, a, b) in enumerate(cuts):
                for lo, hi in ((start, a), (a, b)):
                    alone = m(ids[r:r + 1, lo:hi])[0][0]
                    assert (packed[r, lo:hi] - alone).abs().max().item() <= TOL, (impl, r, lo, hi)
        # the documents did change something
        assert (packed - unpacked)[mask.bool()].abs().max().item() > 1e-3


@pytest.mark.parametrize('arch', ['modernbert', 'neobert'])
def test_changing_one_document_leaves_the_others_unchanged(arch):
    # what document packing relies on: no token sees another document, with padding in the batch
    # too. RoPE scores depend only on distances, so positions need not restart at each document for
    # it to hold.
    m = small_encoder(arch)
    ids, mask = padded_batch(120, [37, 30], seq_len=37)
    document_ids = ((torch.arange(37) >= 9).long() + (torch.arange(37) >= 21).long()).expand(2, 37)
    changed = ids.clone()
    changed[:, 9:21] = torch.randint(4, 120, (2, 12), generator=torch.Generator().manual_seed(5))
    for impl in ('sdpa', 'flex'):
        m.config.attn_implementation = impl
        with torch.no_grad():
            before, after = m(ids, mask, document_ids=document_ids)[0], \
                m(changed, mask, document_ids=document_ids)[0]
        others = (document_ids != 1) & mask.bool()
        assert (before - after)[others].abs().max().item() <= TOL, impl
        assert (before - after)[document_ids == 1].abs().max().item() > 1e-3, impl


def test_flex_masks_cache_the_unpadded_window_and_rebuild_the_rest():
    window = flex_masks(None, 64, 4, {'global', 'local'}, 'cpu')
    # nothing to mask: global layers stay on SDPA's unmasked kernels
    assert window['global'] is None
    assert flex_masks(None, 64, 4, {'local'}, 'cpu')['local'] is window['local']
    padding = torch.ones(2, 64, dtype=torch.long)
    padded = flex_masks(padding, 64, 4, {'global', 'local'}, 'cpu')
    assert padded['global'] is not None and padded['local'] is not window['local']
    # [B, H, query blocks, key blocks]: 64 tokens fit one 128-token block
    dense = padded['local'].to_dense()
    assert dense.shape == (2, 1, 1, 1)


@pytest.mark.parametrize('arch', ['modernbert', 'neobert'])
def test_static_sparse_head_same_loss_and_gradients_one_graph(arch):
    m = small_encoder(arch).train()
    ids, mask = padded_batch(120, [200, 200, 130], seq_len=200)
    labels = random_labels(ids, mask)
    capacity = prediction_capacity(ids.numel(), 0.3)
    n = int((labels != IGNORE_INDEX).sum())
    assert n < capacity < ids.numel()
    grads = {}
    for rows in (None, capacity):
        m.zero_grad()
        logits, loss = m(ids, mask, labels, max_predictions=rows)
        loss.backward()
        grads[rows] = loss.detach(), logits.detach(), [p.grad.clone() for p in m.parameters()]
    (loss, logits, g), (static_loss, static_logits, static_g) = grads[None], grads[capacity]
    assert static_logits.shape == (capacity, 120) and \
        torch.allclose(static_logits[:n], logits, atol=TOL)
    assert abs(static_loss.item() - loss.item()) <= TOL
    assert all(torch.allclose(a, b, atol=TOL) for a, b in zip(g, static_g))
    # with the capacity the training forward is one graph with no break (no data-dependent shape, no
    # host sync), FlexAttention's BlockMask built inside it (traced without gradients: flex has no
    # backward on the CPU)
    for impl in ('sdpa', 'flex'):
        m.config.attn_implementation = impl
        torch._dynamo.reset()
        with torch.set_grad_enabled(impl == 'sdpa'):
            explained = torch._dynamo.explain(m)(ids, labels=labels, max_predictions=capacity)
        assert (explained.graph_count, explained.graph_break_count) == (1, 0), \
            (impl, explained.break_reasons)
    m.config.attn_implementation = 'sdpa'
    torch._dynamo.reset()
    # what the capacity avoids
    assert torch._dynamo.explain(m)(ids, labels=labels).graph_break_count > 0


def test_rope_tables_are_computed_once_not_inside_the_compiled_step():
    """The compiled training step (forward and backward) reads RoPE's cos/sin tables: its generated
    kernels compute no sine or cosine. set_rope_theta (the context-extension operation) gives the
    model a fresh one's tables."""
    from torch._inductor.utils import run_and_get_code
    torch.manual_seed(0)
    m = Encoder(EncoderConfig(vocab_size=120, hidden_size=32, intermediate_size=48,
                              num_hidden_layers=2, num_attention_heads=4, local_attention=8,
                              global_attn_every_n_layers=2, **SPECIAL))
    ids, mask = padded_batch(120, [64, 64], seq_len=64)
    labels = random_labels(ids, mask)
    compiled = torch.compile(m)
    torch._dynamo.reset()

    def step():
        compiled(ids, labels=labels,
                 max_predictions=prediction_capacity(ids.numel(), 0.3))[1].backward()

    code = '\n'.join(run_and_get_code(step)[1])
    assert 'def call(' in code  # the forward and backward graphs' code
    assert not re.search(r'std::(sin|cos)\b|\.(sin|cos)\(\)|(tl_math|libdevice)\.(sin|cos)\b', code)
    torch._dynamo.reset()
    m.set_rope_theta(1234.0, 55.0)
    fresh = Encoder(dataclasses.replace(m.config, global_rope_theta=1234.0, local_rope_theta=55.0))
    fresh.load_state_dict(m.state_dict())
    assert 'rope_global' not in m.state_dict()  # follows from the config: never saved
    torch.testing.assert_close(m(ids, mask)[0], fresh(ids, mask)[0], rtol=0, atol=0)


def test_prediction_capacity_covers_the_binomial_count():
    # mean 19,661 + 7 sd of 117 = 20,482, up to 64s
    assert prediction_capacity(64 * 1024, 0.3) == 20544
    assert prediction_capacity(100, 0.99) == 100  # never more rows than tokens
    counts = (torch.rand(2000, 4096, generator=torch.Generator().manual_seed(0)) < 0.3).sum(-1)
    assert counts.max().item() <= prediction_capacity(4096, 0.3) - 64


@pytest.mark.parametrize('tied', [True, False])
def test_round_trip_through_transformers(tmp_path, tied):
    torch.manual_seed(0)
    cfg = EncoderConfig(vocab_size=130, hidden_size=48, intermediate_size=32, num_hidden_layers=4,
                        num_attention_heads=4, local_attention=6, global_rope_theta=999.0,
                        local_rope_theta=55.0, norm_bias=True, attention_bias=True,
                        tie_word_embeddings=tied, **SPECIAL)
    ours = Encoder(cfg).eval()
    perturb(ours)
    save_pretrained(ours, str(tmp_path / 'hf'))
    hf = AutoModelForMaskedLM.from_pretrained(str(tmp_path / 'hf')).eval()
    assert (hf.decoder.weight is hf.model.embeddings.tok_embeddings.weight) == tied
    ids, mask = padded_batch(130, [30, 12], seq_len=30)
    with torch.no_grad():
        a = hf(input_ids=ids, attention_mask=mask).logits
        b, _ = ours(ids, mask)
    assert (a - b).abs()[mask.bool()].max().item() <= TOL
    back = load_pretrained(str(tmp_path / 'hf'))
    assert back.config == cfg
    assert (back.decoder.weight is back.model.embeddings.tok_embeddings.weight) == tied
    for k, v in ours.state_dict().items():
        assert torch.equal(v, back.state_dict()[k]), k


def test_modernbert_base_layout_matches_transformers():
    with torch.device('meta'):
        ours = Encoder(EncoderConfig())
        hf = ModernBertForMaskedLM(ModernBertConfig())
    assert {k: v.shape for k, v in ours.state_dict().items()} == \
        {k: v.shape for k, v in hf.state_dict().items()}
    assert 'model.layers.0.attn_norm.weight' not in ours.state_dict()
    assert ours.get_num_params() == 149_655_232  # ModernBERT-base, 149.7M
    assert config_from_hf(ModernBertConfig().to_dict()) == EncoderConfig()


def test_neobert_official_layout():
    cfg = EncoderConfig(arch='neobert')
    with torch.device('meta'):
        m = Encoder(cfg)
    V, H, F_ = 30522, 768, 2048
    expected = {'model.encoder.weight': (V, H), 'model.layer_norm.weight': (H,),
                'decoder.weight': (V, H), 'decoder.bias': (V,)}
    for i in range(28):
        p = f'model.transformer_encoder.{i}.'
        expected.update({p + 'qkv.weight': (3 * H, H), p + 'wo.weight': (H, H),
                         p + 'ffn.w12.weight': (2 * F_, H), p + 'ffn.w3.weight': (H, F_),
                         p + 'attention_norm.weight': (H,), p + 'ffn_norm.weight': (H,)})
    assert {k: tuple(v.shape) for k, v in m.state_dict().items()} == expected
    assert m.decoder.weight is not m.model.encoder.weight
    assert (cfg.pad_token_id, cfg.cls_token_id, cfg.sep_token_id, cfg.mask_token_id) == \
        (0, 101, 102, 103)
    assert round(m.get_num_params() / 1e6) == 245


def official_neobert_logits(state: dict, cfg: EncoderConfig, ids, pad_mask):
    """NeoBERT forward written after the official chandar-lab code: per-head [q k v] rows, RoPE as
    complex multiplication of adjacent pairs (2i, 2i+1), additive -inf padding mask, RMSNorm in
    fp32, packed SwiGLU."""
    B, T = ids.shape
    nh, D = cfg.num_attention_heads, cfg.head_dim
    freqs = 1.0 / (cfg.global_rope_theta ** (torch.arange(0, D, 2)[: D // 2].float() / D))
    angles = torch.outer(torch.arange(T), freqs).float()
    freqs_cis = torch.polar(torch.ones_like(angles), angles)[None, :, None, :]

    def rms(x, w):
        return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True)
                                        + cfg.norm_eps)).type_as(x) * w

    def rope(x):
        return torch.view_as_real(torch.view_as_complex(x.float().reshape(B, T, nh, -1, 2))
                                  * freqs_cis).flatten(3)

    bias = torch.where(pad_mask == 0, float('-inf'), 0.0)[:, None, None, :]
    x = F.embedding(ids, state['model.encoder.weight'])
    for i in range(cfg.num_hidden_layers):
        p = f'model.transformer_encoder.{i}.'
        h = rms(x, state[p + 'attention_norm.weight'])
        xq, xk, xv = (h @ state[p + 'qkv.weight'].T).view(B, T, nh, 3 * D).chunk(3, dim=-1)
        xq, xk = rope(xq), rope(xk)
        att = F.scaled_dot_product_attention(xq.transpose(1, 2), xk.transpose(1, 2),
                                             xv.transpose(1, 2), bias)
        x = x + att.transpose(1, 2).reshape(B, T, -1) @ state[p + 'wo.weight'].T
        x1, x2 = (rms(x, state[p + 'ffn_norm.weight'])
                  @ state[p + 'ffn.w12.weight'].T).chunk(2, dim=-1)
        x = x + (F.silu(x1) * x2) @ state[p + 'ffn.w3.weight'].T
    x = rms(x, state['model.layer_norm.weight'])
    return x @ state['decoder.weight'].T + state['decoder.bias']


def small_neobert(**kw) -> Encoder:
    torch.manual_seed(0)
    cfg = dict(arch='neobert', vocab_size=160, hidden_size=64, intermediate_size=96,
               num_hidden_layers=4, num_attention_heads=4, global_rope_theta=10000.0,
               max_position_embeddings=64, **SPECIAL)
    m = Encoder(EncoderConfig(**{**cfg, **kw})).eval()
    perturb(m, scale=0.05)
    return m


def test_neobert_matches_official_convention(monkeypatch):
    m = small_neobert()
    state = {k: v.clone() for k, v in m.state_dict().items()}
    ids, mask = padded_batch(160, [24, 15], seq_len=24)
    real = mask.bool()
    with torch.no_grad():
        ref = official_neobert_logits(state, m.config, ids, mask)
        ours, _ = m(ids, mask)
        again, _ = m(ids, mask)
    assert (ref - ours).abs()[real].max().item() <= TOL
    assert torch.equal(ours, again) and torch.isfinite(ours).all()

    # The reference's recipe: the same weights with q/k rows permuted inside each head (new i = old
    # 2i, new D/2 + i = old 2i + 1) under plain half-rotation RoPE give the interleaved-RoPE
    # outputs.
    D, nh = m.config.head_dim, m.config.num_attention_heads
    perm = torch.cat([torch.arange(0, D, 2), torch.arange(1, D, 2)])
    rows = torch.cat([torch.cat([h * 3 * D + perm, h * 3 * D + D + perm,
                                 h * 3 * D + 2 * D + torch.arange(D)])
                      for h in range(nh)])
    half = small_neobert()
    with torch.no_grad():
        for layer in half.model.transformer_encoder:
            layer.qkv.weight.copy_(layer.qkv.weight[rows])
    monkeypatch.setattr(model_module, 'deinterleave', lambda x: x)
    with torch.no_grad():
        permuted, _ = half(ids, mask)
    assert (ref - permuted).abs()[real].max().item() <= TOL


@pytest.mark.parametrize('arch', ['modernbert', 'neobert'])
def test_gradients_reach_every_parameter(arch):
    torch.manual_seed(0)
    m = Encoder(EncoderConfig(arch=arch, vocab_size=90, hidden_size=32, intermediate_size=48,
                              num_hidden_layers=4, num_attention_heads=4, local_attention=8,
                              attention_bias=True, mlp_bias=True, **SPECIAL))
    ids, mask = padded_batch(90, [30, 18], seq_len=30)
    _, loss = m(ids, mask, random_labels(ids, mask, rate=0.5))
    loss.backward()
    for name, p in m.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


@pytest.mark.parametrize('arch', ['modernbert', 'neobert'])
def test_no_nan_with_padding_and_fully_padded_row(arch):
    torch.manual_seed(0)
    m = Encoder(EncoderConfig(arch=arch, vocab_size=90, hidden_size=32, intermediate_size=48,
                              num_hidden_layers=4, num_attention_heads=2, local_attention=4,
                              global_attn_every_n_layers=2, **SPECIAL))
    ids, mask = padded_batch(90, [40, 3, 0], seq_len=40)  # a short row and a fully padded one
    labels = random_labels(ids, mask, rate=0.5)
    logits, _ = m(ids, mask)
    assert torch.isfinite(logits).all()
    _, loss = m(ids, mask, labels)
    loss.backward()
    assert torch.isfinite(loss)
    assert all(torch.isfinite(p.grad).all() for p in m.parameters())
    _, empty = m(ids, mask, torch.full_like(ids, IGNORE_INDEX))  # nothing to predict: zero, not NaN
    assert empty.item() == 0.0


def test_masks_window_padding_and_no_empty_row(monkeypatch):
    # SDPA on this CPU returns zeros for a row with no visible key, other kernels give NaN: no row
    # may be empty.
    mask = torch.tensor([[1] * 10, [1, 1] + [0] * 8, [0] * 10])
    # one block: the dense [T, T] window
    monkeypatch.setattr(attention_module, 'BAND_FROM_WINDOWS', 10**6)
    masks = attention_masks(mask, 10, 2, {'global', 'local'}, 'cpu')
    assert masks['local'].spans == [(0, 10, 0, 10)]
    for m in (masks['global'], masks['local'].masks[0]):
        assert m.expand(3, 1, 10, 10).any(dim=-1).all()
    local = masks['local'].masks[0].expand(3, 1, 10, 10)
    dist = (torch.arange(10)[:, None] - torch.arange(10)[None, :]).abs()
    assert torch.equal(local[0, 0], dist <= 2)  # |i - j| <= local_attention // 2
    # real tokens never see pads
    assert not local[1, 0, :2, 2:].any() and not masks['global'][1, 0, 0, 2:].any()
    # no mask: SDPA's fast path
    assert attention_masks(None, 10, 2, {'global'}, 'cpu') == {'global': None}

    # by blocks: each block's mask is its part of the dense mask, and the keys outside its span
    # are all masked
    monkeypatch.setattr(attention_module, 'BAND_FROM_WINDOWS', 2)
    for padding in (mask, None):
        band = attention_masks(padding, 10, 2, {'local'}, 'cpu')['local']
        dense = local if padding is not None else (dist <= 2).expand(3, 1, 10, 10)
        assert [span[:2] for span in band.spans] == [(0, 4), (4, 8), (8, 10)]
        for (start, stop, lo, hi), m in zip(band.spans, band.masks):
            assert torch.equal(m.expand(3, 1, stop - start, hi - lo),
                               dense[:, :, start:stop, lo:hi])
            assert not dense[:, :, start:stop, :lo].any() and not dense[:, :, start:stop, hi:].any()


def test_config_defaults_and_round_trip():
    base = EncoderConfig()
    assert (base.vocab_size, base.hidden_size, base.num_hidden_layers, base.intermediate_size) == \
        (50368, 768, 22, 1152)
    assert (base.global_rope_theta, base.local_rope_theta, base.global_attn_every_n_layers) == \
        (160000.0, 10000.0, 3)
    neo = EncoderConfig(arch='neobert')
    assert (neo.vocab_size, neo.num_hidden_layers, neo.tie_word_embeddings,
            neo.global_rope_theta) == (30522, 28, False, 10000.0)
    custom = EncoderConfig(vocab_size=64, hidden_size=32, num_attention_heads=2, local_attention=10,
                           global_rope_theta=123.0, attention_bias=True,
                           tie_word_embeddings=False, **SPECIAL)
    for cfg in (base, neo, custom):
        assert EncoderConfig(**dataclasses.asdict(cfg)) == cfg
    assert config_from_hf(config_to_hf(custom)) == custom
    assert ModernBertConfig(**config_to_hf(custom)).layer_types[:4] == \
        ['full_attention', 'sliding_attention', 'sliding_attention', 'full_attention']


@pytest.mark.parametrize('bad, word', [
    (dict(arch='bert'), 'arch'),
    (dict(hidden_size=100, num_attention_heads=12), 'divisible'),
    (dict(hidden_size=36, num_attention_heads=12), 'odd'),
    (dict(local_attention=127), 'local_attention'),
    (dict(global_attn_every_n_layers=0), 'global_attn_every_n_layers'),
    (dict(vocab_size=1000, mask_token_id=1000), 'mask_token_id=1000 is outside'),
    (dict(attention_dropout=1.0), 'attention_dropout'),
    (dict(global_rope_theta=0.0), 'global_rope_theta'),
    (dict(arch='neobert', norm_bias=True), 'norm_bias'),
    (dict(attn_implementation='flash'), 'attn_implementation'),
    (dict(attn_implementation='flex', attention_dropout=0.1),
     'FlexAttention has no attention dropout'),
])
def test_invalid_configs(bad, word):
    with pytest.raises(ValueError, match=word):
        EncoderConfig(**bad)


@pytest.mark.parametrize('change, word', [
    (dict(model_type='bert'), 'model_type'),
    (dict(hidden_activation='silu'), 'hidden_activation'),
    (dict(layer_types=['sliding_attention', 'full_attention'], num_hidden_layers=2), 'layer_types'),
    (dict(rope_parameters={'full_attention': {'rope_type': 'yarn', 'rope_theta': 1.0}}),
     'rope_type'),
])
def test_invalid_hf_configs(change, word):
    with pytest.raises(ValueError, match=word):
        config_from_hf({**ModernBertConfig().to_dict(), **change})


def test_neobert_folders_round_trip_and_other_model_types_are_refused(tmp_path):
    neobert = small_neobert()
    # the official layout (export_hf.py tests it with remote code)
    save_pretrained(neobert, str(tmp_path / 'neo'))
    ids, mask = padded_batch(160, [30, 17], seq_len=30)
    with torch.no_grad():
        assert torch.equal(load_pretrained(str(tmp_path / 'neo')).eval()(ids, mask)[0],
                           neobert(ids, mask)[0])
    (tmp_path / 'bert').mkdir()
    (tmp_path / 'bert' / 'config.json').write_text(json.dumps({'model_type': 'bert'}))
    with pytest.raises(ValueError, match='model_type'):
        load_pretrained(str(tmp_path / 'bert'))


def test_too_long_sequence_is_rejected():
    m = small_neobert()
    with pytest.raises(ValueError, match='max_position_embeddings'):
        m(torch.zeros(1, 65, dtype=torch.long))


def test_configure_optimizers_groups():
    m = small_neobert()
    opt = configure_optimizers(m, 0.1, 1e-3, (0.9, 0.95), 'cpu')
    decay, no_decay = opt.param_groups
    names = [n for n, _ in m.named_parameters()]
    assert decay['param_names'] == [n for n, p in m.named_parameters() if p.dim() == 2]
    assert no_decay['param_names'] == [n for n, p in m.named_parameters() if p.dim() == 1]
    assert sorted(decay['param_names'] + no_decay['param_names']) == sorted(names)
    assert decay['weight_decay'] == 0.1 and no_decay['weight_decay'] == 0.0
    assert 'decoder.bias' in no_decay['param_names'] and 'decoder.weight' in decay['param_names']


def test_estimate_mfu_matches_reference_figure():
    # Reference section 6: the small model (H 384, L 12, I 768, V 50,368) at T = 1024 costs about
    # 165 MFLOP per token with 30% sparse prediction and about 247 with a dense head.
    with torch.device('meta'):
        m = Encoder(EncoderConfig(hidden_size=384, num_hidden_layers=12, intermediate_size=768,
                                  num_attention_heads=6))
    per_token = m.estimate_mfu(tokens_per_iter=1000, predicted_per_iter=300, dt=1.0,
                               peak_flops=1000.0, seq_len=1024)
    assert abs(per_token / 165e6 - 1) < 0.01
    dense = m.estimate_mfu(1000, 1000, dt=2.0, peak_flops=1000.0, seq_len=1024)
    assert abs(2 * dense / 247e6 - 1) < 0.01
