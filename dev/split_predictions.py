"""
A fine-tuning comparison of two arms split in two by a property of each test example: reads the test
predictions that the comparison (finetune.py --init_from=... --baseline=... --cache_dir=...) kept
in its run cache, through the cache paths its log printed, at each arm's chosen learning rate;
prints each arm's accuracy on the two parts, the difference by pre-training seed with a 95%
t-interval over those seeds (the test examples held fixed), and whether it differs between the
parts. Random weights as the baseline pair with each checkpoint by seed.

    named: the text holds its label's name (a code function and its family, dev/domain_task.py);
    rare VOCAB: a larger share of the tokens fine-tuning reads are outside a prepare.py
        --shrink_vocab=K file than in the median test example (what a vocabulary curriculum reads
        as RARE for most of its run).

The test examples are the task folder's test.jsonl, or else the built-in task the result names.

    python dev/split_predictions.py family3.log family3.json named tasks/code_family
    python dev/split_predictions.py works.log works.json rare data/shakespeare/vocab_4096.pt
"""
import json
import re
import sys
from pathlib import Path

import numpy as np
import torch
from domain_arms_summary import t_interval

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from finetune import DEFAULTS, load_task  # noqa: E402
from tokenizer import load_tokenizer  # noqa: E402

RUN = re.compile(r'lr (\S+), seed (\d+): dev \S+ \((\S+)\)')


def squeezed(text: str) -> str:
    return text.replace('_', '').lower()


def test_examples(result: dict, folder: str | None) -> tuple[list[str], np.ndarray, list[str]]:
    """The test texts, their label indices and the label names, as finetune.py read them."""
    files = {} if folder is None else dict(task='files', **{
        f'{split}_file': str(Path(folder) / f'{name}.jsonl')
        for split, name in (('train', 'train'), ('validation', 'dev'), ('test', 'test'))})
    task = load_task({**DEFAULTS, 'task': result['task'], **files})
    test = next(iter(task.tests.values()))
    return [t[0] for t, _ in test], np.array([y for _, y in test]), task.label_names


def split(how: list[str], texts: list[str], truth: np.ndarray, names: list[str],
          max_length: int) -> tuple:
    """(a boolean per example, the two parts' names)."""
    if how[0] == 'named':
        return (np.array([squeezed(names[y]) in squeezed(t) for t, y in zip(texts, truth)]),
                ('named', 'not named'))
    vocab = torch.load(how[1], weights_only=False)
    meta = json.loads((Path(how[1]).parent / 'meta.json').read_text())
    tok = load_tokenizer(meta['tokenizer'])
    outside = (vocab['full_to_shrunk'] == vocab['rare_id']).numpy()
    # the share of the tokens fine-tuning reads (max_length less [CLS] and [SEP]) that are rare
    share = np.array([outside[tok.encode_ordinary(t)[:max_length - 2]].mean() for t in texts])
    k = np.median(share)
    return share > k, (f'more than {k:.1%} rare tokens', f'{k:.1%} or fewer')


def chosen_predictions(log: str, result: dict) -> list[list[np.ndarray]]:
    """Each arm's test predictions at its chosen rate, run by run in the log's order (checkpoint,
    then seed): [arm, baseline]."""
    # the log lists every run of the first arm (each checkpoint, seed and rate), then the baseline's
    runs = [(float(m[1]), m[3]) for m in map(RUN.match, open(log)) if m]
    first = len(result['init_from'].split(',')) * len(result['seeds']) * len(result['grid'])
    return [[torch.load(p, weights_only=False)['predictions'].numpy()
             for lr, p in arm if np.isclose(lr, rate)]
            for arm, rate in zip((runs[:first], runs[first:]),
                                 (result['learning_rate'], result['baseline']['learning_rate']))]


def accuracies(log: str, result: dict, truth: np.ndarray, part: np.ndarray) -> list[np.ndarray]:
    """Each arm's accuracy (all, part, the rest) per run at its chosen rate."""
    return [np.array([[c.mean(), c[part].mean(), c[~part].mean()]
                      for c in (p == truth for p in arm)])
            for arm in chosen_predictions(log, result)]


def main() -> None:
    log, result, how = sys.argv[1], json.loads(Path(sys.argv[2]).read_text()), sys.argv[3:]
    if how[:1] not in (['named'], ['rare']) or (how[0] == 'rare' and len(how) < 2):
        sys.exit('split by: named [task folder], or rare <vocab_K.pt> [task folder]')
    folder = how[2 if how[0] == 'rare' else 1:]
    texts, truth, names = test_examples(result, folder[0] if folder else None)
    part, part_names = split(how, texts, truth, names, result['max_length'])
    a, b = accuracies(log, result, truth, part)
    checkpoints = len(result['init_from'].split(','))
    if len(b) < len(a):  # random weights: a fine-tuning seed pairs with it on every checkpoint
        b = np.tile(b, (checkpoints, 1))
    by_seed = (a - b).reshape(checkpoints, -1, 3).mean(1)
    print(f'{part.sum()} of {len(part)} test examples: {part_names[0]}')
    # the last row: whether the difference itself differs between the two parts
    by_seed = np.column_stack([by_seed, by_seed[:, 1] - by_seed[:, 2]])
    for i, name in enumerate(('all', *part_names, 'the first part less the second')):
        d = by_seed[:, i]
        scores = f'{a[:, i].mean():.3f} vs {b[:, i].mean():.3f}, ' if i < 3 else ''
        print(f'{name}: {scores}difference {t_interval(d, "+.3f")}, '
              f'by seed {", ".join(f"{x:+.3f}" for x in d)}')


if __name__ == '__main__':
    main()
