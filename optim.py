"""
The learning-rate schedules, and StableAdamW, the optimizer ModernBERT pre-trains with: AdamW whose step size is
clipped per tensor (Wortsman et al. 2023, "Stable and low-precision training for large-scale vision-language
models", AdamW-AdaFactor update clipping).

Each tensor's learning rate is lr / max(1, RMS(g^2 / v_hat)): when a gradient is much larger than the second moment
expects (v_hat lags behind it), the update is scaled down instead of taking a step of many times the usual size.
State per parameter (step, exp_avg, exp_avg_sq) is AdamW's, so train.py carries it across optimizer rebuilds by name.
"""
import math

import torch

LR_SCHEDULES = ('wsd', 'cosine', 'constant')


def scheduled_lr(t: int, total: int, peak: float, floor: float, warmup_iters: int, schedule: str,
                 decay_fraction: float, decay_shape: str) -> float:
    """The learning rate t iterations into a schedule of `total`: a linear warmup to peak, then 'constant',
    'cosine' down to floor, or 'wsd' (warmup-stable-decay: peak until the last decay_fraction of total, then down
    to floor, 'linear' or 'sqrt' (1 - sqrt of the progress)); floor after total."""
    if t < warmup_iters:
        return peak * (t + 1) / (warmup_iters + 1)
    if schedule == 'constant':
        return peak
    if t >= total:
        return floor
    if schedule == 'cosine':
        progress = (t - warmup_iters) / max(1, total - warmup_iters)
        return floor + 0.5 * (1.0 + math.cos(math.pi * progress)) * (peak - floor)
    decay_iters = max(1, int(decay_fraction * total))
    progress = (t - (total - decay_iters)) / decay_iters
    if progress <= 0:
        return peak
    remaining = 1 - progress if decay_shape == 'linear' else 1 - math.sqrt(progress)
    return floor + (peak - floor) * remaining


class StableAdamW(torch.optim.Optimizer):

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group['betas']
            for p in group['params']:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state['step'] = torch.zeros((), dtype=torch.float32, device=p.device)
                    state['exp_avg'] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state['exp_avg_sq'] = torch.zeros_like(p, memory_format=torch.preserve_format)
                step, exp_avg, exp_avg_sq, grad = state['step'], state['exp_avg'], state['exp_avg_sq'], p.grad
                step += 1
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                v_hat = exp_avg_sq / (1 - beta2 ** step)
                # kept a tensor: no host sync per parameter
                rms = (grad.square() / v_hat.clamp_min(group['eps'] ** 2)).mean().sqrt()
                lr = group['lr'] / rms.clamp_min(1.0)
                p.mul_(1 - lr * group['weight_decay'])
                p.sub_(lr * (exp_avg / (1 - beta1 ** step)) / (v_hat.sqrt() + group['eps']))
        return loss
