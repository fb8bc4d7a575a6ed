"""
What a fine-tuning setting changes in a comparison: two finetune.py comparisons of the same arms
(the same checkpoints, seeds and test examples; --baseline and --cache_dir in both), the second run
with the setting, read back from their run caches through the cache paths their logs printed (run
a comparison again to print them). Prints, at each comparison's chosen rates, the arm's change, the
baseline's change and the change of the gap between them (second minus first), each with a 95%
interval from finetune.py's paired bootstrap: the pre-training seeds, the fine-tuning seeds and the
test sections resampled together.

    python dev/setting_change.py plain.log plain.json standardized.log standardized.json
"""
import json
import sys
from pathlib import Path

import numpy as np
from split_predictions import chosen_predictions

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from finetune import DEFAULTS, bootstrap_interval, load_task  # noqa: E402


def main() -> None:
    if len(sys.argv) != 5:
        sys.exit('usage: python dev/setting_change.py <first.log> <first.json> <second.log> '
                 '<second.json>')
    results = [json.loads(Path(p).read_text()) for p in sys.argv[2::2]]
    # [first, second] x [arm, baseline], each a list of runs (checkpoint, then seed)
    runs = [chosen_predictions(log, r) for log, r in zip(sys.argv[1::2], results)]
    seeds, checkpoints = len(results[0]['seeds']), len(results[0]['init_from'].split(','))
    if any(len(arm) != checkpoints * seeds for arm in (runs[0][0], runs[1][0])):
        sys.exit('the two comparisons hold different runs of the arm: give the same checkpoints '
                 'and seeds, each log printing every run (run it again from its cache)')
    task = load_task(dict(DEFAULTS, task=results[0]['task']))
    truth = np.array([y for _, y in next(iter(task.tests.values()))])
    if len(runs[0][0][0]) != len(truth):
        sys.exit(f"the runs predict {len(runs[0][0][0])} test examples of the built-in task's "
                 f'{len(truth)}: compare runs made without --max_eval_samples')

    def stacked(which: list[int]) -> list[list[np.ndarray]]:
        """Per checkpoint and seed, the columns first arm, second arm, first baseline, second
        baseline (random weights pair with every checkpoint), kept to those named in which."""
        def run(side: int, arm: int, k: int, s: int) -> np.ndarray:
            per = runs[side][arm]
            return per[(k if len(per) > seeds else 0) * seeds + s]
        return [[np.column_stack([run(side, arm, k, s) for arm in (0, 1) for side in (0, 1)])
                 [:, which] for s in range(seeds)] for k in range(checkpoints)]

    # accuracy of each column, weighted: second minus first, and for the gap the arm's change less
    # the baseline's
    for name, which, signs in (('arm', [0, 1], (-1, 1)), ('baseline', [2, 3], (-1, 1)),
                               ('gap (arm less baseline)', [0, 1, 2, 3], (-1, 1, 1, -1))):
        value, low, high = bootstrap_interval(
            lambda p, gold, signs=np.array(signs): float((p == gold[:, None]).mean(0) @ signs),
            truth, stacked(which), groups=task.test_groups)
        print(f'{name}: second minus first {value:+.4f} ({low:+.4f} to {high:+.4f})')


if __name__ == '__main__':
    main()
