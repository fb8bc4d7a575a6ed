"""Reliability of training: exact resume, DDP on CPU, atomic checkpoints, the non-finite guard,
signals, bad input."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
import torch

from checkpoint import load_checkpoint, save_checkpoint
from conftest import (ROOT, TINY, assert_same_weights, losses, read_metrics, stop_in_process,
                      train, train_args)


# what must come back on resume besides the weights: the RNG (dropout), the accumulation,
# StableAdamW's state, the packed windows, the teacher
RESUME_CASES = {
    'dropout_accumulation': ['--dropout=0.1', '--gradient_accumulation_steps=2'],
    'stable_adamw': ['--optimizer_name=stable_adamw', '--weight_decay_convention=decoupled',
                     '--decay_1d_params=True'],
    'packed_documents': ['--pack_documents=True', '--dropout=0.1'],
    'distillation': ['--teacher={ckpt}', '--distill_weight=0.7', '--distill_temperature=2.0',
                     '--distill_hidden_weight=0.5'],
}


@pytest.mark.parametrize('case', RESUME_CASES)
def test_resumed_run_equals_uninterrupted(data_root, tmp_path, case, request):
    args = RESUME_CASES[case]
    if case == 'distillation':  # the teacher: the session's tiny pre-trained checkpoint
        args = [a.format(ckpt=request.getfixturevalue('ckpt')) for a in args]
    common = [*args, '--eval_interval=2', '--lr_decay_iters=6']  # the schedule's length is fixed
    train(data_root, tmp_path / 'full', *common, '--max_iters=6')
    train(data_root, tmp_path / 'resumed', *common, '--max_iters=3')
    train(data_root, tmp_path / 'resumed', *common, '--max_iters=6', '--init_from=resume')
    full, resumed = losses(tmp_path / 'full', 3), losses(tmp_path / 'resumed', 3)
    assert list(full) == [3, 4, 5] and full == resumed  # floats from JSON: equal bit for bit
    evals = [m['iter'] for m in read_metrics(tmp_path / 'resumed') if 'val_loss' in m]
    assert evals == [0, 2, 3, 4, 6]  # the eval at the resume step (3) is not repeated
    assert_same_weights(tmp_path / 'full', tmp_path / 'resumed')


def test_ddp_on_cpu_equals_one_process_with_the_same_accumulation(data_root, tmp_path):
    args = [*TINY, f'--data_root={data_root}', '--max_iters=4', '--eval_interval=4',
            '--gradient_accumulation_steps=4']
    train(data_root, tmp_path / 'single', '--max_iters=4', '--eval_interval=4',
          '--gradient_accumulation_steps=4')
    ddp = subprocess.run([sys.executable, '-m', 'torch.distributed.run', '--standalone',
                          '--nproc_per_node=2', 'train.py', *args, f'--out_dir={tmp_path / "ddp"}'],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert ddp.returncode == 0, ddp.stderr[-3000:]
    single, two = losses(tmp_path / 'single'), losses(tmp_path / 'ddp')
    assert single.keys() == two.keys() == {0, 1, 2, 3}
    for it in single:
        assert single[it] == pytest.approx(two[it], rel=1e-5)
    val = [m['val_loss'] for m in read_metrics(tmp_path / 'single') if 'val_loss' in m]
    assert val == pytest.approx([m['val_loss'] for m in read_metrics(tmp_path / 'ddp')
                                 if 'val_loss' in m], rel=1e-5)
    assert_same_weights(tmp_path / 'single', tmp_path / 'ddp', exact=False)


def test_ddp_ranks_agree_on_a_time_budget(data_root, tmp_path):
    """Each rank measures its own time; the budget is read as the slowest rank's, so every rank
    takes the same learning rate and stops at the same iteration (a rank stopping alone would
    leave the other waiting in its all-reduce for ever)."""
    args = [*TINY, f'--data_root={data_root}', '--max_iters=100000', '--eval_interval=100000',
            '--time_budget=3', '--log_interval=2', '--decay_fraction=0.5',
            '--gradient_accumulation_steps=2',
            f'--out_dir={tmp_path / "ddp"}']
    ddp = subprocess.run([sys.executable, '-m', 'torch.distributed.run', '--standalone',
                          '--nproc_per_node=2', 'train.py', *args],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert ddp.returncode == 0, ddp.stderr[-3000:]
    ckpt = load_checkpoint(str(tmp_path / 'ddp' / 'ckpt.pt'))
    assert ckpt['progress']['train_seconds'] >= 3 and ckpt['iter_num'] % 2 == 1
    steps = [m for m in read_metrics(tmp_path / 'ddp') if 'loss' in m]
    assert steps[-1]['lr'] < 1e-3 and [m['iter'] for m in steps] == \
        list(range(0, ckpt['iter_num'], 2))  # decayed by the end


class Unpicklable:
    def __reduce__(self):
        raise RuntimeError('cannot pickle this')


def test_failed_save_keeps_the_old_checkpoint(tmp_path):
    path = tmp_path / 'ckpt.pt'
    save_checkpoint({'iter_num': 1, 'w': torch.ones(3)}, str(path))
    with pytest.raises(RuntimeError, match='cannot pickle'):
        save_checkpoint({'iter_num': 2, 'w': torch.zeros(3), 'bad': Unpicklable()}, str(path))
    assert torch.load(path, weights_only=True)['iter_num'] == 1
    assert os.listdir(tmp_path) == ['ckpt.pt']


@pytest.mark.parametrize('umask', [0o022, 0o077])
def test_checkpoint_mode_follows_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        save_checkpoint({'iter_num': 1}, str(tmp_path / 'ckpt.pt'))
    finally:
        os.umask(old)
    assert os.stat(tmp_path / 'ckpt.pt').st_mode & 0o777 == 0o666 & ~umask


def test_killed_save_keeps_the_old_checkpoint(tmp_path):
    path = tmp_path / 'ckpt.pt'
    save_checkpoint({'iter_num': 1}, str(path))
    writer = subprocess.Popen([sys.executable, '-c', (
        'import sys, torch; from checkpoint import save_checkpoint\n'
        "big = {'iter_num': 2, 'w': torch.randn(200_000_000 // 4)}\n"
        "print('writing', flush=True)\n"
        f'save_checkpoint(big, {str(path)!r})\n')], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == 'writing'
    time.sleep(0.2)  # well inside the write of 200 MB
    writer.kill()
    writer.wait()
    assert torch.load(path, weights_only=True)['iter_num'] in (1, 2)  # old or new, never partial
    save_checkpoint({'iter_num': 3}, str(path))  # the next save clears what the killed one left
    assert os.listdir(tmp_path) == ['ckpt.pt'] and \
        torch.load(path, weights_only=True)['iter_num'] == 3


def test_keep_last_checkpoints(data_root, tmp_path):
    train(data_root, tmp_path, '--max_iters=6', '--eval_interval=1', '--keep_last_checkpoints=2')
    kept = sorted(f for f in os.listdir(tmp_path) if f.endswith('.pt'))
    assert kept == ['ckpt.pt', 'ckpt_0000005.pt', 'ckpt_0000006.pt']


def test_nonfinite_guard_skips_and_then_stops(data_root, tmp_path):
    # the skip is decided on the device and read at the next log point (3 here) or save,
    # whichever comes first
    train(data_root, tmp_path / 'skip', '--max_iters=4', '--eval_interval=4',
          '--inject_nonfinite_at=[2]', '--log_interval=3')
    records = read_metrics(tmp_path / 'skip')
    assert [m['iter'] for m in records if m.get('skipped_nonfinite')] == [2]
    assert load_checkpoint(str(tmp_path / 'skip' / 'ckpt.pt'))['progress']['skipped_steps'] == 1
    # three bad steps in a row with max_skipped_steps=3: a clear stop; the last checkpoint (iter 4,
    # saved before that iteration's step) holds finite weights, since skipped steps never touch them
    result = train(data_root, tmp_path / 'stop', '--max_iters=8', '--eval_interval=2',
                   '--max_skipped_steps=3', '--inject_nonfinite_at=[3, 4, 5]',
                   '--log_interval=5', check=False)
    assert result.returncode != 0
    assert '3 consecutive non-finite steps at iter 5' in result.stderr.strip().splitlines()[-1]
    ckpt = load_checkpoint(str(tmp_path / 'stop' / 'ckpt.pt'))
    assert ckpt['iter_num'] == 4 and all(torch.isfinite(v).all() for v in ckpt['model'].values())


def test_sigterm_saves_and_resume_continues(data_root, tmp_path):
    out = tmp_path / 'run'
    cmd = [sys.executable, 'train.py', *TINY, f'--data_root={data_root}', f'--out_dir={out}',
           '--max_iters=100000', '--eval_interval=1000']
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and not (os.path.exists(out / 'metrics.jsonl')
                                          and len(losses(out)) >= 3):
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert 'stopped by signal' in stdout
    stopped_at = load_checkpoint(str(out / 'ckpt.pt'))['iter_num']
    assert stopped_at >= 3
    train(data_root, out, '--eval_interval=1000', '--init_from=resume',
          f'--max_iters={stopped_at + 2}')
    assert max(losses(out)) == stopped_at + 1


@pytest.fixture(scope='module')
def trained(data_root, tmp_path_factory):
    out = tmp_path_factory.mktemp('trained')
    train(data_root, out, '--max_iters=2', '--eval_interval=2')
    return out


@pytest.fixture(scope='module')
def bad_files(data_root, trained, tmp_path_factory):
    """Files users really have: a half-written checkpoint, a bare tensor, a text file named .pt, a
    corrupt meta.json, one from an older prepare.py, a dataset without counts.npy, a truncated
    vocab_K.pt, and a GUIDE student where a run's ckpt.pt should be."""
    bad = tmp_path_factory.mktemp('bad')
    ckpt = (trained / 'ckpt.pt').read_bytes()
    (bad / 'truncated.pt').write_bytes(ckpt[:len(ckpt) // 2])
    torch.save(torch.zeros(3), bad / 'tensor.pt')
    (bad / 'text.pt').write_text('not a checkpoint')
    (bad / 'data' / 'shakespeare').mkdir(parents=True)
    (bad / 'data' / 'shakespeare' / 'meta.json').write_text('{"vocab_size": 503')
    meta = json.loads((data_root / 'shakespeare' / 'meta.json').read_text())
    (bad / 'old' / 'shakespeare').mkdir(parents=True)
    (bad / 'old' / 'shakespeare' / 'meta.json').write_text(json.dumps(
        {k: v for k, v in meta.items() if k != 'tokenizer_fingerprint'}))
    shutil.copytree(data_root / 'shakespeare', bad / 'nocounts' / 'shakespeare',
                    ignore=shutil.ignore_patterns('counts.npy'))
    vocab = (data_root / 'shakespeare' / 'vocab_512.pt').read_bytes()
    (bad / 'vocab_512.pt').write_bytes(vocab[:len(vocab) // 3])
    student = {k: v for k, v in load_checkpoint(str(trained / 'ckpt.pt')).items()
               if k in ('model', 'model_args', 'tokenizer')}
    save_checkpoint(student, str(bad / 'student_run' / 'ckpt.pt'))
    return bad


BAD_INPUT = {
    'unknown key': (['--learning_rat=1'], "unknown key 'learning_rat'"),
    'bad value': (['--lr_schedule=triangle'], "lr_schedule='triangle'"),
    'bad type': (['--batch_size=4.5'], 'expected int'),
    'missing dataset': (['--dataset=nonexistent'], 'python prepare.py --dataset=nonexistent'),
    'scratch over a checkpoint': (['--max_iters=1'],
                                  '--init_from=resume to continue that run, another --out_dir'),
    'checkpoint init over a run': (['--init_from={ckpt}', '--max_iters=1'],
                                   'ckpt.pt exists; use --init_from=resume'),
    'hub init over a run': (['--init_from=hf:answerdotai/ModernBERT-base'],
                            'ckpt.pt exists; use --init_from=resume'),
    'truncated checkpoint': (['--init_from={bad}/truncated.pt', '--out_dir={tmp}'],
                             'not a complete checkpoint'),
    'bare tensor checkpoint': (['--init_from={bad}/tensor.pt', '--out_dir={tmp}'],
                               'not a nanoBERT checkpoint'),
    'text file checkpoint': (['--init_from={bad}/text.pt', '--out_dir={tmp}'],
                             'not a complete checkpoint'),
    'GUIDE student resumed': (['--init_from=resume', '--out_dir={bad}/student_run'],
                              'not a train.py checkpoint'),
    'corrupt meta.json': (['--data_root={bad}/data', '--out_dir={tmp}'], 'does not read as JSON'),
    'meta.json of an older prepare.py': (['--data_root={bad}/old', '--out_dir={tmp}'],
                                         'lacks tokenizer_fingerprint'),
    'dataset without counts.npy': (['--data_root={bad}/nocounts', '--out_dir={tmp}'],
                                   'counts.npy is missing; run: python prepare.py'),
    'truncated remapping file': (['--vocab_remapping_file={bad}/vocab_512.pt', '--out_dir={tmp}'],
                                 'not a complete vocab_K.pt'),
    'other architecture': (['--init_from={ckpt}', '--arch=neobert', '--out_dir={tmp}'],
                           'holds a modernbert model'),
    'other vocabulary': (['--vocab_remapping_file={data}/shakespeare/vocab_512.pt',
                          '--init_from={ckpt}', '--out_dir={tmp}'],
                         "model's vocabulary (50368) does not match the dataset's (512)"),
    'resume without checkpoint': (['--init_from=resume', '--out_dir={tmp}'], 'no checkpoint at'),
    'block beyond positions': (['--block_size=256', '--max_position_embeddings=128',
                                '--out_dir={tmp}'],
                               'block_size=256 exceeds max_position_embeddings=128'),
    'attention implementation': (['--attn_implementation=flash', '--out_dir={tmp}'],
                                 "attn_implementation='flash' is not one of auto, sdpa, flex"),
    'flex on the CPU': (['--attn_implementation=flex', '--out_dir={tmp}'], 'trains only on CUDA'),
    'zero accumulation': (['--gradient_accumulation_steps=0', '--out_dir={tmp}'],
                          'must be at least 1'),
    'masking probabilities': (['--mask_token_prob=0.8', '--random_token_prob=0.3'],
                              'sum to at most 1'),
    'missing remap file': (['--vocab_remapping_file=nope.pt', '--out_dir={tmp}'],
                           "vocab_remapping_file 'nope.pt' not found"),
}


@pytest.mark.parametrize('case', BAD_INPUT)
def test_bad_input_is_one_clear_line_and_changes_nothing(case, data_root, trained,
                                                         bad_files, tmp_path):
    args, expected = BAD_INPUT[case]
    before = {f: (trained / f).read_bytes() for f in os.listdir(trained)}
    args = [a.format(ckpt=trained / 'ckpt.pt', tmp=tmp_path / 'new', data=data_root, bad=bad_files)
            for a in args]
    message = stop_in_process('train.py', *train_args(data_root, trained, *args))
    assert len(message.splitlines()) == 1 and expected in message, message
    assert {f: (trained / f).read_bytes() for f in os.listdir(trained)} == before
    assert not (tmp_path / 'new').exists() or not os.listdir(tmp_path / 'new')


def test_a_wandb_that_cannot_start_stops_the_run_in_one_line_before_its_log(data_root, tmp_path,
                                                                            monkeypatch):
    # no API key anywhere (a home of its own, none in the environment), in wandb's default online
    # mode; a process of its own, so that wandb's state stays out of this one
    for name in ('WANDB_API_KEY', 'WANDB_MODE', 'NETRC'):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    monkeypatch.setenv('WANDB_DIR', str(tmp_path))
    result = train(data_root, tmp_path / 'run', '--max_iters=1', '--wandb_log=True', check=False)
    assert result.returncode == 1 and 'Traceback' not in result.stderr, result.stderr
    assert 'wandb cannot start' in result.stderr.splitlines()[-1] and \
        '--wandb_log=False' in result.stderr
    assert not (tmp_path / 'run' / 'metrics.jsonl').exists()


def test_files_of_another_dataset_preparation_are_refused(data_root, trained, tmp_path):
    other = tmp_path / 'data' / 'shakespeare'
    shutil.copytree(data_root / 'shakespeare', other)
    meta = (other / 'meta.json').read_text().replace('"fingerprint": "', '"fingerprint": "x')
    (other / 'meta.json').write_text(meta)
    result = train(tmp_path / 'data', trained, '--init_from=resume', '--max_iters=3', check=False)
    assert result.returncode != 0 and 'different preparation' in result.stderr
    # a checkpoint in the shrunken vocabulary reads ids that only mean something in its
    # own preparation
    shrunk = load_checkpoint(str(trained / 'ckpt.pt'))
    shrunk['state']['remapping'] = True
    save_checkpoint(shrunk, str(tmp_path / 'shrunk.pt'))
    result = train(tmp_path / 'data', tmp_path / 'new',
                   f'--init_from={tmp_path / "shrunk.pt"}', check=False)
    assert result.returncode != 0 and 'different preparation' in result.stderr
    result = train(tmp_path / 'data', tmp_path / 'new',
                   f'--vocab_remapping_file={data_root}/shakespeare/vocab_512.pt', check=False)
    assert result.returncode != 0 and 'was made from another preparation' in result.stderr
    assert not (tmp_path / 'new').exists()


def test_resumes_a_checkpoint_that_keeps_its_counters_in_state(data_root, trained, tmp_path):
    old = load_checkpoint(str(trained / 'ckpt.pt'))
    tokens_at_2 = old['progress']['tokens']
    old['state'].update(old.pop('progress'))  # where checkpoints of earlier versions keep them
    shutil.copytree(trained, tmp_path / 'run')
    save_checkpoint(old, str(tmp_path / 'run' / 'ckpt.pt'))
    train(data_root, tmp_path / 'run', '--init_from=resume', '--max_iters=3', '--eval_interval=2')
    new = load_checkpoint(str(tmp_path / 'run' / 'ckpt.pt'))
    assert new['iter_num'] == 3 and 'tokens' not in new['state'] and \
        new['progress']['tokens'] == tokens_at_2 * 3 // 2


@pytest.mark.parametrize('bad', ['truncated.pt', 'tensor.pt', 'text.pt'])
@pytest.mark.parametrize('script, option, out', [('export_hf.py', '--ckpt', '--out'),
                                                 ('fill_mask.py', '--ckpt', None),
                                                 ('init_guide.py', '--teacher', '--out')])
def test_every_script_refuses_an_unreadable_checkpoint_in_one_line(script, option, out, bad,
                                                                   bad_files, tmp_path):
    outputs = [f'{out}={tmp_path / "out"}'] if out else []
    message = stop_in_process(script, f'{option}={bad_files / bad}', *outputs)
    assert len(message.splitlines()) == 1 and str(bad_files / bad) in message and \
        'checkpoint' in message, message
    assert not (tmp_path / 'out').exists()


def test_eval_only_deletes_and_truncates_nothing(data_root, trained, tmp_path):
    run = tmp_path / 'run'
    shutil.copytree(trained, run)
    before = {f: (run / f).read_bytes() for f in os.listdir(run)}
    train(data_root, run, '--eval_only=True', f'--init_from={run / "ckpt.pt"}')
    assert (run / 'ckpt.pt').read_bytes() == before['ckpt.pt']
    log = (run / 'metrics.jsonl').read_bytes()
    assert log.startswith(before['metrics.jsonl']) and len(log) > len(before['metrics.jsonl'])


def test_a_link_left_by_a_crash_does_not_break_the_next_save(data_root, tmp_path):
    (tmp_path / 'ckpt_0000002.pt.new').write_text('left by a crash between the link and the rename')
    train(data_root, tmp_path, '--max_iters=2', '--eval_interval=1', '--keep_last_checkpoints=2')
    assert load_checkpoint(str(tmp_path / 'ckpt_0000002.pt'))['iter_num'] == 2
    assert not (tmp_path / 'ckpt_0000002.pt.new').exists()
