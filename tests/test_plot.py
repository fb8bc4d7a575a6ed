"""plot.py: the curves of a real train.py run, with its schedule operations."""
import json

import matplotlib.image
import pytest

import plot
from conftest import read_metrics, train

SCHEDULE = "--schedule=[{'name': 'set_lr', 'value': 5e-4, 'at_iter': 3}]"


@pytest.fixture(scope='module')
def run(data_root, tmp_path_factory):
    """out_dir of a 6-step run that evaluates every 3 steps and lowers the learning rate at
    step 3."""
    out = tmp_path_factory.mktemp('run')
    train(data_root, out, '--max_iters=6', '--eval_interval=3', SCHEDULE)
    return out


def test_plot_writes_a_png_of_the_run(run, tmp_path, capsys):
    plot.main([str(run), f'--out={tmp_path / "curves.png"}'])
    assert capsys.readouterr().out.strip() == f"wrote {tmp_path / 'curves.png'}"
    image = matplotlib.image.imread(tmp_path / 'curves.png')
    assert image.shape[:2] == (800, 800)
    assert image.std() > 0.05  # curves drawn, not a blank canvas


def test_figure_holds_the_metrics_and_marks_the_operation(run):
    records = read_metrics(run)
    fig = plot.make_figure(records, 'run')
    loss, accuracy, lr = fig.axes
    curves = {ax: {line.get_label(): line for line in ax.get_lines()} for ax in fig.axes}
    steps = [r for r in records if 'lr' in r]
    assert list(curves[loss]['train (logged steps)'].get_xdata()) == [r['iter'] for r in steps] == \
        list(range(6))
    assert list(curves[loss]['val'].get_ydata()) == [r['val_loss'] for r in records
                                                     if 'val_loss' in r]
    assert list(curves[accuracy]['val'].get_xdata()) == [0, 3, 6]
    assert list(curves[lr]['lr'].get_ydata()) == [r['lr'] for r in steps]
    assert steps[3]['lr'] == 5e-4 != steps[2]['lr']  # the operation acted at step 3
    for ax in fig.axes:  # one vertical line at the operation, in every panel
        assert [list(line.get_xdata()) for line in ax.get_lines()
                if line.get_linestyle() == '--'] == [[3, 3]]
    assert [t.get_text() for t in loss.texts] == [' set_lr(0.0005)']


def test_tokens_axis_and_resumed_runs(run, tmp_path):
    tokens = plot.tokens_per_iter(str(run))
    # gradient_accumulation_steps * batch_size * block_size of test_train.TINY
    assert tokens == 1 * 4 * 64
    fig = plot.make_figure(read_metrics(run), 'run', x_scale=tokens, x_label='tokens')
    assert list(fig.axes[0].get_lines()[0].get_xdata()) == [i * tokens for i in range(6)]
    # a resumed run logs the steps after its checkpoint again: the later record wins
    records = [{'iter': 0, 'loss': 5.0}, {'iter': 1, 'loss': 4.0}, {'iter': 1, 'loss': 3.5},
               {'iter': 2, 'loss': 3.0},
               {'iter': 2, 'skipped_nonfinite': True, 'loss': float('inf'), 'skipped_steps': 1}]
    assert plot.series(records, 'loss') == ([0, 1, 2], [5.0, 3.5, 3.0])


def test_a_torn_line_is_skipped_with_a_warning(tmp_path, capsys):
    records = [{'iter': 0, 'loss': 1.0}, {'iter': 2, 'loss': 0.5}]
    (tmp_path / 'metrics.jsonl').write_text(json.dumps(records[0]) + '\n{"iter": 1, "lo\n'
                                            + json.dumps(records[1]))
    assert plot.read_metrics(str(tmp_path / 'metrics.jsonl')) == records
    assert capsys.readouterr().err.strip() == \
        f"warning: {tmp_path / 'metrics.jsonl'}:2 is not a JSON record; skipped"


def test_bad_input_stops_with_one_line_and_writes_nothing(run, tmp_path):
    with pytest.raises(SystemExit, match='no .*metrics.jsonl: give the out_dir of a train.py run'):
        plot.plot(str(tmp_path))
    record = json.dumps({'iter': 0, 'loss': 1.0}) + '\n'
    # valid, but no ckpt.pt to read the tokens per step from
    (tmp_path / 'metrics.jsonl').write_text(record)
    with pytest.raises(SystemExit, match='--x=tokens reads the run'):
        plot.plot(str(tmp_path), x='tokens')
    with pytest.raises(SystemExit, match='use --x=iter or --x=tokens'):
        plot.plot(str(run), x='time')
    with pytest.raises(SystemExit, match='usage: python plot.py OUT_DIR'):
        plot.main([])
    assert not (tmp_path / 'metrics.png').exists() and not (run / 'metrics.png').exists()
