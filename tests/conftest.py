import os
import sys

# Tests run offline and import the top-level scripts as modules.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "disabled")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import subprocess  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def data_root(tmp_path_factory):
    """The embedded Shakespeare corpus prepared once per test session: <data_root>/shakespeare/, with
    shrunken vocabularies of 512 and 4096 tokens."""
    import prepare
    root = tmp_path_factory.mktemp("data")
    assert prepare.main([f"--out_dir={root / 'shakespeare'}", "--shrink_vocab=512,4096", "--num_proc=2"]) == 0
    return root


@pytest.fixture(scope="session")
def ckpt(data_root, tmp_path_factory):
    """A checkpoint of the tiny model trained for two iterations, to fine-tune (test_finetune, test_cuda)."""
    from test_train import train
    out = tmp_path_factory.mktemp("pretrained")
    train(data_root, out, "--max_iters=2", "--eval_interval=2")
    return str(out / "ckpt.pt")


def run_script(*args: str, check: bool = True, timeout: int = 600) -> subprocess.CompletedProcess:
    """Run a top-level script (train.py, prepare.py, ...) from the repo root with the test interpreter."""
    result = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"{args[0]} failed ({result.returncode}):\n{result.stdout[-3000:]}\n"
                             f"{result.stderr[-3000:]}")
    return result
