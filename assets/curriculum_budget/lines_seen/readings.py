"""PLAN.md's readings: each fine-tuning run's accuracy on the seen pairs (the first 3,000 of the
test file, text pre-training read) and on the held-out test pairs, read from run.sh's cache through
the `*.cached.log` files copied here; per checkpoint the mean over fine-tuning seeds, staged - full
on each part with its 95% t-interval over the pre-training seeds, and the difference of the two;
then each checkpoint's MLM loss on the training text against its val loss (over the targets train
holds).

    python assets/curriculum_budget/lines_seen/readings.py <runs folder> > readings.txt
"""
import json
import os
import re
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..', 'dev'))
from domain_arms_summary import t_interval  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SEEN = 3000
ARMS = ('staged', 'full')


def runs_of(runs: str, arm: str) -> dict:
    """{pre-training seed: [(fine-tuning seed, seen accuracy, held-out accuracy)]} of an arm."""
    with open(os.path.join(runs, 'test.jsonl')) as f:
        gold = np.array([json.loads(line)['label'] == 'next' for line in f])  # 'next' sorts 2nd
    with open(os.path.join(HERE, f'{arm}.json')) as f:
        seeds = [re.search(r'_s(\d+)/', p)[1] for p in json.load(f)['init_from'].split(',')]
    out, k = {}, None
    with open(os.path.join(HERE, f'{arm}.cached.log')) as f:
        for line in f:
            if m := re.match(r'checkpoint (\d+) of', line):
                k = int(m[1]) - 1
            elif m := re.match(r'lr \S+, seed (\d+): dev \S+ \((.+)\)$', line.strip()):
                path = os.path.join(runs, *m[2].split('/')[-2:])  # cache_<arm>/<run>.pt
                right = torch.load(path, weights_only=True)['predictions'].numpy() == gold
                out.setdefault(seeds[k], []).append(
                    (int(m[1]), right[:SEEN].mean(), right[SEEN:].mean()))
    return out


def main(runs: str) -> None:
    arms = {arm: runs_of(runs, arm) for arm in ARMS}
    print('run: arm, pre-training seed, fine-tuning seed, seen accuracy, held-out accuracy')
    for arm, by_seed in arms.items():
        for s, rows in sorted(by_seed.items()):
            for ft, seen, held in rows:
                print(f'  {arm:7s} {s} {ft}  {seen:.4f}  {held:.4f}')
    seeds = sorted(arms['staged'])
    mean = {arm: np.array([[np.mean([r[i] for r in arms[arm][s]]) for i in (1, 2)]
                           for s in seeds]) for arm in ARMS}
    print('\ncheckpoint means over fine-tuning seeds (seen, held-out, seen - held-out):')
    for arm in ARMS:
        for s, (seen, held) in zip(seeds, mean[arm]):
            print(f'  {arm:7s} {s}  {seen:.4f}  {held:.4f}  {seen - held:+.4f}')
    diff = mean['staged'] - mean['full']
    print(f'\nstaged - full over {len(seeds)} pre-training seeds, mean (95% t-interval):')
    print(f'  seen pairs      {t_interval(diff[:, 0], "+.4f")}')
    print(f'  held-out pairs  {t_interval(diff[:, 1], "+.4f")}')
    print(f'  seen - held-out {t_interval(diff[:, 0] - diff[:, 1], "+.4f")}')
    val = {}
    for s in seeds:
        with open(os.path.join(HERE, '..', 'staged_vs_full', f'val_loss_split_s{s}.jsonl')) as f:
            for line in f:
                r = json.loads(line)
                val[r['ckpt']] = r['held']
    print('\nMLM loss over the targets train holds: train text, val text, val - train')
    gaps = {}
    for arm in ARMS:
        with open(os.path.join(HERE, f'train_loss_{arm}.jsonl')) as f:
            for line in f:
                r = json.loads(line)
                s = re.search(r'_s(\d+)/', r['ckpt'])[1]
                gaps[arm, s] = val[r['ckpt']] - r['held']
                print(f'  {arm:7s} {s}  {r["held"]:.4f}  {val[r["ckpt"]]:.4f}  {gaps[arm, s]:+.4f}')
    gap = np.array([gaps['staged', s] - gaps['full', s] for s in seeds])
    print(f'  staged - full, val - train gap: {t_interval(gap, "+.4f")}')


if __name__ == '__main__':
    main(sys.argv[1])
