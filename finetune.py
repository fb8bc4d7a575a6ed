"""
Fine-tune a pre-trained encoder on a downstream task and report the task's metric: whether a
checkpoint is any good once fine-tuned, and whether GUIDE or the vocabulary curriculum helped.

    python finetune.py --init_from=out-demo/ckpt.pt
        # shakespeare_works: offline, built in
    python finetune.py --init_from=out-demo/ckpt.pt --baseline=scratch --seeds=0,1,2
        # against the same architecture from random weights: both arms, their paired difference
    python finetune.py --init_from=a/ckpt.pt,b/ckpt.pt,c/ckpt.pt --baseline=d/ckpt.pt,e/ckpt.pt \
        --seeds=0,1,2      # one recipe's pre-training seeds against another recipe's
    python finetune.py --init_from=hf-demo --task=glue/cola --seeds=0,1,2,3,4 --out=cola.json
        # needs `datasets`
    python finetune.py --init_from=a/ckpt.pt --baseline=scratch --seeds=0,1,2,3 --cache_dir=ft-cache
        # keeps every run: after --seeds=0,1,2 this trains only seed 3
    python finetune.py --init_from=out-demo/ckpt.pt --task=files --train_file=train.jsonl \\
        --validation_file=dev.jsonl --text_fields=premise,hypothesis --label_field=label

init_from: a train.py ckpt.pt (in a shrunken vocabulary too: it is grown to the full one first), a
GUIDE student .pt, or a ModernBERT/NeoBERT folder (export_hf.py's, or 'hf:<hub id>'). The head
(dense, GELU, LayerNorm, dropout, linear, as transformers' ModernBertForSequenceClassification)
reads the [CLS] state or the mean over the tokens. Each seed fine-tunes from the same weights; the
result is the median over seeds, as the anchors report it. Several checkpoints of one recipe
(--init_from=a/ckpt.pt,b/ckpt.pt,c/ckpt.pt, pre-trained with different seeds) are one arm: every
fine-tuning seed runs on each, the learning rate is chosen on their pooled dev scores, and the
intervals resample the pre-training seeds as well as the fine-tuning seeds and test sections.
"""
import collections
import copy
import csv
import functools
import hashlib
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

from checkpoint import load_model, save_checkpoint, weights_fingerprint
from configurator import check_at_least, check_choices, configure
from data import SHAKESPEARE_HELD_OUT, shakespeare_split, shakespeare_split_rule
from errors import fail, first_line
from model import Encoder
from optim import weight_decay_groups
from runlog import machine
from tokenizer import Tokenizer, load_recorded_tokenizer, load_tokenizer

DEFAULTS = dict(
    init_from='out/ckpt.pt',  # a checkpoint .pt, an exported or Hugging Face folder, or
    #   'hf:<hub id>'; or several, comma-separated: one recipe pre-trained with different seeds,
    #   which the scores and intervals then cover too
    # 'shakespeare_works' | 'shakespeare_lines' (both built in, offline) | 'glue/<name>'
    # (GLUE_TASKS) | 'files'
    task='shakespeare_works',
    train_file=None,  # task=files: .jsonl, .csv or .tsv with a header
    validation_file=None,  # task=files: dev, where the learning rate is chosen
    test_file=None,  # task=files: what is reported (None: the validation file is the test and dev
    #   is carved out of train)
    text_fields=['text'],  # task=files: one field, or two for sentence pairs
    label_field='label',  # task=files: class names or numbers; non-integer numbers make it a
    #   regression
    passage_chars=400,  # shakespeare_works: the length of a passage
    pooling='cls',  # 'cls' | 'mean'
    standardize=False,  # centre and scale each feature of the pooled state by the batch's
    #   statistics (the running ones at evaluation), a BatchNorm without weights as MAE's linear
    #   probes use: pre-trained states share one direction that a new head otherwise has to undo
    from_scratch=False,  # init_from's architecture and tokenizer with random weights
    baseline='none',  # 'scratch': also run random weights with the same grid and seeds, and print
    #   both arms' test scores, their paired difference and its 95% interval; or another recipe's
    #   checkpoint(s), comma-separated (one, or as many as init_from, paired by position)
    probe=False,  # a linear probe: the encoder frozen, only a linear layer on the pooled state
    #   trains
    learning_rate=[5e-5],  # one value, or a grid (--learning_rate=1e-4,3e-4,1e-3) chosen on dev
    #   (best median); a best rate at an edge extends the grid one step
    weight_decay=0.01,
    warmup_fraction=0.1,  # of the steps; then linear decay to 0
    epochs=3,
    head_epochs=0,  # epochs that train the head alone on the frozen encoder before the epochs that
    #   train every weight (LP-FT: the head starts the fine-tuning already fitted, so its first
    #   random gradients do not reach the encoder); each stage warms up and decays on its own
    relative_lr=False,  # each encoder tensor's rate times its RMS over the same tensor's in a fresh
    #   draw of the architecture (LARS's trust ratio, fixed at the start): Adam's steps are about
    #   the rate in size, so this moves a pre-trained tensor grown larger than its initialisation
    #   by the same share of itself as random weights move
    batch_size=32,
    max_length=128,  # tokens, [CLS] and [SEP] included; longer inputs are cut
    classifier_dropout=0.1,
    seeds=[0],  # each: the head's initialisation, the data order and (with max_train_samples) the
    #   labelled subset
    max_train_samples=None,  # each seed fine-tunes on its own random subset of this many
    max_eval_samples=None,  # a fixed random subset of dev and of test, the same for every seed
    log_interval=50,
    device='cuda' if torch.cuda.is_available() else 'cpu',
    wandb_log=False,
    wandb_project='nanobert-finetune',
    wandb_run_name='finetune',
    zero_shot_tokens=16384,  # built-in tasks: the MLM's own scores on this many tokens of the
    #   held-out sections, shared by every work (0: none)
    out=None,  # write the result as JSON here
    cache_dir=None,  # a folder of finished runs, one file each, known by what they depend on (the
    #   start weights, the task's examples, the settings, seed and rate): a run found there is read
    #   back instead of trained again, so a comparison that adds a seed or an arm trains only those
    write_task=None,  # a folder: write the task's train, dev and test as .jsonl there, and stop
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
    """A task's three splits: train to fine-tune on, dev to choose the learning rate on, and the
    test split(s) whose scores are reported (MNLI has two). Examples are (texts, label): texts a
    tuple of one or two strings, label a class index or a float."""
    name: str
    train: list
    dev: list
    tests: dict  # split name -> examples
    num_labels: int  # 1: regression
    metrics: tuple  # names in METRICS; the first is the headline
    label_names: list = field(default_factory=list)
    note: str = ''  # where dev and test come from, when the task's own files do not say
    # the first test split's examples by the passage of text they come from (the built-in tasks:
    # held-out sections), which the intervals resample whole; None: every example its own
    test_groups: list | None = None

    def majority_baseline(self) -> float | None:
        """The headline metric of always answering the most frequent training label, on the first
        test split."""
        if self.num_labels == 1:
            return None  # a constant has no correlation
        labels = np.array([y for _, y in self.train])
        gold = np.array([y for _, y in next(iter(self.tests.values()))])
        majority = np.bincount(labels, minlength=self.num_labels).argmax()
        return METRICS[self.metrics[0]](np.full_like(gold, majority), gold)


DEV_FRACTION = 0.1  # of train, carved out as dev where a task has no dev split of its own


def carve_dev(train: list) -> tuple[list, list]:
    """(the rest of train, a dev split of DEV_FRACTION of it): a fixed random draw, the same in
    every run."""
    n_dev = max(1, round(DEV_FRACTION * len(train)))
    order = np.random.default_rng(0).permutation(len(train))
    dev = set(order[:n_dev].tolist())
    return ([e for i, e in enumerate(train) if i not in dev],
            [e for i, e in enumerate(train) if i in dev])


# The built-in tasks fine-tune on the sections of the embedded corpus that train.bin holds and
# score dev and test on the sections prepare.py holds out (data.shakespeare_split): text
# pre-training never read. An example that still shares a span of SPAN_TOKENS tokens with the
# training text (a line repeated across works, a refrain) is left out of dev and test.
SPAN_TOKENS = 13


def span_hashes(ids: list[int]) -> np.ndarray:
    """A 64-bit hash of every run of SPAN_TOKENS consecutive token ids."""
    a = np.asarray(ids, dtype=np.uint64)
    h = np.zeros(max(0, len(a) - SPAN_TOKENS + 1), dtype=np.uint64)
    for j in range(SPAN_TOKENS):  # polynomial hash, wrapping at 2^64
        h = h * np.uint64(1_000_003) + a[j:j + len(h)]
    return h


class TrainingText:
    """What pre-training read of the embedded corpus (data.shakespeare_split's training sections):
    its spans of SPAN_TOKENS GPT-2 tokens, and its lines."""

    def __init__(self):
        self.tok = load_tokenizer('gpt2')
        sections = [s for work in shakespeare_split()[0].values() for s in work]
        self.spans = np.unique(np.concatenate([span_hashes(self.tok.encode_ordinary(section))
                                               for section in sections]))
        self.lines = {line.strip() for section in sections for line in section.split('\n')}

    def shares_span(self, text: str) -> bool:
        h = span_hashes(self.tok.encode_ordinary(text))
        at = np.searchsorted(self.spans, h).clip(max=len(self.spans) - 1)
        return bool((self.spans[at] == h).any())


@functools.cache
def training_text() -> TrainingText:
    return TrainingText()


def unseen(examples: list) -> list:
    """The (example, section) pairs none of whose texts shares a span of SPAN_TOKENS GPT-2 tokens
    with the training sections."""
    seen = training_text()
    return [(e, section) for e, section in examples
            if not any(seen.shares_span(t) for t in e[0])]


def unseen_lines(section: str) -> str:
    """A held-out section without the lines pre-training read: a line that occurs in the training
    sections (a speaker's name, a refrain) or shares a span of SPAN_TOKENS tokens with them."""
    seen = training_text()
    return '\n'.join(line for line in section.split('\n')
                     if line.strip() not in seen.lines and not seen.shares_span(line))


def dev_and_test(held_out: list) -> tuple[list, dict, list]:
    """(example, held-out section) pairs split by whole section, so that dev and test share no
    text: every fourth section to dev (the learning rate is chosen on it), the rest to test (what
    is reported). Returns dev, the test split and the test examples' sections."""
    test = [(e, section) for e, section in held_out if section % 4]
    return ([e for e, section in held_out if not section % 4], {'test': [e for e, _ in test]},
            [section for _, section in test])


def passages(sections: list[str], chars: int) -> list[str]:
    """Consecutive passages of chars characters of each section, sharing no text."""
    return [s[i * chars:(i + 1) * chars] for s in sections for i in range(len(s) // chars)]


def shakespeare_works_task(passage_chars: int) -> Task:
    """Which work a passage of passage_chars characters comes from. Each work's sections are cut
    into consecutive passages that share no text: those of its training sections to train, those of
    its held-out sections to dev and test, so every split covers every work. The text keeps its line
    breaks, as pre-training reads it. A work with fewer than 20 training or 3 held-out passages (at
    400 characters: The Phoenix and the Turtle, The Passionate Pilgrim) is left out."""
    train_sections, held_sections = shakespeare_split()
    works = [w for w in train_sections
             if len(passages(train_sections[w], passage_chars)) >= 20
             and len(passages(held_sections.get(w, []), passage_chars)) >= 3]
    numbered = numbered_sections(held_sections)
    train, held_out = [], []
    for label, work in enumerate(works):
        train += [((p,), label) for p in passages(train_sections[work], passage_chars)]
        held_out += [(((p,), label), k) for k, text in numbered[work]
                     for p in passages([text], passage_chars)]
    dev, tests, groups = dev_and_test(unseen(held_out))
    return Task('shakespeare_works', train, dev, tests, len(works), ('accuracy',), works,
                test_groups=groups)


def numbered_sections(sections: dict) -> dict:
    """Each work's sections, each with its index among all of them in corpus order (what
    dev_and_test splits the held-out ones by)."""
    numbered, k = {}, 0
    for work, texts in sections.items():
        numbered[work] = list(enumerate(texts, start=k))
        k += len(texts)
    return numbered


def verse_lines(paragraph: str) -> list[str]:
    """The spoken lines of a paragraph: no speaker names (upper case), stage directions ([...]) or
    short lines."""
    lines = [line.strip() for line in paragraph.split('\n')]
    return [line for line in lines
            if len(line) >= 20 and not line.startswith('[') and not line.isupper()]


def line_pairs(sections: list[tuple[int, str]], rng: np.random.Generator, skip: set) -> list:
    """(pair, section) of spoken lines of these numbered sections: half a line and the next line of
    its speech, half a line and a line from elsewhere in the same sections, joined by a line break.
    Lines in skip (those the corpus holds more than once) are left out."""
    speeches = [(k, [line for line in verse_lines(p) if line not in skip])
                for k, section in sections for p in section.split('\n\n')]
    pool = [line for _, lines in speeches for line in lines]
    pairs = []
    for k, lines in speeches:
        for a, b in zip(lines, lines[1:]):
            follows = bool(rng.random() < 0.5)
            other = b if follows else pool[rng.integers(len(pool))]
            # a line drawn from elsewhere that is the next one, or the line itself, is left out
            if follows or other not in (a, b):
                pairs.append((((a + '\n' + other,), int(follows)), k))
    return pairs


def shakespeare_lines_task() -> Task:
    """Does the second line follow the first? Pairs of lines of one work: half of them a line and
    the next line of the same speech, half a line and a line from elsewhere in the same work, so
    names and vocabulary do not give the answer; given as one text, as pre-training reads them.
    Train pairs come from each work's training sections, dev and test pairs from its held-out ones,
    without a line that occurs more than once in the corpus."""
    rng = np.random.default_rng(0)
    train_sections, held_sections = shakespeare_split()
    counts = collections.Counter(line for sections in (train_sections, held_sections)
                                 for work in sections.values() for section in work
                                 for p in section.split('\n\n') for line in verse_lines(p))
    repeated = {line for line, n in counts.items() if n > 1}
    train, held_out = [], []
    numbered = numbered_sections(held_sections)
    for work, sections in train_sections.items():
        train += [pair for pair, _ in line_pairs(list(enumerate(sections)), rng, set())]
        held_out += line_pairs(numbered.get(work, []), rng, repeated)
    dev, tests, groups = dev_and_test(unseen(held_out))
    return Task('shakespeare_lines', train, dev, tests, 2, ('accuracy',), ['elsewhere', 'next'],
                test_groups=groups)


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
    # GLUE's test labels are hidden: its validation sets are the test, dev comes out of train
    train, dev = carve_dev(examples('train'))
    return Task(f'glue/{name}', train, dev, {s: examples(s) for s in eval_splits}, num_labels,
                metrics, note=f'dev: {DEV_FRACTION:.0%} of train; test: GLUE\'s validation set')


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


def read_split(cfg: dict, path: str) -> list:
    """The (texts, label) records of one file of task=files; SystemExit with one line on a file
    without records or without the named fields."""
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
    return [(tuple(str(row[k]) for k in cfg['text_fields']), label(row[cfg['label_field']]))
            for row in rows]


def files_task(cfg: dict) -> Task:
    """train_file, validation_file (dev) and test_file; without a test_file the validation file is
    the test and dev is carved out of train."""
    if not cfg['train_file'] or not cfg['validation_file']:
        fail('task=files needs --train_file and --validation_file')
    if len(cfg['text_fields']) not in (1, 2):
        fail(f"text_fields={cfg['text_fields']}: give one field, or two for sentence pairs")
    train, dev = read_split(cfg, cfg['train_file']), read_split(cfg, cfg['validation_file'])
    labels = [y for _, y in train]  # the classes, or scores, are the train file's
    note = ''
    if cfg['test_file']:
        test = read_split(cfg, cfg['test_file'])
    else:
        (train, dev), test = carve_dev(train), dev
        note = (f'no --test_file: {cfg["validation_file"]} is the test, dev is {DEV_FRACTION:.0%} '
                f'of {cfg["train_file"]}')
    # scores
    if all(isinstance(y, (int, float)) for y in labels) and any(float(y) != int(y) for y in labels):
        train, dev, test = ([(t, float(y)) for t, y in split] for split in (train, dev, test))
        return Task('files', train, dev, {'test': test}, 1, ('spearman', 'pearson'), note=note)
    names = sorted({str(y) for y in labels})
    index = {name: i for i, name in enumerate(names)}
    for split, path in ((dev, cfg['validation_file']), (test, cfg['test_file'])):
        unseen = sorted({str(y) for _, y in split} - set(names))
        if unseen:
            fail(f"{path or cfg['validation_file']} has label {unseen[0]!r}, "
                 f"which {cfg['train_file']} never has")
    train, dev, test = ([(t, index[str(y)]) for t, y in split] for split in (train, dev, test))
    return Task('files', train, dev, {'test': test}, len(names),
                ('accuracy', 'f1') if len(names) == 2 else ('accuracy',), names, note)


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
    of the tokens; with probe, the encoder is frozen and the head is the linear classifier alone;
    with standardize, the pooled state is standardized feature by feature first."""

    def __init__(self, encoder: Encoder, num_labels: int, pooling: str, dropout: float,
                 probe: bool = False, standardize: bool = False):
        super().__init__()
        hidden = encoder.config.hidden_size
        self.encoder, self.pooling = encoder.requires_grad_(not probe), pooling
        self.norm = nn.BatchNorm1d(hidden, affine=False) if standardize else None
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
        if self.norm is not None:
            # a batch of one has no spread of its own: the running statistics standardize it
            n = self.norm
            pooled = F.batch_norm(pooled, n.running_mean, n.running_var,
                                  training=self.training and len(pooled) > 1,
                                  momentum=n.momentum, eps=n.eps)
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


def encode_task(task: Task, evals: dict, tok: Tokenizer, max_length: int) -> dict:
    """The task's training examples and evals (split -> examples) in tok's ids, with their labels
    (float for a regression)."""
    label_dtype = torch.float32 if task.num_labels == 1 else torch.long
    return dict(train=(encode(task.train, tok, max_length),
                       torch.tensor([y for _, y in task.train], dtype=label_dtype)),
                evals={split: (encode(examples, tok, max_length),
                               np.array([y for _, y in examples]))
                       for split, examples in evals.items()})


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
    """Every metric on every split of predictions, the first split's under the plain metric name
    (MNLI: matched)."""
    return {name if i == 0 else f'{name}_{split}': METRICS[name](predictions[split], gold[split])
            for i, split in enumerate(predictions) for name in task.metrics}


def starting_encoder(encoder: Encoder, from_scratch: bool, seed: int) -> Encoder:
    """What a seed starts from: a copy of encoder, or random weights of its architecture (the
    seed's own draw)."""
    torch.manual_seed(seed)
    return Encoder(encoder.config) if from_scratch else copy.deepcopy(encoder)


def warmup_then_decay(optimizer: torch.optim.Optimizer, steps: int,
                      warmup_fraction: float) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warmup over warmup_fraction of the steps, then linear decay to 0 at the last."""
    warmup = int(warmup_fraction * steps)
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / (warmup + 1), (steps - s) / max(1, steps - warmup)))


def rms(t: torch.Tensor) -> float:
    """A tensor's root mean square."""
    return t.detach().float().pow(2).mean().sqrt().item()


def init_rms(config) -> dict[str, float]:
    """Each encoder tensor's RMS in a fresh draw of the architecture (seed 0, the caller's random
    state untouched)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        fresh = Encoder(config)
    return {f'encoder.{n}': rms(p) for n, p in fresh.named_parameters()}


def relative_lr_groups(groups: list[dict], reference: dict[str, float], lr: float) -> list[dict]:
    """groups split into one group per tensor, each at lr times the tensor's RMS over its
    reference; the head's new tensors, and those a fresh draw sets to zero, keep lr."""
    def rate(name: str, p: torch.Tensor) -> float:
        ref = reference.get(name, 0.0)
        return lr * rms(p) / ref if ref > 0 else lr
    return [dict(g, params=[(n, p)], lr=rate(n, p)) for g in groups for n, p in g['params']]


def finetune(cfg: dict, task: Task, encoder: Encoder, data: dict, pad_id: int, seed: int, lr: float,
             from_scratch: bool, run=None) -> dict:
    """Fine-tune (or probe) encoder's starting weights with a new head at learning rate lr, on the
    seed's labelled examples in the seed's order; the scores on dev and test after the last epoch
    (no selection by epoch), and the test predictions."""
    encoder = starting_encoder(encoder, from_scratch, seed)
    model = SequenceClassifier(encoder, task.num_labels, cfg['pooling'], cfg['classifier_dropout'],
                               cfg['probe'], cfg['standardize'])
    model.to(cfg['device'])
    groups = weight_decay_groups(model, cfg['weight_decay'])
    if cfg['relative_lr']:
        groups = relative_lr_groups(groups, init_rms(encoder.config), lr)
    optimizer = torch.optim.AdamW(groups, lr=lr)
    ids, labels = data['train']
    subset = labelled_subset(len(ids), cfg['max_train_samples'], seed)
    order_gen = torch.Generator().manual_seed(seed)
    done = 0  # epochs, over both stages
    # the head alone on the frozen encoder first (head_epochs), then every weight; the optimizer
    # (its weight decay too) skips the frozen weights, which get no gradients
    for stage_epochs, whole in ((cfg['head_epochs'], False), (cfg['epochs'], not cfg['probe'])):
        if stage_epochs == 0:
            continue
        model.encoder.requires_grad_(whole)
        steps = math.ceil(len(subset) / cfg['batch_size']) * stage_epochs
        schedule = warmup_then_decay(optimizer, steps, cfg['warmup_fraction'])
        step, t0 = 0, time.time()
        for epoch in range(done + 1, done + stage_epochs + 1):
            for batch in subset[torch.randperm(len(subset), generator=order_gen)].split(
                    cfg['batch_size']):
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
                    print(f"lr {lr:g}, seed {seed}, epoch {epoch}{'' if whole else ' (head)'}, "
                          f'step {step}/{steps}: loss {loss.item():.4f}, '
                          f'lr now {lr * schedule.lr_lambdas[0](step):.2e}, '
                          f'eta {eta / 60:.1f} min')
        done += stage_epochs
    predictions = {split: predict(model, split_ids, cfg['batch_size'], pad_id, cfg['device'])
                   for split, (split_ids, _) in data['evals'].items()}
    gold = {split: g for split, (_, g) in data['evals'].items()}
    dev = scores(task, {'dev': predictions.pop('dev')}, {'dev': gold.pop('dev')})
    test = scores(task, predictions, gold)
    # dev only: test is read once the rate is chosen, so that nothing is tuned on it
    print(f'lr {lr:g}, seed {seed}: dev {dev[task.metrics[0]]:.4f}')
    if run is not None:  # a wandb run
        run.log({f'dev_{k}': v for k, v in dev.items()}, step=step)
    return dict(dev=dev, test=test, predictions=next(iter(predictions.values())))


def labelled_subset(n: int, limit: int | None, seed: int) -> torch.Tensor:
    """The indices of the training examples a seed fine-tunes on: all of them, or with limit a
    random subset of its own (seeds vary the labelled data as well as the initialisation)."""
    if limit is None or limit >= n:
        return torch.arange(n)
    return torch.randperm(n, generator=torch.Generator().manual_seed(seed))[:limit].sort().values


# what a run's result depends on besides its start weights, examples, seed and rate
RUN_SETTINGS = ('pooling', 'standardize', 'probe', 'classifier_dropout', 'weight_decay',
                'warmup_fraction', 'epochs', 'head_epochs', 'batch_size', 'max_train_samples')


class RunCache:
    """Finished runs in a folder (--cache_dir), one file each, named by a hash of what the run
    depends on: the start weights (only the architecture for random weights), the task's encoded
    examples, labels and metrics, RUN_SETTINGS, the device type (bf16 on CUDA), the torch version,
    the CPU's vector kernels or the GPU by name, seed and rate. Not the code: a changed finetune.py
    or model.py needs an empty folder."""

    def __init__(self, folder: str, cfg: dict, task: Task, data: dict, pad_id: int):
        self.folder = Path(folder)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            fail(f'cache_dir={folder} cannot be a folder ({first_line(e)}); name another one')
        train_ids, train_labels = data['train']
        examples = json.dumps([task.name, task.num_labels, task.metrics, pad_id, train_ids,
                               train_labels.tolist(),
                               {split: (ids, gold.tolist())
                                for split, (ids, gold) in data['evals'].items()}])
        device = torch.device(cfg['device'])
        self.common = dict(examples=hashlib.sha256(examples.encode()).hexdigest(),
                           device=device.type, torch=torch.__version__,
                           **{k: cfg[k] for k in RUN_SETTINGS})
        # one seed's run rounds differently under other vector kernels or on another GPU, so a
        # folder shared between machines reads back only the runs made on this kind of machine
        if device.type == 'cpu':
            self.common['cpu_capability'] = torch.backends.cpu.get_cpu_capability()
        elif device.type == 'cuda':
            self.common['gpu'] = torch.cuda.get_device_name(device)
        if cfg['relative_lr']:  # only when set, so that runs cached before it existed read back
            self.common['relative_lr'] = True
        self.starts = {}  # id(encoder) -> what it is, hashed once

    def path(self, encoder: Encoder, from_scratch: bool, seed: int, lr: float) -> Path:
        if (id(encoder), from_scratch) not in self.starts:
            self.starts[id(encoder), from_scratch] = repr(encoder.config) + (
                '' if from_scratch else weights_fingerprint(encoder))
        key = json.dumps(dict(self.common, start=self.starts[id(encoder), from_scratch],
                              from_scratch=from_scratch, seed=seed, lr=lr), sort_keys=True)
        return self.folder / f'{hashlib.sha256(key.encode()).hexdigest()[:32]}.pt'

    def load(self, path: Path) -> dict | None:
        """The run stored at path; None when there is none, or only a file that does not read
        back (a copy cut short): the run is made again and replaces it."""
        if not path.exists():
            return None
        try:
            run = torch.load(path, weights_only=True)
            return dict(run, predictions=run['predictions'].numpy())
        except Exception as e:
            print(f'{path} does not read back ({first_line(e)}): running it again')
            return None

    def save(self, path: Path, run: dict) -> None:
        # atomically: never a half-written file under the run's name
        save_checkpoint(dict(run, predictions=torch.from_numpy(run['predictions'])), str(path))


def one_run(cfg: dict, task: Task, encoder: Encoder, data: dict, pad_id: int, seed: int,
            lr: float, from_scratch: bool, name: str, cache: RunCache | None) -> dict:
    """finetune's result for one seed and rate: read back from the cache when it holds the run,
    else trained (and logged to wandb as name's run) and stored there."""
    path = cache.path(encoder, from_scratch, seed, lr) if cache is not None else None
    run = cache.load(path) if path is not None else None
    if run is not None:
        print(f"lr {lr:g}, seed {seed}: dev {run['dev'][task.metrics[0]]:.4f} ({path})")
        return run
    wandb_run = None
    if cfg['wandb_log']:
        import wandb
        wandb_run = wandb.init(project=cfg['wandb_project'], config=cfg, name=name)
    run = finetune(cfg, task, encoder, data, pad_id, seed, lr, from_scratch, wandb_run)
    if wandb_run is not None:
        wandb_run.finish()
    if path is not None:
        cache.save(path, run)
    return run


def run_arm(cfg: dict, task: Task, encoders: list[Encoder], data: dict, pad_id: int,
            from_scratch: bool) -> dict:
    """Every seed on every encoder (one, or one recipe's pre-training seeds) at every learning
    rate of the grid; the rate is chosen on dev (the best median of the headline metric over all
    those runs), and one chosen at an edge of the grid extends the grid one step past it (once per
    edge), so that the grid does not cut an arm off. Returns the grid's dev medians, the chosen rate
    and its runs, their test predictions as [encoder][seed]."""
    headline, runs, extended = task.metrics[0], {}, set()
    cache = RunCache(cfg['cache_dir'], cfg, task, data, pad_id) if cfg['cache_dir'] else None

    def run(lr: float) -> None:
        per_seed = []
        for k, encoder in enumerate(encoders):
            if len(encoders) > 1:
                print(f'checkpoint {k + 1} of {len(encoders)}')
            for seed in cfg['seeds']:
                name = (f"{cfg['wandb_run_name']}-lr{lr:g}-seed{seed}"
                        + (f'-checkpoint{k}' if len(encoders) > 1 else '')
                        + ('-scratch' if from_scratch else ''))
                per_seed.append(one_run(cfg, task, encoder, data, pad_id, seed, lr,
                                        from_scratch, name, cache))
        runs[lr] = per_seed

    def dev_median(lr: float) -> float:
        return statistics.median(r['dev'][headline] for r in runs[lr])

    for lr in cfg['learning_rate']:
        run(lr)
    while len(runs) > 1:
        grid, best = sorted(runs), max(runs, key=dev_median)
        edge = 'low' if best == grid[0] else 'high' if best == grid[-1] else None
        if edge is None or edge in extended:
            break
        extended.add(edge)
        step = grid[1] / grid[0] if edge == 'low' else grid[-1] / grid[-2]
        print(f'the best learning rate on dev, {best:g}, is at the edge of the grid: trying '
              f"{best / step if edge == 'low' else best * step:g} too")
        run(best / step if edge == 'low' else best * step)
    best = max(runs, key=dev_median)
    per_seed = runs[best]
    return dict(learning_rate=best, grid={f'{lr:g}': dev_median(lr) for lr in sorted(runs)},
                dev=statistics.median(r['dev'][headline] for r in per_seed),
                metrics={k: statistics.median(r['test'][k] for r in per_seed)
                         for k in per_seed[0]['test']},
                per_seed=[r['test'] for r in per_seed],
                predictions=[[r['predictions'] for r in per_seed[k:k + len(cfg['seeds'])]]
                             for k in range(0, len(per_seed), len(cfg['seeds']))])


BOOTSTRAP_SAMPLES = 2000


def bootstrap_interval(metric, gold: np.ndarray, arm: list, baseline: list | None = None,
                       groups: list | None = None, seed: int = 0) -> tuple[float, float, float]:
    """The mean over runs of metric(arm's test predictions), arm[encoder][seed] (one encoder, or
    one recipe's pre-training seeds), or with baseline of the paired difference (arm - baseline on
    the same fine-tuning seed and examples; a baseline of one encoder pairs with each of arm's),
    and its 95% interval: percentiles of BOOTSTRAP_SAMPLES resamples of the encoders, the seeds
    and the test examples together. With groups (each example's section) whole groups are
    resampled, since examples of one passage of text succeed or fail together."""
    def value(encoders: np.ndarray, seeds: np.ndarray, rows: np.ndarray) -> float:
        return float(np.mean([
            metric(arm[e][s][rows], gold[rows])
            - (metric(baseline[e if len(baseline) > 1 else 0][s][rows], gold[rows])
               if baseline else 0.0)
            for e in encoders for s in seeds]))
    labels = np.arange(len(gold)) if groups is None else np.asarray(groups)
    members = [np.flatnonzero(labels == g) for g in np.unique(labels)]
    rng = np.random.default_rng(seed)
    n_encoders, n_seeds = len(arm), len(arm[0])

    def resample() -> np.ndarray:
        return np.concatenate([members[g] for g in rng.integers(len(members), size=len(members))])
    draws = [value(rng.integers(n_encoders, size=n_encoders),
                   rng.integers(n_seeds, size=n_seeds), resample())
             for _ in range(BOOTSTRAP_SAMPLES)]
    low, high = np.percentile(draws, [2.5, 97.5])
    return (value(np.arange(n_encoders), np.arange(n_seeds), np.arange(len(gold))),
            float(low), float(high))


@torch.no_grad()
def zero_shot(encoders: list[Encoder], tok: Tokenizer, max_tokens: int, max_length: int,
              device: str) -> dict:
    """The MLM's own scores, no fine-tuning, on max_tokens tokens of the held-out sections without
    the lines pre-training read (unseen_lines), shared evenly between the works (each from the
    start of its held-out text): each token masked alone in
    turn (Salazar et al. 2020), windows of max_length tokens. Returns the share predicted right
    (masked-token accuracy) and the mean log-probability of the right token (pseudo-log-likelihood
    per token, in nats), pooled over encoders (one recipe's pre-training seeds), each with a 95%
    interval from resampling the works (and the encoders)."""
    held_out = shakespeare_split()[1]
    works = [tok.encode_ordinary('\n\n'.join(map(unseen_lines, sections)))[
        :max_tokens // len(held_out) + (k < max_tokens % len(held_out))]
        for k, sections in enumerate(held_out.values())]
    # (tokens, right, log-probability) of each encoder on each work
    counts = np.array([[(len(ids), *masked_scores(encoder.to(device).eval(), tok, ids,
                                                  max_length, device)) for ids in works]
                       for encoder in encoders])
    rng = np.random.default_rng(0)
    draws = np.array([counts[rng.integers(len(encoders), size=len(encoders))][
        :, rng.integers(len(works), size=len(works))].sum((0, 1))
        for _ in range(BOOTSTRAP_SAMPLES)])
    n = counts[..., 0].sum()
    accuracy, log_prob = draws[:, 1] / draws[:, 0], draws[:, 2] / draws[:, 0]
    return dict(masked_accuracy=counts[..., 1].sum() / n,
                masked_accuracy_interval=np.percentile(accuracy, [2.5, 97.5]).tolist(),
                pseudo_log_likelihood=counts[..., 2].sum() / n,
                pseudo_log_likelihood_interval=np.percentile(log_prob, [2.5, 97.5]).tolist(),
                tokens=int(counts[0, :, 0].sum()), works=len(held_out),
                checkpoints=len(encoders))


def masked_scores(encoder: Encoder, tok: Tokenizer, ids: list[int], max_length: int,
                  device: str) -> tuple[int, float]:
    """How many of ids the MLM predicts right, and the summed log-probability of the right ones,
    each token masked alone in windows of max_length tokens."""
    room, correct, log_prob = max_length - 2, 0, 0.0
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
    return correct, log_prob


def sample(examples: list, limit: int | None) -> list:
    """A random subset of at most limit examples, the same in every run."""
    if limit is None or limit >= len(examples):
        return examples
    keep = np.sort(np.random.default_rng(0).choice(len(examples), limit, replace=False))
    return [examples[i] for i in keep]


def check(cfg: dict) -> None:
    check_choices(cfg, dict(pooling=('cls', 'mean')))
    if cfg['baseline'] == 'scratch' and cfg['from_scratch']:
        fail('--baseline=scratch compares init_from with random weights: drop --from_scratch')
    if cfg['baseline'] == cfg['init_from'] and not cfg['from_scratch']:
        fail('--baseline is init_from itself: name another recipe, or --baseline=scratch')
    check_at_least(cfg, dict(epochs=1, head_epochs=0, batch_size=1, log_interval=1))
    if cfg['probe'] and cfg['head_epochs']:
        fail('--head_epochs trains the head before fine-tuning the encoder, and --probe never '
             'trains the encoder: use one of them')
    if cfg['max_length'] < 4:
        fail(f"max_length={cfg['max_length']} leaves no room for text; use 128 or more")
    if not cfg['learning_rate'] or not all(isinstance(lr, (int, float)) and lr > 0
                                           for lr in cfg['learning_rate']):
        fail(f"learning_rate={cfg['learning_rate']}: "
             'give numbers > 0, e.g. --learning_rate=1e-4,3e-4,1e-3')
    if not 0 <= cfg['warmup_fraction'] < 1:
        fail('warmup_fraction must be in [0, 1)')
    if not cfg['seeds'] or not all(isinstance(s, int) for s in cfg['seeds']) or \
            len(set(cfg['seeds'])) < len(cfg['seeds']):
        fail(f"seeds={cfg['seeds']}: give distinct integers, e.g. --seeds=0,1,2")
    arm, others = len(cfg['init_from'].split(',')), len(cfg['baseline'].split(','))
    if cfg['baseline'] not in ('none', 'scratch') and others not in (1, arm):
        fail(f'--baseline has {others} checkpoints and --init_from {arm}: give one, or one per '
             'init_from checkpoint (paired by position)')
    if cfg['baseline'] != 'none' and len(cfg['seeds']) < 3:
        fail(f"--baseline with {len(cfg['seeds'])} seed(s): a difference needs the seeds' "
             'spread; give at least three, e.g. --seeds=0,1,2')


def check_held_out(task: Task, history: list, init_from: str) -> bool | None:
    """Whether a built-in task's dev and test text was held out of everything the model's weights
    were trained on (history: its data records, oldest first; None for a task of another kind):
    stop with one line when any of it was the embedded corpus under another split (its held-out
    text may be in that train.bin), and say so when some of it is data the record cannot vouch
    for (ModernBERT-base, a model of your own corpus, a record-less start)."""
    if not task.name.startswith('shakespeare_'):
        return None
    rule = shakespeare_split_rule(SHAKESPEARE_HELD_OUT)
    for record in history:
        if 'shakespeare' in record['dataset'].split(',') and record['split'] != rule:
            fail(f"{init_from} was trained on the embedded corpus as {record['dataset']!r} split "
                 f"{record['split']!r}, so {task.name}'s dev and test text may be in its training "
                 'data; prepare it with python prepare.py (the default --val_fraction) and train '
                 'again')
    elsewhere = [r['dataset'] for r in history if r['dataset'] != 'shakespeare']
    if not history or elsewhere:
        print(f"{init_from} was trained on {', '.join(elsewhere) or 'data it does not record'}: "
              f'its {task.name} scores are not on text held out of its pre-training')
        return False
    return True


def load_arm(sources: list[str], task: Task) -> tuple[list[Encoder], dict | None, bool | None]:
    """The models at sources (one, or one recipe's pre-training seeds: the same architecture and
    tokenizer), their tokenizer record, and whether the task's dev and test text was held out of
    all of their pre-training (check_held_out)."""
    loaded = [load_model(source) for source in sources]
    for source, other in zip(sources[1:], loaded[1:]):
        if other.model.config != loaded[0].model.config or other.tokenizer != loaded[0].tokenizer:
            fail(f'{source} has another architecture or tokenizer than {sources[0]}: several '
                 'checkpoints of one arm must be one recipe pre-trained with different seeds')
    held_out = [check_held_out(task, one.history, source) for source, one in zip(sources, loaded)]
    return ([one.model for one in loaded], loaded[0].tokenizer,
            None if held_out[0] is None else all(held_out))


def load_arms(cfg: dict, task: Task) -> tuple[list, list, Tokenizer, Tokenizer, bool | None]:
    """init_from's encoders, --baseline's when it names checkpoints (else []), the tokenizer of
    each arm (the baseline's may be another: a start model against its extended-vocabulary
    successor), and whether the task's evaluation text was held out of everything they were
    trained on."""
    encoders, record, held_out = load_arm(cfg['init_from'].split(','), task)
    tok = load_recorded_tokenizer(record, cfg['init_from'])
    others, other_tok = [], tok
    if cfg['baseline'] not in ('none', 'scratch'):
        others, other_record, other_held_out = load_arm(cfg['baseline'].split(','), task)
        if other_record != record:
            other_tok = load_recorded_tokenizer(other_record, cfg['baseline'])
        held_out = held_out and other_held_out
    return encoders, others, tok, other_tok, held_out


def write_task(task: Task, folder: str) -> None:
    """The task's train, dev and test split(s) as .jsonl files in folder, one record per example:
    "text" (and "text_pair"), "label" (the class name, or the score). --task=files reads them back:
    --train_file=train.jsonl --validation_file=dev.jsonl --test_file=test.jsonl."""
    os.makedirs(folder, exist_ok=True)
    splits = {'train': task.train, 'dev': task.dev, **task.tests}
    for split, examples in splits.items():
        with open(os.path.join(folder, f'{split}.jsonl'), 'w') as f:
            for texts, y in examples:
                record = dict(zip(('text', 'text_pair'), texts))
                record['label'] = task.label_names[y] if task.label_names else y
                f.write(json.dumps(record) + '\n')
    print(f"wrote {', '.join(f'{len(v)} {k}' for k, v in splits.items())} examples of "
          f'{task.name} to {folder}')


def interval_text(value: float, low: float, high: float) -> str:
    return f'{value:.4f} ({low:.4f} to {high:.4f})'


def compare(task: Task, gold: np.ndarray, groups: list | None, arms: dict) -> dict | None:
    """Each arm's test score and 95% interval; with a baseline arm, the paired difference and its
    interval, printed as one table. A difference is a win only when its interval excludes 0."""
    metric, names = METRICS[task.metrics[0]], list(arms)
    for arm in arms.values():
        arm['interval'] = bootstrap_interval(metric, gold, arm['predictions'], groups=groups)
    first = next(iter(arms.values()))
    n_encoders, n_seeds = len(first['predictions']), len(first['predictions'][0])
    units = f'{len(set(groups))} sections' if groups is not None else 'examples'
    over = (f'{n_encoders} pre-training seeds x {n_seeds} fine-tuning seeds' if n_encoders > 1
            else f'{n_seeds} seed(s)')
    print(f"{task.name}, test {task.metrics[0]} on {len(gold)} examples: mean over {over}, 95% "
          f"interval from resampling the {'pre-training and fine-tuning ' * (n_encoders > 1)}"
          f'seeds and the test {units}; '
          + ('the learning rate chosen on dev:' if len(first['grid']) > 1
             else 'one learning rate, none chosen:'))
    for name, arm in arms.items():
        print(f"  {name:<40} lr {arm['learning_rate']:<8g} dev {arm['dev']:.4f}   test "
              + interval_text(*arm['interval']))
    if len(arms) < 2:
        return None
    diff = bootstrap_interval(metric, gold, arms[names[0]]['predictions'],
                              arms[names[1]]['predictions'], groups)
    verdict = (f'{names[0]} wins' if diff[1] > 0 else f'{names[1]} wins' if diff[2] < 0
               else 'no difference resolved: the interval includes 0')
    print(f"  {'difference':<40} {'':<11} {'':<10}   test {interval_text(*diff)}: {verdict}")
    return dict(value=diff[0], interval=diff[1:], verdict=verdict)


def main(argv: list[str]) -> dict:
    cfg = configure(DEFAULTS, argv)
    check(cfg)
    task = load_task(cfg)
    if cfg['write_task']:
        write_task(task, cfg['write_task'])
        return {}
    encoders, others, tok, other_tok, held_out = load_arms(cfg, task)
    encoder = encoders[0]
    if cfg['max_length'] > encoder.config.max_position_embeddings:
        fail(f"max_length={cfg['max_length']} exceeds the model's max_position_embeddings="
             f'{encoder.config.max_position_embeddings}')
    # every seed and arm is scored on the same dev and test examples, so their scores pair up
    evals = {'dev': sample(task.dev, cfg['max_eval_samples']),
             **{split: sample(examples, cfg['max_eval_samples'])
                for split, examples in task.tests.items()}}
    data = encode_task(task, evals, tok, cfg['max_length'])
    # a baseline of another tokenizer reads the same examples in its own tokens
    other_data = data if other_tok is tok else encode_task(task, evals, other_tok,
                                                           cfg['max_length'])
    baseline = task.majority_baseline()
    print(f'{task.name}: {len(task.train)} training examples, '
          + ', '.join(f'{len(v)} {k}' for k, v in evals.items())
          + f", {task.num_labels if task.num_labels > 1 else 'regression'} labels"
          + (f', majority baseline {task.metrics[0]} {baseline:.4f}' if baseline is not None
             else '')
          + f"; {'a linear probe of ' if cfg['probe'] else ''}"
          f"{'random weights of ' if cfg['from_scratch'] else ''}{cfg['init_from']}, "
          f'{encoder.get_num_params() / 1e6:.2f}M parameters'
          + (f'; {task.note}' if task.note else ''))
    name = f"{'random weights of ' if cfg['from_scratch'] else ''}{cfg['init_from']}"
    # random weights are the same draw whichever checkpoint's architecture they take
    arms = {name: run_arm(cfg, task, encoders[:1] if cfg['from_scratch'] else encoders, data,
                          tok.pad_token_id, cfg['from_scratch'])}
    # the same grid, seeds and examples from random weights, or from another recipe
    if cfg['baseline'] != 'none':
        arms['random weights' if cfg['baseline'] == 'scratch' else cfg['baseline']] = run_arm(
            cfg, task, others or [encoder], other_data, other_tok.pad_token_id, not others)
    groups = (sample(task.test_groups, cfg['max_eval_samples'])
              if task.test_groups is not None else None)  # the same draw as the test examples
    difference = compare(task, data['evals'][next(iter(task.tests))][1], groups, arms)
    zero = None
    with_zero_shot = cfg['zero_shot_tokens'] and task.name.startswith('shakespeare_')
    if with_zero_shot:
        zero = zero_shot([starting_encoder(encoder, True, cfg['seeds'][0])]
                         if cfg['from_scratch'] else encoders, tok, cfg['zero_shot_tokens'],
                         cfg['max_length'], cfg['device'])
        low, high = zero['masked_accuracy_interval']
        print(f"zero-shot on {zero['tokens']:,} held-out tokens of {zero['works']} works"
              + (f", {len(encoders)} checkpoints pooled" if len(encoders) > 1 else '') + ': '
              f"masked-token accuracy {zero['masked_accuracy']:.4f} ({low:.4f} to {high:.4f}), "
              f"pseudo-log-likelihood {zero['pseudo_log_likelihood']:.3f}")
    arm, other = arms[name], list(arms.values())[-1] if len(arms) > 1 else None
    if other is not None and with_zero_shot:
        other['zero_shot'] = zero_shot(others or [starting_encoder(encoder, True, cfg['seeds'][0])],
                                       other_tok, cfg['zero_shot_tokens'], cfg['max_length'],
                                       cfg['device'])
    result = dict(task=task.name, metric=task.metrics[0], value=arm['metrics'][task.metrics[0]],
                  metrics=arm['metrics'], per_seed=arm['per_seed'], seeds=cfg['seeds'],
                  learning_rate=arm['learning_rate'], grid=arm['grid'], dev=arm['dev'],
                  mean=arm['interval'][0], interval=arm['interval'][1:],
                  majority_baseline=baseline, zero_shot=zero, init_from=cfg['init_from'],
                  from_scratch=cfg['from_scratch'], probe=cfg['probe'], pooling=cfg['pooling'],
                  standardize=cfg['standardize'],
                  epochs=cfg['epochs'], head_epochs=cfg['head_epochs'],
                  relative_lr=cfg['relative_lr'],
                  batch_size=cfg['batch_size'], max_length=cfg['max_length'],
                  train_examples=len(labelled_subset(len(task.train), cfg['max_train_samples'], 0)),
                  test_examples=len(data['evals'][next(iter(task.tests))][1]), note=task.note,
                  held_out=held_out, machine=machine())
    if other is not None:
        result['baseline'] = dict(arm=cfg['baseline'], value=other['metrics'][task.metrics[0]],
                                  mean=other['interval'][0], interval=other['interval'][1:],
                                  learning_rate=other['learning_rate'], grid=other['grid'],
                                  per_seed=other['per_seed'], zero_shot=other.get('zero_shot'))
        result['difference'] = difference
    if cfg['out']:
        Path(cfg['out']).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg['out'] + '.tmp').write_text(json.dumps(result, indent=2) + '\n')
        os.replace(cfg['out'] + '.tmp', cfg['out'])
    return result


if __name__ == '__main__':
    main(sys.argv[1:])
