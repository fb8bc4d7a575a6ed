"""
The optimizer: train.py's AdamW or StableAdamW over named parameter groups, rebuilt by parameter
name when the curriculum changes what trains; the learning-rate schedules; and StableAdamW, the
optimizer ModernBERT pre-trains with: AdamW whose step size is clipped per tensor (Wortsman et al.
2023, "Stable and low-precision training for large-scale vision-language models", AdamW-AdaFactor
update clipping).

Each tensor's learning rate is lr / max(1, RMS(g^2 / v_hat)): when a gradient is much larger than
the second moment expects (v_hat lags behind it), the update is scaled down instead of taking a step
of many times the usual size. State per parameter (step, exp_avg, exp_avg_sq) is AdamW's, so
train.py carries it across optimizer rebuilds by name.
"""
import math
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn as nn

from errors import fail

LR_SCHEDULES = ('wsd', 'cosine', 'constant')


def scheduled_lr(t: int, total: int, peak: float, floor: float, warmup_iters: int, schedule: str,
                 decay_fraction: float, decay_shape: str) -> float:
    """The learning rate t iterations into a schedule of `total`: a linear warmup to peak, then
    'constant', 'cosine' down to floor, or 'wsd' (warmup-stable-decay: peak until the last
    decay_fraction of total, then down to floor, 'linear' or 'sqrt' (1 - sqrt of the progress));
    floor after total."""
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

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, compiled: bool = False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))
        # eager, the update is ~20 multi-tensor ops, each a pass over the weights or their state;
        # compiled, inductor fuses them into a few kernels per group: one static graph per group,
        # the learning rate a (CPU scalar) tensor so that a new value is an input of the graph
        # rather than a reason to compile it again
        self.update = torch.compile(stable_adamw_update, dynamic=False) if compiled else \
            stable_adamw_update

    def load_state_dict(self, state_dict: dict) -> None:
        """torch.optim.Optimizer's, which leaves a step count on the CPU unless the group is fused
        or capturable; here it lives on its parameter's device (as step() creates it), so a resumed
        or rebuilt optimizer updates without a host tensor among the device ones."""
        super().load_state_dict(state_dict)
        for p, state in self.state.items():
            if 'step' in state:
                state['step'] = state['step'].to(p.device)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        # torch's GradScaler protocol, as fused AdamW reads it: a 0-dim float tensor, 1 to leave
        # everything (weights, moments, step counts) as it was, decided on the device so the host
        # need not wait for it
        found_inf = getattr(self, 'found_inf', None)
        for group in self.param_groups:
            params = [p for p in group['params'] if p.grad is not None]
            for p in params:
                if not self.state[p]:
                    self.state[p].update(
                        step=torch.zeros((), dtype=torch.float32, device=p.device),
                        exp_avg=torch.zeros_like(p, memory_format=torch.preserve_format),
                        exp_avg_sq=torch.zeros_like(p, memory_format=torch.preserve_format))
            if params:
                state = ([self.state[p][k] for p in params]
                         for k in ('step', 'exp_avg', 'exp_avg_sq'))
                self.update(params, [p.grad for p in params], *state, torch.tensor(group['lr']),
                            found_inf, *group['betas'], group['eps'], group['weight_decay'])
        return loss


def stable_adamw_update(params: list, grads: list, steps: list, exp_avgs: list, exp_avg_sqs: list,
                        lr: torch.Tensor, found_inf: torch.Tensor | None, beta1: float,
                        beta2: float, eps: float, wd: float) -> None:
    """One StableAdamW step of a group, in multi-tensor (torch._foreach_*) ops: ~20 launches per
    group instead of ~20 per tensor, which on a GPU are bound by kernel launches (with found_inf,
    one more per tensor; compiled, inductor fuses them all)."""
    keep = torch.ones((), device=params[0].device)
    if found_inf is not None:
        keep = 1 - found_inf.to(keep)
        # a skipped step's gradients are NaN or inf, which no multiplication by 0 clears: zero them
        # (they are thrown away anyway), so that every update below is exactly a no-op
        skipped = keep == 0
        for g in grads:
            g.masked_fill_(skipped, 0.0)
    # a list: foreach add of one tensor reads it on the host
    torch._foreach_add_(steps, [keep] * len(steps))
    # the moments' decay is scaled by keep too: (1 - (1 - beta) * keep) is beta for a step,
    # 1 for a skip
    torch._foreach_mul_(exp_avgs, 1 - (1 - beta1) * keep)
    torch._foreach_add_(exp_avgs, grads, alpha=1 - beta1)
    torch._foreach_mul_(exp_avg_sqs, 1 - (1 - beta2) * keep)
    torch._foreach_addcmul_(exp_avg_sqs, grads, grads, value=1 - beta2)
    # bias corrections per tensor, as 0-dim tensors (no host sync): steps differ after a rebuild
    # carried state; at least one step, so that a first step skipped divides nothing by zero
    ages = torch._foreach_clamp_min(steps, 1)
    bias1, bias2 = (torch._foreach_add(torch._foreach_neg(torch._foreach_pow(b, ages)), 1)
                    for b in (beta1, beta2))
    v_hat = torch._foreach_div(exp_avg_sqs, bias2)
    # each tensor's learning rate: lr / max(1, RMS(g^2 / v_hat)), 0 for a skipped step
    ratio = torch._foreach_mul(grads, grads)
    torch._foreach_div_(ratio, torch._foreach_clamp_min(v_hat, eps ** 2))
    rms = torch._foreach_div(torch._foreach_norm(ratio, 1), [float(p.numel()) for p in params])
    del ratio
    lrs = torch._foreach_reciprocal(torch._foreach_clamp_min(torch._foreach_sqrt(rms), 1.0))
    torch._foreach_mul_(lrs, lr * keep)
    if wd:
        torch._foreach_mul_(params, torch._foreach_add(torch._foreach_mul(lrs, -wd), 1))
    denom = v_hat  # in place from here: v_hat is no longer needed
    torch._foreach_sqrt_(denom)
    torch._foreach_add_(denom, eps)
    updates = torch._foreach_div(exp_avgs, bias1)
    torch._foreach_div_(updates, denom)
    torch._foreach_mul_(updates, lrs)
    torch._foreach_sub_(params, updates)


def step_unless(optimizer: torch.optim.Optimizer, skip: torch.Tensor) -> None:
    """optimizer.step(), or nothing at all when `skip` (a 0-dim bool tensor) is true. Fused AdamW
    and StableAdamW decide it on the device, so the host goes on launching the next step's work
    instead of waiting for the GPU to say whether the gradients were finite; any other optimizer is
    asked on the host."""
    if not (isinstance(optimizer, StableAdamW) or optimizer.defaults.get('fused')):
        if not skip.item():
            optimizer.step()
        return
    optimizer.found_inf = skip.float()
    try:
        optimizer.step()
    finally:
        del optimizer.found_inf


# building the optimizer, and rebuilding it by parameter name --------------------------------------

def weight_decay_groups(module: nn.Module, weight_decay: float,
                        decay_1d: bool = False) -> list[dict]:
    """Optimizer groups over module's trainable parameters: weight decay on matrices, none on 1-D
    parameters (norms, biases) unless decay_1d. Groups hold (name, param) pairs in named_parameters
    order, so the state dict carries param_names; an empty group is left out (torch refuses one
    among named groups)."""
    params = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
    groups = [{'params': [(n, p) for n, p in params if p.dim() >= 2 or decay_1d],
               'weight_decay': weight_decay},
              {'params': [(n, p) for n, p in params if p.dim() < 2 and not decay_1d],
               'weight_decay': 0.0}]
    return [g for g in groups if g['params']]


def configure_optimizers(model: nn.Module, weight_decay: float, learning_rate: float,
                         betas: tuple[float, float], device_type: str, eps: float = 1e-8,
                         optimizer: str = 'adamw', decay_1d: bool = False,
                         compiled: bool = False) -> torch.optim.Optimizer:
    """AdamW (or StableAdamW) over the model's trainable parameters; no decay on 1-D ones (norms,
    biases) unless decay_1d (NeoBERT decays every parameter). AdamW is fused on CUDA and the CPU;
    StableAdamW's update is compiled when `compiled` (`bench.py --optimizer` times the three)."""
    groups = weight_decay_groups(model, weight_decay, decay_1d)
    if optimizer == 'stable_adamw':
        return StableAdamW(groups, lr=learning_rate, betas=betas, eps=eps, compiled=compiled)
    return torch.optim.AdamW(groups, lr=learning_rate, betas=betas, eps=eps,
                             fused=device_type in ('cuda', 'cpu'))


@dataclass
class OptimizerSettings:
    """What the run's optimizer is, as data: the curriculum rebuilds it from these when an operation
    changes which parameters train."""
    name: str  # 'adamw' | 'stable_adamw'
    weight_decay: float
    # weight_decay is Composer's decoupled rate (decays by wd * lr / peak), not torch's
    decoupled_decay: bool
    betas: tuple[float, float]
    eps: float
    decay_1d: bool  # decay norms and biases too (NeoBERT does)
    device_type: str
    compiled: bool  # compile StableAdamW's update

    def weight_decay_at(self, peak_lr: float) -> float:
        """The optimizer's weight_decay: torch's AdamW decays by lr * wd, so the decoupled wd * lr /
        peak needs wd / peak, with the peak in force now."""
        return self.weight_decay / peak_lr if self.decoupled_decay else self.weight_decay

    def build(self, model: nn.Module, peak_lr: float) -> torch.optim.Optimizer:
        """The optimizer over model's trainable parameters (configure_optimizers)."""
        return configure_optimizers(model, self.weight_decay_at(peak_lr), peak_lr, self.betas,
                                    self.device_type, self.eps, self.name, self.decay_1d,
                                    self.compiled)


def set_lr(optimizer: torch.optim.Optimizer, lr: float, weight_decay: float) -> None:
    """Every group's learning rate, and the decayed group's weight decay (which set_lr moves under
    the decoupled convention)."""
    for group in optimizer.param_groups:
        group['lr'] = lr
        if group['weight_decay']:
            group['weight_decay'] = weight_decay


def state_by_name(model: nn.Module, opt: torch.optim.Optimizer) -> dict:
    """The optimizer's per-parameter state keyed by parameter name."""
    return {name: opt.state[p] for name, p in model.named_parameters() if p in opt.state}


def load_state_by_name(opt: torch.optim.Optimizer, named_state: dict) -> dict:
    """Give each parameter of `opt` the state of the same name in named_state (AdamW's moments and
    step); return the entries no parameter of `opt` takes (parameters frozen now), to be kept until
    they train again.

    The state goes in through opt.load_state_dict, so torch places each tensor as it does for a
    resumed optimizer: moments on the parameter's device and dtype, the step count on the device too
    where fused or capturable AdamW needs it. (State parked on the CPU and unfrozen on CUDA would
    otherwise crash fused AdamW.)"""
    saved = opt.state_dict()
    ids = {name: i for group in saved['param_groups']
           for i, name in zip(group['params'], group['param_names'])}
    saved['state'] = {ids[name]: state for name, state in named_state.items() if name in ids}
    opt.load_state_dict(saved)
    return {name: state for name, state in named_state.items() if name not in ids}


# The optimizer state of frozen parameters ("parked") ----------------------------------------------
# An operation that freezes parameters (set_embedding_finetune_mode) rebuilds the optimizer without
# them; their AdamW moments and step wait in `parked`, checkpointed beside the optimizer, until they
# train again.

def carried_state(model: nn.Module, optimizer: torch.optim.Optimizer, parked: dict) -> dict:
    """Every parameter's optimizer state by name: the training ones' and the parked ones'."""
    return parked | state_by_name(model, optimizer)


def rebuild_optimizer(model: nn.Module, settings: OptimizerSettings, peak_lr: float,
                      carried: dict) -> tuple[torch.optim.Optimizer, dict]:
    """A new optimizer over model's trainable parameters, each given the state of its name in
    carried (from carried_state); and the new parked state: the entries of parameters that do not
    train now."""
    optimizer = settings.build(model, peak_lr)
    return optimizer, load_state_by_name(optimizer, carried)


class NonFiniteGuard:
    """Skips a step whose loss or gradient norm is NaN or inf, on the device (step_unless): the host
    learns of it at the next log point or save, so it never waits for the GPU within a step. The run
    stops after max_in_a_row such steps in a row. Its counts live in the run's progress dict, which
    checkpoints keep."""

    def __init__(self, progress: dict, max_in_a_row: int, log: Callable, ckpt_path: str):
        self.progress, self.max_in_a_row, self.log, self.ckpt_path = \
            progress, max_in_a_row, log, ckpt_path
        # (iteration, skipped, step loss) of the steps since the flags were last read
        self.pending = []

    def step(self, it: int, optimizer: torch.optim.Optimizer, loss: torch.Tensor,
             grad_norm: torch.Tensor) -> None:
        """optimizer.step() unless loss or grad_norm is not finite (both the same on every rank)."""
        skip = ~(torch.isfinite(loss) & torch.isfinite(grad_norm))
        step_unless(optimizer, skip)
        self.pending.append((it, skip, loss))

    def read(self) -> None:
        """Count and log the steps skipped since the last call; stop after max_in_a_row in a row."""
        flags = (torch.stack([skipped for _, skipped, _ in self.pending]).tolist() if self.pending
                 else [])
        progress = self.progress
        for (it, _, loss), skipped in zip(self.pending, flags):
            progress['skipped_in_a_row'] = progress['skipped_in_a_row'] + 1 if skipped else 0
            if not skipped:
                continue
            progress['skipped_steps'] += 1
            self.log(dict(iter=it, skipped_nonfinite=True, loss=loss.item(),
                          skipped_steps=progress['skipped_steps']),
                     f'iter {it}: non-finite loss or gradient, step skipped '
                     f"({progress['skipped_in_a_row']} in a row)")
            if progress['skipped_in_a_row'] >= self.max_in_a_row:
                fail(f"{progress['skipped_in_a_row']} consecutive non-finite steps at iter {it}; "
                     f'lower learning_rate or use bf16; the last good checkpoint is '
                     f'{self.ckpt_path}')
        self.pending.clear()
