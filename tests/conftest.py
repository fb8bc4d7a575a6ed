import os
import sys

# Tests run offline and import the top-level scripts as modules.
os.environ.setdefault('HF_HUB_OFFLINE', '1')
os.environ.setdefault('WANDB_MODE', 'disabled')
# Under pytest-xdist each worker gets one core: one thread per worker, and for the scripts it
# launches, so two workers on two cores do not fight over them.
if 'PYTEST_XDIST_WORKER' in os.environ:
    os.environ['OMP_NUM_THREADS'] = '1'
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import importlib.util  # noqa: E402
import json  # noqa: E402
import runpy  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import finetune  # noqa: E402
from checkpoint import load_checkpoint  # noqa: E402
from tokenizer import package_dir  # noqa: E402


@pytest.fixture(scope='session')
def data_root(tmp_path_factory):
    """The embedded Shakespeare corpus prepared once per test session: <data_root>/shakespeare/,
    with shrunken vocabularies of 512, 4096 and 18752 tokens (every token train holds)."""
    import prepare
    root = tmp_path_factory.mktemp('data')
    assert prepare.main([f"--out_dir={root / 'shakespeare'}",
                         '--shrink_vocab=512,4096,18752', '--num_proc=2']) == 0
    return root


@pytest.fixture(scope='session')
def ckpt(data_root, tmp_path_factory):
    """A checkpoint of the tiny model trained for two iterations, to fine-tune (test_finetune,
    test_cuda)."""
    out = tmp_path_factory.mktemp('pretrained')
    train(data_root, out, '--max_iters=2', '--eval_interval=2')
    return str(out / 'ckpt.pt')


def run_script(*args: str, check: bool = True, timeout: int = 600) -> subprocess.CompletedProcess:
    """Run a top-level script (train.py, prepare.py, ...) from the repo root with the test
    interpreter."""
    result = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                            timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f'{args[0]} failed ({result.returncode}):\n{result.stdout[-3000:]}\n'
                             f'{result.stderr[-3000:]}')
    return result


# helpers the test files share ---------------------------------------------------------------------

TINY = ['--hidden_size=32', '--intermediate_size=64', '--num_hidden_layers=3',
        '--num_attention_heads=2', '--local_attention=16', '--block_size=64', '--batch_size=4',
        '--eval_iters=2', '--log_interval=1', '--device=cpu', '--dtype=float32', '--compile=False',
        '--warmup_iters=2', '--learning_rate=1e-3', '--min_lr=1e-4']


def train_args(data_root, out_dir, *args) -> list[str]:
    """train.py's arguments for the TINY model; config files in args come first so that the
    overrides win."""
    files = [a for a in args if not a.startswith('--')]
    overrides = [a for a in args if a.startswith('--')]
    return [*files, *TINY, f'--data_root={data_root}', f'--out_dir={out_dir}', *overrides]


def train(data_root, out_dir, *args, check=True, timeout=600):
    """train.py with the TINY model, in a new process."""
    return run_script('train.py', *train_args(data_root, out_dir, *args), check=check,
                      timeout=timeout)


def stop_in_process(script: str, *args: str) -> str:
    """Run a top-level script in this process, as `python script args` would from the repo root, and
    return the one-line message it stops with (a script's bad input ends in SystemExit(message),
    which the interpreter prints as the only line on stderr with exit status 1). This skips a new
    interpreter's seconds of imports; a script that does not stop that way fails the test."""
    saved = sys.argv, os.getcwd(), {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    sys.argv = [script, *args]
    os.chdir(ROOT)
    try:
        runpy.run_path(script, run_name='__main__')
    except SystemExit as e:
        assert isinstance(e.code, str), \
            f'{script} exited with status {e.code!r}, not with a message'
        return e.code
    finally:
        sys.argv = saved[0]
        os.chdir(saved[1])
        for s, handler in saved[2].items():
            signal.signal(s, handler)
    raise AssertionError(f"{script} {' '.join(args)} ran to the end instead of stopping")


def read_metrics(out_dir) -> list[dict]:
    """The run's metric records (the first record, the run's settings, is not one)."""
    with open(os.path.join(out_dir, 'metrics.jsonl')) as f:
        return [r for r in map(json.loads, f) if 'run_settings' not in r]


def losses(out_dir, start: int = 0) -> dict:
    return {m['iter']: m['loss'] for m in read_metrics(out_dir)
            if 'loss' in m and m['iter'] >= start}


def assert_same_weights(a, b, exact=True):
    wa, wb = load_checkpoint(str(a / 'ckpt.pt'))['model'], \
        load_checkpoint(str(b / 'ckpt.pt'))['model']
    assert wa.keys() == wb.keys()
    for k in wa:
        if exact:
            assert torch.equal(wa[k], wb[k]), k
        else:
            torch.testing.assert_close(wa[k], wb[k], rtol=1e-4, atol=1e-6)


def shakespeare_texts() -> dict[str, str]:
    folder = package_dir('shksprdata', '') / 'texts'
    return {p.name: p.read_text() for p in sorted(folder.glob('*_gut.txt'))}


MODERNBERT_IDS = {
    'The capital of France is [MASK].': [50281, 510, 5347, 273, 6181, 310, 50284, 15, 50282],
    'Hello world! This is a test.': [50281, 12092, 1533, 2, 831, 310, 247, 1071, 15, 50282],
}


def learn_good_or_bad(ckpt: str, folder, device: str) -> dict:
    """finetune.py on a task a tiny model learns in two epochs: does the sentence say good or bad
    (one token decides), as local JSONL files."""
    rng = np.random.default_rng(0)
    words = ['king', 'queen', 'sword', 'crown', 'night', 'storm', 'letter', 'ghost']
    for split, n in (('train', 320), ('dev', 64)):
        rows = [{'sentence': f"the {rng.choice(words)} is {'good' if y else 'bad'} today",
                 'label': ['no', 'yes'][y]}
                for y in rng.integers(0, 2, n)]
        (folder / f'{split}.jsonl').write_text(''.join(json.dumps(r) + '\n' for r in rows))
    return finetune.main([f'--init_from={ckpt}', '--task=files',
                          f'--train_file={folder / "train.jsonl"}',
                          f'--validation_file={folder / "dev.jsonl"}', '--text_fields=sentence',
                          '--learning_rate=3e-3', '--epochs=2', '--batch_size=16', '--pooling=mean',
                          f'--device={device}'])


def load_dev_script(name: str):
    """A script of dev/ as a module, to test its functions (with dev/ importable, as when run)."""
    if f'{ROOT}/dev' not in sys.path:
        sys.path.append(f'{ROOT}/dev')
    spec = importlib.util.spec_from_file_location(name, f'{ROOT}/dev/{name}.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
