"""
Training curves of a train.py run: <out_dir>/metrics.jsonl -> PNG.

    python plot.py out-demo                                # writes out-demo/metrics.png
    python plot.py out-demo --x=tokens --out=curves.png    # x axis: tokens seen
                                                             (from the run's ckpt.pt)

Three panels over iterations (or tokens): loss (every logged step, and train / val loss at each
evaluation), accuracy at each evaluation (train, val, and val on core tokens in a
shrunken-vocabulary phase) and the learning rate. Each executed schedule operation is a dashed
vertical line through every panel, named at the top.
"""
import json
import os
import sys

import matplotlib

matplotlib.use('Agg')  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from configurator import configure  # noqa: E402
from errors import fail, first_line  # noqa: E402

DEFAULTS = dict(
    out=None,  # None: <out_dir>/metrics.png
    x='iter',  # 'iter' | 'tokens'
)
EVAL = dict(marker='o', ms=3)
# (y label, [(metrics key, legend label, style)]); train is orange and val green in every panel
PANELS = (
    ('loss', [('loss', 'train (logged steps)', dict(color='C0', lw=0.8, alpha=0.6)),
              ('train_loss', 'train (eval)', dict(color='C1', **EVAL)),
              ('val_loss', 'val', dict(color='C2', **EVAL))]),
    ('masked-token accuracy', [('train_acc', 'train', dict(color='C1', **EVAL)),
                               ('val_acc', 'val', dict(color='C2', **EVAL)),
                               ('val_core_acc', 'val, core tokens',
                                dict(color='C2', ls='--', **EVAL))]),
    ('learning rate', [('lr', 'lr', dict(color='C0', lw=1.0))]),
)


def read_metrics(path: str) -> list[dict]:
    """The records of a metrics.jsonl, in file order. A line that is not JSON (the torn last line of
    a killed run) is skipped with a warning: the rest of the curve is still worth drawing."""
    if not os.path.isfile(path):
        fail(f'no {path}: give the out_dir of a train.py run')
    records = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                print(f'warning: {path}:{lineno} is not a JSON record; skipped', file=sys.stderr)
    # the first record: the run's settings, no metric
    records = [r for r in records if 'run_settings' not in r]
    if not records:
        fail(f'{path} is empty: train.py logs after its first evaluation')
    return records


def series(records: list[dict], key: str) -> tuple[list[int], list[float]]:
    """(iterations, values) of key, sorted by iteration; a resumed run logs some iterations again:
    the last wins. Operations and skipped (non-finite) steps are no points of a curve."""
    by_iter = {r['iter']: r[key] for r in records
               if key in r and 'op' not in r and 'skipped_nonfinite' not in r}
    return sorted(by_iter), [by_iter[i] for i in sorted(by_iter)]


def tokens_per_iter(out_dir: str) -> int:
    """Tokens of one optimizer step, from the settings saved in the run's checkpoint."""
    path = os.path.join(out_dir, 'ckpt.pt')
    if not os.path.isfile(path):
        fail(f"--x=tokens reads the run's settings from {path}, which is missing; use --x=iter")
    # mmap: only the few bytes of the settings are read, not the weights
    try:
        config = torch.load(path, map_location='cpu', weights_only=True, mmap=True)['config']
    except Exception as e:  # half-written, not a torch file, or not a train.py checkpoint
        fail(f"cannot read the run's settings from {path} ({first_line(e)}); use --x=iter")
    return config['gradient_accumulation_steps'] * config['batch_size'] * config['block_size']


def make_figure(records: list[dict], title: str, x_scale: int = 1,
                x_label: str = 'iteration') -> plt.Figure:
    """The three panels; x values are iterations times x_scale."""
    fig, axes = plt.subplots(len(PANELS), 1, figsize=(8, 8), sharex=True)
    for ax, (y_label, curves) in zip(axes, PANELS):
        for key, label, style in curves:
            xs, ys = series(records, key)
            if xs:
                ax.plot([x * x_scale for x in xs], ys, label=label, **style)
        ax.set_ylabel(y_label)
        ax.grid(alpha=0.3)
        if len(curves) > 1 and ax.get_lines():
            ax.legend(fontsize=8, loc='best')
    for r in (r for r in records if 'op' in r):
        name = r['op'] if r.get('value') is None else f"{r['op']}({r['value']})"
        for ax in axes:
            ax.axvline(r['iter'] * x_scale, color='grey', ls='--', lw=0.8)
        axes[0].text(r['iter'] * x_scale, 1.0, f' {name}', transform=axes[0].get_xaxis_transform(),
                     rotation=90, va='top', ha='right', fontsize=7, color='dimgrey')
    axes[-1].set_xlabel(x_label)
    axes[0].set_title(title)
    fig.tight_layout()
    return fig


def plot(out_dir: str, out: str | None = None, x: str = 'iter') -> str:
    """Write the curves of the run in out_dir to out (default <out_dir>/metrics.png); return the
    path."""
    if x not in ('iter', 'tokens'):
        fail(f'--x={x}: use --x=iter or --x=tokens')
    records = read_metrics(os.path.join(out_dir, 'metrics.jsonl'))
    scale, label = (tokens_per_iter(out_dir), 'tokens') if x == 'tokens' else (1, 'iteration')
    _, val = series(records, 'val_loss')
    title = os.path.basename(os.path.normpath(out_dir)) + (f' (last val loss {val[-1]:.3f})'
                                                           if val else '')
    fig = make_figure(records, title, scale, label)
    out = out or os.path.join(out_dir, 'metrics.png')
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def main(argv: list[str]) -> None:
    cfg = configure(DEFAULTS, [a for a in argv if a.startswith('-')])
    dirs = [a for a in argv if not a.startswith('-')]
    if len(dirs) != 1:
        fail('usage: python plot.py OUT_DIR [--x=iter|tokens] [--out=PATH.png]')
    print(f"wrote {plot(dirs[0], cfg['out'], cfg['x'])}")


if __name__ == '__main__':
    main(sys.argv[1:])
