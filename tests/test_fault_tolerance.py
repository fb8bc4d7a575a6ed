"""Fault tolerance: init_from='auto', checkpoint_interval, and torchrun --max-restarts after a
worker is killed with SIGKILL from outside (mid-run, and in the middle of a checkpoint write): the
run ends with the weights and the log of a run that was never interrupted."""
import os
import signal
import subprocess
import sys
import time

import pytest

from checkpoint import load_checkpoint
from conftest import (ROOT, TINY, assert_same_weights, read_metrics, stop_in_process, train,
                      train_args)

# Loaded by every process of the test's torchrun runs. A relaunched rank 0 that starts late, so that
# the other rank reaches the store first (where it used to find the last attempt's addresses and
# wait on them forever); and a slow disk, for the kill in the middle of a checkpoint write: while
# the flag file exists, fsync takes a minute; and a full disk, while its flag file exists.
SITECUSTOMIZE = '''import os, time
if os.environ.get('RANK') == '0' and int(os.environ.get('TORCHELASTIC_RESTART_COUNT', 0)) > 0:
    time.sleep(3)
_fsync = os.fsync
def fsync(fd):
    if os.path.exists(os.environ.get('NANOBERT_TEST_SLOW_FSYNC', '/nonexistent')):
        time.sleep(60)
    if os.path.exists(os.environ.get('NANOBERT_TEST_FULL_DISK', '/nonexistent')):
        raise OSError(28, 'No space left on device')
    _fsync(fd)
os.fsync = fsync
if os.environ.get('NANOBERT_TEST_LOCAL_OUT_DIR') and os.environ.get('RANK') not in (None, '0'):
    _exists = os.path.exists  # a node of its own: rank 0's files in out_dir are not here
    os.path.exists = lambda p: not os.path.basename(p).startswith('.rank0-') and _exists(p)
'''


def test_an_out_dir_that_is_a_file_stops_with_one_line(data_root, tmp_path):
    (tmp_path / 'out').write_text('notes')
    message = stop_in_process('train.py', *train_args(data_root, tmp_path / 'out', '--max_iters=1'))
    assert message.endswith('is a file, not a folder; give a folder for the run\'s '
                            'checkpoint and log')
    assert (tmp_path / 'out').read_text() == 'notes'


def test_auto_resumes_this_run_and_refuses_another(data_root, tmp_path):
    out = tmp_path / 'run'
    out.mkdir()
    foreign = '{"iter": 0, "loss": 11.0}\n'  # another run's log: it records no settings
    (out / 'metrics.jsonl').write_text(foreign)
    refused = train(data_root, out, '--init_from=auto', '--max_iters=5', check=False)
    assert refused.returncode != 0
    assert refused.stderr.strip() == (f"train.py: {out / 'metrics.jsonl'} is another run's log (it "
                                      f"records no settings); use another --out_dir, or "
                                      f'--overwrite=True to start over')
    assert (out / 'metrics.jsonl').read_text() == foreign  # nothing touched
    args = ('--init_from=auto', '--max_iters=5', '--eval_interval=100', '--checkpoint_interval=2')
    train(data_root, out, *args, '--overwrite=True')
    # as if killed before its first save: auto starts this run over its own log
    os.remove(out / 'ckpt.pt')
    first = train(data_root, out, *args)
    assert 'resuming' not in first.stdout
    saved = [line for line in first.stdout.splitlines() if 'saved' in line]
    assert saved == [f'iter {i}: saved {out / "ckpt.pt"}' for i in (2, 4, 5)]
    second = train(data_root, out, '--init_from=auto', '--max_iters=7', '--eval_interval=100')
    assert f'resuming {out / "ckpt.pt"} at iter 5' in second.stdout
    assert [m['iter'] for m in read_metrics(out) if 'loss' in m] == list(range(7))
    other = train(data_root, out, '--init_from=auto', '--max_iters=9',
                  '--learning_rate=2e-3', check=False)
    assert other.returncode != 0
    assert other.stderr.strip() == (f"train.py: {out / 'ckpt.pt'} is another run's: it has "
                                    f"learning_rate=0.001 (not 0.002); use another out_dir, or "
                                    f"--init_from=resume to continue it with this run's settings")
    assert load_checkpoint(str(out / 'ckpt.pt'))['iter_num'] == 7  # nothing touched
    os.remove(out / 'ckpt.pt')
    log = (out / 'metrics.jsonl').read_text()
    other = train(data_root, out, '--init_from=auto', '--max_iters=9',
                  '--learning_rate=2e-3', check=False)
    assert other.returncode != 0 and \
        "metrics.jsonl is another run's log (it has learning_rate=0.001 (not 0.002))" \
        in other.stderr
    assert (out / 'metrics.jsonl').read_text() == log


def test_a_full_disk_at_a_save_stops_every_rank_with_one_line_and_keeps_the_last_checkpoint(
        data_root, tmp_path):
    (tmp_path / 'site').mkdir()
    (tmp_path / 'site' / 'sitecustomize.py').write_text(SITECUSTOMIZE)
    full = tmp_path / 'full'
    env = dict(os.environ, PYTHONPATH=str(tmp_path / 'site'), NANOBERT_TEST_FULL_DISK=str(full))
    out = tmp_path / 'run'
    args = ['train.py', *TINY, f'--data_root={data_root}', '--gradient_accumulation_steps=2',
            '--eval_interval=100', '--checkpoint_interval=2', '--init_from=auto',
            f'--out_dir={out}']

    def torchrun(max_iters: int) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, '-m', 'torch.distributed.run', '--standalone',
                               '--nproc_per_node=2', *args, f'--max_iters={max_iters}'], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=300)

    assert torchrun(4).returncode == 0
    full.touch()  # the disk fills up: the save at iteration 6 fails on rank 0
    result = torchrun(8)
    # both ranks stopped: none waits at a barrier for ever (timeout above)
    assert result.returncode != 0
    assert (f"train.py: cannot save {out / 'ckpt.pt'} at iter 6 (OSError: [Errno 28] No space left "
            f"on device); free space or fix {out}, then resume: the last checkpoint saved is "
            f'intact') in result.stderr
    assert f"train.py: rank 0 could not save {out / 'ckpt.pt'} at iter 6" in result.stderr
    assert load_checkpoint(str(out / 'ckpt.pt'))['iter_num'] == 4
    assert sorted(os.listdir(out)) == ['ckpt.pt', 'metrics.jsonl']  # no half-written file left


def test_an_out_dir_that_not_every_rank_sees_stops_every_rank(data_root, tmp_path):
    # rank 1 on a node of its own (its out_dir is not the folder rank 0 writes in): it would decide
    # alone whether to resume, so every rank stops with one line before anything is written
    (tmp_path / 'site').mkdir()
    (tmp_path / 'site' / 'sitecustomize.py').write_text(SITECUSTOMIZE)
    env = dict(os.environ, PYTHONPATH=str(tmp_path / 'site'), NANOBERT_TEST_LOCAL_OUT_DIR='1')
    out = tmp_path / 'run'
    result = subprocess.run([sys.executable, '-m', 'torch.distributed.run', '--standalone',
                             '--nproc_per_node=2', 'train.py', *TINY, f'--data_root={data_root}',
                             '--max_iters=2', '--init_from=auto', '--gradient_accumulation_steps=2',
                             f'--out_dir={out}'], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    message = (f'train.py: 1 of 2 ranks do not see the file rank 0 wrote in out_dir {out}: on '
               f'several nodes out_dir must be on a filesystem they all share; give such an '
               f'--out_dir')
    assert result.stderr.count(message) == 2 and os.listdir(out) == []


def test_several_nodes_with_restarts_need_a_store_per_attempt(data_root, tmp_path):
    env = dict(os.environ, RANK='0', WORLD_SIZE='2', TORCHELASTIC_USE_AGENT_STORE='True',
               GROUP_WORLD_SIZE='2', TORCHELASTIC_MAX_RESTARTS='3', TORCHELASTIC_RESTART_COUNT='0',
               MASTER_ADDR='127.0.0.1', MASTER_PORT='1')
    result = subprocess.run([sys.executable, 'train.py', *TINY, f'--data_root={data_root}',
                             f'--out_dir={tmp_path}'], cwd=ROOT, capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode != 0
    assert result.stderr.strip() == ('train.py: torchrun --max-restarts on several nodes needs a '
                                     'new store for each attempt: set '
                                     "TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 in torchrun's "
                                     "environment")


def workers(agent: int) -> dict[int, int]:
    """RANK -> pid of the worker processes torchrun's agent (pid `agent`) runs now."""
    found = {}
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open(f'/proc/{pid}/stat') as f:
                ppid = int(f.read().rsplit(')', 1)[1].split()[1])
            with open(f'/proc/{pid}/environ', 'rb') as f:
                env = dict(v.split(b'=', 1) for v in f.read().split(b'\0') if b'=' in v)
        except (OSError, ValueError):  # gone meanwhile
            continue
        if ppid == agent and b'RANK' in env:
            found[int(env[b'RANK'])] = int(pid)
    return found


def wait_for(condition, what: str, proc: subprocess.Popen, timeout: float = 120):
    deadline = time.time() + timeout
    while not condition():
        assert proc.poll() is None, f'the run ended before {what}: {proc.communicate()[1][-3000:]}'
        assert time.time() < deadline, f'timed out waiting for {what}'
        time.sleep(0.02)


def logged_iters(out) -> int:
    try:
        return max((m['iter'] for m in read_metrics(out) if 'loss' in m), default=-1)
    except (OSError, ValueError):  # not written yet, or a line being written
        return -1


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith('linux'), reason='finds the workers through /proc')
def test_torchrun_restarts_a_killed_run_and_it_ends_as_if_never_killed(data_root, tmp_path):
    (tmp_path / 'site').mkdir()
    (tmp_path / 'site' / 'sitecustomize.py').write_text(SITECUSTOMIZE)
    flag = tmp_path / 'slow_fsync'
    env = dict(os.environ, PYTHONPATH=str(tmp_path / 'site'), NANOBERT_TEST_SLOW_FSYNC=str(flag))
    args = [*TINY, f'--data_root={data_root}', '--gradient_accumulation_steps=2', '--dropout=0.1',
            '--max_iters=120', '--eval_interval=20', '--checkpoint_interval=6', '--init_from=auto']

    def torchrun(out, restarts):
        return subprocess.Popen([sys.executable, '-m', 'torch.distributed.run', '--standalone',
                                 '--nproc_per_node=2', f'--max-restarts={restarts}', 'train.py',
                                 *args, f'--out_dir={out}'],
                                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)

    reference = torchrun(tmp_path / 'reference', 0)
    reference_stderr = reference.communicate(timeout=600)[1]
    assert reference.returncode == 0, reference_stderr[-3000:]

    out = tmp_path / 'killed'
    run = torchrun(out, 2)
    try:
        # 1: a worker killed between two checkpoints, which loses the steps since the last one
        wait_for(lambda: logged_iters(out) >= 40 and 1 in workers(run.pid), 'iteration 40', run)
        os.kill(workers(run.pid)[1], signal.SIGKILL)
        killed_at = logged_iters(out)
        # 2: once the relaunched group has resumed and gone on, rank 0 killed while it writes
        # a checkpoint
        wait_for(lambda: logged_iters(out) >= 70, 'iteration 70 after the restart', run)
        flag.touch()
        wait_for(lambda: any(f.endswith('.tmp') for f in os.listdir(out)),
                 'a checkpoint write', run)
        os.kill(workers(run.pid)[0], signal.SIGKILL)
        flag.unlink()
        # what the interrupted write left
        saved_before = load_checkpoint(str(out / 'ckpt.pt'))['iter_num']
        stdout, stderr = run.communicate(timeout=300)
        assert run.returncode == 0, stderr[-3000:]
    finally:  # a failed test leaves no processes behind
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    resumed = [int(line.rsplit(' ', 1)[1]) for line in stdout.splitlines()
               if line.startswith('resuming')]
    # the last save before the kill: every 6 iterations and at each evaluation
    assert len(resumed) == 2 and killed_at - 6 < resumed[0] <= killed_at, (resumed, killed_at)
    assert resumed[0] % 6 == 0 or resumed[0] % 20 == 0
    assert resumed[1] == saved_before > resumed[0], (resumed, saved_before)
    assert not [f for f in os.listdir(out) if f.endswith('.tmp')]
    assert_same_weights(tmp_path / 'reference', out)
    records = read_metrics(out)
    assert [m['iter'] for m in records if 'loss' in m] == list(range(120))  # no gap, nothing twice
    assert [m['iter'] for m in records if 'val_loss' in m] == list(range(0, 121, 20))
    timing = ('tokens_per_s', 'mfu')
    assert [{k: v for k, v in m.items() if k not in timing} for m in records] == [
        {k: v for k, v in m.items() if k not in timing}
        for m in read_metrics(tmp_path / 'reference')]
