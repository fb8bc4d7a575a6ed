"""The frozen probes of `dev/diagnose.py <ckpt> labels=N seed=S`, gathered: for each checkpoint the
final mean-pooled probe's dev and test accuracy over its label seeds; for each arm (the checkpoint's
folder name less its seed) the mean with a 95% t-interval over pre-training seeds, and minus random
weights (`scratch` outputs: a draw for each label seed) two ways: over pre-training seeds against
the draws' mean, and paired by label seed (the same N passages) over label seeds.

    python dev/probe_summary.py runs/probe300/*.txt
"""
import os
import re
import sys
from collections import defaultdict

import numpy as np
from domain_arms_summary import t_interval

LINE = re.compile(r'final probe mean, \d+ labels, seed (\d+): dev ([\d.]+) test ([\d.]+)')


def main() -> None:
    runs = defaultdict(dict)  # checkpoint -> label seed -> (dev, test)
    for path in sys.argv[1:]:
        with open(path) as f:
            m = LINE.search(f.read())
        if m:  # an output still being written has no final line yet
            ckpt = os.path.basename(path).rsplit('_labels', 1)[0]
            runs[ckpt][int(m[1])] = (float(m[2]), float(m[3]))
    arms = defaultdict(dict)  # arm -> pre-training seed -> label seed -> test
    for ckpt, by_seed in sorted(runs.items()):
        scores = np.array(list(by_seed.values()))
        print(f'{ckpt}: dev {scores[:, 0].mean():.4f} test {scores[:, 1].mean():.4f} '
              f'(label seeds {sorted(by_seed)})')
        arm, seed = ('random weights', 0) if 'scratch' in ckpt else ckpt.rsplit('_s', 1)
        arms[arm][seed] = {s: test for s, (_, test) in by_seed.items()}
    if 'random weights' not in arms:
        sys.exit('probe_summary.py: no finished random-weights output among the files; run '
                 'dev/diagnose.py <ckpt> scratch labels=N seed=S for each label seed')
    draws = arms.pop('random weights')[0]
    random_mean = np.mean(list(draws.values()))
    print(f'random weights: test {t_interval(np.array(list(draws.values())))} over draws')
    for arm, by_seed in arms.items():
        means = np.array([np.mean(list(v.values())) for v in by_seed.values()])
        paired = np.array([np.mean([v[s] for v in by_seed.values() if s in v]) - draws[s]
                           for s in sorted(draws)])
        print(f'{arm}: test {t_interval(means)}; minus random weights '
              f'{t_interval(means - random_mean)} over pre-training seeds, '
              f'{t_interval(paired)} paired by label seed')


if __name__ == '__main__':
    main()
