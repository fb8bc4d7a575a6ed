"""Grow-as-you-go vocabulary in model.py: resize_vocabulary (gather and append), gather_vocab_rows
(weights and AdamW moments), set_embedding_finetune_mode, vocab_parameter_names."""

import copy
import dataclasses
import math

import pytest
import torch

from model import IGNORE_INDEX, Encoder, EncoderConfig, gather_vocab_rows
from optim import configure_optimizers

TOL = 1e-5
FULL_V = 40
FULL_SPECIALS = dict(pad_token_id=30, cls_token_id=31, sep_token_id=32, mask_token_id=33)
RARE = 4
FREQUENT = [7, 3, 12, 25, 0, 18, 9]  # full ids kept, in frequency order
K = 5 + len(FREQUENT)  # shrunken slots: 4 specials, RARE, the frequent tokens


def shrink_mapping() -> torch.Tensor:
    """full id -> shrunken id, laid out like prepare.py: specials first, then RARE, then the
    frequent tokens."""
    full_to_shrunk = torch.full((FULL_V,), RARE, dtype=torch.long)
    for slot, full in enumerate(FULL_SPECIALS.values()):
        full_to_shrunk[full] = slot
    for slot, full in enumerate(FREQUENT, start=RARE + 1):
        full_to_shrunk[full] = slot
    return full_to_shrunk


def shrunk_model(arch: str, **kw) -> Encoder:
    torch.manual_seed(0)
    cfg = EncoderConfig(arch=arch, vocab_size=K, hidden_size=32, intermediate_size=48,
                        num_hidden_layers=4, num_attention_heads=4, local_attention=8,
                        pad_token_id=0, cls_token_id=1, sep_token_id=2, mask_token_id=3, **kw)
    m = Encoder(cfg).eval()
    with torch.no_grad():  # off the init, so the decoder bias matters
        for p in m.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    return m


def full_batch(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 30, (3, 20), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 14:] = 0
    return ids.masked_fill(mask == 0, FULL_SPECIALS['pad_token_id']), mask


@pytest.mark.parametrize('arch', ['modernbert', 'neobert'])
def test_gather_resize_preserves_the_function(arch):
    old = shrunk_model(arch)
    new = copy.deepcopy(old)
    f2s = shrink_mapping()
    new.resize_vocabulary(FULL_V, RARE, noise_std=0.0, full_to_shrunk=f2s)
    ids, mask = full_batch()
    with torch.no_grad():
        before, _ = old(f2s[ids], mask)
        after, _ = new(ids, mask)
    real = mask.bool()
    core = (f2s != RARE).nonzero().flatten()
    rare = (f2s == RARE).nonzero().flatten()
    # every core token keeps its logit under its full id
    assert (after[..., core] - before[..., f2s[core]]).abs()[real].max() <= TOL
    # the rare group carries exactly RARE's probability mass
    assert (after[..., rare].logsumexp(-1) - before[..., RARE]).abs()[real].max() <= TOL
    assert (after.logsumexp(-1) - before.logsumexp(-1)).abs()[real].max() <= TOL
    assert new.config.vocab_size == FULL_V and new.decoder.out_features == FULL_V
    # ids follow their rows
    assert {k: getattr(new.config, k) for k in FULL_SPECIALS} == FULL_SPECIALS
    assert new.model.tok_embeddings.padding_idx == FULL_SPECIALS['pad_token_id']
    tied = new.decoder.weight is new.model.tok_embeddings.weight
    assert tied == (arch == 'modernbert')
    # a checkpoint of the grown model rebuilds from its config (train.py stores asdict(config)
    # as model_args)
    rebuilt = Encoder(EncoderConfig(**dataclasses.asdict(new.config)))
    rebuilt.load_state_dict(new.state_dict(), strict=True)


@pytest.mark.parametrize('arch', ['modernbert', 'neobert'])
def test_gather_resize_rows_noise_and_bias(arch):
    old = shrunk_model(arch)
    new = copy.deepcopy(old)
    f2s = shrink_mapping()
    torch.manual_seed(1)
    new.resize_vocabulary(FULL_V, RARE, noise_std=0.01, full_to_shrunk=f2s)
    rare = f2s == RARE
    for name in new.vocab_parameter_names():
        w_old, w_new = old.get_parameter(name), new.get_parameter(name)
        assert torch.equal(w_new[~rare], w_old[f2s[~rare]]), name  # a gather, not a copy by index
        if w_new.dim() == 2:
            noise = w_new[rare] - w_old[RARE]
            assert 0 < noise.std() < 0.02 and not torch.equal(w_new[rare][0], w_new[rare][1]), name
        else:  # decoder bias: RARE's minus log(group size), so the group keeps RARE's probability
            expected = w_old[RARE] - math.log(int(rare.sum()))
            assert torch.allclose(w_new[rare], expected.expand(int(rare.sum())))


@pytest.mark.parametrize('arch', ['modernbert', 'neobert'])
def test_append_resize(arch):
    old = shrunk_model(arch)
    new = copy.deepcopy(old)
    new.resize_vocabulary(K + 6, source_token_id=5, noise_std=0.0)
    for name in new.vocab_parameter_names():
        w_old, w_new = old.get_parameter(name), new.get_parameter(name)
        assert w_new.shape[0] == K + 6
        assert torch.equal(w_new[:K], w_old)
        assert torch.equal(w_new[K:], w_old[5].expand_as(w_new[K:]))  # copies of the source token
    ids = torch.randint(0, K, (2, 16))
    with torch.no_grad():
        assert torch.allclose(new(ids)[0][..., :K], old(ids)[0], atol=TOL)
    assert new.config.pad_token_id == 0 and new.config.vocab_size == K + 6
    assert (new.decoder.weight is new.model.tok_embeddings.weight) == (arch == 'modernbert')


@pytest.mark.parametrize('arch', ['modernbert', 'neobert'])
def test_rows_from_pieces_are_the_mean_of_their_pieces(arch):
    """A grown token starts from the mean of its pieces' rows (the embedding, and the decoder row
    when untied); one without pieces keeps RARE's rows; the decoder bias puts its logit at the
    decoder's mean input where it is asked."""
    model = shrunk_model(arch)
    f2s = shrink_mapping()
    model.resize_vocabulary(FULL_V, RARE, noise_std=0.0, full_to_shrunk=f2s)
    before = {n: p.clone() for n, p in model.named_parameters()}
    rare = (f2s == RARE).nonzero().flatten().tolist()
    pieces = [[FREQUENT[i % 7], FREQUENT[(i + 3) % 7]] if i % 4 else [] for i in range(len(rare))]
    pieces[1] = [FREQUENT[2]] * 3 + [FREQUENT[5]]  # a piece twice counts twice
    mean_input = torch.randn(32)
    logits = torch.linspace(-3.0, -1.0, len(rare))
    model.init_rows_from_pieces(rare, pieces, mean_input, logits)
    rows = [model.model.tok_embeddings.weight]
    if arch == 'neobert':
        rows.append(model.decoder.weight)
    for w in rows:
        old = before[next(n for n, p in model.named_parameters() if p is w)]
        for t, p in zip(rare, pieces):
            expected = old[p].mean(0) if p else old[t]
            assert torch.allclose(w[t], expected, atol=1e-6)
        others = [t for t in range(FULL_V) if t not in rare]
        assert torch.equal(w[others], old[others])
    with torch.no_grad():
        at_mean = model.decoder(mean_input)
    assert torch.allclose(at_mean[rare], logits, atol=1e-5)
    assert torch.equal(model.decoder.bias[f2s != RARE], before['decoder.bias'][f2s != RARE])


def test_tied_decoder_stays_tied_through_training():
    m = shrunk_model('modernbert')
    m.resize_vocabulary(FULL_V, RARE, noise_std=0.01, full_to_shrunk=shrink_mapping())
    assert 'decoder.weight' not in dict(m.named_parameters())
    assert m.vocab_parameter_names() == ['model.embeddings.tok_embeddings.weight', 'decoder.bias']
    opt = configure_optimizers(m, 0.1, 1e-2, (0.9, 0.95), 'cpu')
    ids, mask = full_batch()
    m.train()
    for _ in range(2):
        _, loss = m(ids, mask, ids.masked_fill(mask == 0, IGNORE_INDEX))
        loss.backward()
        opt.step()
        opt.zero_grad()
    assert m.decoder.weight is m.model.embeddings.tok_embeddings.weight


@pytest.mark.parametrize('arch', ['modernbert', 'neobert'])
def test_embedding_finetune_mode_freezes_everything_else(arch):
    m = shrunk_model(arch)
    m.resize_vocabulary(FULL_V, RARE, noise_std=0.01, full_to_shrunk=shrink_mapping())
    m.set_embedding_finetune_mode(True)
    vocab = set(m.vocab_parameter_names())
    assert vocab == ({'model.embeddings.tok_embeddings.weight', 'decoder.bias'}
                     if arch == 'modernbert'
                     else {'model.encoder.weight', 'decoder.weight', 'decoder.bias'})
    assert {n for n, p in m.named_parameters() if p.requires_grad} == vocab
    before = {n: p.detach().clone() for n, p in m.named_parameters()}
    # weight decay would move frozen ones too
    opt = configure_optimizers(m, 0.1, 1e-2, (0.9, 0.95), 'cpu')
    ids, mask = full_batch()
    m.train()
    for _ in range(3):
        _, loss = m(ids, mask, ids.masked_fill(mask == 0, IGNORE_INDEX))
        loss.backward()
        opt.step()
        opt.zero_grad()
    for n, p in m.named_parameters():
        # frozen: identical; vocabulary: trained
        assert torch.equal(p, before[n]) != (n in vocab), n
    m.set_embedding_finetune_mode(False)
    assert all(p.requires_grad for p in m.parameters())


def test_gather_vocab_rows_for_optimizer_moments():
    f2s = shrink_mapping()
    rare = f2s == RARE
    moment = torch.rand(K, 6) + 0.5
    gathered = gather_vocab_rows(moment, FULL_V, RARE, f2s, zero_new_rows=True)
    assert torch.equal(gathered[~rare], moment[f2s[~rare]])
    # the rare group starts fresh
    assert torch.equal(gathered[rare], torch.zeros(int(rare.sum()), 6))
    bias_moment = torch.rand(K) + 0.5
    appended = gather_vocab_rows(bias_moment, K + 3, source_token_id=RARE, zero_new_rows=True)
    assert torch.equal(appended[:K], bias_moment) and torch.equal(appended[K:], torch.zeros(3))
    weights = gather_vocab_rows(bias_moment, K + 3, source_token_id=RARE)
    assert torch.equal(weights[K:], bias_moment[RARE].expand(3))


@pytest.mark.parametrize('kwargs, word', [
    (dict(new_vocab_size=FULL_V - 1), 'length'),
    (dict(full_to_shrunk=torch.full((FULL_V,), K)), r'\[0, 12\)'),
    (dict(source_token_id=K), 'source_token_id'),
    (dict(full_to_shrunk=None, new_vocab_size=K - 1), 'smaller'),
    (dict(full_to_shrunk=shrink_mapping().masked_fill(torch.arange(FULL_V) == 30, RARE)),
     'special_ids'),
])
def test_bad_resize_is_rejected_and_changes_nothing(kwargs, word):
    m = shrunk_model('neobert')
    state = {k: v.clone() for k, v in m.state_dict().items()}
    config = copy.deepcopy(m.config)
    args = dict(new_vocab_size=FULL_V, source_token_id=RARE, noise_std=0.01,
                full_to_shrunk=shrink_mapping())
    with pytest.raises(ValueError, match=word):
        m.resize_vocabulary(**{**args, **kwargs})
    assert m.config == config
    assert all(torch.equal(v, state[k]) for k, v in m.state_dict().items())


def test_special_ids_can_be_given():
    m = shrunk_model('modernbert')
    # [PAD] lost to RARE: say where it is
    f2s = shrink_mapping().masked_fill(torch.arange(FULL_V) == 30, RARE)
    m.resize_vocabulary(FULL_V, RARE, 0.0, full_to_shrunk=f2s, special_ids={'pad_token_id': 35})
    assert m.config.pad_token_id == 35 and m.config.mask_token_id == 33
