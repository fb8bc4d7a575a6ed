"""
Masked-language-model pre-training of a ModernBERT or NeoBERT encoder.

Single process:   python train.py config/demo_cpu.py --batch_size=32
DDP, one node:    torchrun --standalone --nproc_per_node=8 train.py config/small_mlm.py

Defaults are the globals below; config files and --key=value override them (configurator.py).
docs/training.md explains each knob, the loop and the checkpoint.
"""
import dataclasses
import os
from contextlib import nullcontext

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

from checkpoint import (NEW_PROGRESS, extended_history, fit_model_to_data, parse_init_from,
                        run_start, save_run, start_model)
from configurator import check_at_least, check_choices
from curriculum import (GROW_ROWS, Curriculum, TimeBudget, load_run_remaps, scheduled_values,
                        validate_schedule)
from data import load_counts, load_dataset, shard_paths
from distill import HIDDEN_LOSSES, Teacher, check_distill_settings, check_same_teacher
from distributed import StopSignal, all_reduce, check_shared_folder, setup, shutdown
from errors import fail
from mlm import (DROPOUT, EVAL_BATCHES, TRAIN_BATCHES, SparseHeadRows, evaluate, micro_batch_loss,
                 seed_for, unigram_logits)
from model import ATTN_IMPLEMENTATIONS, IGNORE_INDEX
from optim import LR_SCHEDULES, NonFiniteGuard, OptimizerSettings, scheduled_lr, set_lr
from runlog import RunLog, StepClock
from tokenizer import data_tokenizer, load_extension

_not_a_knob = set(globals())  # what the knobs below must not include: the imports
# -----------------------------------------------------------------------------
# I/O
out_dir = 'out'
eval_interval = 200
log_interval = 10
eval_iters = 20  # batches per split in each evaluation (a fixed sample with fixed masks)
eval_only = False
always_save_checkpoint = True
keep_last_checkpoints = 0  # also keep ckpt_<iter>.pt for the last k saves (0: only ckpt.pt)
init_from = 'scratch'  # 'scratch' | 'resume' | a .pt | 'hf:<folder or id>' | 'auto[:<start>]'
overwrite = False  # allow a new run to replace out_dir's ckpt.pt and metrics.jsonl
checkpoint_interval = 0  # also save every n iterations (0: at evaluations only)
# wandb
wandb_log = False
wandb_project = 'nanobert'
wandb_run_name = 'run'
wandb_mode = 'online'  # 'online' | 'offline' | 'disabled'
# data (written by prepare.py)
dataset = 'shakespeare'
data_root = 'data'
batch_size = 16  # micro-batch size
block_size = 512
gradient_accumulation_steps = 1  # micro-batches per step, over all ranks
pack_documents = False  # windows start at a document, attention stays within documents
# masking
mask_rate = 0.30
mask_token_prob = 0.8  # of the selected tokens: replaced by [MASK] ...
random_token_prob = 0.1  # ... by a random non-special token; the rest stay unchanged
eval_mask_rate = None  # None: the mask_rate at the start of the run
# model (None: the architecture's default in model.EncoderConfig)
arch = 'modernbert'
hidden_size = 768
intermediate_size = None
num_hidden_layers = 12
num_attention_heads = 12
max_position_embeddings = None
global_attn_every_n_layers = None
local_attention = None
global_rope_theta = None
local_rope_theta = None
dropout = 0.0  # every dropout of the model
attn_implementation = 'auto'  # 'auto' (FlexAttention when training on CUDA) | 'sdpa' | 'flex'
model_overrides = {}  # any other EncoderConfig field, e.g. {'norm_eps': 1e-6}
decoder_bias_init = 'unigram'  # 'unigram' (train.bin's log-frequencies) | 'zeros' (transformers')
# optimizer
optimizer_name = 'adamw'  # 'adamw' | 'stable_adamw' (ModernBERT's, optim.py)
learning_rate = 8e-4
max_iters = 10000
time_budget = None  # seconds of training: the run ends when spent (max_iters then only shapes the
#                     learning-rate schedule, which follows the budget by fraction)
weight_decay_convention = 'torch'  # 'torch' (lr * wd per step) | 'decoupled' (wd * lr / peak)
weight_decay = 1e-5
decay_1d_params = False  # also decay norms and biases (NeoBERT does)
beta1 = 0.9
beta2 = 0.98
adam_eps = 1e-6
grad_clip = 1.0  # 0 disables clipping
# learning-rate schedule
lr_schedule = 'wsd'  # 'wsd' (warmup-stable-decay) | 'cosine' | 'constant'
warmup_iters = 200
lr_decay_iters = None  # None: max_iters
min_lr = 8e-5
decay_fraction = 0.1  # wsd: the last fraction of lr_decay_iters decays
decay_shape = 'sqrt'  # wsd: 'linear' | 'sqrt' (1 - sqrt)
# system
device = 'cuda' if torch.cuda.is_available() else 'cpu'
dtype = 'bfloat16' if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else 'float32'
compile = None  # None: on for CUDA, off on CPU
peak_flops = None  # for MFU; None: 989e12 on CUDA (H100 dense bf16), 135e9 on CPU
seed = 1337
max_skipped_steps = 20  # consecutive non-finite steps before the run stops
inject_nonfinite_at = []  # iterations whose step loss is made inf (tests the guard)
inject_step_seconds = None  # tests: each iteration counts this long against time_budget
# grow-as-you-go vocabulary
shrunken_vocab_size = None  # must match the remapping file when given
vocab_remapping_file = None  # data/<dataset>/vocab_K.pt from prepare.py
rare_token_id = None  # None: the file's rare_id
schedule = []  # operations; see docs/curriculum.md
grow_rows = 'pieces'  # a new token starts as its pieces' mean, 'random' or 'random_scaled'
# knowledge distillation (distill.py): a frozen teacher's soft targets on the predicted rows
teacher = None  # a .pt, a Hugging Face folder or 'hf:<id>' with the data's tokenizer
distill_weight = 0.5  # w in (1 - w) * MLM + w * T^2 * KL(teacher || student)
distill_temperature = 1.0  # T
distill_hidden_weight = 0.0  # plus this times a hidden-state loss (docs/guide.md)
distill_hidden_loss = 'cosine'  # 'cosine' | 'mse'
# -----------------------------------------------------------------------------
config_keys = [k for k, v in globals().items() if not k.startswith('_') and k not in _not_a_knob
               and isinstance(v, (int, float, bool, str, list, dict, type(None)))]
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'configurator.py')).read())
config = {k: globals()[k] for k in config_keys}
# -----------------------------------------------------------------------------

# validate the configuration before touching any file ----
check_choices(config, dict(lr_schedule=LR_SCHEDULES, decay_shape=('linear', 'sqrt'),
                           dtype=('float32', 'bfloat16', 'float16'),
                           attn_implementation=ATTN_IMPLEMENTATIONS,
                           wandb_mode=('online', 'offline', 'disabled'),
                           optimizer_name=('adamw', 'stable_adamw'),
                           weight_decay_convention=('torch', 'decoupled'),
                           decoder_bias_init=('unigram', 'zeros'), grow_rows=GROW_ROWS,
                           distill_hidden_loss=HIDDEN_LOSSES))
if not 0.0 < mask_rate < 1.0 or (eval_mask_rate is not None and not 0.0 < eval_mask_rate < 1.0):
    fail('mask_rate and eval_mask_rate must be in (0, 1)')
if mask_token_prob < 0 or random_token_prob < 0 or mask_token_prob + random_token_prob > 1:
    fail('mask_token_prob and random_token_prob must be >= 0 and sum to at most 1')
if learning_rate <= 0 or min_lr < 0:
    fail('learning_rate must be > 0 and min_lr >= 0')
check_at_least(config, dict(batch_size=1, block_size=1, gradient_accumulation_steps=1, max_iters=1,
                            eval_interval=1, log_interval=1, eval_iters=1, checkpoint_interval=0))
if time_budget is not None and not time_budget > 0:
    fail(f'time_budget={time_budget}: give seconds > 0, or None to end at max_iters')
_problem = validate_schedule(schedule, vocab_remapping_file is not None, time_budget is not None)
if _problem:
    fail(f'schedule: {_problem}')
check_distill_settings(config)
if device == 'cuda' and not torch.cuda.is_available():
    fail("device='cuda' but CUDA is not available; pass --device=cpu")
start_from, auto = parse_init_from(init_from)  # what a new run starts from; auto: resume if we can

# DDP (torchrun sets RANK; NCCL on CUDA, gloo on CPU), device and precision ----
ddp, rank, world_size, device = setup(device)
master = rank == 0
log = RunLog(out_dir, master)  # metrics.jsonl, wandb and stdout, from rank 0
for _steps in [gradient_accumulation_steps,
               *scheduled_values(schedule, 'set_gradient_accumulation_steps')]:
    if _steps % world_size:
        fail(f'gradient_accumulation_steps={_steps} must be divisible by the {world_size} '
             f'processes (it counts micro-batches over all ranks)')
device_type = 'cuda' if device.startswith('cuda') else 'cpu'
compiled = device_type == 'cuda' if compile is None else compile
if attn_implementation == 'flex' and device_type != 'cuda':
    fail("attn_implementation='flex' trains only on CUDA (FlexAttention has no backward on the "
         "CPU); use 'auto' or 'sdpa'")
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
ptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}[dtype]
autocast = nullcontext() if dtype == 'float32' else torch.autocast(device_type, dtype=ptdtype)
scaler = torch.amp.GradScaler(device_type, enabled=(dtype == 'float16'))

# data, and the vocabulary: the active token space is the shrunken one while remapping is on ----
data_dir = os.path.join(data_root, dataset)
prepare_hint = f'run: python prepare.py --dataset={dataset} --out_dir={data_dir}'
longest_block = max([block_size, *scheduled_values(schedule, 'set_block_size')])
meta = load_dataset(data_dir, longest_block, prepare_hint)  # stops with one line on a problem
shards = {split: shard_paths(data_dir, split, meta) for split in ('train', 'val')}
if shrunken_vocab_size is not None and vocab_remapping_file is None:
    fail('shrunken_vocab_size needs vocab_remapping_file (a vocab_K.pt from prepare.py)')
# the remapping files: vocab_remapping_file's, then each set_vocab_remapping's (a staged grow)
remaps = load_run_remaps(vocab_remapping_file, meta, shrunken_vocab_size, rare_token_id, schedule)
rare_id = remaps[0]['rare_id'] if remaps else None
optimizer_settings = OptimizerSettings(optimizer_name, weight_decay,
                                       weight_decay_convention == 'decoupled', (beta1, beta2),
                                       adam_eps, decay_1d_params, device_type, compiled)
# the schedule, the token spaces and the training state that changes during the run (checkpointed)
ckpt_path = os.path.join(out_dir, 'ckpt.pt')
progress = dict(NEW_PROGRESS)  # the run's counters (checkpointed): tokens, time, last evaluation
budget = TimeBudget(max_iters, time_budget, progress, device, inject_step_seconds)
curriculum = Curriculum(schedule, meta, remaps, rare_id, optimizer_settings, learning_rate,
                        mask_rate, device, seed, ckpt_path, budget,
                        dict(shards=shards, probs=(mask_token_prob, random_token_prob),
                             pack_documents=pack_documents,
                             counts=lambda: load_counts(data_dir, meta, prepare_hint),
                             extension=lambda: load_extension(data_dir, meta)),
                        shape=dict(batch_size=batch_size, block_size=block_size,
                                   gradient_accumulation_steps=gradient_accumulation_steps))
state = curriculum.state
eval_rate = mask_rate if eval_mask_rate is None else eval_mask_rate


def step_batches(it: int) -> list:
    """This rank's micro-batches of iteration it; global micro-batch g is the same whatever the
    number of ranks."""
    micro_steps = state['gradient_accumulation_steps'] // world_size
    return [curriculum.batch('train', state['mask_rate'], TRAIN_BATCHES, it, rank * micro_steps + m)
            for m in range(micro_steps)]


def eval_batch(split: str, k: int) -> tuple:
    return curriculum.batch(split, eval_rate, EVAL_BATCHES, ('train', 'val').index(split), k)


# the model: from scratch, a checkpoint, a Hugging Face model, or this run's (checkpoint.py) ----
if os.path.exists(out_dir) and not os.path.isdir(out_dir):
    fail(f"--out_dir={out_dir} is a file, not a folder; give a folder for the run's checkpoint "
         f'and log')
check_shared_folder(out_dir, device)  # under torchrun: every rank must see the same out_dir
start = run_start(start_from, auto, out_dir, overwrite, eval_only, log, config)


def unigram_bias() -> torch.Tensor:
    """A new model's decoder bias: it starts out predicting the unigram distribution."""
    mapping, space = curriculum.space()
    return unigram_logits(curriculum.data['counts'](), space, mapping)


torch.manual_seed(seed)  # the same initial weights on every rank and in every run
# history: every corpus the weights have read
model, checkpoint, history = start_model(
    start, ckpt_path, meta, config, (curriculum.space_record(), curriculum.space()[1].size),
    unigram_bias if decoder_bias_init == 'unigram' else None, auto,
    lambda m: curriculum.grow_into_extension(m, grow_rows))
source = ckpt_path if start == 'resume' else start  # where the model came from, in messages
iter_num, best_val_loss, wandb_run_id, keep_metrics_bytes = 0, 1e9, None, 0
if start == 'resume':
    state.update(checkpoint['state'])
    progress.update(checkpoint['progress'])
    iter_num, best_val_loss = checkpoint['iter_num'], checkpoint['best_val_loss']
    wandb_run_id = checkpoint.get('wandb_run_id')
    keep_metrics_bytes = checkpoint.get('metrics_bytes')
    log(line=f'resuming {ckpt_path} at iter {iter_num}')
if state['remapping'] and not remaps:
    fail(f'{source} is in the shrunken-vocabulary phase; pass the vocab_remapping_file it was '
         f'trained with')
fit_model_to_data(model, curriculum.space_record(), curriculum.space()[1].size,
                  longest_block, attn_implementation)
if state['finetune_mode']:
    model.set_embedding_finetune_mode(True)
model.to(device)
guide_record = checkpoint.get('guide') if checkpoint else None  # GUIDE's PCA map goes on with it

# the teacher: frozen, one copy on every rank; a run resumes only with the teacher it had ----
teacher_model = None
if teacher:
    teacher_model = Teacher(config, meta, longest_block, device, model, guide_record, source,
                            compiled, log)
    history = extended_history(history, *teacher_model.history)  # what it teaches, it read
if start == 'resume':
    check_same_teacher(checkpoint.get('teacher'), teacher_model and teacher_model.record, ckpt_path)

# optimizer: rebuilt by parameter name after operations, its state carried over (optim.py) ----
optimizer, parked = optimizer_settings.build(model, state['lr_base']), {}
if start == 'resume':
    optimizer.load_state_dict(checkpoint['optimizer'])
    parked = checkpoint['parked_optimizer_state']  # the state of frozen parameters
    scaler.load_state_dict(checkpoint['scaler'])
checkpoint = None  # free memory


def wrap(m: torch.nn.Module) -> torch.nn.Module:
    """torch.compile, then DDP; redone when an operation changes the parameters or step shape."""
    if compiled:
        log(line='compiling the model: the first steps take longer')
        # forget the graphs of the model as it was: each rebuild would otherwise count towards
        # dynamo's recompile limit, past which it silently falls back to eager
        torch._dynamo.reset()
        m = torch.compile(m)
    if ddp:
        m = DDP(m, device_ids=[torch.device(device).index] if device_type == 'cuda' else None)
    return m


def get_lr(it: int) -> float:
    """Learning rate at iteration it; reset_lr_schedule restarts it at lr_schedule_start."""
    base, start = state['lr_base'], state['lr_schedule_start']  # a time budget: by fraction
    return scheduled_lr(budget.position(it) - start, (lr_decay_iters or max_iters) - start, base,
                        base * min_lr / learning_rate, warmup_iters, lr_schedule, decay_fraction,
                        decay_shape)


def checkpoint_state(it: int) -> dict:
    return dict(model=model.state_dict(), model_args=dataclasses.asdict(model.config),
                optimizer=optimizer.state_dict(), parked_optimizer_state=parked,
                scaler=scaler.state_dict(), iter_num=it, best_val_loss=best_val_loss, config=config,
                state=state, progress=progress, dataset_meta=meta, data_history=history,
                tokenizer=data_tokenizer(meta), teacher=teacher_model and teacher_model.record,
                guide=guide_record,
                wandb_run_id=wandb_run_id, metrics_bytes=log.size())


def save(it: int) -> None:
    guard.read()  # the checkpoint counts every skipped step; none is saved past max_skipped_steps
    budget.read()  # and every second trained
    with clock.aside():
        save_run(checkpoint_state(it) if master else None, ckpt_path, it, keep_last_checkpoints,
                 log, device)


def run_evaluation(it: int, after_op: bool = False) -> dict:
    """Evaluate, log it, and remember it for the curriculum's loss triggers."""
    net = wrapped.module if ddp else wrapped  # compiled, when it is
    with clock.aside():
        metrics = evaluate(net, eval_batch, eval_iters, rare_id if state['remapping'] else None,
                           autocast)
    if after_op:  # in the new token space at once: the curve shows the jump an operation causes
        log(dict(iter=it, after_op=True, **metrics),
            f"iter {it}: after the operations, val loss {metrics['val_loss']:.4f}")
        return metrics
    progress['last_eval_iter'], progress['last_val_loss'] = it, metrics['val_loss']
    log(dict(iter=it, **metrics), f"iter {it}: train loss {metrics['train_loss']:.4f}, "
        f"val loss {metrics['val_loss']:.4f}, val acc {metrics['val_acc']:.4f}")
    return metrics


# training loop ----
stop = StopSignal()  # SIGTERM, SIGINT: finish the step, save, exit
wandb_settings = (dict(project=wandb_project, name=wandb_run_name, config=config, mode=wandb_mode,
                       id=wandb_run_id) if wandb_log else None)
wandb_run_id = (log.open(None if eval_only else keep_metrics_bytes, wandb_settings, config)
                or wandb_run_id)
log(line=f'{model.get_num_params() / 1e6:.2f}M parameters, vocabulary {model.config.vocab_size}, '
    f'{gradient_accumulation_steps * batch_size * block_size:,} tokens per iteration, {world_size} '
    f'process(es), device {device}, {dtype}')
log(line=f'attention: {model.attention_summary(torch.device(device))}')
if curriculum.grown:  # the start model's tokenizer is the one the data's extends: it grew
    log(dict(iter=0, op='grow_into_tokenizer', **curriculum.grown), f'grew: {curriculum.grown}')
wrapped = wrap(model)  # what the step calls: compiled and DDP-wrapped; `model` is the module itself
guard = NonFiniteGuard(progress, max_skipped_steps, log, ckpt_path)
wants_hidden = teacher_model is not None and teacher_model.projection is not None
head = SparseHeadRows(compiled, device)
peak = peak_flops or (989e12 if device_type == 'cuda' else 135e9)  # for MFU
local_iter, clock, ahead = 0, StepClock(device), {}
while True:
    # once in a while: evaluate, save, and run the operations the schedule has due ----
    finished = curriculum.done(iter_num)  # max_iters reached, or the time budget spent
    save_now = checkpoint_interval > 0 and iter_num % checkpoint_interval == 0
    if (iter_num % eval_interval == 0 or finished) and progress['last_eval_iter'] != iter_num:
        val_loss = run_evaluation(iter_num)['val_loss']
        save_now |= val_loss < best_val_loss or always_save_checkpoint
        best_val_loss = min(best_val_loss, val_loss)
    if save_now and local_iter > 0 and not eval_only:  # at local_iter 0 it is where we began
        save(iter_num)
    if finished or eval_only:
        break
    budget.start()  # the operations and the step count against a time budget
    evaluated_now = progress['last_eval_iter'] == iter_num
    fired = curriculum.run(iter_num, model, optimizer, parked,
                           progress['last_val_loss'] if evaluated_now else None)
    if fired:
        for record in fired.records:
            log(record, f"iter {iter_num}: operation {record['op']}({record['value']!r}) fired by "
                f"{record['trigger']}")
        if fired.optimizer is not None:  # the trainable parameters changed: a new optimizer
            optimizer, parked = fired.optimizer, fired.parked
        if fired.optimizer is not None or (compiled and fired.shape_changed):
            # and a fresh static graph (else dynamo recompiles the old one with symbolic sizes)
            wrapped = wrap(model)
            clock.rewarm()  # whose first steps are warm-up again
        if fired.space_changed:  # losses of another token space do not compare
            best_val_loss = run_evaluation(iter_num, after_op=True)['val_loss']
        if not eval_only:
            save(iter_num)

    # the learning rate; dropout seeded by (seed, iteration, rank): a resumed run draws the same --
    lr = get_lr(iter_num)
    set_lr(optimizer, lr, optimizer_settings.weight_decay_at(state['lr_base']))
    torch.manual_seed(seed_for(seed, DROPOUT, iter_num, rank))

    # forward, backward, update ----
    window_tokens = state['batch_size'] * state['block_size']
    tokens_per_iter = state['gradient_accumulation_steps'] * window_tokens
    # made during the last step, unless an operation has changed what they depend on since
    batches = ahead.pop((iter_num, *curriculum.step_shape()), None) or step_batches(iter_num)
    counts = torch.stack([(y != IGNORE_INDEX).sum() for _, y, _ in batches])
    n_pred = all_reduce(counts.sum().float())  # predicted tokens of the whole step, all ranks
    capacity = head.rows(counts, window_tokens, state['mask_rate'])
    loss_sum = torch.zeros((), device=device)
    loss_parts = torch.zeros(3, device=device)  # with a teacher: MLM, soft-target, hidden parts
    for m, ((x, y, documents), n) in enumerate(zip(batches, counts)):
        if ddp:  # all-reduce the gradients once, after the last micro-batch, not after each
            wrapped.require_backward_grad_sync = m == len(batches) - 1
        with autocast:
            logits, loss, *hidden = wrapped(x, labels=y, document_ids=documents,
                                            max_predictions=capacity, return_hidden=wants_hidden)
            if teacher_model is not None:
                loss, parts = teacher_model.loss(loss, logits, hidden, x, y, documents, capacity,
                                                 curriculum.space())
                loss_parts += micro_batch_loss(parts, n, n_pred).detach()
        # a micro-batch's mean loss weighs by its share of the step's predicted tokens, so the sum
        # over micro-batches and ranks is the mean over every predicted token: accumulation equals
        # one big batch. DDP averages gradients over the ranks, so scale by world_size to sum them.
        contribution = micro_batch_loss(loss, n, n_pred)
        scaler.scale(contribution * world_size).backward()
        loss_sum += contribution.detach()
    scaler.unscale_(optimizer)
    # an infinite max_norm clips nothing: the call then only measures the norm, for the guard
    max_norm = grad_clip if grad_clip > 0 else float('inf')
    grad_norm = torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad],
                                               max_norm)
    step_loss = all_reduce(loss_sum)  # the same on every rank
    if iter_num in inject_nonfinite_at:  # the guard's test: a loss made inf, as if it overflowed
        step_loss = step_loss * float('inf')
    # in place of scaler.step, whose check of the gradients waits for the GPU: skipped on the device
    guard.step(iter_num, optimizer, step_loss, grad_norm)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    progress['tokens'] += tokens_per_iter
    if not budget.done(iter_num + 1):  # nothing above waits for the GPU: make the next batches now
        ahead = {(iter_num + 1, *curriculum.step_shape()): step_batches(iter_num + 1)}

    # timing and logging: the device's flags are read at log points only (reading waits for it) --
    clock.tick()
    if iter_num % log_interval == 0:
        head.check(window_tokens, state['mask_rate'])
        guard.read()
        if teacher_model is not None:  # read, like the loss, at log points only
            loss_parts = all_reduce(loss_parts)
        dt = clock.lap()  # after the waits above: the time per iteration since the last log point
        mfu = (model.estimate_mfu(tokens_per_iter / world_size, n_pred.item() / world_size, dt,
                                  peak, seq_len=state['block_size']) if clock.warm else None)
        parts = dict(zip(teacher_model.part_names, loss_parts.tolist())) if teacher_model else {}
        log.step(iter_num, budget, clock, mfu, loss=step_loss.item(), **parts, lr=lr,
                 tokens=progress['tokens'], tokens_per_s=tokens_per_iter / dt,
                 grad_norm=grad_norm.item())
    budget.stop(read=iter_num % log_interval == 0, wait=(iter_num + 1) % eval_interval == 0)
    iter_num += 1
    local_iter += 1

    # termination: a signal stops every rank at the same iteration, with a checkpoint ----
    if stop.agreed(iter_num, log_interval, device):
        save(iter_num)
        log(line=f'stopped by signal at iter {iter_num}; checkpoint saved to {ckpt_path}; resume '
                 f'with --init_from=resume')
        break

guard.read()
log.finish()
shutdown()
