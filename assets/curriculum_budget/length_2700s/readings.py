"""PLAN.md's amended readings: per seed, its replays at 10,001 and 7,121 iterations beside its timed
run, shakespeare_lines (mean of fine-tuning seeds 0 to 2) at both rates and val loss at the end;
then the length gap per seed and its mean, and each replay against its timed run.

    python assets/curriculum_budget/length_2700s/readings.py [<runs folder>] > readings.txt

With the runs folder (run.sh's, holding the checkpoints) it also prints each replay's layer-matrix
RMS and largest spectral norm, and those of seed 1440's timed checkpoint (TIMED_1440).
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RATES = ('0.0003333333333333333', '1e-3')
LOW, HIGH = RATES
# seed: (its 10,001-iteration replay, its 7,121-iteration replay, its timed run's folder and name)
TIMED_1440 = '/work/runs/es2/staged_s1440/ckpt.pt'  # ../equal_steps_2700s/second.sh's runs folder
SEEDS = {1356: ('r1356', 'b1356', ('staged_vs_full', 'staged_s1356')),
         1440: ('a1440', 'r1440', ('equal_steps_2700s/vs_staged', 'staged_s1440'))}


def run(folder: str, name: str) -> dict:
    """Last iteration, final val loss and lines test/dev at each rate of one run's raw files."""
    rows = [json.loads(line) for line in open(os.path.join(folder, f'{name}.jsonl'))]
    last = [r for r in rows if 'val_loss' in r][-1]
    got = dict(iters=last['iter'], val=last['val_loss'])
    for rate in RATES:
        ft = json.load(open(os.path.join(folder, f'lines_{name}_lr{rate}.json')))
        assert ft['seeds'][:3] == [0, 1, 2], (name, rate)
        accs = [s['accuracy'] for s in ft['per_seed']][:3]  # fine-tuning seeds 0 to 2
        got[rate] = dict(test=sum(accs) / 3, seeds=accs, dev=ft['dev'])
    return got


def show(label: str, r: dict) -> None:
    print(f'{label}: {r["iters"]} iterations, val loss {r["val"]:.4f}; lines ' + '; '.join(
        f'{float(k):.2g}: test {r[k]["test"]:.4f} ({", ".join(f"{a:.4f}" for a in r[k]["seeds"])}),'
        f' dev {r[k]["dev"]:.4f}' for k in RATES))


def main() -> None:
    gaps = {}
    for seed, (long, short, (folder, timed)) in SEEDS.items():
        got = {name: run(HERE, name) for name in (long, short)}
        got[timed] = run(os.path.join(HERE, '..', folder), timed)
        for name, label in ((long, 'replayed'), (short, 'replayed'), (timed, 'timed')):
            show(f'seed {seed}, {name} ({label})', got[name])
        gaps[seed] = {k: got[long][k]['test'] - got[short][k]['test'] for k in RATES}
        replay = long if got[timed]['iters'] == got[long]['iters'] else short
        d = got[replay][LOW]['test'] - got[timed][LOW]['test']
        print(f'seed {seed}: 2. {replay} - the timed run at 3.3e-4 = {d:+.4f}: '
              + ('close' if abs(d) <= 0.03 else 'a gap'))
    for k in RATES:
        per = ', '.join(f'{s}: {g[k]:+.4f}' for s, g in gaps.items())
        print(f'10,001 - 7,121 iterations at {float(k):.2g}: {per}; '
              f'mean {sum(g[k] for g in gaps.values()) / len(gaps):+.4f}')
    mean = sum(g[LOW] for g in gaps.values()) / len(gaps)
    verdict = ('a lead for length' if mean <= -0.04 and all(g[LOW] < 0 for g in gaps.values()) else
               'length not shown' if mean > -0.02 else 'not resolved')
    print(f'1. length at 3.3e-4: {verdict}')
    if len(sys.argv) > 1:
        sys.path.insert(0, os.path.join(HERE, '..', 'onegrow_lines_rate'))
        from weights import sizes
        ckpts = {n: os.path.join(sys.argv[1], n, 'ckpt.pt') for v in SEEDS.values() for n in v[:2]}
        for name, path in dict(ckpts, staged_s1440=TIMED_1440).items():
            rms, norm = sizes(path)
            print(f'{name}: layer-matrix RMS {rms:.4f}, largest spectral norm {norm:.2f}')


if __name__ == '__main__':
    main()
