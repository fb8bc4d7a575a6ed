"""
Fine-tune a pre-trained encoder on a downstream task and report the task's metric: whether a
checkpoint is any good once fine-tuned, and whether GUIDE or the vocabulary curriculum helped.

    python finetune.py --init_from=out-demo/ckpt.pt
        # shakespeare_works: offline, built in
    python finetune.py --init_from=out-demo/ckpt.pt --from_scratch
        # the same architecture from random weights
    python finetune.py --init_from=hf-demo --task=glue/cola --seeds=0,1,2,3,4 --out=cola.json
        # needs `datasets`
    python finetune.py --init_from=out-demo/ckpt.pt --task=files --train_file=train.jsonl \\
        --validation_file=dev.jsonl --text_fields=premise,hypothesis --label_field=label

init_from: a train.py ckpt.pt (in a shrunken vocabulary too: it is grown to the full one first), a
GUIDE student .pt, or a ModernBERT/NeoBERT folder (export_hf.py's, or 'hf:<hub id>'). The head
(dense, GELU, LayerNorm, dropout, linear, as transformers' ModernBertForSequenceClassification)
reads the [CLS] state or the mean over the tokens. Each seed fine-tunes from the same weights; the
result is the median over seeds, as the anchors report it.
"""
import copy
import csv
import json
import math
import os
import statistics
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from checkpoint import load_model
from configurator import check_at_least, check_choices, configure
from data import shakespeare_split
from errors import fail, first_line
from model import Encoder
from optim import weight_decay_groups
from tokenizer import Tokenizer, load_recorded_tokenizer

DEFAULTS = dict(
    init_from='out/ckpt.pt',  # a checkpoint .pt, an exported or Hugging Face folder,
    #   or 'hf:<hub id>'
    # 'shakespeare_works' | 'shakespeare_lines' (both built in, offline) | 'glue/<name>'
    # (GLUE_TASKS) | 'files'
    task='shakespeare_works',
    train_file=None,  # task=files: .jsonl, .csv or .tsv with a header
    validation_file=None,
    text_fields=['text'],  # task=files: one field, or two for sentence pairs
    label_field='label',  # task=files: class names or numbers; non-integer numbers make it a
    #   regression
    passage_chars=400,  # shakespeare_works: the length of a passage
    pooling='cls',  # 'cls' | 'mean'
    from_scratch=False,  # the baseline: init_from's architecture and tokenizer with random weights
    probe=False,  # a linear probe: the encoder frozen, only a linear layer on the pooled state
    #   trains
    learning_rate=[5e-5],  # one value, or a grid (--learning_rate=1e-4,3e-4,1e-3): the best median
    #   is the result
    weight_decay=0.01,
    warmup_fraction=0.1,  # of the steps; then linear decay to 0
    epochs=3,
    batch_size=32,
    max_length=128,  # tokens, [CLS] and [SEP] included; longer inputs are cut
    classifier_dropout=0.1,
    seeds=[0],
    max_train_samples=None,  # a random subset of the training set (the same for every seed)
    max_eval_samples=None,
    log_interval=50,
    device='cuda' if torch.cuda.is_available() else 'cpu',
    wandb_log=False,
    wandb_project='nanobert-finetune',
    wandb_run_name='finetune',
    zero_shot_tokens=4096,  # the MLM's own scores on this many tokens of the held-out works
    #   (0: none)
    out=None,  # write the result as JSON here
)

# GLUE without WNLI: text fields, number of labels (1: regression), metrics (the first is the
# headline), eval splits
GLUE_TASKS = {
    'cola': (('sentence',), 2, ('mcc',), ('validation',)),
    'sst2': (('sentence',), 2, ('accuracy',), ('validation',)),
    'mrpc': (('sentence1', 'sentence2'), 2, ('f1', 'accuracy'), ('validation',)),
    'qqp': (('question1', 'question2'), 2, ('f1', 'accuracy'), ('validation',)),
    'stsb': (('sentence1', 'sentence2'), 1, ('spearman', 'pearson'), ('validation',)),
    'mnli': (('premise', 'hypothesis'), 3, ('accuracy',),
             ('validation_matched', 'validation_mismatched')),
    'qnli': (('question', 'sentence'), 2, ('accuracy',), ('validation',)),
    'rte': (('sentence1', 'sentence2'), 2, ('accuracy',), ('validation',)),
}


# metrics ------------------------------------------------------------------------------------------

def accuracy(pred: np.ndarray, gold: np.ndarray) -> float:
    return float((pred == gold).mean())


def f1(pred: np.ndarray, gold: np.ndarray) -> float:
    """F1 of the positive class (1), as GLUE scores MRPC and QQP."""
    tp = float(((pred == 1) & (gold == 1)).sum())
    predicted, actual = float((pred == 1).sum()), float((gold == 1).sum())
    return 2 * tp / (predicted + actual) if predicted + actual else 0.0


def mcc(pred: np.ndarray, gold: np.ndarray) -> float:
    """Matthews correlation (binary), CoLA's metric; 0 when a row or column of the confusion matrix
    is empty."""
    tp, tn = float(((pred == 1) & (gold == 1)).sum()), float(((pred == 0) & (gold == 0)).sum())
    fp, fn = float(((pred == 1) & (gold == 0)).sum()), float(((pred == 0) & (gold == 1)).sum())
    denominator = math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return (tp * tn - fp * fn) / denominator if denominator else 0.0


def pearson(pred: np.ndarray, gold: np.ndarray) -> float:
    pred, gold = pred - pred.mean(), gold - gold.mean()
    denominator = math.sqrt(float((pred ** 2).sum() * (gold ** 2).sum()))
    return float((pred * gold).sum()) / denominator if denominator else 0.0


def ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks, ties sharing the mean of their ranks (as Spearman's rho needs)."""
    order = np.argsort(x, kind='stable')
    r = np.empty(len(x))
    r[order] = np.arange(1, len(x) + 1)
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    return np.bincount(inverse, weights=r)[inverse] / counts[inverse]


def spearman(pred: np.ndarray, gold: np.ndarray) -> float:
    return pearson(ranks(pred), ranks(gold))


METRICS = dict(accuracy=accuracy, f1=f1, mcc=mcc, pearson=pearson, spearman=spearman)


# tasks --------------------------------------------------------------------------------------------

@dataclass
class Task:
    name: str
    # (texts, label): texts a tuple of one or two strings, label a class index or a float
    train: list
    evals: dict  # split name -> examples like train
    num_labels: int  # 1: regression
    metrics: tuple  # names in METRICS; the first is the headline
    label_names: list = field(default_factory=list)

    def majority_baseline(self) -> float | None:
        """The headline metric of always answering the most frequent training label, on the first
        eval split."""
        if self.num_labels == 1:
            return None  # a constant has no correlation
        labels = np.array([y for _, y in self.train])
        gold = np.array([y for _, y in next(iter(self.evals.values()))])
        majority = np.bincount(labels, minlength=self.num_labels).argmax()
        return METRICS[self.metrics[0]](np.full_like(gold, majority), gold)


def shakespeare_works_task(passage_chars: int) -> Task:
    """Which work a passage of passage_chars characters comes from, over the works pre-training
    trains on (the held-out ones are left for the zero-shot scores). Each work is cut into
    consecutive passages that share no text; every tenth goes to validation, so both splits cover
    every part of every work. The text keeps its line breaks, as pre-training reads it. Works of
    fewer than 20 passages (at 400 characters: The Phoenix and the Turtle) are left out."""
    works = {name: text for name, text in shakespeare_split()[0].items()
             if len(text) >= 20 * passage_chars}
    train, val = [], []
    for label, text in enumerate(works.values()):
        for i in range(len(text) // passage_chars):
            example = ((text[i * passage_chars:(i + 1) * passage_chars],), label)
            (val if i % 10 == 9 else train).append(example)
    return Task('shakespeare_works', train, {'validation': val}, len(works), ('accuracy',),
                list(works))


def verse_lines(paragraph: str) -> list[str]:
    """The spoken lines of a paragraph: no speaker names (upper case), stage directions ([...]) or
    short lines."""
    lines = [line.strip() for line in paragraph.split('\n')]
    return [line for line in lines
            if len(line) >= 20 and not line.startswith('[') and not line.isupper()]


def shakespeare_lines_task() -> Task:
    """Does the second line follow the first? Pairs of lines from the works pre-training trains on:
    half of them a line and the next line of the same speech, half a line and a line from elsewhere
    in the same work, so names and vocabulary do not give the answer; given as one text, the lines
    joined by a line break, as pre-training reads them. Speeches (paragraphs) alternate between the
    splits by position, every tenth to validation, and a pair's other line comes from its own
    split."""
    rng = np.random.default_rng(0)
    train, val = [], []
    for text in shakespeare_split()[0].values():
        speeches = [(verse_lines(p), i % 10 == 9) for i, p in enumerate(text.split('\n\n'))]
        for held_out in (False, True):
            pool = [line for lines, v in speeches if v == held_out for line in lines]
            for lines, v in speeches:
                if v != held_out:
                    continue
                for a, b in zip(lines, lines[1:]):
                    follows = bool(rng.random() < 0.5)
                    other = b if follows else pool[rng.integers(len(pool))]
                    # a line drawn from elsewhere that happens to be the next is left out
                    if follows or other != b:
                        (val if held_out else train).append(((a + '\n' + other,), int(follows)))
    return Task('shakespeare_lines', train, {'validation': val}, 2, ('accuracy',),
                ['elsewhere', 'next'])


def glue_task(name: str) -> Task:
    if name not in GLUE_TASKS:
        fail(f"unknown GLUE task '{name}'; use one of {', '.join('glue/' + t for t in GLUE_TASKS)}")
    try:
        import datasets
    except ImportError:
        fail('GLUE tasks load through the Hugging Face `datasets` package: pip install datasets')
    fields, num_labels, metrics, eval_splits = GLUE_TASKS[name]
    try:
        data = datasets.load_dataset('nyu-mll/glue', name)
    except Exception as e:  # offline, unknown name, network errors: datasets raises many kinds
        fail(f'cannot load GLUE {name} ({first_line(e)}); it needs the Hugging Face hub')

    def examples(split: str) -> list:
        return [(tuple(row[f] for f in fields), row['label']) for row in data[split]]
    return Task(f'glue/{name}', examples('train'), {s: examples(s) for s in eval_splits},
                num_labels, metrics)


def read_rows(path: str) -> list[dict]:
    """The records of a .jsonl, .csv or .tsv file (with a header row)."""
    if not os.path.isfile(path):
        fail(f'no such file: {path}')
    try:
        with open(path, newline='', encoding='utf-8') as f:
            if path.endswith('.jsonl'):
                return [json.loads(line) for line in f if line.strip()]
            if path.endswith(('.csv', '.tsv')):
                return list(csv.DictReader(f, delimiter='\t' if path.endswith('.tsv') else ','))
    except (json.JSONDecodeError, UnicodeDecodeError, csv.Error) as e:
        fail(f'cannot read {path} ({first_line(e)}); give UTF-8 JSON lines, '
             'or CSV/TSV with a header row')
    fail(f'{path}: give a .jsonl, .csv or .tsv file')


def cell_value(text: str) -> int | float | str:
    """A CSV or TSV cell as what it holds: an int, or a finite float, when it reads as one (as the
    same value in a .jsonl would be), else the text."""
    for kind in (int, float):
        try:
            value = kind(text)
        except ValueError:
            continue
        if math.isfinite(value):
            return value
    return text


def files_task(cfg: dict) -> Task:
    if not cfg['train_file'] or not cfg['validation_file']:
        fail('task=files needs --train_file and --validation_file')
    if len(cfg['text_fields']) not in (1, 2):
        fail(f"text_fields={cfg['text_fields']}: give one field, or two for sentence pairs")
    splits = {}
    for split in ('train', 'validation'):
        path = cfg[f'{split}_file']
        rows = read_rows(path)
        if not rows:
            fail(f'{path} has no records')
        for n, row in enumerate(rows, 1):
            missing = [k for k in (*cfg['text_fields'], cfg['label_field'])
                       if not isinstance(row, dict) or k not in row]
            if missing:
                fail(f'{path}, record {n}, has no field {missing[0]!r}; '
                     f'name the fields with --text_fields and --label_field')
        # a CSV or TSV file holds only text: its labels are read as the numbers they spell, so
        # that scores are a regression as they are in a .jsonl
        label = cell_value if path.endswith(('.csv', '.tsv')) else (lambda y: y)
        splits[split] = [(tuple(str(row[k]) for k in cfg['text_fields']),
                          label(row[cfg['label_field']])) for row in rows]
    labels = [y for _, y in splits['train']]
    # scores
    if all(isinstance(y, (int, float)) for y in labels) and any(float(y) != int(y) for y in labels):
        train, val = ([(t, float(y)) for t, y in splits[s]] for s in ('train', 'validation'))
        return Task('files', train, {'validation': val}, 1, ('spearman', 'pearson'))
    names = sorted({str(y) for y in labels})
    index = {name: i for i, name in enumerate(names)}
    unseen = sorted({str(y) for _, y in splits['validation']} - set(names))
    if unseen:
        fail(f"{cfg['validation_file']} has label {unseen[0]!r}, "
             f"which {cfg['train_file']} never has")
    train, val = ([(t, index[str(y)]) for t, y in splits[s]] for s in ('train', 'validation'))
    return Task('files', train, {'validation': val}, len(names),
                ('accuracy', 'f1') if len(names) == 2 else ('accuracy',), names)


def load_task(cfg: dict) -> Task:
    if cfg['task'] == 'shakespeare_works':
        return shakespeare_works_task(cfg['passage_chars'])
    if cfg['task'] == 'shakespeare_lines':
        return shakespeare_lines_task()
    if cfg['task'].startswith('glue/'):
        return glue_task(cfg['task'][5:])
    if cfg['task'] == 'files':
        return files_task(cfg)
    fail(f"unknown task '{cfg['task']}'; "
         'use shakespeare_works, shakespeare_lines, glue/<name> or files')


# the model ----------------------------------------------------------------------------------------

class SequenceClassifier(nn.Module):
    """An encoder with a classification (or, with one label, regression) head on [CLS] or the mean
    of the tokens; with probe, the encoder is frozen and the head is the linear classifier alone."""

    def __init__(self, encoder: Encoder, num_labels: int, pooling: str, dropout: float,
                 probe: bool = False):
        super().__init__()
        hidden = encoder.config.hidden_size
        self.encoder, self.pooling = encoder.requires_grad_(not probe), pooling
        head = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU(), nn.LayerNorm(hidden),
                             nn.Dropout(dropout))
        self.head = nn.Identity() if probe else head
        self.classifier = nn.Linear(hidden, num_labels)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        h = self.encoder.encode(input_ids, attention_mask)
        if self.pooling == 'cls':
            pooled = h[:, 0]
        else:
            weights = attention_mask.unsqueeze(-1).to(h.dtype)
            pooled = (h * weights).sum(1) / weights.sum(1)
        return self.classifier(self.head(pooled))


def encode(examples: list, tok: Tokenizer, max_length: int) -> list[list[int]]:
    """[CLS] a [SEP] or [CLS] a [SEP] b [SEP] in at most max_length tokens. A pair that does not fit
    is cut longest first: the shorter text keeps up to half the room, the longer one takes the
    rest."""
    encoded = []
    for texts, _ in examples:
        parts = [tok.encode_ordinary(t) for t in texts]
        room = max_length - 1 - len(parts)
        if len(parts) == 2 and sum(map(len, parts)) > room:
            short = min(parts, key=len)
            keep_short = min(len(short), room // 2)
            parts = [p[:keep_short] if p is short else p[:room - keep_short] for p in parts]
        encoded.append([tok.cls_token_id]
                       + [i for p in parts for i in (*p[:room], tok.sep_token_id)])
    return encoded


def collate(ids: list[list[int]], pad_id: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    longest = max(map(len, ids))
    x = torch.full((len(ids), longest), pad_id, dtype=torch.long)
    mask = torch.zeros((len(ids), longest), dtype=torch.long)
    for row, seq in enumerate(ids):
        x[row, :len(seq)], mask[row, :len(seq)] = torch.tensor(seq), 1
    return x.to(device), mask.to(device)


# fine-tuning --------------------------------------------------------------------------------------

def autocast(device: str):
    """bf16 on CUDA, as train.py; fp32 on the CPU."""
    return (torch.autocast('cuda', dtype=torch.bfloat16) if device.startswith('cuda')
            else nullcontext())


@torch.no_grad()
def predict(model: SequenceClassifier, ids: list[list[int]], batch_size: int, pad_id: int,
            device: str) -> np.ndarray:
    """Class indices (or, for a regression, values) for every sequence."""
    model.eval()
    outputs = []
    for start in range(0, len(ids), batch_size):
        x, mask = collate(ids[start:start + batch_size], pad_id, device)
        with autocast(device):
            logits = model(x, mask).float()
        outputs.append(logits[:, 0] if logits.shape[-1] == 1 else logits.argmax(-1))
    model.train()
    return torch.cat(outputs).cpu().numpy()


def scores(task: Task, predictions: dict, gold: dict) -> dict:
    """Every metric on every eval split, the first split's under the plain metric name
    (MNLI: matched)."""
    return {name if i == 0 else f'{name}_{split}': METRICS[name](predictions[split], gold[split])
            for i, split in enumerate(task.evals) for name in task.metrics}


def starting_encoder(cfg: dict, encoder: Encoder, seed: int) -> Encoder:
    """What a seed starts from: a copy of encoder, or with from_scratch random weights of its
    architecture (the seed's own draw)."""
    torch.manual_seed(seed)
    return Encoder(encoder.config) if cfg['from_scratch'] else copy.deepcopy(encoder)


def finetune(cfg: dict, task: Task, encoder: Encoder, data: dict, pad_id: int, seed: int, lr: float,
             run=None) -> dict:
    """Fine-tune (or probe) encoder's starting weights with a new head at learning rate lr; the
    scores after each epoch, the last one being the result."""
    encoder = starting_encoder(cfg, encoder, seed)
    model = SequenceClassifier(encoder, task.num_labels, cfg['pooling'], cfg['classifier_dropout'],
                               cfg['probe'])
    model.to(cfg['device'])
    optimizer = torch.optim.AdamW(weight_decay_groups(model, cfg['weight_decay']), lr=lr)
    ids, labels = data['train']
    steps = math.ceil(len(ids) / cfg['batch_size']) * cfg['epochs']
    warmup = int(cfg['warmup_fraction'] * steps)
    # linear warmup, then linear decay to 0 at the last step
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / (warmup + 1), (steps - s) / max(1, steps - warmup)))
    order_gen = torch.Generator().manual_seed(seed)
    step, t0, history = 0, time.time(), []
    for epoch in range(1, cfg['epochs'] + 1):
        for batch in torch.randperm(len(ids), generator=order_gen).split(cfg['batch_size']):
            x, mask = collate([ids[i] for i in batch], pad_id, cfg['device'])
            y = labels[batch].to(cfg['device'])
            with autocast(cfg['device']):
                logits = model(x, mask).float()
            loss = (F.mse_loss(logits[:, 0], y) if task.num_labels == 1
                    else F.cross_entropy(logits, y))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            if step % cfg['log_interval'] == 0 or step == steps:
                eta = (time.time() - t0) / step * (steps - step)
                print(f'lr {lr:.0e}, seed {seed}, epoch {epoch}, step {step}/{steps}: '
                      f'loss {loss.item():.4f}, lr now {schedule.get_last_lr()[0]:.2e}, '
                      f'eta {eta / 60:.1f} min')
        predictions = {split: predict(model, split_ids, cfg['batch_size'], pad_id, cfg['device'])
                       for split, (split_ids, _) in data['evals'].items()}
        history.append(scores(task, predictions,
                              {split: gold for split, (_, gold) in data['evals'].items()}))
        print(f'lr {lr:.0e}, seed {seed}, epoch {epoch}: '
              + ', '.join(f'{k} {v:.4f}' for k, v in history[-1].items()))
        if run is not None:  # a wandb run
            run.log({'epoch': epoch, **history[-1]}, step=step)
    return history[-1]


@torch.no_grad()
def zero_shot(encoder: Encoder, tok: Tokenizer, max_tokens: int, max_length: int,
              device: str) -> dict:
    """The MLM's own scores, no fine-tuning, on the first max_tokens tokens of the works prepare.py
    holds out of pre-training: each token masked alone in turn (Salazar et al. 2020), windows of
    max_length tokens. Returns the share predicted right (masked-token accuracy) and the mean
    log-probability of the right token (pseudo-log-
    likelihood per token, in nats)."""
    ids = tok.encode_ordinary('\n\n'.join(shakespeare_split()[1].values()))[:max_tokens]
    room, correct, log_prob = max_length - 2, 0, 0.0
    encoder.to(device).eval()
    for start in range(0, len(ids), room):
        window = torch.tensor([tok.cls_token_id, *ids[start:start + room], tok.sep_token_id],
                              device=device)
        rows = torch.arange(len(window) - 2, device=device)
        x = window.repeat(len(rows), 1)
        x[rows, rows + 1] = tok.mask_token_id  # row r masks the token at position r + 1
        with autocast(device):
            h = encoder.encode(x)[rows, rows + 1]
            logits = encoder.decoder(encoder.head(h)).float()
        target = window[1:-1]
        correct += int((logits.argmax(-1) == target).sum())
        log_prob += float(logits.log_softmax(-1).gather(1, target[:, None]).sum())
    return dict(masked_accuracy=correct / len(ids), pseudo_log_likelihood=log_prob / len(ids),
                tokens=len(ids))


def sample(examples: list, limit: int | None) -> list:
    """A random subset of at most limit examples, the same in every run."""
    if limit is None or limit >= len(examples):
        return examples
    keep = np.sort(np.random.default_rng(0).choice(len(examples), limit, replace=False))
    return [examples[i] for i in keep]


def check(cfg: dict) -> None:
    check_choices(cfg, dict(pooling=('cls', 'mean')))
    check_at_least(cfg, dict(epochs=1, batch_size=1, log_interval=1))
    if cfg['max_length'] < 4:
        fail(f"max_length={cfg['max_length']} leaves no room for text; use 128 or more")
    if not cfg['learning_rate'] or not all(isinstance(lr, (int, float)) and lr > 0
                                           for lr in cfg['learning_rate']):
        fail(f"learning_rate={cfg['learning_rate']}: "
             'give numbers > 0, e.g. --learning_rate=1e-4,3e-4,1e-3')
    if not 0 <= cfg['warmup_fraction'] < 1:
        fail('warmup_fraction must be in [0, 1)')
    if not cfg['seeds'] or not all(isinstance(s, int) for s in cfg['seeds']):
        fail(f"seeds={cfg['seeds']}: give integers, e.g. --seeds=0,1,2")


def main(argv: list[str]) -> dict:
    cfg = configure(DEFAULTS, argv)
    check(cfg)
    loaded = load_model(cfg['init_from'])
    encoder, tok = loaded.model, load_recorded_tokenizer(loaded.tokenizer, cfg['init_from'])
    if cfg['max_length'] > encoder.config.max_position_embeddings:
        fail(f"max_length={cfg['max_length']} exceeds the model's max_position_embeddings="
             f'{encoder.config.max_position_embeddings}')
    task = load_task(cfg)
    task.train = sample(task.train, cfg['max_train_samples'])
    task.evals = {split: sample(examples, cfg['max_eval_samples'])
                  for split, examples in task.evals.items()}
    label_dtype = torch.float32 if task.num_labels == 1 else torch.long
    data = dict(train=(encode(task.train, tok, cfg['max_length']),
                       torch.tensor([y for _, y in task.train], dtype=label_dtype)),
                evals={split: (encode(examples, tok, cfg['max_length']),
                               np.array([y for _, y in examples]))
                       for split, examples in task.evals.items()})
    baseline = task.majority_baseline()
    print(f'{task.name}: {len(task.train)} training examples, '
          + ', '.join(f'{len(v)} {k}' for k, v in task.evals.items())
          + f", {task.num_labels if task.num_labels > 1 else 'regression'} labels"
          + (f', majority baseline {task.metrics[0]} {baseline:.4f}' if baseline is not None
             else '')
          + f"; {'a linear probe of ' if cfg['probe'] else ''}"
          f"{'random weights of ' if cfg['from_scratch'] else ''}{cfg['init_from']}, "
          f'{encoder.get_num_params() / 1e6:.2f}M parameters')
    grid = {}
    for lr in cfg['learning_rate']:
        per_seed = []
        for seed in cfg['seeds']:
            run = None
            if cfg['wandb_log']:
                import wandb
                run = wandb.init(project=cfg['wandb_project'],
                                 name=f"{cfg['wandb_run_name']}-lr{lr:g}-seed{seed}", config=cfg)
            per_seed.append(finetune(cfg, task, encoder, data, tok.pad_token_id, seed, lr, run))
            if run is not None:
                run.finish()
        grid[lr] = dict(metrics={k: statistics.median(s[k] for s in per_seed) for k in per_seed[0]},
                        per_seed=per_seed)
    best = max(grid, key=lambda lr: grid[lr]['metrics'][task.metrics[0]])
    medians = grid[best]['metrics']
    zero = None
    if cfg['zero_shot_tokens']:
        zero = zero_shot(starting_encoder(cfg, encoder, cfg['seeds'][0]), tok,
                         cfg['zero_shot_tokens'], cfg['max_length'], cfg['device'])
    result = dict(task=task.name, metric=task.metrics[0], value=medians[task.metrics[0]],
                  metrics=medians, per_seed=grid[best]['per_seed'], seeds=cfg['seeds'],
                  learning_rate=best,
                  grid={f'{lr:g}': g['metrics'][task.metrics[0]] for lr, g in grid.items()},
                  majority_baseline=baseline, zero_shot=zero, init_from=cfg['init_from'],
                  from_scratch=cfg['from_scratch'], probe=cfg['probe'], pooling=cfg['pooling'],
                  epochs=cfg['epochs'], batch_size=cfg['batch_size'], max_length=cfg['max_length'],
                  train_examples=len(task.train))
    print(f"{task.name}: {task.metrics[0]} {result['value']:.4f} "
          f"(median of {len(cfg['seeds'])} seed(s)"
          + (f", best of learning rates {', '.join(result['grid'])}" if len(grid) > 1 else '') + ')'
          + (f', majority baseline {baseline:.4f}' if baseline is not None else '')
          + (f"; zero-shot on the held-out Shakespeare works: "
             f"masked-token accuracy {zero['masked_accuracy']:.4f}, "
             f"pseudo-log-likelihood {zero['pseudo_log_likelihood']:.3f}" if zero else ''))
    if cfg['out']:
        Path(cfg['out']).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg['out'] + '.tmp').write_text(json.dumps(result, indent=2) + '\n')
        os.replace(cfg['out'] + '.tmp', cfg['out'])
    return result


if __name__ == '__main__':
    main(sys.argv[1:])
