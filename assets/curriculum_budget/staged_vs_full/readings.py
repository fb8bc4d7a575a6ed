"""PLAN.md's readings for the staged curriculum against the full vocabulary at 45 minutes, from the
raw files run.sh copies here. Every seed that started is listed with its validity (the load rule,
both logs ending with their final save, each curriculum arm back in the full vocabulary at batch
16) and each arm's iterations; until the plan's ten valid seeds are in, nothing else. Then: each
arm's fine-tuning rate per task chosen on dev over the ten, per seed both arms' readings and
staged minus full, and over the ten the mean, its 95% t-interval and the goal's verdict; beside
it the interval over the sessions' means.

    python assets/curriculum_budget/staged_vs_full/readings.py > readings.txt
    python assets/curriculum_budget/staged_vs_full/readings.py <folder> <arm> [<ref>]
        # another study of run.sh's (CONFIG=... ARM=<arm> HERE=<folder>): its curriculum arm,
        # and the arm it was paired with where that is not the full vocabulary (REF=<ref>)
"""
import glob
import json
import os
import re
import sys

import numpy as np

ROOT = os.path.join(os.path.dirname(__file__), '..', '..', '..')
sys.path[:0] = [ROOT, os.path.join(ROOT, 'dev')]
from curriculum import REMAPPING_OPERATIONS  # noqa: E402
from domain_arms_summary import T975, t_interval  # noqa: E402

HERE = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
# another study of run.sh's sets its size, fine-tuning seeds, rate grids, budget and tasks (the
# goal's bars are the 45-minute budget's at ten seeds; otherwise its readings are descriptive), as
# ../onegrow_900s and ../early_decay_2700s do
PLANNED = int(os.environ.get('PLANNED', 10))
SEEDS = os.environ.get('SEEDS', '').split()  # only these seeds of the folder, where set
FT_SEEDS = len(os.environ.get('FT_SEEDS', '0,1,2,3,4').split(','))
LINES_RATES = tuple(os.environ.get('LINES_RATES', '0.0003333333333333333 1e-3').split())
WORKS_RATES = tuple(os.environ.get('WORKS_RATES', '1e-3 3e-3 9e-3').split())
BUDGET = int(os.environ.get('BUDGET', 2700))
ARMS = tuple(sys.argv[2:4]) + ('staged', 'full')[len(sys.argv[2:4]):]
TASKS = os.environ.get('TASKS', 'lines works').split()
RATES = {task: {'lines': LINES_RATES, 'works': WORKS_RATES}[task] for task in TASKS}
# (reading, +1 where higher is better): the goal reads the far end of staged - full against
# -0.01 (higher is better) or +0.01 (val loss); the rest are descriptive
GOAL = {'val loss': -1, **{f'shakespeare_{task}': 1 for task in TASKS}}
SCORES = os.environ.get('SCORES', '1') == '1'  # run.sh's zero-shot scores and val loss split
DESCRIPTIVE = ({'folded val loss': -1, 'zero-shot accuracy': 1, 'pseudo-log-likelihood': 1}
               if SCORES else {})


def read(name: str):
    with open(os.path.join(HERE, name)) as f:
        return [json.loads(line) for line in f] if name.endswith('jsonl') else json.load(f)


def void(seed: str) -> str | None:
    """Why the seed is void, or None."""
    with open(os.path.join(HERE, f'loadavg_s{seed}.txt')) as f:
        loads = [float(line.split()[1]) for line in f][2:]  # the first two minutes left out
    for i in range(len(loads) - 2):
        if all(not 1.5 <= x <= 2.6 for x in loads[i:i + 3]):
            return 'the load outside 1.5 to 2.6 on 3 consecutive readings'
    for arm in ARMS:
        with open(os.path.join(HERE, f'{arm}_s{seed}.log')) as f:
            if not re.search(r'saved \S+ckpt\.pt\s*$', f.read()):
                return f'the {arm} log does not end with its final save'
    for arm in ARMS:  # a curriculum arm ends in the full vocabulary at the full arm's batch (16)
        ops = [r for r in read(f'{arm}_s{seed}.jsonl') if 'op' in r]
        vocab = [r['op'] for r in ops if r['op'] in REMAPPING_OPERATIONS]
        batch = [r['value'] for r in ops if r['op'] == 'set_batch_size']
        if vocab[-1:] != ['disable_vocab_remapping'] and (vocab or arm == ARMS[0]):
            return f'the {arm} run did not end in the full vocabulary'
        if batch and batch[-1] != 16:
            return f'the {arm} run did not end at batch 16'
    return None


def last_eval(seed: str, arm: str) -> dict:
    recs = read(f'{arm}_s{seed}.jsonl')
    return dict([r for r in recs if 'val_loss' in r and not r.get('after_op')][-1],
                tokens=max(r['tokens'] for r in recs if 'tokens' in r))


def by_ckpt(name: str, arm: str, seed: str) -> dict:
    return next(r for r in read(name) if f'/{arm}_s{seed}/' in r.get('ckpt', r.get('init_from')))


def finetuned(task: str, arm: str, seed: str, rate: str) -> dict:
    out = read(f'{task}_{arm}_s{seed}_lr{rate}.json')
    assert out['held_out'] and len(out['per_seed']) == FT_SEEDS, f'{task} {arm} {seed} {rate}'
    return dict(dev=out['dev'], test=float(np.mean([r['accuracy'] for r in out['per_seed']])))


def row(seed: str, arm: str, rates: dict) -> dict:
    out = {'val loss': last_eval(seed, arm)['val_loss'],
           **{f'shakespeare_{task}': finetuned(task, arm, seed, rates[arm, task])['test']
              for task in RATES}}
    if SCORES:
        zero_shot = by_ckpt(f'zero_shot_s{seed}.jsonl', arm, seed)
        split = by_ckpt(f'val_loss_split_s{seed}.jsonl', arm, seed)
        out.update({'folded val loss': split['folded'],
                    'zero-shot accuracy': zero_shot['masked_accuracy'],
                    'pseudo-log-likelihood': zero_shot['pseudo_log_likelihood']})
    return out


def main(planned: int | None = PLANNED) -> dict | None:
    """Prints the readings; returns the valid seeds, each arm's chosen rates and staged - full per
    reading and seed (None before `planned` valid seeds are in; `planned` None: every valid seed,
    at least two), for a study built on this one (../passes_300s/readings.py)."""
    seeds = sorted(re.search(r'_s(\d+)\.txt$', p).group(1)
                   for p in glob.glob(os.path.join(HERE, 'loadavg_s*.txt')))
    seeds = [seed for seed in seeds if seed in SEEDS or not SEEDS]
    valid = []
    for seed in seeds:
        why = void(seed)
        ends = {arm: last_eval(seed, arm) for arm in ARMS
                if os.path.exists(os.path.join(HERE, f'{arm}_s{seed}.jsonl'))}
        with open(os.path.join(HERE, f'session_s{seed}.txt')) as f:
            session = f.read().strip()
        print(f'seed {seed} (session {session}): ' + (f'VOID ({why})' if why else 'valid') + '; '
              + ', '.join(f"{arm} {e['iter']} iterations, {e['tokens']:,} tokens"
                          for arm, e in ends.items()))
        if not why:
            valid.append((seed, session))
    planned = planned or max(len(valid), 2)
    if len(valid) < planned:
        print(f'{len(valid)} of {planned} valid seeds: no reading before all are in (PLAN.md)')
        return None
    valid = valid[:planned]
    # each arm's rate on a task: the best mean over the checkpoints of their dev medians
    rates = {}
    for arm in ARMS:
        for task, grid in RATES.items():
            dev = {r: np.mean([finetuned(task, arm, s, r)['dev'] for s, _ in valid]) for r in grid}
            rates[arm, task] = max(grid, key=dev.get)
            print(f'{arm}, {task}: dev '
                  + ', '.join(f'{float(r):g} {d:.4f}' for r, d in dev.items())
                  + f'; chosen {float(rates[arm, task]):g}')
    diffs = {name: [] for name in {**GOAL, **DESCRIPTIVE}}
    for seed, _ in valid:
        rows = {arm: row(seed, arm, rates) for arm in ARMS}
        for name in diffs:
            diffs[name].append(rows[ARMS[0]][name] - rows[ARMS[1]][name])
        print(f'seed {seed}: ' + '; '.join(
            f"{name} {rows[ARMS[0]][name]:.4f} - {rows[ARMS[1]][name]:.4f} = {d[-1]:+.4f}"
            for name, d in diffs.items()))
    sessions = sorted({session for _, session in valid})
    for name, better in {**GOAL, **DESCRIPTIVE}.items():
        values = np.array(diffs[name])
        verdict = ''
        if name in GOAL and BUDGET == 2700 and planned >= 10:
            half = T975[planned - 1] * values.std(ddof=1) / np.sqrt(planned)
            low, high = values.mean() - half, values.mean() + half
            far, near = (low, high) if better > 0 else (high, low)
            met = far > -0.01 if better > 0 else far < 0.01
            ahead = near * better > 0 and far * better > 0
            verdict = '; the goal ' + ('met' if met else 'not met') + ('; ahead' if ahead else '')
        per_session = np.array([np.mean([d for d, (_, s) in zip(values, valid) if s == session])
                                for session in sessions])
        over_sessions = (f'; over the {len(sessions)} sessions\' means {t_interval(per_session)}'
                         if len(sessions) > 1 else '')
        print(f'{ARMS[0]} - {ARMS[1]} over {planned} seeds, {name}: {t_interval(values)}{verdict}'
              + over_sessions)
    return dict(valid=[s for s, _ in valid], rates=rates, diffs=diffs)


if __name__ == '__main__':
    main()
