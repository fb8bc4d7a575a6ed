"""The optimizers: StableAdamW against its definition, the weight-decay conventions and groups, and
the learning-rate schedules (exact resume with StableAdamW: test_reliability.py)."""
import math

import pytest
import torch

from model import Encoder, EncoderConfig
from optim import LR_SCHEDULES, StableAdamW, configure_optimizers, scheduled_lr, step_unless


def stable_adamw_reference(p, grads, lr, betas, eps, wd):
    """StableAdamW written out as Wortsman et al. define it, in float64, one step at a time."""
    p, m, v = p.double().clone(), torch.zeros_like(p, dtype=torch.float64), \
        torch.zeros_like(p, dtype=torch.float64)
    clipped = []
    for t, g in enumerate(grads, 1):
        g = g.double()
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        m_hat, v_hat = m / (1 - betas[0] ** t), v / (1 - betas[1] ** t)
        rms = math.sqrt((g * g / torch.clamp(v_hat, min=eps ** 2)).mean().item())
        clipped.append(rms > 1)
        eta = lr / max(1.0, rms)
        p = p * (1 - eta * wd) - eta * m_hat / (v_hat.sqrt() + eps)
    return p, clipped


def test_stable_adamw_follows_its_definition():
    torch.manual_seed(0)
    p0 = torch.randn(7, 5)
    # steady gradients, then a spike the second moment has not seen: its update is clipped
    grads = [torch.randn(7, 5) * 0.1 for _ in range(4)] + [torch.randn(7, 5) * 10.0] + \
        [torch.randn(7, 5) * 0.1]
    param = torch.nn.Parameter(p0.clone())
    opt = StableAdamW([param], lr=1e-2, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.1)
    for g in grads:
        param.grad = g.clone()
        opt.step()
    expected, clipped = stable_adamw_reference(p0, grads, 1e-2, (0.9, 0.98), 1e-6, 0.1)
    assert clipped[4] and not all(clipped)  # both branches of max(1, RMS) ran
    torch.testing.assert_close(param.detach().double(), expected, rtol=1e-5, atol=1e-6)
    assert opt.state[param]['step'] == len(grads)


def test_stable_adamw_keeps_its_step_count_on_the_parameters_device():
    """After a resume or a curriculum rebuild (load_state_dict) the step count must sit where step()
    puts it, on the parameter's device, not on the CPU where torch leaves it for optimizers that are
    not fused. The meta device stands in for a GPU."""
    saved = StableAdamW([torch.nn.Parameter(torch.ones(3))])
    saved.param_groups[0]['params'][0].grad = torch.ones(3)
    saved.step()
    opt = StableAdamW([torch.nn.Parameter(torch.ones(3, device='meta'))])
    opt.load_state_dict(saved.state_dict())
    (state,) = opt.state.values()
    assert state['step'].device.type == state['exp_avg'].device.type == 'meta'


def test_stable_adamw_steps_tensors_of_different_ages_together():
    # one multi-tensor update for the group, each tensor with its own step count (a tensor without a
    # gradient is skipped, as a frozen one is; state carried across a rebuild differs the same way)
    torch.manual_seed(1)
    shapes, skip = [(7, 5), (3,), (2, 4, 6)], {1: (0, 1), 2: (3,)}
    starts = [torch.randn(s) for s in shapes]
    grads = [[torch.randn(s) * (10.0 if t == 4 else 0.1) for t in range(6)] for s in shapes]
    params = [torch.nn.Parameter(p.clone()) for p in starts]
    opt = StableAdamW(params, lr=1e-2, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.1)
    for t in range(6):
        for i, p in enumerate(params):
            p.grad = None if t in skip.get(i, ()) else grads[i][t].clone()
        opt.step()
    for i, p in enumerate(params):
        taken = [g for t, g in enumerate(grads[i]) if t not in skip.get(i, ())]
        expected, _ = stable_adamw_reference(starts[i], taken, 1e-2, (0.9, 0.98), 1e-6, 0.1)
        torch.testing.assert_close(p.detach().double(), expected, rtol=1e-5, atol=1e-6)
        assert opt.state[p]['step'] == len(taken)


def small_model() -> Encoder:
    torch.manual_seed(0)
    return Encoder(EncoderConfig(vocab_size=64, hidden_size=16, intermediate_size=32,
                                 num_hidden_layers=2, num_attention_heads=2, norm_bias=True,
                                 pad_token_id=0, cls_token_id=1, sep_token_id=2, mask_token_id=3))


@pytest.mark.parametrize('optimizer', ['adamw', 'stable_adamw'])
def test_decay_groups_and_the_decoupled_convention(optimizer):
    model = small_model()
    opt = configure_optimizers(model, 0.1, 1e-3, (0.9, 0.98), 'cpu', optimizer=optimizer)
    decayed, plain = opt.param_groups
    assert all(p.dim() >= 2 for p in decayed['params']) and \
        all(p.dim() < 2 for p in plain['params'])
    assert plain['params'] and plain['weight_decay'] == 0.0
    every = configure_optimizers(model, 0.1, 1e-3, (0.9, 0.98), 'cpu', optimizer=optimizer,
                                 decay_1d=True)
    assert [len(g['params']) for g in every.param_groups] == [len(list(model.parameters()))]
    # with zero gradients only the decay moves the weights: one step at the peak lr shrinks them by
    # exactly (1 - lr * wd) with torch's convention, so train.py's wd / learning_rate gives the
    # decoupled (1 - wd)
    w = model.decoder.weight
    before = w.detach().clone()
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    peak = 8e-4
    configure_optimizers(model, 1e-5 / peak, peak, (0.9, 0.98), 'cpu', optimizer=optimizer).step()
    torch.testing.assert_close(w.detach(), before * (1 - 1e-5), rtol=0, atol=1e-9)


@pytest.mark.parametrize('optimizer', ['stable_adamw', 'adamw', 'adamw_foreach'])
def test_a_skipped_step_changes_nothing(optimizer):
    """step_unless with a non-finite gradient, decided on the device (StableAdamW, fused AdamW) or
    on the host (AdamW not fused): weights, moments and step counts stay as they were, a first step
    skipped included, and the steps around the skips are those of a run that never had them."""
    def run(grads: list) -> tuple[torch.nn.Parameter, torch.optim.Optimizer]:
        param = torch.nn.Parameter(torch.ones(7, 5))
        kwargs = dict(lr=1e-2, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.1)
        opt = (StableAdamW([param], **kwargs) if optimizer == 'stable_adamw'
               else torch.optim.AdamW([param], **kwargs, fused=optimizer == 'adamw'))
        for g in grads:
            param.grad = g.clone()
            before = [param.detach().clone()] + [t.clone() for t in opt.state[param].values()]
            step_unless(opt, ~torch.isfinite(g).all())
            if not torch.isfinite(g).all():
                after = [param.detach()] + list(opt.state[param].values())
                assert all(torch.equal(a, b) for a, b in zip(before, after))
        return param, opt

    torch.manual_seed(0)
    good = [torch.randn(7, 5) for _ in range(3)]
    bad = [torch.full((7, 5), float('nan')), torch.full((7, 5), float('inf'))]
    skipping, opt = run([bad[0], good[0], bad[1], good[1], good[2]])
    clean, _ = run(good)
    torch.testing.assert_close(skipping, clean, rtol=0, atol=0)
    assert opt.state[skipping]['step'] == 3 and not hasattr(opt, 'found_inf')


def test_learning_rate_schedules():
    peak, floor = 1.0, 0.1
    lr = {s: [scheduled_lr(t, 100, peak, floor, 10, s, 0.2, 'linear') for t in range(110)]
          for s in LR_SCHEDULES}
    for s in LR_SCHEDULES:  # the same linear warmup, reaching the peak one step after it ends
        assert lr[s][:10] == pytest.approx([(t + 1) / 11 for t in range(10)])
    assert lr['constant'][10:] == [peak] * 100
    assert lr['cosine'][10] == peak and lr['cosine'][55] == pytest.approx((peak + floor) / 2)
    assert all(a >= b for a, b in zip(lr['cosine'][10:], lr['cosine'][11:]))
    # wsd: flat until the last 20% of the 100 iterations, then linear to the floor, which it keeps
    # after them
    assert lr['wsd'][10:81] == [peak] * 71 and lr['wsd'][90] == pytest.approx((peak + floor) / 2)
    assert lr['wsd'][100:] == [floor] * 10 and lr['cosine'][100:] == [floor] * 10
    # 1 - sqrt(0.2) of the way left
    sqrt = scheduled_lr(84, 100, peak, floor, 10, 'wsd', 0.2, 'sqrt')
    assert sqrt == pytest.approx(floor + (peak - floor) * (1 - 0.2 ** 0.5))
