"""
Masked-language-model pre-training of a ModernBERT or NeoBERT encoder.

Single process:   python train.py config/demo_cpu.py --batch_size=32
DDP, one node:    torchrun --standalone --nproc_per_node=8 train.py config/small_mlm.py

Defaults are the globals below; config files and --key=value override them (configurator.py).
gradient_accumulation_steps counts micro-batches per optimizer step over ALL ranks, so the same
command gives the same global batch, windows and masks whatever the number of processes.
"""
import dataclasses
import os
import signal
import threading
from contextlib import nullcontext

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from checkpoint import (checkpoint_encoder, fit_model_to_data, keep_last, load_model, load_start_checkpoint,
                        other_run_settings, save_checkpoint, scratch_config)
from configurator import check_at_least, check_choices
from errors import fail, first_line
from curriculum import Curriculum, ScheduleError, load_run_remap, scheduled_values, validate_schedule
from data import load_counts, load_dataset, shard_paths
from distill import HIDDEN_LOSSES, check_same_teacher, hidden_loss, hidden_projection, load_teacher, mixed_loss
from distributed import all_reduce, check_shared_folder, fail_together, setup, shutdown
from mlm import (DROPOUT, EVAL_BATCHES, TRAIN_BATCHES, masked_batch, micro_batch_loss, prediction_capacity,
                 prediction_counts, seed_for, unigram_logits)
from model import ATTN_IMPLEMENTATIONS, IGNORE_INDEX, Encoder
from optim import LR_SCHEDULES, configure_optimizers, scheduled_lr, step_unless
from runlog import RunLog, StepClock
from tokenizer import data_tokenizer, require_same_tokenizer

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
# 'scratch' | 'resume' | path/to/ckpt.pt | 'hf:<folder or hub id>' | 'auto' (resume out_dir's checkpoint when this
# run saved one, else scratch: what torchrun restarts and requeued jobs need) | 'auto:<a start>' (else that start)
init_from = 'scratch'
overwrite = False  # allow a new run (any init_from but resume) to replace out_dir's ckpt.pt and metrics.jsonl
checkpoint_interval = 0  # also save every n iterations, evaluated or not, to bound what a kill loses (0: at evals)
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
gradient_accumulation_steps = 1
# windows start at a document and attention stays within each document, as ModernBERT packs them (mlm.py);
# False: random windows that run across documents
pack_documents = False
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
attn_implementation = 'auto'  # 'auto' (FlexAttention when training on CUDA) | 'sdpa' | 'flex'; see model.EncoderConfig
model_overrides = {}  # any other EncoderConfig field, e.g. {'norm_eps': 1e-6}
# a new model's decoder bias: 'unigram' (the log-frequencies of train.bin's tokens, so it starts out predicting the
# unigram distribution) | 'zeros' (transformers' init)
decoder_bias_init = 'unigram'
# optimizer
optimizer_name = 'adamw'  # 'adamw' | 'stable_adamw' (AdamW with per-tensor update clipping: ModernBERT's, optim.py)
learning_rate = 8e-4
max_iters = 10000
# 'torch': each step decays by lr * weight_decay. 'decoupled': by weight_decay * lr / peak, Composer's convention, in
# which ModernBERT states its 1e-5 (torch's equivalent at its peak lr of 8e-4: 1e-5 / 8e-4 = 0.0125); the peak is
# learning_rate, or the last set_lr's value (ModernBERT's context extension is a new run with its own peak)
weight_decay_convention = 'torch'
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
peak_flops = None  # for MFU; None: 989e12 on CUDA (H100 dense bf16), 135e9 on CPU (2-core fp32)
seed = 1337
max_skipped_steps = 20  # consecutive non-finite steps before the run stops
inject_nonfinite_at = []  # iterations whose step loss is made inf (tests the guard)
# grow-as-you-go vocabulary
shrunken_vocab_size = None  # must match the remapping file when given
vocab_remapping_file = None  # data/<dataset>/vocab_K.pt from prepare.py
rare_token_id = None  # None: the file's rare_id
schedule = []  # operations; see docs/curriculum.md
# knowledge distillation (distill.py): a frozen teacher's soft targets on the predicted rows
teacher = None  # a .pt, a Hugging Face folder or 'hf:<id>' with the data's tokenizer; None: no teacher
distill_weight = 0.5  # w: the loss is (1 - w) * MLM cross-entropy + w * T^2 * KL(teacher || student)
distill_temperature = 1.0  # T
distill_hidden_weight = 0.0  # plus this times a loss between the final hidden states (GUIDE's PCA map; docs/guide.md)
distill_hidden_loss = 'cosine'  # 'cosine' (1 - cosine similarity) | 'mse'
# -----------------------------------------------------------------------------
config_keys = [k for k, v in globals().items() if not k.startswith('_') and k not in _not_a_knob
               and isinstance(v, (int, float, bool, str, list, dict, type(None)))]
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'configurator.py')).read())
config = {k: globals()[k] for k in config_keys}
# -----------------------------------------------------------------------------


# validate the configuration before touching any file -------------------------
check_choices(config, dict(lr_schedule=LR_SCHEDULES, decay_shape=('linear', 'sqrt'),
                           dtype=('float32', 'bfloat16', 'float16'), attn_implementation=ATTN_IMPLEMENTATIONS,
                           wandb_mode=('online', 'offline', 'disabled'), optimizer_name=('adamw', 'stable_adamw'),
                           weight_decay_convention=('torch', 'decoupled'), decoder_bias_init=('unigram', 'zeros'),
                           distill_hidden_loss=HIDDEN_LOSSES))
if not 0.0 < mask_rate < 1.0 or (eval_mask_rate is not None and not 0.0 < eval_mask_rate < 1.0):
    fail('mask_rate and eval_mask_rate must be in (0, 1)')
if mask_token_prob < 0 or random_token_prob < 0 or mask_token_prob + random_token_prob > 1:
    fail('mask_token_prob and random_token_prob must be >= 0 and sum to at most 1')
if learning_rate <= 0 or min_lr < 0:
    fail('learning_rate must be > 0 and min_lr >= 0')
check_at_least(config, dict(batch_size=1, block_size=1, gradient_accumulation_steps=1, max_iters=1, eval_interval=1,
                            log_interval=1, eval_iters=1, checkpoint_interval=0))  # 0: no checkpoints between evals
_problem = validate_schedule(schedule, remapping=vocab_remapping_file is not None)
if _problem:
    fail(f'schedule: {_problem}')
if teacher is not None and not (0.0 <= distill_weight <= 1.0 and distill_temperature > 0):
    fail('distill_weight must be in [0, 1] and distill_temperature > 0')
if distill_hidden_weight < 0 or (distill_hidden_weight and teacher is None):
    fail('distill_hidden_weight must be >= 0 and needs a --teacher')
if device == 'cuda' and not torch.cuda.is_available():
    fail("device='cuda' but CUDA is not available; pass --device=cpu")
auto_resume = init_from == 'auto' or init_from.startswith('auto:')
start_from = init_from  # where a new run starts: 'auto:<start>' starts from <start>, plain 'auto' from scratch
if auto_resume:
    start_from = init_from.removeprefix('auto').removeprefix(':') or 'scratch'
if not (start_from in ('scratch', 'resume') or start_from.startswith('hf:') or start_from.endswith('.pt')):
    fail(f"init_from='{init_from}' must be 'scratch', 'resume', a path to a .pt checkpoint, 'hf:<folder or hub id>', "
         f"'auto' or 'auto:<one of those>'")


# DDP: torchrun sets RANK; NCCL on CUDA, gloo on CPU (distributed.py) ---------------------
ddp, rank, world_size, device = setup(device)
master = rank == 0
log = RunLog(out_dir, master)  # metrics.jsonl, wandb and stdout, from rank 0
for _steps in [gradient_accumulation_steps, *scheduled_values(schedule, 'set_gradient_accumulation_steps')]:
    if _steps % world_size:
        fail(f'gradient_accumulation_steps={_steps} must be divisible by the {world_size} processes (it counts '
             f'micro-batches over all ranks)')
device_type = 'cuda' if device.startswith('cuda') else 'cpu'
compile = device_type == 'cuda' if compile is None else compile
if attn_implementation == 'flex' and device_type != 'cuda':
    fail("attn_implementation='flex' trains only on CUDA (FlexAttention has no backward on the CPU); "
         "use 'auto' or 'sdpa'")
peak_flops = peak_flops or (989e12 if device_type == 'cuda' else 135e9)
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
ptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}[dtype]
autocast = nullcontext() if dtype == 'float32' else torch.autocast(device_type, dtype=ptdtype)


# data ------------------------------------------------------------------------
data_dir = os.path.join(data_root, dataset)
prepare_hint = f'run: python prepare.py --dataset={dataset} --out_dir={data_dir}'
longest_block = max([block_size, *scheduled_values(schedule, 'set_block_size')])
meta = load_dataset(data_dir, longest_block, prepare_hint)  # stops with one line on a problem
shards = {split: shard_paths(data_dir, split, meta) for split in ('train', 'val')}  # each split's token files


# vocabulary: the active token space is the shrunken one while remapping is on ----
remap, rare_id = None, None
if vocab_remapping_file is not None:
    remap = load_run_remap(vocab_remapping_file, meta, shrunken_vocab_size, rare_token_id)
    rare_id = remap['rare_id']
elif shrunken_vocab_size is not None:
    fail('shrunken_vocab_size needs vocab_remapping_file (a vocab_K.pt from prepare.py)')
# the schedule, the token spaces and the training state that changes during the run (checkpointed)
curriculum = Curriculum(schedule, meta, remap, rare_id, learning_rate, mask_rate, device, seed,
                        shape=dict(batch_size=batch_size, block_size=block_size,
                                   gradient_accumulation_steps=gradient_accumulation_steps))
state = curriculum.state
# the run's counters (checkpointed): what it has trained on and skipped, and its last evaluation
progress = dict(tokens=0,  # trained on so far: the x axis for comparing runs whose steps differ in size
                skipped_steps=0, skipped_in_a_row=0,  # non-finite steps: in all, and since the last good one
                last_eval_iter=-1, last_val_loss=float('inf'))
eval_rate = mask_rate if eval_mask_rate is None else eval_mask_rate


def make_batch(split: str, rate: float, *key: int):
    """The micro-batch identified by key (mlm.masked_batch), in the step's shape and token space."""
    shape = state['batch_size'], state['block_size']  # phase operations change them
    mapping, space = curriculum.space()
    return masked_batch(shards[split], meta, shape, space, mapping, rate, (mask_token_prob, random_token_prob),
                        seed_for(seed, *key), device, pack_documents)


# model ---------------------------------------------------------------------------
if os.path.exists(out_dir) and not os.path.isdir(out_dir):
    fail(f"--out_dir={out_dir} is a file, not a folder; give a folder for the run's checkpoint and log")
check_shared_folder(out_dir, device)  # under torchrun: every rank must see the same out_dir
ckpt_path = os.path.join(out_dir, 'ckpt.pt')
checkpoint = None
iter_num, best_val_loss, wandb_run_id, keep_metrics_bytes = 0, 1e9, None, 0
if auto_resume:  # out_dir is this run's: its checkpoint, if any, is where a killed attempt left off
    init_from = 'resume' if os.path.exists(ckpt_path) else start_from
# everything but resume starts a new run in out_dir: it must not replace another run's checkpoint or log
if init_from != 'resume' and not overwrite and not eval_only and not auto_resume:
    for _name in ('ckpt.pt', 'metrics.jsonl'):
        if os.path.exists(os.path.join(out_dir, _name)):
            fail(f'{os.path.join(out_dir, _name)} exists; use --init_from=resume to continue that run, another '
                 f'--out_dir, or --overwrite=True to start over')
# auto with no checkpoint starts over a log only when it is this run's (an attempt killed before its first save)
if auto_resume and init_from != 'resume' and not overwrite and not eval_only and log.size():
    _saved = log.run_settings()
    _changed = other_run_settings(_saved, config) if _saved is not None else ''
    if _saved is None or _changed:
        fail(f"{log.path} is another run's log (it {'has ' + _changed if _changed else 'records no settings'}); "
             f'use another --out_dir, or --overwrite=True to start over')
torch.manual_seed(seed)  # the same initial weights on every rank and in every run
if init_from == 'scratch':
    _mapping, _space = curriculum.space()
    model = Encoder(scratch_config(config, remap if remap is not None else meta, _space.size))
    if decoder_bias_init == 'unigram' and model.decoder.bias is not None:
        with torch.no_grad():
            model.decoder.bias.copy_(unigram_logits(load_counts(data_dir, meta, prepare_hint), _space, _mapping))
elif init_from.startswith('hf:'):
    _loaded = load_model(init_from)
    require_same_tokenizer(_loaded.tokenizer, data_tokenizer(meta), f'the model {init_from[3:]}',
                           f'the data in {data_dir}')
    model = _loaded.model
else:
    path = ckpt_path if init_from == 'resume' else init_from
    checkpoint = load_start_checkpoint(path, init_from == 'resume', meta, arch, config if auto_resume else None)
    model = checkpoint_encoder(checkpoint)
    if init_from == 'resume':
        saved = checkpoint['state']
        # checkpoints written before the counters had an entry of their own keep them in 'state'
        progress.update(checkpoint.get('progress') or {k: saved.pop(k) for k in list(saved) if k in progress})
        state.update(saved)
        iter_num, best_val_loss = checkpoint['iter_num'], checkpoint['best_val_loss']
        wandb_run_id, keep_metrics_bytes = checkpoint.get('wandb_run_id'), checkpoint.get('metrics_bytes')
        log(line=f'resuming {path} at iter {iter_num}')
if state['remapping'] and remap is None:
    fail(f'{path} is in the shrunken-vocabulary phase; pass the vocab_remapping_file it was trained with')
fit_model_to_data(model, remap if state['remapping'] else meta, curriculum.space()[1].size, longest_block,
                  attn_implementation)
if state['finetune_mode']:
    model.set_embedding_finetune_mode(True)
model.to(device)
raw_model = model
scaler = torch.amp.GradScaler(device_type, enabled=(dtype == 'float16'))


# the teacher: frozen, one copy on every rank; a run resumes only with the teacher it was trained with ------------
teacher_model, teacher_record = load_teacher(teacher, meta, longest_block, device) if teacher else (None, None)
if init_from == 'resume':
    check_same_teacher(checkpoint.get('teacher'), teacher_record, path)
# GUIDE's record (its PCA map) goes on with the student from checkpoint to checkpoint
guide_record = checkpoint.get('guide') if checkpoint else None
projection = None  # the teacher's hidden space -> the student's, with distill_hidden_weight
if teacher_model is not None:
    if teacher_model.get_num_params() < raw_model.get_num_params():
        log(line=f'the teacher ({teacher_model.get_num_params() / 1e6:.2f}M parameters) is smaller than the student')
    if distill_hidden_weight:
        projection = hidden_projection((guide_record or {}).get('projection'), teacher_model.config.hidden_size,
                                       raw_model.config.hidden_size, path if checkpoint else init_from).to(device)
    if compile:
        teacher_model = torch.compile(teacher_model)
shrunk_to_full = remap['shrunk_to_full'].to(device) if remap is not None else None


def with_teacher(mlm_loss: torch.Tensor, logits: torch.Tensor, hidden: list[torch.Tensor], x: torch.Tensor,
                 y: torch.Tensor, documents: torch.Tensor | None, capacity: int | None) -> tuple[torch.Tensor, tuple]:
    """A micro-batch's loss with the teacher, from the student's MLM loss, logits at the predicted rows and (with a
    hidden-state target) final hidden states; and its parts: MLM, soft targets, hidden states (0 when unused)."""
    if state['remapping']:  # the teacher reads full ids: RARE becomes [UNK]
        x = shrunk_to_full[x]
    with torch.no_grad():  # the labels only choose the rows; the teacher's own loss is not used
        t_logits, _, t_hidden = teacher_model(x, labels=y, document_ids=documents, max_predictions=capacity,
                                              return_hidden=True)
    loss, kl = mixed_loss(mlm_loss, logits, t_logits, y, distill_weight, distill_temperature, curriculum.space()[0])
    h_loss = torch.zeros_like(kl)
    if hidden:
        h_loss = hidden_loss(hidden[0], t_hidden, projection, y, distill_hidden_loss)
    return loss + distill_hidden_weight * h_loss, (mlm_loss, kl, h_loss)


# optimizer: rebuilt by parameter name after operations, its state carried over -------------
def decay_rate() -> float:
    """The optimizer's weight_decay: torch's AdamW decays by lr * wd, so the decoupled lr / peak * weight_decay
    needs weight_decay / peak, with the peak in force now."""
    return weight_decay / state['lr_base'] if weight_decay_convention == 'decoupled' else weight_decay


def make_optimizer() -> torch.optim.Optimizer:
    return configure_optimizers(raw_model, decay_rate(), state['lr_base'], (beta1, beta2), device_type,
                                eps=adam_eps, optimizer=optimizer_name, decay_1d=decay_1d_params, compiled=compile)


def wrap(m: torch.nn.Module) -> torch.nn.Module:
    """torch.compile, then DDP; redone when an operation changes the parameters."""
    if compile:
        log(line='compiling the model: the first steps take longer')
        # forget the graphs of the model as it was: each rebuild would otherwise count towards dynamo's
        # recompile limit, past which it silently falls back to eager
        torch._dynamo.reset()
        m = torch.compile(m)
    if ddp:
        m = DDP(m, device_ids=[torch.device(device).index] if device_type == 'cuda' else None)
    return m


optimizer = make_optimizer()
if init_from == 'resume':
    optimizer.load_state_dict(checkpoint['optimizer'])
    curriculum.parked = checkpoint['parked_optimizer_state']
    scaler.load_state_dict(checkpoint['scaler'])
checkpoint = None  # free memory
model = wrap(raw_model)


def get_lr(it: int) -> float:
    """Learning rate at iteration it; reset_lr_schedule restarts the schedule from lr_schedule_start."""
    base, start = state['lr_base'], state['lr_schedule_start']
    return scheduled_lr(it - start, (lr_decay_iters or max_iters) - start, base, base * min_lr / learning_rate,
                        warmup_iters, lr_schedule, decay_fraction, decay_shape)


# evaluation on a fixed sample with fixed masks, every rank agreeing -------------------------
@torch.no_grad()
def evaluate() -> dict:
    net = model.module if ddp else model
    net.eval()
    out = {}
    for split_id, split in enumerate(('train', 'val')):
        sums = torch.zeros(5, dtype=torch.float64, device=device)
        for k in range(rank, eval_iters, world_size):  # the ranks share the fixed batches
            x, y, documents = make_batch(split, eval_rate, EVAL_BATCHES, split_id, k)
            with autocast:
                logits, loss = net(x, labels=y, document_ids=documents)
            sums += prediction_counts(logits, loss, y, rare_id if state['remapping'] else None)
        loss_sum, correct, n, core_correct, core_n = all_reduce(sums).tolist()
        out[f'{split}_loss'], out[f'{split}_acc'] = loss_sum / n, correct / n
        if state['remapping']:
            out[f'{split}_core_acc'], out[f'{split}_rare_frac'] = core_correct / core_n, 1 - core_n / n
    net.train()
    return out


# the non-finite guard: a step whose loss or gradient norm is NaN or inf is skipped on the device (step_unless); the
# host learns of it at the next log point or save, so that it never waits for the GPU within a step
pending_skips = []  # (iteration, skipped, step loss) of the steps since the flags were last read


def read_skips() -> None:
    """Count and log the steps skipped since the last call; stop after max_skipped_steps in a row."""
    flags = torch.stack([skipped for _, skipped, _ in pending_skips]).tolist() if pending_skips else []
    for (it, _, loss), skipped in zip(pending_skips, flags):
        progress['skipped_in_a_row'] = progress['skipped_in_a_row'] + 1 if skipped else 0
        if not skipped:
            continue
        progress['skipped_steps'] += 1
        log(dict(iter=it, skipped_nonfinite=True, loss=loss.item(), skipped_steps=progress['skipped_steps']),
            f"iter {it}: non-finite loss or gradient, step skipped ({progress['skipped_in_a_row']} in a row)")
        if progress['skipped_in_a_row'] >= max_skipped_steps:
            fail(f"{progress['skipped_in_a_row']} consecutive non-finite steps at iter {it}; lower learning_rate or "
                 f'use bf16; the last good checkpoint is {ckpt_path}')
    pending_skips.clear()


# checkpoints (rank 0), and stopping cleanly on SIGTERM / SIGINT: finish the step, save, exit -------------
def checkpoint_state(it: int) -> dict:
    return dict(model=raw_model.state_dict(), model_args=dataclasses.asdict(raw_model.config),
                optimizer=optimizer.state_dict(), parked_optimizer_state=curriculum.parked, scaler=scaler.state_dict(),
                iter_num=it, best_val_loss=best_val_loss, config=config, state=state, progress=progress,
                dataset_meta=meta, tokenizer=data_tokenizer(meta), teacher=teacher_record, guide=guide_record,
                wandb_run_id=wandb_run_id, metrics_bytes=log.size())


def save(it: int) -> None:
    read_skips()  # the checkpoint counts every skipped step, and none is saved past max_skipped_steps of them
    problem = ''
    if master:
        try:
            save_checkpoint(checkpoint_state(it), ckpt_path)
        except OSError as e:  # a full disk, a folder gone read-only: the previous checkpoint is still whole
            problem = (f'cannot save {ckpt_path} at iter {it} ({first_line(e)}); free space or fix {out_dir}, then '
                       f'resume: the last checkpoint saved is intact')
        else:
            log(line=f'iter {it}: saved {ckpt_path}')
            if keep_last_checkpoints > 0:
                keep_last(ckpt_path, it, keep_last_checkpoints)
    fail_together(problem, f'rank 0 could not save {ckpt_path} at iter {it} (its error says why)', device)


stop_requested = threading.Event()
signal.signal(signal.SIGTERM, lambda signum, frame: stop_requested.set())
signal.signal(signal.SIGINT, lambda signum, frame: stop_requested.set())


# the micro-batches of a training step ---------------------------------------------------------
def step_key(it: int) -> tuple:
    """What the micro-batches of iteration it depend on: it, and the step's shape and token space (operations
    change them)."""
    return (it, state['batch_size'], state['block_size'], state['mask_rate'], state['gradient_accumulation_steps'],
            state['remapping'])


def step_batches(it: int) -> list:
    """This rank's micro-batches of iteration it; global micro-batch g is the same whatever the number of ranks."""
    micro_steps = state['gradient_accumulation_steps'] // world_size
    return [make_batch('train', state['mask_rate'], TRAIN_BATCHES, it, rank * micro_steps + m)
            for m in range(micro_steps)]


# training loop -------------------------------------------------------------------------------
wandb_settings = (dict(project=wandb_project, name=wandb_run_name, config=config, mode=wandb_mode, id=wandb_run_id)
                  if wandb_log else None)
wandb_run_id = log.open(None if eval_only else keep_metrics_bytes, wandb_settings, config) or wandb_run_id
log(line=f'{raw_model.get_num_params() / 1e6:.2f}M parameters, vocabulary {raw_model.config.vocab_size}, '
    f'{gradient_accumulation_steps * batch_size * block_size:,} tokens per iteration, {world_size} process(es), '
    f'device {device}, {dtype}')
log(line=f'attention: {raw_model.attention_summary(torch.device(device))}')
trainable = [p for p in raw_model.parameters() if p.requires_grad]
local_iter, clock, ahead = 0, StepClock(), {}
overflow = torch.zeros((), dtype=torch.bool, device=device)  # a micro-batch had more labels than the head's capacity
while True:
    save_now = checkpoint_interval > 0 and iter_num % checkpoint_interval == 0
    if (iter_num % eval_interval == 0 or iter_num == max_iters) and progress['last_eval_iter'] != iter_num:
        metrics = evaluate()
        progress['last_eval_iter'], progress['last_val_loss'] = iter_num, metrics['val_loss']
        log(dict(iter=iter_num, **metrics), f"iter {iter_num}: train loss {metrics['train_loss']:.4f}, "
            f"val loss {metrics['val_loss']:.4f}, val acc {metrics['val_acc']:.4f}")
        save_now |= metrics['val_loss'] < best_val_loss or always_save_checkpoint
        best_val_loss = min(best_val_loss, metrics['val_loss'])
    if save_now and local_iter > 0 and not eval_only:  # at local_iter 0 the checkpoint is where this process began
        save(iter_num)
    if iter_num >= max_iters or eval_only:
        break
    step_shape = state['batch_size'], state['block_size'], state['mask_rate']
    try:
        fired = curriculum.run(iter_num, raw_model, optimizer, make_optimizer,
                               progress['last_val_loss'] if progress['last_eval_iter'] == iter_num else None)
    except ScheduleError as e:
        fail(f'{e}; {ckpt_path} holds the state from before it')
    if fired:
        for record in fired.records:
            log(record, f"iter {iter_num}: operation {record['op']}({record['value']!r}) fired by {record['trigger']}")
        if fired.optimizer is not None:  # the trainable parameters changed: a new optimizer and a new graph
            optimizer, model = fired.optimizer, wrap(raw_model)
            trainable = [p for p in raw_model.parameters() if p.requires_grad]
        elif compile and step_shape != (state['batch_size'], state['block_size'], state['mask_rate']):
            # a new phase's shape gets a fresh static graph, like the first one; left alone, dynamo would recompile
            # the old graph with symbolic batch and sequence sizes
            model = wrap(raw_model)
        if fired.space_changed:
            # evaluate in the new token space at once, so the curve shows the jump the resize causes; losses of
            # another token space do not compare (a shrunken one's are lower by construction)
            metrics = evaluate()
            log(dict(iter=iter_num, after_op=True, **metrics),
                f"iter {iter_num}: after the operations, val loss {metrics['val_loss']:.4f}")
            best_val_loss = metrics['val_loss']
        if not eval_only:
            save(iter_num)
    # dropout is seeded from (seed, iteration, rank), after the operations: a resumed run draws the same numbers
    torch.manual_seed(seed_for(seed, DROPOUT, iter_num, rank))
    lr = get_lr(iter_num)
    for group in optimizer.param_groups:
        group['lr'] = lr
        if group['weight_decay']:  # the decayed group: its rate follows set_lr under the decoupled convention
            group['weight_decay'] = decay_rate()
    window_tokens = state['batch_size'] * state['block_size']
    tokens_per_iter = state['gradient_accumulation_steps'] * window_tokens
    # made during the last step, unless an operation has changed what they depend on since
    batches = ahead.pop(step_key(iter_num), None) or step_batches(iter_num)
    counts = torch.stack([(y != IGNORE_INDEX).sum() for _, y, _ in batches])
    n_pred = all_reduce(counts.sum().float())
    # compiled, the head takes a fixed number of rows so the graph has static shapes (mlm.prediction_capacity)
    capacity = prediction_capacity(window_tokens, state['mask_rate']) if compile else None
    if capacity is not None:
        overflow |= counts.max() > capacity
    # each micro-batch contributes (its mean loss) * (its share of the predicted tokens of the whole step)
    loss_sum = torch.zeros((), device=device)
    loss_parts = torch.zeros(3, device=device)  # with a teacher: the step loss's MLM, soft-target, hidden parts
    for m, ((x, y, documents), n) in enumerate(zip(batches, counts)):
        if ddp:  # all-reduce the gradients once, after the last micro-batch, not after each
            model.require_backward_grad_sync = m == len(batches) - 1
        with autocast:
            logits, loss, *hidden = model(x, labels=y, document_ids=documents, max_predictions=capacity,
                                          return_hidden=projection is not None)
            if teacher_model is not None:
                loss, parts = with_teacher(loss, logits, hidden, x, y, documents, capacity)
                loss_parts += torch.stack([micro_batch_loss(p, n, n_pred) for p in parts]).detach()
        contribution = micro_batch_loss(loss, n, n_pred)
        # DDP averages gradients over the ranks; each contribution is already a share of the global step's loss,
        # so scale it back up to get their sum
        scaler.scale(contribution * world_size).backward()
        loss_sum += contribution.detach()
    scaler.unscale_(optimizer)
    # an infinite max_norm clips nothing: the call then only measures the norm, which the guard below needs
    grad_norm = torch.nn.utils.clip_grad_norm_(trainable, grad_clip if grad_clip > 0 else float('inf'))
    step_loss = all_reduce(loss_sum)  # the mean over every predicted token of the step, on all ranks
    if iter_num in inject_nonfinite_at:  # the guard's test: a step whose loss is inf, as if it had overflowed
        step_loss = step_loss * float('inf')
    skip = ~(torch.isfinite(step_loss) & torch.isfinite(grad_norm))  # both identical on every rank
    # in place of scaler.step, whose check waits for the GPU: unscale_ has run, and skip covers the infs it finds
    step_unless(optimizer, skip)
    pending_skips.append((iter_num, skip, step_loss))
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    progress['tokens'] += tokens_per_iter
    # nothing above waits for the GPU: make the next step's batches while it works through this one
    if iter_num + 1 < max_iters:
        ahead = {step_key(iter_num + 1): step_batches(iter_num + 1)}

    clock.tick()
    # the flags are read at log points only (reading waits for the GPU), agreed by every rank so that all stop
    if iter_num % log_interval == 0:
        if all_reduce(overflow.float(), dist.ReduceOp.MAX).item():
            fail(f'a micro-batch had more masked tokens than prediction_capacity({window_tokens}, '
                 f"{state['mask_rate']}) = {capacity}; this should never happen: report it, and use --compile=False")
        read_skips()
        if teacher_model is not None:  # read, like the loss, at log points only
            loss_parts = all_reduce(loss_parts)
        dt = clock.lap()  # after the waits above: the time the GPU took, per iteration since the last log point
    if iter_num % log_interval == 0 and master:
        loss_value, mfu_text = step_loss.item(), '-'
        if clock.warm:
            mfu_text = clock.add_mfu(raw_model.estimate_mfu(tokens_per_iter / world_size, n_pred.item() / world_size,
                                                            dt, peak_flops, seq_len=state['block_size']))
        parts = {}
        if teacher_model is not None:
            names = ('mlm_loss', 'distill_loss') + (('hidden_loss',) if projection is not None else ())
            parts = dict(zip(names, loss_parts.tolist()))
        log(dict(iter=iter_num, loss=loss_value, **parts, lr=lr, tokens=progress['tokens'],
                 tokens_per_s=tokens_per_iter / dt, mfu=clock.mfu, grad_norm=grad_norm.item()),
            f'iter {iter_num}: loss {loss_value:.4f}, lr {lr:.2e}, {tokens_per_iter / dt:,.0f} tok/s, mfu {mfu_text}, '
            f'{100 * (iter_num + 1) / max_iters:.1f}% done, eta {clock.eta(max_iters - iter_num - 1)}')
    iter_num += 1
    local_iter += 1
    # every rank must stop at the same iteration: under DDP they agree at log points, where the host waits anyway
    stop = stop_requested.is_set()
    if ddp:
        stop = iter_num % log_interval == 0 and all_reduce(
            torch.tensor(float(stop), device=device), dist.ReduceOp.MAX).item() > 0
    if stop:
        save(iter_num)
        log(line=f'stopped by signal at iter {iter_num}; checkpoint saved to {ckpt_path}; resume with '
                 f'--init_from=resume')
        break

read_skips()
log.finish()
shutdown()
