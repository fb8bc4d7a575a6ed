"""
Models on disk: atomic checkpoint files; load_model, the one way every script loads a model (a
checkpoint, a Hugging Face folder or a hub id); and the start of a train.py run: what it starts from
(scratch, a checkpoint, a Hugging Face model, or its own checkpoint to resume), the checks of that
start, its model, and saving the run.

A checkpoint is written to a temporary file in the same folder, flushed, fsynced and then renamed
over the target, so a crash at any point leaves the old file or the new one, never a partial one.
"""
import dataclasses
import glob
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from typing import Callable

import torch

from curriculum import remapping_files
from data import load_remap
from distributed import fail_together
from errors import fail, first_line
from hf import hf_folder, load_pretrained
from model import SPECIAL_IDS, Encoder, EncoderConfig
from tokenizer import data_tokenizer, folder_tokenizer, grows_into, require_same_tokenizer

TMP_SUFFIX = '.tmp'


def save_checkpoint(obj: dict, path: str) -> None:
    """torch.save(obj, path) atomically."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    prefix = f'.{os.path.basename(path)}.'
    # a process killed mid-write cannot clean up after itself: remove its leftovers now
    for stale in glob.glob(os.path.join(folder, glob.escape(prefix) + '*' + TMP_SUFFIX)):
        os.remove(stale)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=TMP_SUFFIX)
    # mkstemp makes the file 0600 whatever the umask; give it the mode open() would, so teammates on
    # a shared cluster can read the checkpoint when the umask lets them
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)
    try:
        with os.fdopen(fd, 'wb') as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.remove(tmp)
        raise
    # make the rename itself durable
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def keep_last(path: str, it: int, keep: int) -> None:
    """Hard-link the checkpoint at path as ckpt_<it>.pt beside it and delete all but the last `keep`
    such links."""
    folder = os.path.dirname(os.path.abspath(path))
    kept = os.path.join(folder, f'ckpt_{it:07d}.pt')
    if os.path.exists(kept + '.new'):  # left by a crash between the link and the rename
        os.remove(kept + '.new')
    os.link(path, kept + '.new')
    os.replace(kept + '.new', kept)
    for old in sorted(f for f in os.listdir(folder) if f.startswith('ckpt_'))[:-keep]:
        os.remove(os.path.join(folder, old))


def load_checkpoint(path: str) -> dict:
    """Load a checkpoint written by save_checkpoint onto the CPU (weights_only: no code runs);
    SystemExit with one line when the file is not one (half-written, truncated, a bare tensor,
    another program's file)."""
    try:
        ckpt = torch.load(path, map_location='cpu', weights_only=True)
    except Exception as e:
        # torch raises RuntimeError, UnpicklingError, EOFError, ... depending on the damage
        fail(f'cannot read {path} ({first_line(e)}): it is not a complete checkpoint '
             f'(half-written, truncated or another kind of file); use a ckpt.pt written by '
             f'train.py or init_guide.py')
    if not isinstance(ckpt, dict) or 'model' not in ckpt or 'model_args' not in ckpt:
        fail(f"{path} is a torch file but not a nanoBERT checkpoint (no 'model' and 'model_args'); "
             f'use a ckpt.pt written by train.py or init_guide.py')
    return ckpt


def checkpoint_encoder(ckpt: dict) -> Encoder:
    """The Encoder a checkpoint holds: its config from model_args, its weights from model."""
    try:
        model = Encoder(EncoderConfig(**ckpt['model_args']))
        model.load_state_dict(ckpt['model'])
    except (TypeError, ValueError, RuntimeError) as e:
        # unknown config keys, bad values, weights of another shape
        fail(f"the checkpoint's model_args and weights do not make a model ({first_line(e)}); it "
             f'was written by another version of nanoBERT or edited')
    return model


def checkpoint_remap(ckpt: dict) -> dict | None:
    """The remapping (vocab_K.pt) of a train.py checkpoint still in its shrunken vocabulary, from
    the path its run recorded; None for any other checkpoint (GUIDE students have no training
    state)."""
    state = ckpt.get('state', {})
    if not state.get('remapping'):
        return None
    # the file of the stage it is in: vocab_remapping_file's, or a set_vocab_remapping's
    path = remapping_files(ckpt['config']['vocab_remapping_file'],
                           ckpt['config'].get('schedule', []))[state.get('stage', 0)]
    hint = 'run from the folder train.py ran in, or recreate it with prepare.py --shrink_vocab'
    if not os.path.isfile(path):
        fail(f'the checkpoint is in a shrunken vocabulary and its remapping file {path} is '
             f'missing; {hint}')
    remap = load_remap(path, hint)
    same_data = remap['fingerprint'] == ckpt['dataset_meta']['fingerprint']
    if not same_data or remap['shrunk_vocab_size'] != ckpt['model_args']['vocab_size']:
        fail(f'{path} was made from other data than the checkpoint was trained on (fingerprint or '
             f'size differ); use the vocab_K.pt of the dataset preparation it was trained with')
    return remap


@dataclass
class LoadedModel:
    """What load_model finds at a source."""
    model: Encoder
    tokenizer: dict | None  # its tokenizer record (tokenizer.py); None when nothing records one
    # the remapping of a checkpoint kept in its shrunken vocabulary (full_vocabulary=False)
    remap: dict | None
    checkpoint: dict | None  # a .pt's contents (training state, dataset meta); None for a folder
    # every corpus its weights were trained on, oldest first (data_record each); [] when unknown
    history: list = dataclasses.field(default_factory=list)


DATA_RECORD_KEYS = ('dataset', 'split', 'fingerprint')


def data_record(meta: dict | None) -> dict | None:
    """What a model keeps of a corpus it was trained on (meta.json's dataset, split rule and
    fingerprint): enough for finetune.py to tell whether a task's dev and test text was held out of
    it. A checkpoint keeps the list of them as 'data_history'; export_hf.py writes it into
    config.json as 'pretraining_data'."""
    return {k: meta.get(k) for k in DATA_RECORD_KEYS} if meta else None


def unknown_data(source: str) -> dict:
    """The record of a model that keeps none (a Hugging Face model from elsewhere)."""
    return dict(dataset=f'unknown ({source})', split=None, fingerprint=None)


def extended_history(history: list, *records: dict) -> list:
    """history with the records it does not hold yet appended, in order."""
    out = list(history)
    out += [r for i, r in enumerate(records) if r not in out and r not in records[:i]]
    return out


def checkpoint_history(ckpt: dict) -> list:
    """A checkpoint's data history; one written before checkpoints kept it has its dataset's."""
    meta = ckpt.get('dataset_meta')
    return ckpt.get('data_history') or ([data_record(meta)] if meta else [])


def load_model(source: str, full_vocabulary: bool = True, role: str = '') -> LoadedModel:
    """The model at source: a .pt written by train.py or init_guide.py, a Hugging Face folder
    (export_hf.py's, or a ModernBERT or NeoBERT one) or a hub id, either optionally written
    'hf:<folder or hub id>'. A checkpoint still in its shrunken vocabulary comes grown to the full
    one without noise (full_vocabulary, what an export computes) or as it trains, with its
    remapping. role names the model in the one-line errors ('teacher')."""
    if source.endswith('.pt'):
        if not os.path.isfile(source):
            fail(f"no {role + ' ' if role else ''}checkpoint at {source}; train one first "
                 f'(python train.py config/demo_cpu.py)')
        ckpt = load_checkpoint(source)
        model, remap = checkpoint_encoder(ckpt), checkpoint_remap(ckpt)
        if remap is not None and full_vocabulary:
            model.resize_vocabulary(remap['vocab_size'], remap['rare_id'], noise_std=0.0,
                                    full_to_shrunk=remap['full_to_shrunk'])
            remap = None
        meta = ckpt.get('dataset_meta')  # a GUIDE student made without --dataset has none
        if full_vocabulary and meta is not None and model.config.vocab_size != meta['vocab_size']:
            fail(f"the model's vocabulary ({model.config.vocab_size}) is not its tokenizer's "
                 f"({meta['vocab_size']}); the checkpoint is inconsistent, export another one")
        return LoadedModel(model, ckpt.get('tokenizer'), remap, ckpt, checkpoint_history(ckpt))
    name = source.removeprefix('hf:')
    from huggingface_hub.errors import LocalEntryNotFoundError
    try:
        folder = hf_folder(name)
        model = load_pretrained(folder)
    except LocalEntryNotFoundError:
        fail(f"{role or 'model'} '{name}' is not a local folder and the Hugging Face hub cannot be "
             'reached (offline, or HF_HUB_OFFLINE=1): pass a local ModernBertForMaskedLM folder, a '
             'NeoBERT folder or a train.py ckpt.pt')
    except Exception as e:  # a folder or hub entry that is not a ModernBERT or NeoBERT model
        fail(f"cannot load {role or 'the model'} '{name}' ({first_line(e)}); give a train.py "
             f'ckpt.pt or a Hugging Face ModernBERT or NeoBERT folder (export_hf.py writes one)')
    with open(os.path.join(folder, 'config.json')) as f:
        history = json.load(f).get('pretraining_data') or []
    return LoadedModel(model, folder_tokenizer(folder), None, None, history)


# what may change when a run is restarted: its length, evaluation and logging, checkpointing,
# the machine
RESTART_SETTINGS = {'max_iters', 'time_budget', 'lr_decay_iters', 'eval_interval', 'log_interval',
                    'eval_iters', 'eval_only', 'always_save_checkpoint', 'keep_last_checkpoints',
                    'checkpoint_interval', 'init_from', 'overwrite', 'out_dir', 'data_root',
                    'wandb_log', 'wandb_project', 'wandb_run_name', 'wandb_mode', 'device',
                    'compile', 'peak_flops', 'max_skipped_steps'}


def other_run_settings(saved: dict, config: dict) -> str:
    """The settings in which the run that saved a checkpoint or started a log (its config) differs
    from this one, beyond those a restart may change, as 'key=saved (not this)'; '' when none.
    Settings the saved config does not know count as the same."""
    return ', '.join(f'{k}={saved[k]!r} (not {v!r})' for k, v in config.items()
                     if k not in RESTART_SETTINGS and saved.get(k, v) != v)


def load_start_checkpoint(path: str, resume: bool, meta: dict, arch: str,
                          same_run: dict | None = None) -> dict:
    """The checkpoint a train.py run starts from (init_from=<path>) or resumes, checked against the
    run: the tokenizer of its data, its architecture and, on resume or in the shrunken vocabulary
    (whose ids only mean something in the preparation they were remapped from), the same preparation
    of the data; and with same_run (a run's config), that it is that run's checkpoint
    (init_from='auto'). SystemExit with one line otherwise."""
    if not os.path.isfile(path):
        fail(f'no checkpoint at {path}'
             + ('; train with --init_from=scratch first' if resume else ''))
    ckpt = load_checkpoint(path)
    if resume and 'state' not in ckpt:
        fail(f'{path} is not a train.py checkpoint (a GUIDE student?); start from it with '
             f'--init_from={path} and another out_dir')
    if resume or not grows_into(ckpt.get('tokenizer'), meta):
        require_same_tokenizer(ckpt.get('tokenizer'), data_tokenizer(meta), path,
                               f"the data ({meta['dataset']})")
    if ckpt['model_args']['arch'] != arch:
        fail(f"{path} holds a {ckpt['model_args']['arch']} model but arch='{arch}'; pass --arch="
             f"{ckpt['model_args']['arch']}")
    same_data = ckpt.get('dataset_meta', {}).get('fingerprint') == meta['fingerprint']
    if (resume or ckpt.get('state', {}).get('remapping')) and not same_data:
        fail(f"{path} was trained on a different preparation of {meta['dataset']}; use the same "
             f'data or a new out_dir')
    changed = other_run_settings(ckpt.get('config', {}), same_run or {})
    if changed:
        fail(f"{path} is another run's: it has {changed}; use another out_dir, or "
             f"--init_from=resume to continue it with this run's settings")
    return ckpt


def scratch_config(config: dict, space: dict, vocab_size: int) -> EncoderConfig:
    """The model of a train.py run that starts from scratch: the run's settings named like
    EncoderConfig fields (None: the architecture's default), its `dropout` for every dropout, the
    special ids of its data (space: meta.json or the remapping file), then its model_overrides.
    SystemExit with one line when they do not make a model."""
    dropouts = {f'{part}_dropout': config['dropout'] for part in ('embedding', 'attention', 'mlp')}
    fields = {f.name: config[f.name] for f in dataclasses.fields(EncoderConfig)
              if f.name in config} | dropouts
    fields |= {k: space[k] for k in SPECIAL_IDS} | config['model_overrides']
    try:
        return EncoderConfig(vocab_size=vocab_size,
                             **{k: v for k, v in fields.items() if v is not None})
    except (TypeError, ValueError) as e:
        fail(f'invalid model config: {e}')


def fit_model_to_data(model: Encoder, space: dict, vocab_size: int, block_size: int,
                      attn_implementation: str, role: str = 'model') -> None:
    """Check that a run's start model (or teacher: role) reads the data (its vocabulary, special ids
    and length) and set it to attend the way the run asks; special ids the model left unset take the
    data's. SystemExit with one line otherwise."""
    if model.config.vocab_size != vocab_size:
        fail(f"the {role}'s vocabulary ({model.config.vocab_size}) does not match the dataset's "
             f"({vocab_size}); prepare the data with the model's tokenizer")
    for name in SPECIAL_IDS:
        if getattr(model.config, name) not in (None, space[name]):
            fail(f"the {role}'s {name} is {getattr(model.config, name)} but the data's is "
                 f"{space[name]}; its config.json disagrees with its tokenizer: fix {name} in the "
                 f"model's config")
    if block_size > model.config.max_position_embeddings:
        fail(f'block_size={block_size} exceeds max_position_embeddings='
             f'{model.config.max_position_embeddings} of the {role}; lower block_size or raise '
             f'max_position_embeddings')
    try:
        # a checkpoint or a Hugging Face folder attends the way this run asks; replace validates
        # the new config
        model.config = dataclasses.replace(model.config, attn_implementation=attn_implementation,
                                           **{name: space[name] for name in SPECIAL_IDS})
    except ValueError as e:
        fail(f'invalid model config: {e}')


def parse_init_from(init_from: str) -> tuple[str, bool]:
    """init_from as what a new run starts from ('scratch', 'resume', a .pt path or 'hf:<...>'), and
    whether it is 'auto' ('auto' resumes out_dir's checkpoint when this run saved one, else starts
    from scratch, or from <start> with 'auto:<start>': what torchrun restarts and requeued jobs
    need). SystemExit with one line when it is none of these."""
    auto = init_from == 'auto' or init_from.startswith('auto:')
    start = (init_from.removeprefix('auto').removeprefix(':') or 'scratch') if auto else init_from
    if not (start in ('scratch', 'resume') or start.startswith('hf:') or start.endswith('.pt')):
        fail(f"init_from='{init_from}' must be 'scratch', 'resume', a path to a .pt checkpoint, "
             f"'hf:<folder or hub id>', 'auto' or 'auto:<one of those>'")
    return start, auto


def run_start(start: str, auto: bool, out_dir: str, overwrite: bool, eval_only: bool, log,
              config: dict) -> str:
    """What a train.py run starts from (parse_init_from's start and auto), looking at out_dir: an
    'auto' run resumes its checkpoint there. A new run must not replace another run's checkpoint or
    log (log: the run's RunLog). SystemExit with one line otherwise."""
    ckpt_path = os.path.join(out_dir, 'ckpt.pt')
    # out_dir is this run's: its checkpoint is where a killed attempt stopped
    if auto and os.path.exists(ckpt_path):
        return 'resume'
    if start == 'resume' or overwrite or eval_only:
        return start
    if not auto:
        for name in ('ckpt.pt', 'metrics.jsonl'):
            if os.path.exists(os.path.join(out_dir, name)):
                fail(f'{os.path.join(out_dir, name)} exists; use --init_from=resume to continue '
                     f'that run, another --out_dir, or --overwrite=True to start over')
    elif log.size():
        # auto with no checkpoint starts over a log only when it is this run's
        # (killed before a save)
        saved = log.run_settings()
        changed = other_run_settings(saved, config) if saved is not None else ''
        if saved is None or changed:
            fail(f"{log.path} is another run's log (it "
                 f"{'has ' + changed if changed else 'records no settings'}); use another "
                 f'--out_dir, or --overwrite=True to start over')
    return start


# the run's counters: what it has trained on and skipped, and its last evaluation (checkpointed)
NEW_PROGRESS = dict(
    tokens=0,  # trained on so far: the x axis for comparing runs whose steps differ in size
    train_seconds=0.0,  # spent training, the steps and operations (curriculum.TimeBudget)
    skipped_steps=0, skipped_in_a_row=0,  # non-finite steps: in all, and since the last good one
    last_eval_iter=-1, last_val_loss=float('inf'))


def start_model(start: str, ckpt_path: str, meta: dict, config: dict,
                scratch_vocab: tuple[dict, int], decoder_bias: Callable[[], torch.Tensor] | None,
                same_run: bool, grow: Callable[[Encoder], None]
                ) -> tuple[Encoder, dict | None, list]:
    """The model a train.py run starts from (run_start's start), the checkpoint it comes from (None
    from scratch or a Hugging Face model) and its data history with this run's data last.
    scratch_vocab: the special ids and size of the token space a new model starts in;
    decoder_bias: makes its initial decoder bias (None: zeros); same_run: the checkpoint must be
    this run's ('auto'); grow: grows a model of the tokenizer the data's extends into the data's
    (prepare.py --extend_tokenizer), when a new run starts from one."""
    this_data = data_record(meta)
    if start == 'scratch':
        model = Encoder(scratch_config(config, *scratch_vocab))
        if decoder_bias is not None and model.decoder.bias is not None:
            with torch.no_grad():
                model.decoder.bias.copy_(decoder_bias())
        return model, None, [this_data]
    if start.startswith('hf:'):
        loaded = load_model(start)
        model, tokenizer, earlier = loaded.model, loaded.tokenizer, loaded.history
        data_dir = os.path.join(config['data_root'], config['dataset'])
        if not grows_into(tokenizer, meta):
            require_same_tokenizer(tokenizer, data_tokenizer(meta), f'the model {start[3:]}',
                                   f'the data in {data_dir}')
        ckpt = None
    else:
        resume = start == 'resume'
        ckpt = load_start_checkpoint(ckpt_path if resume else start, resume, meta,
                                     config['arch'], config if same_run else None)
        if resume and 'progress' not in ckpt:  # written before the counters had their own entry
            ckpt['progress'] = {k: ckpt['state'].pop(k) for k in list(ckpt['state'])
                                if k in NEW_PROGRESS}
        model, earlier = checkpoint_encoder(ckpt), checkpoint_history(ckpt)
        tokenizer = None if resume else ckpt.get('tokenizer')  # a resumed run grew already
    if grows_into(tokenizer, meta):
        grow(model)
    return model, ckpt, extended_history(earlier or [unknown_data(start)], this_data)


def save_run(checkpoint: dict | None, path: str, it: int, keep: int, log, device: str) -> None:
    """Save a train.py run's checkpoint (rank 0's; None on the others) to path atomically, keeping
    the last `keep` as ckpt_<it>.pt too; every rank stops with one line when it cannot be saved."""
    problem = ''
    if checkpoint is not None:
        try:
            save_checkpoint(checkpoint, path)
        except OSError as e:
            # a full disk, a folder gone read-only: the previous checkpoint is still whole
            problem = (f'cannot save {path} at iter {it} ({first_line(e)}); free space or fix '
                       f'{os.path.dirname(path)}, then resume: the last checkpoint saved is intact')
        else:
            log(line=f'iter {it}: saved {path}')
            if keep > 0:
                keep_last(path, it, keep)
    fail_together(problem, f'rank 0 could not save {path} at iter {it} (its error says why)',
                  device)


def weights_fingerprint(model: torch.nn.Module) -> str:
    """A short hash of a model's parameter names, shapes and values: what a resumed run checks its
    teacher against, and what finetune.py's run cache knows a start model by."""
    h = hashlib.sha256()
    for name, t in model.state_dict().items():
        h.update(f'{name}{tuple(t.shape)}{t.dtype}'.encode())
        h.update(t.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()[:16]
