"""
The schedule of operations that change a run as it goes: the grow-as-you-go vocabulary curriculum
(train in a shrunken vocabulary, rare tokens remapped on the fly to one RARE token, then grow) and
training phases (the learning rate, the masking rate, the batch and block size, RoPE theta:
ModernBERT's batch-size warmup and context extension). train.py makes one Curriculum and calls `run`
once per iteration; everything the schedule changes lives here, and what an operation changed comes
back to train.py as a Fired.

An operation is one function `op_<name>(cur, model, value, it) -> dict` and one line in OPERATIONS.
It returns {'rebuild': True} when it changes which parameters exist or train (the optimizer is
rebuilt, its state carried over by parameter name), and {'regather': f} when the vocabulary rows
move (f moves AdamW's moments like the weights).
"""
import os
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.distributed as dist

from data import load_remap
from distributed import all_reduce, wait_for_device
from errors import fail
from mlm import (EVAL_BATCHES, RESIZE_NOISE, TokenSpace, get_windows, mask_tokens, masked_batch,
                 seed_for)
from model import IGNORE_INDEX, Encoder, gather_vocab_rows
from optim import OptimizerSettings, carried_state, rebuild_optimizer

# the length of a run: iterations, or seconds of training -----------------------------------------

class TimeBudget:
    """How far a run is: max_iters iterations, or with seconds a wall-clock budget that replaces
    them. What counts against a budget is training: the steps, and the operations (a resize, a
    rebuilt optimizer, a recompile are what a curriculum costs, and so are the evaluation and save
    right after an operation); the other evaluations and saves do not, so
    that how often a run measures itself does not change what it trains. The host runs ahead of
    the GPU between log points, so the time is read there (and before saving), after the waits, as
    the slowest rank's: every rank sees the same budget, and the learning rate and the end follow it
    in steps of log_interval iterations. The seconds spent are kept in progress (checkpointed), so a
    resumed run goes on where the budget stood; time is not reproducible, so what a resumed run
    replays exactly is the record: the operations fired at the iterations the checkpoint holds.
    step_seconds (tests) counts each iteration as that many seconds instead of measuring it, which
    makes a budgeted run deterministic."""

    def __init__(self, max_iters: int, seconds: float | None, progress: dict, device,
                 step_seconds: float | None = None):
        self.max_iters, self.seconds, self.progress = max_iters, seconds, progress
        self.device, self.step_seconds = device, step_seconds
        self.t0 = self.pending = 0.0

    def start(self) -> None:
        """Training starts (after an evaluation and saving)."""
        self.t0 = time.perf_counter()

    def stop(self, read: bool, wait: bool = False) -> None:
        """Training stops (the step is done); read: count the time since the last reading (at a
        log point, where the host has waited for the device); wait: wait for the device here
        (before an evaluation, whose own wait would take the steps still queued on a GPU out of
        the budget)."""
        if wait:
            wait_for_device(self.device)
        self.pending += (self.step_seconds if self.step_seconds is not None
                         else time.perf_counter() - self.t0)
        if read:
            self.read()

    def read(self) -> None:
        """Count the time pending against the budget, the slowest rank's."""
        spent = torch.tensor(self.pending, dtype=torch.float64, device=self.device)
        if self.seconds is not None:  # the ranks must agree; without a budget nothing depends on it
            all_reduce(spent, dist.ReduceOp.MAX)
        self.progress['train_seconds'] += spent.item()
        self.pending = 0.0

    def fraction(self, it: int) -> float:
        """The share of the run done before iteration it."""
        if self.seconds is None:
            return it / self.max_iters
        return min(1.0, self.progress['train_seconds'] / self.seconds)

    def position(self, it: int) -> float:
        """Where the learning-rate schedule stands at iteration it, in iterations of max_iters: a
        budgeted run warms up and decays by the same fractions as max_iters would have it."""
        return it if self.seconds is None else self.fraction(it) * self.max_iters

    def done(self, it: int) -> bool:
        return self.fraction(it) >= 1.0

    def eta(self, it: int, clock) -> str:
        """The time left, as the progress line shows it."""
        if self.seconds is None:
            return clock.eta(self.max_iters - it - 1)
        return f"{(self.seconds - self.progress['train_seconds']) / 60:.1f} min"


# the remapping file -------------------------------------------------------------------------------


def remapping_files(first: str | None, schedule: list) -> list:
    """The remapping files a run trains in, in order: vocab_remapping_file, then the file of each
    set_vocab_remapping (a staged grow); [] without remapping."""
    return [first, *scheduled_values(schedule, 'set_vocab_remapping')] if first else []


def load_run_remaps(path: str | None, meta: dict, shrunken_vocab_size: int | None,
                    rare_token_id: int | None, schedule: list) -> list:
    """The vocab_K.pt files a run trains in (remapping_files), each checked against its data, its
    settings and what its schedule needs, each holding every token of the one before it;
    SystemExit with one line."""
    files = remapping_files(path, schedule)
    remaps = [load_run_remap(f, meta, None if i else shrunken_vocab_size, rare_token_id, schedule,
                             "set_vocab_remapping's file" if i else 'vocab_remapping_file')
              for i, f in enumerate(files)]
    for i in range(1, len(remaps)):
        a, b = remaps[i - 1], remaps[i]
        core = a['shrunk_to_full'][a['rare_id'] + 1:]  # a's frequent tokens, by full id
        if (b['shrunk_vocab_size'] <= a['shrunk_vocab_size']
                or bool((b['full_to_shrunk'][core] == b['rare_id']).any())):
            fail(f"set_vocab_remapping: {files[i]} ({b['shrunk_vocab_size']} tokens) must hold "
                 f"every token of {files[i - 1]} ({a['shrunk_vocab_size']}) and more; make it "
                 f"with prepare.py --dataset={meta['dataset']} --shrink_vocab=K, K larger")
    return remaps


def load_run_remap(path: str, meta: dict, shrunken_vocab_size: int | None,
                   rare_token_id: int | None, schedule: list,
                   name: str = 'vocab_remapping_file') -> dict:
    """One vocab_K.pt a run trains in (name: the setting that names it), checked against its data,
    its settings and what its schedule needs; SystemExit with one line."""
    dataset = meta['dataset']
    if not os.path.isfile(path):
        fail(f"{name} '{path}' not found; run: python prepare.py --dataset={dataset} "
             f'--shrink_vocab=K')
    remap = load_remap(path, f'rebuild it: python prepare.py --dataset={dataset} --shrink_vocab=K '
                             f'--force')
    size = remap['shrunk_vocab_size']
    if remap['fingerprint'] != meta['fingerprint']:
        fail(f'{path} was made from another preparation than the data; rebuild it: python '
             f'prepare.py --dataset={dataset} --shrink_vocab={size}')
    if shrunken_vocab_size not in (None, size):
        fail(f'shrunken_vocab_size={shrunken_vocab_size} but {path} holds {size}; make them agree')
    if rare_token_id not in (None, remap['rare_id']):
        fail(f"rare_token_id={rare_token_id} but the remapping file's RARE slot is "
             f"{remap['rare_id']}")
    grows_from_pieces = any(resize_init(v) == 'pieces'
                            for v in scheduled_values(schedule, 'resize_vocabulary'))
    if grows_from_pieces and 'piece_ids' not in remap:
        fail(f"{path} holds no pieces for resize_vocabulary's 'pieces' init (an older "
             f'prepare.py wrote it); rebuild it: python prepare.py --dataset={dataset} '
             f'--shrink_vocab={size} --force')
    return remap


# the operations -----------------------------------------------------------------------------------

def op_resize_vocabulary(cur: 'Curriculum', model: Encoder, value, it: int) -> dict:
    """Grow the model into the next token space of the run: the next remapping file's
    (set_vocab_remapping, a staged grow) or the dataset's full vocabulary; a gather through
    grow_map. The tokens RARE stood for start as RARE (init 'rare': with noise 0 the grown model
    computes what the smaller one did) or from the pieces their text splits into ('pieces')."""
    source_token_id, noise_std, init = *value[:2], resize_init(value)
    source_token_id = cur.rare_token_id if source_token_id is None else source_token_id
    stage = cur.model_stage(model)
    (old_map, _), (new_map, new_space) = cur.stages[stage], cur.stages[stage + 1]
    grow = cur.grow_map(stage)
    held_out = [cur.batch('val', cur.state['mask_rate'], EVAL_BATCHES, 1, k, full=True)
                for k in range(PROBE_BATCHES)]
    before = [log_probs(model, decoder_inputs(model, b, old_map)) for b in held_out]
    if init == 'pieces':
        group, pieces, logits, mean_input = piece_targets(cur, model, source_token_id, stage, grow)
    model.resize_vocabulary(new_space.size, source_token_id, noise_std, full_to_shrunk=grow)
    if init == 'pieces':
        model.init_rows_from_pieces(group, pieces, mean_input, logits)
    # AdamW moments follow their rows like the weights; new rows start with zero moments
    return dict(rebuild=True,
                regather=lambda t: gather_vocab_rows(t, new_space.size, source_token_id, grow,
                                                     zero_new_rows=True),
                # how far the grow moved the model's predictions, on held-out text
                measured=dict(fold_kl=folded_kl(model, held_out, before, grow, new_map)))


PROBE_BATCHES = 2  # evaluation batches a resize reads: the decoder's mean input, the KL it causes
PROBE_ROWS = 1024  # masked positions read of each: a full-vocabulary softmax in float64 per row


@torch.no_grad()
def decoder_inputs(model: Encoder, batch: tuple, mapping: torch.Tensor | None) -> torch.Tensor:
    """What the decoder reads [rows, hidden] at the first PROBE_ROWS masked positions of a
    full-space batch (seen through mapping, when the model is shrunken)."""
    x, y, documents = batch
    rows = (y.reshape(-1) != IGNORE_INDEX).nonzero().flatten()[:PROBE_ROWS]
    if not len(rows):
        raise ValueError('the probe batches have no masked positions: raise batch_size, '
                         'block_size or mask_rate')
    training = model.training
    model.eval()
    inputs = model.head(model.encode(x if mapping is None else mapping[x], None, documents, rows))
    model.train(training)
    return inputs


@torch.no_grad()
def log_probs(model: Encoder, inputs: torch.Tensor) -> torch.Tensor:
    """The decoder's log-probabilities in float64: RARE's share sums some 46,000 of them."""
    return model.decoder(inputs).double().log_softmax(-1)


def folded_kl(model: Encoder, batches: list, before: list, mapping: torch.Tensor,
              grown_map: torch.Tensor | None = None) -> float:
    """KL(smaller model || grown model), the grown model's probabilities summed back through mapping
    (grown id -> old id: the tokens RARE stood for into RARE), per masked token of batches: 0 for a
    function-preserving grow. grown_map: full id -> the grown model's id (None: full)."""
    total, rows = 0.0, 0
    for batch, p in zip(batches, before):
        q = log_probs(model, decoder_inputs(model, batch, grown_map)).exp()
        folded = torch.zeros_like(p).index_add_(1, mapping, q).clamp(min=1e-300).log()
        total += float((p.exp() * (p - folded)).sum())
        rows += len(p)
    return total / rows


@torch.no_grad()
def piece_targets(cur: 'Curriculum', model: Encoder, rare: int, stage: int,
                  grow: torch.Tensor) -> tuple:
    """What init_rows_from_pieces needs to grow the model from token space stage into the next
    (grow: new id -> old id): the new ids that start from RARE, their pieces (the frequent
    tokens the remapping file of stage splits their text into; none for the next space's own RARE,
    which keeps RARE's rows), and their logits at the decoder's mean input (read on training
    batches): RARE's logit there plus the log of each one's share of the group, so that on average
    over positions the group takes the probability RARE had (group_shares, over the full tokens
    RARE stood for, summed into the next space)."""
    if model.decoder.bias is None:
        raise ValueError("the 'pieces' init sets the decoder bias and this model has none; use "
                         "'rare'")
    remap, old_map, new_map = cur.remaps[stage], cur.stages[stage][0], cur.stages[stage + 1][0]
    old_map = old_map.cpu()
    new_map = torch.arange(len(old_map)) if new_map is None else new_map.cpu()  # full -> new id
    members = (old_map == rare).nonzero().flatten()  # the full ids RARE stands for
    group = (grow.cpu() == rare).nonzero().flatten()
    own_rare = stage + 1 < len(cur.remaps)  # the next space is remapped: it has a RARE of its own
    to_full = cur.remaps[stage + 1]['shrunk_to_full'] if own_rare else torch.arange(len(grow))
    offsets, flat = remap['piece_offsets'], remap['piece_ids'].long()
    pieces = [[] if own_rare and j == cur.remaps[stage + 1]['rare_id']
              else new_map[flat[offsets[t]:offsets[t + 1]]].tolist() for j, t in
              zip(group.tolist(), to_full[group].tolist())]
    batches = [cur.batch('train', cur.state['mask_rate'], EVAL_BATCHES, 0, k, full=True)
               for k in range(PROBE_BATCHES)]
    mean_input = torch.cat([decoder_inputs(model, b, cur.stages[stage][0])
                            for b in batches]).mean(0)
    anchor = (model.decoder.weight[rare].double() @ mean_input.double()
              + model.decoder.bias[rare].double()).cpu()
    shares = group_shares(torch.as_tensor(cur.data['counts']())[members])
    share = torch.zeros(len(grow), dtype=torch.float64).index_add_(0, new_map[members], shares)
    return group.tolist(), pieces, anchor + share[group].log(), mean_input


def group_shares(counts: torch.Tensor) -> torch.Tensor:
    """How a group of tokens shares one probability: by their train counts, with the Good-Turing
    estimate for the tokens train never holds (together they take the share of those it holds
    once); an even split when no member was seen."""
    counts = counts.double()
    unseen = counts == 0
    if counts.sum() == 0:  # nothing to go by
        return torch.full_like(counts, 1 / len(counts))
    unseen_share = float((counts == 1).sum() / counts.sum()) if unseen.any() else 0.0
    share = torch.where(unseen, unseen_share / unseen.sum().clamp(min=1),
                        (1 - unseen_share) * counts / counts.sum())
    return share.clamp(min=1e-30)


GROW_ROWS = ('pieces', 'random', 'random_scaled')  # how a start model's new tokens begin


@torch.no_grad()
def grow_into_extension(cur: 'Curriculum', model: Encoder, extension: dict,
                        rows: str = 'pieces') -> dict:
    """Grow a model of a base tokenizer into the data's, which extends it (prepare.py
    --extend_tokenizer): each new token's rows start as the mean of its pieces' rows (the ids the
    base gives its text; rows='random': drawn as a new model's are; 'random_scaled': so too, each
    rescaled to the start model's mean row length), and each piece that starts new tokens shares
    out, by train counts, the logit it had at the decoder's mean input with them
    (slots past the new tokens share [UNK]'s): on average over positions every old token keeps
    its probability or splits it with the new tokens that begin with it. Returns what it did and
    how far it moved the model's predictions on held-out text read in base tokens: KL(before ||
    after, the new tokens' probabilities folded into their first pieces), per masked token."""
    spelled = {t['id']: t['pieces'] for t in extension['new_tokens']}
    size, unk = cur.full_space.size, cur.meta['unk_token_id']
    spare = sorted(set(range(model.config.vocab_size, size)) - spelled.keys())
    head = {t: p[0] for t, p in spelled.items()} | dict.fromkeys(spare, unk)  # folds into
    members = defaultdict(list)  # the tokens each old one shares its probability with
    for t, first in head.items():
        members[first].append(t)
    held_out, train = ([base_token_batch(cur, split, k, spelled) for k in range(PROBE_BATCHES)]
                       for split in ('val', 'train'))
    before = [log_probs(model, decoder_inputs(model, b, None)) for b in held_out]
    mean_input = torch.cat([decoder_inputs(model, b, None) for b in train]).mean(0)
    firsts = sorted(members)
    bias = model.decoder.bias  # without one, the rows alone start from the pieces
    anchor = (model.decoder.weight[firsts].double() @ mean_input.double()
              + (bias[firsts].double() if bias is not None else 0)).cpu()
    norms = (tuple(w.norm(dim=1).mean().item() for w in (model.model.tok_embeddings.weight,
                                                           model.decoder.weight))
             if rows == 'random_scaled' else None)  # read before the new rows exist
    model.resize_vocabulary(size, unk, noise_std=0.0)
    if rows != 'pieces':  # the bias below still sets how much probability they start with
        model.init_rows_randomly(list(spelled), norms)
    pieces = spelled if rows == 'pieces' else {}
    counts = torch.as_tensor(cur.data['counts']())
    group, group_pieces, logits = [], [], []
    for first, logit in zip(firsts, anchor):
        group += [first, *members[first]]
        group_pieces += [[first]] + [pieces.get(t, []) for t in members[first]]
        logits.append(logit + group_shares(counts[[first, *members[first]]]).log())
    model.init_rows_from_pieces(group, group_pieces, None if bias is None else mean_input,
                                torch.cat(logits))
    mapping = torch.arange(size)
    mapping[list(head)] = torch.tensor(list(head.values()))
    return dict(new_tokens=len(spelled), grow_kl=folded_kl(model, held_out, before, mapping.to(
        model.decoder.weight.device)))


def base_token_batch(cur: 'Curriculum', split: str, k: int, spelled: dict) -> tuple:
    """An MLM batch of a split in the base tokenizer's ids: the data's windows with each new token
    written as its pieces (spelled), cut to the block size, every masked position [MASK]."""
    gen = torch.Generator().manual_seed(seed_for(cur.seed, 2, k))
    batch, block = cur.state['batch_size'], cur.state['block_size']
    windows = get_windows(cur.data['shards'][split], cur.meta['dtype'], batch, block, gen, 'cpu')
    x = torch.tensor([[p for t in w.tolist() for p in spelled.get(t, (t,))][:block]
                      for w in windows])
    x, y = mask_tokens(x, cur.full_space, cur.state['mask_rate'], 1.0, 0.0, gen)
    return x.to(cur.device), y.to(cur.device), None


def op_set_embedding_finetune_mode(cur: 'Curriculum', model: Encoder, value, it: int) -> dict:
    model.set_embedding_finetune_mode(value)
    cur.state['finetune_mode'] = value
    return dict(rebuild=True)


def op_disable_vocab_remapping(cur: 'Curriculum', model: Encoder, value, it: int) -> dict:
    cur.state['remapping'] = False
    return {}


def op_set_vocab_remapping(cur: 'Curriculum', model: Encoder, value, it: int) -> dict:
    """The data moves to the next remapping file, value (loaded and checked before the run)."""
    cur.state['stage'] += 1
    return {}


def op_reset_lr_schedule(cur: 'Curriculum', model: Encoder, value, it: int) -> dict:
    cur.state['lr_schedule_start'] = cur.budget.position(it)
    return {}


def op_set_rope_theta(cur: 'Curriculum', model: Encoder, value, it: int) -> dict:
    """[global, local] theta (None keeps one); the model recomputes its rotary tables."""
    current = model.config.global_rope_theta, model.config.local_rope_theta
    model.set_rope_theta(*(old if new is None else new for old, new in zip(current, value)))
    return {}


def setter(key: str, convert: Callable = float) -> Callable:
    """The operation that sets one entry of the run's state (train.py reads it at every step)."""
    def op_set(cur: 'Curriculum', model: Encoder, value, it: int) -> dict:
        cur.state[key] = convert(value)
        return {}
    return op_set


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


INITS = ('rare', 'pieces')  # how resize_vocabulary starts the tokens RARE stood for


def resize_init(value: list) -> str:
    """The init of a resize_vocabulary value: its third entry, 'rare' when it has two."""
    return value[2] if len(value) > 2 else 'rare'


# name: (function, check of the value, what the value must be)
OPERATIONS = {
    'resize_vocabulary': (op_resize_vocabulary, lambda v: isinstance(v, (list, tuple))
                          and len(v) in (2, 3) and (v[0] is None or isinstance(v[0], int))
                          and _is_number(v[1]) and v[1] >= 0 and resize_init(v) in INITS,
                          "[source_token_id (None: RARE), noise_std] or [..., 'rare' | 'pieces']"),
    'set_embedding_finetune_mode': (op_set_embedding_finetune_mode, lambda v: isinstance(v, bool),
                                    'True or False'),
    'disable_vocab_remapping': (op_disable_vocab_remapping, lambda v: v in (None, True),
                                'None or True'),
    'set_vocab_remapping': (op_set_vocab_remapping, lambda v: isinstance(v, str) and v != '',
                            'the path of a larger vocab_K.pt'),
    'set_lr': (setter('lr_base'), lambda v: _is_number(v) and v > 0, 'a positive learning rate'),
    'reset_lr_schedule': (op_reset_lr_schedule, lambda v: v in (None, True), 'None or True'),
    'set_mask_rate': (setter('mask_rate'), lambda v: _is_number(v) and 0 < v < 1,
                      'a rate in (0, 1)'),
    'set_batch_size': (setter('batch_size', int), _is_count, 'a positive micro-batch size'),
    'set_block_size': (setter('block_size', int), _is_count, 'a positive number of tokens'),
    'set_gradient_accumulation_steps': (setter('gradient_accumulation_steps', int), _is_count,
                                        'a positive number of micro-batches (over all ranks)'),
    'set_rope_theta': (op_set_rope_theta, lambda v: isinstance(v, (list, tuple)) and len(v) == 2
                       and all(t is None or (_is_number(t) and t > 0) for t in v),
                       '[global, local] (None keeps one)'),
}
TRIGGER_KEYS = ('at_iter', 'at_fraction', 'trigger_loss', 'max_wait_iters')


def scheduled_values(schedule: list, name: str) -> list:
    """The values the schedule's operations called name set (for the checks a run makes before it
    starts)."""
    return [op.get('value') for op in schedule if isinstance(op, dict) and op.get('name') == name]


# validation: every problem found before the first step --------------------------------------------

def same_point(prev: dict, op: dict) -> bool:
    """Whether op is guaranteed to fire at the same iteration as the operation before it."""
    for at in ('at_iter', 'at_fraction'):
        if at in op:
            return op[at] == prev.get(at)
    return 'trigger_loss' not in op and op.get('max_wait_iters') == 0


def _operation_problem(op, where: str) -> str | None:
    """What is wrong with one operation on its own, or None."""
    if not isinstance(op, dict) or 'name' not in op:
        return f"{where} must be a dict with 'name', 'value' and a trigger"
    where = f"{where} ({op['name']})"
    if op['name'] not in OPERATIONS:
        return f"{where}: unknown operation; known: {', '.join(OPERATIONS)}"
    unknown = set(op) - {'name', 'value', *TRIGGER_KEYS}
    if unknown:
        return (f"{where}: unknown keys {sorted(unknown)}; allowed: name, value, "
                f"{', '.join(TRIGGER_KEYS)}")
    _, check, expected = OPERATIONS[op['name']]
    if not check(op.get('value')):
        return f"{where}: value {op.get('value')!r} must be {expected}"
    if not any(k in op for k in TRIGGER_KEYS):
        return (f'{where}: no trigger; give at_iter, at_fraction (with time_budget), or '
                f'trigger_loss (with max_wait_iters), or max_wait_iters')
    fixed = [k for k in ('at_iter', 'at_fraction') if k in op]
    if fixed and (len(fixed) > 1 or 'trigger_loss' in op or 'max_wait_iters' in op):
        return f'{where}: {fixed[0]} cannot be combined with another trigger'
    if 'at_fraction' in op and not (_is_number(op['at_fraction']) and 0 < op['at_fraction'] <= 1):
        return f"{where}: at_fraction must be in (0, 1], the share of time_budget spent"
    for k in ('at_iter', 'max_wait_iters'):
        if k in op and (not isinstance(op[k], int) or isinstance(op[k], bool) or op[k] < 0):
            return f'{where}: {k} must be a non-negative integer'
    if 'trigger_loss' in op and not _is_number(op['trigger_loss']):
        return f'{where}: trigger_loss must be a number'
    return None


def validate_schedule(ops: list, remapping: bool, budget: bool = False) -> str | None:
    """The first problem of the schedule, or None; budget: the run has a time_budget. Simulates
    which token space the data and the model are in after every point at which operations fire: a
    step must never see ids beyond the model. The spaces, in order: the shrunken one
    (vocab_remapping_file), each set_vocab_remapping's file, the full one."""
    if not isinstance(ops, list):
        return 'must be a list of operations'
    names = ['full']
    if remapping:
        names[:0] = ['shrunken'] + [repr(v) for v in scheduled_values(ops, 'set_vocab_remapping')]
    full = len(names) - 1
    model_space = data_space = 0  # indexes into names
    last_at = dict(at_iter=-1, at_fraction=0)
    for i, op in enumerate(ops):
        problem = _operation_problem(op, f'operation {i}')
        if problem:
            return problem
        name, where = op['name'], f"operation {i} ({op['name']})"
        if 'at_fraction' in op and not budget:
            return (f'{where}: at_fraction is a share of time_budget; set --time_budget=<seconds>, '
                    f'or use at_iter')
        for at in last_at:
            if at in op:
                if op[at] < last_at[at]:
                    return (f"{where}: {at} {op[at]} comes before the previous operation's "
                            f'{last_at[at]}')
                last_at[at] = op[at]
        if i > 0 and not same_point(ops[i - 1], op) and model_space != data_space:
            return (f'operation {i - 1} leaves the data in the {names[data_space]} vocabulary but '
                    f'the model in the {names[model_space]} one; resize_vocabulary and '
                    f'{"set" if data_space < full else "disable"}_vocab_remapping must fire '
                    f'together (same at_iter, or max_wait_iters=0 on the second)')
        if name in REMAPPING_OPERATIONS and not remapping:
            return f'{where} needs a shrunken vocabulary: set vocab_remapping_file'
        if name == 'resize_vocabulary':
            if model_space == full:
                return f'{where}: the model already has the full vocabulary'
            model_space += 1
        if name in ('disable_vocab_remapping', 'set_vocab_remapping') and data_space == full:
            return (f'{where}: remapping is already disabled' if name.startswith('disable') else
                    f'{where}: remapping is already disabled; move the data to another remapping '
                    f'before disable_vocab_remapping')
        if name == 'disable_vocab_remapping':
            data_space = full
        if name == 'set_vocab_remapping':
            data_space += 1
    if model_space != data_space:
        return (f'the schedule ends with the data in the {names[data_space]} vocabulary but the '
                f'model in the {names[model_space]} one; add the missing resize_vocabulary, '
                f'set_vocab_remapping or disable_vocab_remapping')
    return None


REMAPPING_OPERATIONS = ('resize_vocabulary', 'disable_vocab_remapping', 'set_vocab_remapping')


@dataclass
class Fired:
    """What the operations of one Curriculum.run changed."""
    records: list = field(default_factory=list)  # one per operation, as logged
    optimizer: torch.optim.Optimizer | None = None  # rebuilt, when the trainable parameters changed
    parked: dict | None = None  # with it, the new optimizer state of frozen parameters (optim.py)
    # the step's batch, block or mask rate: a compiled model needs a new graph
    shape_changed: bool = False
    # the data or the model is in another token space: old losses do not compare
    space_changed: bool = False


class Curriculum:
    """The token spaces, the schedule and the state it changes; the settings it rebuilds the
    optimizer with."""

    def __init__(self, schedule: list, meta: dict, remaps: list, rare_token_id: int | None,
                 optimizer_settings: OptimizerSettings, learning_rate: float, mask_rate: float,
                 device, seed: int, ckpt_path: str, budget: TimeBudget, data: dict,
                 shape: dict | None = None):
        self.schedule = schedule
        # the remapping files the run trains in, in order (load_run_remaps; [] without remapping)
        self.meta, self.remaps, self.device = meta, remaps, device
        # where batches come from: shards (per split), probs, pack_documents; counts(), the
        # train counts of every token (counts.npy); extension(), the data's tokenizer extension
        self.data = data
        self.budget = budget  # where the run stands: at_fraction and reset_lr_schedule read it
        self.ckpt_path = ckpt_path  # named when an operation fails: it holds the state before it
        self.optimizer_settings = optimizer_settings  # what a rebuilt optimizer is
        self.seed = seed  # of the resize noise
        self.full_space = TokenSpace(meta, device)
        # each token space of the run, the full one last: (full id -> its id, None when full; space)
        self.stages = [(r['full_to_shrunk'].to(device), TokenSpace(r, device)) for r in remaps] \
            + [(None, self.full_space)]
        self.rare_token_id = rare_token_id
        self.grown = {}  # what growing the start model into the data's tokenizer did
        self.state = dict(  # checkpointed with the run
            remapping=bool(remaps),
            stage=0,  # which remapping file the data is in while remapping is on
            finetune_mode=False,
            lr_base=learning_rate,
            lr_schedule_start=0,  # reset_lr_schedule restarts warmup/decay here
            mask_rate=mask_rate,
            executed_ops=[],  # one record per executed operation
            last_op_iter=0,
            # batch_size, block_size, gradient_accumulation_steps: the phase operations set them
            **(shape or {}),
        )

    def grow_into_extension(self, model: Encoder, rows: str = 'pieces') -> None:
        """Grow a start model of the base tokenizer into the data's extended one
        (grow_into_extension); what it did is kept in self.grown for the log."""
        self.grown = grow_into_extension(self, model, self.data['extension'](), rows)

    def space(self) -> tuple[torch.Tensor | None, TokenSpace]:
        """The remapping (full id -> shrunken id, None when off) and the token space the data is in
        now."""
        return self.stages[self.state['stage'] if self.state['remapping'] else -1]

    def space_record(self) -> dict:
        """The remapping file's contents in force, or the dataset's meta: the special ids the data
        has now."""
        return self.remaps[self.state['stage']] if self.state['remapping'] else self.meta

    def model_stage(self, model: Encoder) -> int:
        """Which token space of the run the model is in (its vocabulary sizes grow stage by
        stage)."""
        sizes = [space.size for _, space in self.stages]
        if model.config.vocab_size not in sizes:
            raise ValueError(f'the model\'s vocabulary ({model.config.vocab_size}) is none of the '
                             f"run's token spaces ({sizes})")
        return sizes.index(model.config.vocab_size)

    def grow_map(self, stage: int) -> torch.Tensor:
        """new id -> old id from token space stage to the next: the next space's tokens through
        the full ids; its own RARE (in a remapped space) comes from RARE."""
        old_map, new = self.stages[stage][0], self.stages[stage + 1][0]
        if new is None:
            return old_map
        nxt = self.remaps[stage + 1]
        index = old_map[nxt['shrunk_to_full'].to(self.device)]
        index[nxt['rare_id']] = self.remaps[stage]['rare_id']
        return index

    def batch(self, split: str, rate: float, *key: int, full: bool = False) -> tuple:
        """The micro-batch identified by key (mlm.masked_batch), in the step's shape and the token
        space the data is in now (full: the full one)."""
        mapping, space = (None, self.full_space) if full else self.space()
        shape = self.state['batch_size'], self.state['block_size']
        return masked_batch(self.data['shards'][split], self.meta, shape, space, mapping, rate,
                            self.data['probs'], seed_for(self.seed, *key), self.device,
                            self.data['pack_documents'])

    def done(self, it: int) -> bool:
        """The run is over before iteration it: max_iters or the time budget spent, unless the next
        operation fires at a share of the budget. The time is read every log_interval iterations,
        so a share within the budget's last log interval could otherwise be passed over; that
        operation (and those due with it) fires at the end instead, and one more step trains after
        it, also in a run resumed from the checkpoint saved right after it."""
        left = self.schedule[len(self.state['executed_ops']):]
        rescued = (left and 'at_fraction' in left[0]) or self.state['last_op_iter'] == it > 0
        return self.budget.done(it) and not rescued

    def due(self, it: int, val_loss: float | None) -> list:
        """(index, trigger) of the operations that fire now, in order; each waits for the one
        before. val_loss: the validation loss measured at iteration it, None when it was not
        evaluated."""
        fired, last_op_iter = [], self.state['last_op_iter']
        for i in range(len(self.state['executed_ops']), len(self.schedule)):
            op = self.schedule[i]
            if 'at_iter' in op:
                trigger = 'at_iter' if it >= op['at_iter'] else None
            elif 'at_fraction' in op:
                trigger = 'at_fraction' if self.budget.fraction(it) >= op['at_fraction'] else None
            elif 'trigger_loss' in op and val_loss is not None and val_loss < op['trigger_loss']:
                trigger = 'trigger_loss'
            elif 'max_wait_iters' in op and it - last_op_iter >= op['max_wait_iters']:
                trigger = 'max_wait_iters'
            else:
                trigger = None
            if trigger is None:
                break
            fired.append((i, trigger))
            last_op_iter = it
        return fired

    def run(self, it: int, model: Encoder, optimizer: torch.optim.Optimizer, parked: dict,
            val_loss: float | None) -> Fired | None:
        """Run the operations due at iteration it on model (val_loss as in due); None when none is.
        A rebuilt optimizer takes each parameter's state by name from optimizer and parked
        (optim.rebuild_optimizer). SystemExit with one line when an operation fails: it is never
        retried."""
        due = self.due(it, val_loss)
        if not due:
            return None
        # the same resize noise on every rank and on resume
        torch.manual_seed(seed_for(self.seed, RESIZE_NOISE, it))
        carried = carried_state(model, optimizer, parked)
        rebuild = False
        shape_before = self.step_shape()
        space_before = self.space_key(model)
        fired = Fired()
        for i, trigger in due:
            op = self.schedule[i]
            try:
                result = OPERATIONS[op['name']][0](self, model, op.get('value'), it)
            except Exception as e:
                fail(f"operation {i} ({op['name']}) failed at iter {it}: {type(e).__name__}: {e}; "
                     f'{self.ckpt_path} holds the state from before it')
            if 'regather' in result:
                for name in model.vocab_parameter_names():
                    if name in carried:
                        carried[name] = {k: result['regather'](v) if v.dim() else v
                                         for k, v in carried[name].items()}
            rebuild |= result.get('rebuild', False)
            record = dict(iter=it, op=op['name'], value=op.get('value'), trigger=trigger,
                          **result.get('measured', {}))
            self.state['executed_ops'].append(record)
            self.state['last_op_iter'] = it
            fired.records.append(record)
        if rebuild:
            fired.optimizer, fired.parked = rebuild_optimizer(model, self.optimizer_settings,
                                                              self.state['lr_base'], carried)
        # what a compiled graph's shapes depend on
        fired.shape_changed = self.step_shape()[:3] != shape_before[:3]
        fired.space_changed = self.space_key(model) != space_before
        return fired

    def space_key(self, model: Encoder) -> tuple:
        """What says which token spaces the data and the model are in."""
        return self.state['remapping'], self.state['stage'], model.config.vocab_size

    def step_shape(self) -> tuple:
        """What a step's micro-batches depend on besides the iteration: batch and block size, mask
        rate, micro-batches per step and token space."""
        return tuple(self.state[k] for k in ('batch_size', 'block_size', 'mask_rate',
                                              'gradient_accumulation_steps', 'remapping', 'stage'))
