"""
finetune.py comparisons read over pre-training seeds: for each result (--out) of an arm of several
checkpoints against a baseline, each checkpoint's mean over the fine-tuning seeds, and the arm
minus its baseline with a 95% t-interval over the checkpoints. A baseline of as many checkpoints
pairs them by position (list both recipes' checkpoints in the same order of pre-training seeds);
random weights, or one checkpoint, are one mean taken from every checkpoint. finetune.py's own
bootstrap resamples the three checkpoints too, which understates their spread; this is the interval
the docs quote beside it.

    python dev/finetune_summary.py works_cur.json works_full.json
"""
import json
import sys

import numpy as np
from domain_arms_summary import t_interval


def checkpoint_means(per_seed: list[dict], metric: str, seeds: int) -> np.ndarray:
    """The headline metric's mean over the fine-tuning seeds of each checkpoint, in order."""
    scores = np.array([run[metric] for run in per_seed])
    return scores.reshape(-1, seeds).mean(1)


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit('usage: python dev/finetune_summary.py <finetune.py --out result>...')
    for path in sys.argv[1:]:
        try:
            with open(path) as f:
                result = json.load(f)
            metric, seeds, baseline = result['metric'], len(result['seeds']), result['baseline']
        except (OSError, ValueError, KeyError) as e:
            sys.exit(f'{path} is not a finetune.py --out result with a --baseline ({e!r}); '
                     'give one')
        arm = checkpoint_means(result['per_seed'], metric, seeds)
        other = checkpoint_means(baseline['per_seed'], metric, seeds)
        paired = len(other) == len(arm) > 1
        name = 'random weights' if baseline['arm'] == 'scratch' else 'baseline'
        print(f"{path}: {result['task']} {metric}, rates {result['learning_rate']:g} and "
              f"{baseline['learning_rate']:g}")
        print(f"  arm ({len(arm)} checkpoints): {' '.join(f'{m:.4f}' for m in arm)}; "
              f'{t_interval(arm)}')
        print(f"  {name} ({baseline['arm']}): {' '.join(f'{m:.4f}' for m in other)}")
        print(f"  arm minus {name} ({'paired by position' if paired else 'its mean'}): "
              f'{t_interval(arm - (other if paired else other.mean()), "+.4f")} over checkpoints')


if __name__ == '__main__':
    main()
