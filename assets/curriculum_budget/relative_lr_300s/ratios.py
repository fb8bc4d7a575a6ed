"""The rate multipliers --relative_lr gives each checkpoint's tensors (each tensor's RMS over a
fresh draw's), by kind of tensor, and random weights' (fine-tuning seeds 1 and 2: seed 0's draw is
the reference itself); and the last-batch training loss of every run in the fine-tuning logs given,
by log, arm and rate: run.sh `fit`'s relative runs, and untied_300s/'s plain ones.

    python assets/curriculum_budget/relative_lr_300s/ratios.py <untied_300s runs> <log>... \
        > ratios.txt
"""
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
import finetune  # noqa: E402
from checkpoint import load_model  # noqa: E402

runs = Path(sys.argv[1])


def ratios(encoder, reference: dict) -> dict:
    return {n: finetune.rms(p) / reference[f'encoder.{n}']
            for n, p in encoder.named_parameters() if reference[f'encoder.{n}'] > 0}


by_kind = defaultdict(list)
for seed in (1337, 1338, 1339, 1340, 1341):
    encoder = load_model(str(runs / f'staged_s{seed}/ckpt.pt')).model
    reference = finetune.init_rms(encoder.config)
    for name, r in ratios(encoder, reference).items():
        if name.startswith('model.'):  # the MLM head is not on the classifier's path
            by_kind[re.sub(r'layers\.\d+\.', '', name)].append(r)
for kind, values in by_kind.items():
    print(f'{kind}: {min(values):.2f} to {max(values):.2f}',
          f'(median {statistics.median(values):.2f})')
fresh = [r for seed in (1, 2) for r in ratios(finetune.starting_encoder(encoder, True, seed),
                                              reference).values()]
print(f'random weights, seeds 1 and 2: {min(fresh):.3f} to {max(fresh):.3f}')
LAST = re.compile(r'lr (\S+), seed \d, epoch 10, step 100/100: loss ([\d.]+)')
losses = defaultdict(list)
for log in sys.argv[2:]:
    # a checkpoint's runs follow its "checkpoint k of n" line, three seeds at one rate; runs
    # after the third with no new header are random weights'
    since_header = 0
    for line in Path(log).read_text().splitlines():
        if line.startswith('checkpoint '):
            since_header = 0
        elif match := LAST.match(line):
            since_header += 1
            arm = 'checkpoints' if since_header <= 3 else 'random weights'
            # one study's processes (works_fit_a, works_fit_b) pool
            losses[re.sub(r'_[ab]$', '', Path(log).stem), arm, match[1]].append(float(match[2]))
for (log, arm, lr), values in sorted(losses.items()):
    print(f'{log}, {arm}, {lr}: {len(values)} runs, last-batch loss median',
          f'{statistics.median(values):.4f} ({min(values):.4f} to {max(values):.4f})')
