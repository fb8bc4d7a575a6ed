"""
The code-family task (dev/domain_task.py) split by whether a function names its family
(docs/domain.md): about half of them hold the family's name (`GemmaAttention` in a function of
`gemma`), and a tokenizer that learned the name as one token may win there alone. Reads the test
predictions that a comparison of two arms (finetune.py --baseline=<checkpoints> --cache_dir=...)
kept in its run cache, through the cache paths its log printed, at each arm's chosen learning rate;
prints each arm's accuracy on the functions with and without the name, and the difference by
pre-training seed with a 95% t-interval over those seeds.

    python dev/family_names.py tasks/code_family family3_pieces_none.log family3_pieces_none.json
"""
import json
import re
import sys
from pathlib import Path

import numpy as np
import torch
from domain_arms_summary import T975

RUN = re.compile(r'lr (\S+), seed (\d+): dev \S+ \((\S+)\)')


def squeezed(text: str) -> str:
    return text.replace('_', '').lower()


def main() -> None:
    task, log, result = Path(sys.argv[1]), sys.argv[2], json.loads(Path(sys.argv[3]).read_text())
    test = [json.loads(line) for line in (task / 'test.jsonl').read_text().splitlines()]
    labels = sorted({json.loads(line)['label']
                     for line in (task / 'train.jsonl').read_text().splitlines()})
    truth = np.array([labels.index(r['label']) for r in test])
    named = np.array([squeezed(r['label']) in squeezed(r['text']) for r in test])
    # the log lists every run of the first arm, then every run of the baseline
    runs = [(float(m[1]), m[3]) for m in map(RUN.match, open(log)) if m]
    half = len(runs) // 2
    rates = (result['learning_rate'], result['baseline']['learning_rate'])
    accuracy = []
    for arm, rate in zip((runs[:half], runs[half:]), rates):
        correct = [torch.load(p, weights_only=False)['predictions'].numpy() == truth
                   for lr, p in arm if np.isclose(lr, rate)]
        accuracy.append(np.array([[c.mean(), c[named].mean(), c[~named].mean()]
                                  for c in correct]))
    checkpoints = len(result['init_from'].split(','))
    by_seed = (accuracy[0] - accuracy[1]).reshape(checkpoints, -1, 3).mean(1)
    print(f'{named.sum()} of {len(test)} test functions name their family')
    for i, part in enumerate(('all', 'named', 'not named')):
        d = by_seed[:, i]
        half_width = T975[len(d) - 1] * d.std(ddof=1) / len(d) ** 0.5
        print(f'{part}: {accuracy[0][:, i].mean():.3f} vs {accuracy[1][:, i].mean():.3f}, '
              f'difference {d.mean():+.3f} ({d.mean() - half_width:+.3f} to '
              f'{d.mean() + half_width:+.3f}), by seed {", ".join(f"{x:+.3f}" for x in d)}')


if __name__ == '__main__':
    main()
