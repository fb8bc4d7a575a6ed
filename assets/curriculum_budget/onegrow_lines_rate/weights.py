"""The size of the ten-seed study's checkpoints' weights (exploratory, beside PLAN.md): per
checkpoint the RMS of the layers' matrices (mean over them) and their largest spectral norm, then
per arm over the ten seeds, and curriculum - full with a 95% t-interval; the staged study's models
had about twice the full ones' RMS (docs/curriculum.md), a candidate for fine-tuning doing less
with them.

    python assets/curriculum_budget/onegrow_lines_rate/weights.py <runs folder> > weights.txt
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..', '..', 'dev'))
from domain_arms_summary import t_interval  # noqa: E402

ARMS = ('curriculum', 'full')
SEEDS = [str(s) for s in range(1360, 1370)]


def sizes(path: str) -> tuple[float, float]:
    """Mean RMS and largest spectral norm of the checkpoint's 2-D layer weights."""
    model = torch.load(path, map_location='cpu', weights_only=False)['model']
    mats = [w.float() for n, w in model.items() if '.layers.' in n and w.dim() == 2]
    rms = np.mean([w.pow(2).mean().sqrt().item() for w in mats])
    return rms, max(torch.linalg.matrix_norm(w, ord=2).item() for w in mats)


def main() -> None:
    got = {a: np.array([sizes(os.path.join(sys.argv[1], f'{a}_s{s}', 'ckpt.pt')) for s in SEEDS])
           for a in ARMS}
    for a in ARMS:
        print(f'{a}, per seed (RMS, spectral norm): ' + ', '.join(
            f'{s} {r:.3f} {n:.1f}' for s, (r, n) in zip(SEEDS, got[a])))
        print(f'{a}: layer-matrix RMS {t_interval(got[a][:, 0], ".3f")}, '
              f'largest spectral norm {t_interval(got[a][:, 1], ".1f")}')
    d = got['curriculum'] - got['full']
    print(f'curriculum - full: RMS {t_interval(d[:, 0], "+.3f")}, '
          f'spectral norm {t_interval(d[:, 1], "+.1f")}')


if __name__ == '__main__':
    main()
