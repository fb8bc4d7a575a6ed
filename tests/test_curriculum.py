"""The schedule in train.py: validation, the demo vocabulary curriculum end to end, the optimizer
state carried across a resize, freezing, training phases (batch size, block size, RoPE theta), and
exact resume straddling every operation."""
import json
import math
import shutil
import time

import pytest
import torch

from checkpoint import load_checkpoint, load_model
from conftest import (assert_same_weights, losses, read_metrics, run_script, stop_in_process, train,
                      train_args)
from curriculum import TimeBudget
from fill_mask import MaskFiller
from optim import load_state_by_name, scheduled_lr

# the demo curriculum (config/shrink_vocab_demo.py) on a 512-token vocabulary, compressed into 10
# iterations
CURRICULUM = [
    {'name': 'resize_vocabulary', 'value': [None, 0.01, 'pieces'], 'at_iter': 4},
    {'name': 'disable_vocab_remapping', 'value': None, 'max_wait_iters': 0},
    {'name': 'set_embedding_finetune_mode', 'value': True, 'max_wait_iters': 0},
    {'name': 'set_embedding_finetune_mode', 'value': False, 'at_iter': 7},
    # fires at the first evaluation after the previous operation (iter 9): val loss is below 100
    {'name': 'set_mask_rate', 'value': 0.2, 'trigger_loss': 100.0, 'max_wait_iters': 50},
]


# a compiled curriculum run compiles afresh at each rebuilding operation: about 5 minutes on an idle
# 2-core machine, and past 10 on one that is also running other jobs
COMPILE_TIMEOUT = 1800


def curriculum_args(data_root, tmp_path, schedule=CURRICULUM):
    path = tmp_path / 'schedule.json'
    path.write_text(json.dumps(schedule))
    return ['config/shrink_vocab_demo.py',
            f'--vocab_remapping_file={data_root}/shakespeare/vocab_512.pt', f'--schedule={path}',
            '--dropout=0.1', '--eval_interval=3', '--max_iters=10', '--lr_decay_iters=10',
            '--keep_last_checkpoints=20']


@pytest.fixture(scope='module')
def curriculum_run(data_root, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('curriculum')
    args = curriculum_args(data_root, tmp)
    train(data_root, tmp / 'full', *args)
    return tmp, args


def test_demo_curriculum_end_to_end(data_root, curriculum_run):
    tmp, _ = curriculum_run
    records = read_metrics(tmp / 'full')
    ops = [(m['iter'], m['op'], m['trigger']) for m in records if 'op' in m]
    assert ops == [(4, 'resize_vocabulary', 'at_iter'),
                   (4, 'disable_vocab_remapping', 'max_wait_iters'),
                   (4, 'set_embedding_finetune_mode', 'max_wait_iters'),
                   (7, 'set_embedding_finetune_mode', 'at_iter'),
                   (9, 'set_mask_rate', 'trigger_loss')]
    # how far the grow from pieces moved the predictions (RARE's share folded back), logged with it
    (resize,) = [m for m in records if m.get('op') == 'resize_vocabulary']
    assert 0 < resize['fold_kl'] < 5
    evals = {m['iter']: m for m in records if 'val_loss' in m}
    assert 0 < evals[3]['val_rare_frac'] < 0.5 and 'val_core_acc' in evals[3]  # shrunken phase
    assert 'val_rare_frac' not in evals[6]  # full vocabulary
    ckpt = load_checkpoint(str(tmp / 'full' / 'ckpt.pt'))
    assert ckpt['model_args']['vocab_size'] == 50368 and ckpt['state']['remapping'] is False
    assert ckpt['state']['finetune_mode'] is False and ckpt['state']['mask_rate'] == 0.2
    assert [r['op'] for r in ckpt['state']['executed_ops']] == [op for _, op, _ in ops]
    (candidates,) = MaskFiller(str(tmp / 'full' / 'ckpt.pt'))('To be, or not to [MASK].', top_k=2)
    assert len(candidates) == 2
    # in the shrunken phase the model has 512 rows; fill_mask maps through the remapping file
    (candidates,) = MaskFiller(str(tmp / 'full' / 'ckpt_0000003.pt'))('To be, or not to [MASK].',
                                                                      top_k=2)
    assert len(candidates) == 2


@pytest.mark.parametrize('resume_at', [3, 4, 6, 7, 9])
def test_resume_straddling_each_operation_is_exact(curriculum_run, data_root, resume_at):
    """3: before the resize; 4: right after it; 6: in the finetune phase; 7: right after unfreezing;
    9: right after the loss-triggered operation."""
    tmp, args = curriculum_run
    assert_resumes_exactly(data_root, tmp / 'full', tmp / f'resume_{resume_at}', args, resume_at,
                           10)


def assert_resumes_exactly(data_root, run, out, args, resume_at: int, end: int) -> None:
    """run's checkpoint of iteration resume_at, resumed in out, trains as run did until end."""
    out.mkdir()
    shutil.copy(run / f'ckpt_{resume_at:07d}.pt', out / 'ckpt.pt')
    train(data_root, out, *args, '--init_from=resume')
    full, resumed = losses(run, resume_at), losses(out)
    assert list(resumed) == list(range(resume_at, end)) and resumed == full
    assert_same_weights(run, out)


def named_state(ckpt: dict) -> dict:
    """AdamW state by parameter name (configure_optimizers records the names in the param
    groups)."""
    opt = ckpt['optimizer']
    names = [n for group in opt['param_groups'] for n in group['param_names']]
    ids = [i for group in opt['param_groups'] for i in group['params']]
    return {names[k]: opt['state'][i] for k, i in enumerate(ids) if i in opt['state']}


def test_resize_gathers_rows_and_keeps_core_moments_exactly(curriculum_run, data_root, tmp_path):
    """Stop exactly at the resize (max_iters=4), then run it: the state just before and just
    after."""
    tmp, args = curriculum_run
    out = tmp_path / 'run'
    out.mkdir()
    shutil.copy(tmp / 'full' / 'ckpt_0000003.pt', out / 'ckpt.pt')
    train(data_root, out, *args, '--init_from=resume', '--max_iters=4')
    before = load_checkpoint(str(out / 'ckpt.pt'))
    train(data_root, out, *args, '--init_from=resume', '--max_iters=5')
    after = load_checkpoint(str(out / 'ckpt_0000004.pt'))
    remap = torch.load(f'{data_root}/shakespeare/vocab_512.pt', weights_only=True)
    full_to_shrunk = remap['full_to_shrunk']
    core = full_to_shrunk != remap['rare_id']
    emb = 'model.embeddings.tok_embeddings.weight'
    assert torch.equal(after['model'][emb][core], before['model'][emb][full_to_shrunk[core]])
    # the tokens RARE stood for start from the mean of their pieces' rows ('pieces'), those
    # without pieces from RARE's row plus noise
    offsets, flat = remap['piece_offsets'], remap['piece_ids'].long()
    old_rows, new_rows = before['model'][emb], after['model'][emb]
    with_pieces = 0
    for t in (~core).nonzero().flatten().tolist()[::50]:
        pieces = full_to_shrunk[flat[offsets[t]:offsets[t + 1]]]
        expected = old_rows[pieces].mean(0) if len(pieces) else old_rows[remap['rare_id']]
        assert (new_rows[t] - expected).abs().max() < (1e-6 if len(pieces) else 0.1)
        with_pieces += len(pieces) > 0
    assert with_pieces > 100
    old, new = named_state(before), named_state(after)
    for key in ('exp_avg', 'exp_avg_sq'):
        assert torch.equal(new[emb][key][core], old[emb][key][full_to_shrunk[core]])
        assert (new[emb][key][~core] == 0).all()
    assert int(new[emb]['step']) == int(old[emb]['step'])
    # finetune mode: only the (tied) embedding and the decoder bias train
    assert set(new) == {emb, 'decoder.bias'}
    # the frozen parameters' moments are parked until they train again, not lost
    wqkv = 'model.layers.1.attn.Wqkv.weight'
    assert torch.equal(after['parked_optimizer_state'][wqkv]['exp_avg'], old[wqkv]['exp_avg'])


def test_embedding_finetune_mode_freezes_everything_else(data_root, tmp_path):
    train(data_root, tmp_path / 'a', '--max_iters=2', '--eval_interval=2')
    schedule = tmp_path / 'schedule.json'
    schedule.write_text(json.dumps([{'name': 'set_embedding_finetune_mode', 'value': True,
                                     'at_iter': 0}]))
    train(data_root, tmp_path / 'b', f'--init_from={tmp_path / "a" / "ckpt.pt"}',
          f'--schedule={schedule}', '--max_iters=3', '--eval_interval=3')
    a, b = (load_checkpoint(str(tmp_path / d / 'ckpt.pt'))['model'] for d in 'ab')
    vocab = {'model.embeddings.tok_embeddings.weight', 'decoder.weight', 'decoder.bias'}
    for name in a:
        assert torch.equal(a[name], b[name]) == (name not in vocab), name


# ModernBERT's phases in miniature: batch-size warmup (more micro-batches per step), then context
# extension (longer windows, fewer of them, a higher global RoPE theta, a lower learning rate with
# the schedule restarted)
PHASES = [
    {'name': 'set_gradient_accumulation_steps', 'value': 2, 'at_iter': 2},
    {'name': 'set_block_size', 'value': 128, 'at_iter': 4},
    {'name': 'set_batch_size', 'value': 2, 'max_wait_iters': 0},
    {'name': 'set_rope_theta', 'value': [160000.0, None], 'max_wait_iters': 0},
    {'name': 'set_lr', 'value': 5e-4, 'max_wait_iters': 0},
    {'name': 'reset_lr_schedule', 'value': None, 'max_wait_iters': 0},
]


def test_training_phases_change_the_step_and_resume_exactly(data_root, tmp_path):
    path = tmp_path / 'phases.json'
    path.write_text(json.dumps(PHASES))
    args = [f'--schedule={path}', '--dropout=0.1', '--eval_interval=3', '--max_iters=7',
            '--keep_last_checkpoints=9', '--max_position_embeddings=128',
            '--weight_decay_convention=decoupled', '--weight_decay=1e-5']
    train(data_root, tmp_path / 'full', *args)
    records = read_metrics(tmp_path / 'full')
    # tokens per step: 1 x 4 x 64 at iterations 0-1, then 2 x 4 x 64 at 2-3, then 2 x 2 x 128
    # from 4 on
    tokens = {m['iter']: m['tokens'] for m in records if 'tokens' in m}
    assert [tokens[i] for i in (1, 3, 6)] == [2 * 256, 2 * 256 + 2 * 512, 2 * 256 + 5 * 512]
    ckpt = load_checkpoint(str(tmp_path / 'full' / 'ckpt.pt'))
    assert {k: ckpt['state'][k] for k in ('batch_size', 'block_size',
                                          'gradient_accumulation_steps')} == {
        'batch_size': 2, 'block_size': 128, 'gradient_accumulation_steps': 2}
    assert ckpt['model_args']['global_rope_theta'] == 160000.0 and \
        ckpt['model_args']['local_rope_theta'] == 10000.0
    assert ckpt['state']['lr_base'] == 5e-4 and ckpt['state']['lr_schedule_start'] == 4
    lr = {m['iter']: m['lr'] for m in records if 'lr' in m}
    assert lr[4] < lr[3]  # warmup restarts at the lower rate
    # decoupled weight decay is relative to the peak in force: 1e-5 at the new peak, as a new run
    # with it would decay
    for it, peak in ((3, 1e-3), (7, 5e-4)):
        groups = load_checkpoint(
            str(tmp_path / 'full' / f'ckpt_{it:07d}.pt'))['optimizer']['param_groups']
        assert [g['weight_decay'] for g in groups] == [pytest.approx(1e-5 / peak), 0.0]
    for resume_at in (3, 4):  # between the phases, and right after the context extension
        out = tmp_path / f'resume_{resume_at}'
        out.mkdir()
        shutil.copy(tmp_path / 'full' / f'ckpt_{resume_at:07d}.pt', out / 'ckpt.pt')
        train(data_root, out, *args, '--init_from=resume')
        assert losses(out) == losses(tmp_path / 'full', resume_at)
        assert_same_weights(tmp_path / 'full', out)
    # a block size beyond the model's positions stops before the first step
    path.write_text(json.dumps([{'name': 'set_block_size', 'value': 256, 'at_iter': 2}]))
    message = stop_in_process('train.py', *train_args(data_root, tmp_path / 'long', *args))
    assert 'block_size=256 exceeds max_position_embeddings=128' in message


BAD_SCHEDULES = {
    'unknown operation': ([{'name': 'grow', 'value': 1, 'at_iter': 1}], 'unknown operation'),
    'wrong value type': ([{'name': 'set_lr', 'value': 'fast', 'at_iter': 1}],
                         'must be a positive learning rate'),
    'trigger missing': ([{'name': 'set_lr', 'value': 1e-4}], 'no trigger'),
    'block size not a count': ([{'name': 'set_block_size', 'value': 0, 'at_iter': 1}],
                               'must be a positive number'),
    'one theta': ([{'name': 'set_rope_theta', 'value': 160000.0, 'at_iter': 1}],
                  'must be [global, local]'),
    'remapping without a file': ([{'name': 'disable_vocab_remapping', 'value': None, 'at_iter': 1}],
                                 'needs a shrunken vocabulary: set vocab_remapping_file'),
    'resize without disabling': ([{'name': 'resize_vocabulary', 'value': [None, 0.0], 'at_iter': 2},
                                  {'name': 'disable_vocab_remapping', 'value': None, 'at_iter': 5}],
                                 'must fire together'),
    'never grows': ([{'name': 'set_lr', 'value': 1e-4, 'at_iter': 2},
                     {'name': 'disable_vocab_remapping', 'value': None, 'max_wait_iters': 0}],
                    'add the missing resize_vocabulary'),
    'an unknown init': ([{'name': 'resize_vocabulary', 'value': [None, 0.0, 'mean'], 'at_iter': 2},
                         {'name': 'disable_vocab_remapping', 'value': None, 'max_wait_iters': 0}],
                        "or [..., 'rare' | 'pieces']"),
    'a fraction without a budget': ([{'name': 'set_lr', 'value': 1e-4, 'at_fraction': 0.5}],
                                    'at_fraction is a share of time_budget; set --time_budget'),
    'a fraction past the end': ([{'name': 'set_lr', 'value': 1e-4, 'at_fraction': 1.5}],
                                'at_fraction must be in (0, 1]'),
    'a fraction of nothing': ([{'name': 'set_lr', 'value': 1e-4, 'at_fraction': 0}],
                              'at_fraction must be in (0, 1]'),
    'a fraction and a wait': ([{'name': 'set_lr', 'value': 1e-4, 'at_fraction': 0.5,
                                'max_wait_iters': 3}], 'at_fraction cannot be combined'),
}


@pytest.mark.parametrize('case', BAD_SCHEDULES)
def test_schedule_validation(case, data_root, tmp_path):
    schedule, expected = BAD_SCHEDULES[case]
    path = tmp_path / 'schedule.json'
    path.write_text(json.dumps(schedule))
    remap_file = f'--vocab_remapping_file={data_root}/shakespeare/vocab_512.pt'
    remap = [] if case == 'remapping without a file' else [remap_file]
    message = stop_in_process('train.py', *train_args(data_root, tmp_path / 'out', *remap,
                                                      f'--schedule={path}'))
    assert len(message.splitlines()) == 1 and message.startswith('train.py: schedule:') and \
        expected in message
    assert not (tmp_path / 'out').exists()


def test_a_pieces_grow_needs_a_remapping_file_with_pieces(data_root, tmp_path):
    remap = torch.load(f'{data_root}/shakespeare/vocab_512.pt', weights_only=True)
    del remap['piece_ids']  # as an older prepare.py wrote it
    torch.save(remap, tmp_path / 'vocab_512.pt')
    args = [*curriculum_args(data_root, tmp_path),
            f"--vocab_remapping_file={tmp_path / 'vocab_512.pt'}"]
    message = stop_in_process('train.py', *train_args(data_root, tmp_path / 'out', *args))
    assert len(message.splitlines()) == 1 and "holds no pieces for resize_vocabulary's" in message
    assert message.endswith('--shrink_vocab=512 --force')


def test_a_time_budget_of_nothing_is_refused(data_root, tmp_path):
    message = stop_in_process('train.py', *train_args(data_root, tmp_path / 'out',
                                                      '--time_budget=0'))
    assert message == 'train.py: time_budget=0: give seconds > 0, or None to end at max_iters'
    assert not (tmp_path / 'out').exists()


# the demo curriculum driven by a time budget: 16 s at 2 s an iteration (the injected clock) is 8
# iterations; the resize at half the budget, unfreezing at three quarters
BUDGETED = [
    {'name': 'resize_vocabulary', 'value': [None, 0.01], 'at_fraction': 0.5},
    {'name': 'disable_vocab_remapping', 'value': None, 'max_wait_iters': 0},
    {'name': 'set_embedding_finetune_mode', 'value': True, 'max_wait_iters': 0},
    {'name': 'set_embedding_finetune_mode', 'value': False, 'at_fraction': 0.75},
]


def test_a_time_budget_ends_the_run_fires_by_fraction_and_resumes_exactly(data_root, tmp_path):
    """The budget replaces max_iters (here 1,000, which only shapes the learning rate: the
    schedule follows the budget by fraction); resumed before the resize and with half the budget
    left, the run is the uninterrupted one."""
    args = [*curriculum_args(data_root, tmp_path, BUDGETED), '--max_iters=1000',
            '--lr_decay_iters=1000', '--time_budget=16', '--inject_step_seconds=2',
            '--decay_fraction=0.5']
    train(data_root, tmp_path / 'full', *args)
    records = read_metrics(tmp_path / 'full')
    ops = [(m['iter'], m['op'], m['trigger']) for m in records if 'op' in m]
    assert ops == [(4, 'resize_vocabulary', 'at_fraction'),
                   (4, 'disable_vocab_remapping', 'max_wait_iters'),
                   (4, 'set_embedding_finetune_mode', 'max_wait_iters'),
                   (6, 'set_embedding_finetune_mode', 'at_fraction')]
    steps = {m['iter']: m for m in records if 'loss' in m}
    assert list(steps) == list(range(8))  # 8 iterations of 2 s: the budget, then the end
    # iteration i is at i/8 of the budget: the schedule of 1,000 iterations at 125 i
    for i, m in steps.items():
        # the TINY model's rates (conftest)
        assert m['lr'] == pytest.approx(scheduled_lr(125 * i, 1000, 1e-3, 1e-4, 2, 'wsd', 0.5,
                                                     'sqrt'))
    assert steps[7]['lr'] < 0.3 * 1e-3  # decayed by the end of the budget
    ckpt = load_checkpoint(str(tmp_path / 'full' / 'ckpt.pt'))
    assert ckpt['iter_num'] == 8 and ckpt['progress']['train_seconds'] == 16
    for resume_at in (3, 4):
        assert_resumes_exactly(data_root, tmp_path / 'full', tmp_path / f'resume_{resume_at}', args,
                               resume_at, 8)


def test_the_steps_queued_before_an_evaluation_count_against_the_budget(monkeypatch):
    """On a GPU the host runs ahead of the device; the iteration before an evaluation waits for
    it inside the budget, so the queued steps are charged there, not to the evaluation. The wait
    is stood in for by a synchronize that takes 50 ms (no GPU here)."""
    waits = []
    monkeypatch.setattr(torch.cuda, 'synchronize', lambda device: (waits.append(device),
                                                                    time.sleep(0.05)))
    budget = TimeBudget(100, 60.0, {'train_seconds': 0.0}, 'cuda:0')
    budget.start()
    budget.stop(read=False)
    assert waits == [] and budget.pending < 0.05
    budget.start()
    budget.stop(read=False, wait=True)
    assert waits == ['cuda:0'] and budget.pending >= 0.05
    on_cpu = TimeBudget(100, 60.0, {'train_seconds': 0.0}, 'cpu')
    on_cpu.start()
    on_cpu.stop(read=False, wait=True)
    assert waits == ['cuda:0']  # nothing queued on a CPU: no wait


def test_a_share_of_the_budget_within_its_last_log_interval_still_fires(data_root, tmp_path):
    """Time is read every log_interval iterations: at 2 s an iteration and every 4th read, the
    budget of 16 s reads 2, 12, then 20 s (0.125, 0.75, done), passing over 0.9. The grow fires at
    the end instead, one step trains after it, and the run ends in the full vocabulary."""
    schedule = [{'name': 'resize_vocabulary', 'value': [None, 0.0], 'at_fraction': 0.9},
                {'name': 'disable_vocab_remapping', 'value': None, 'max_wait_iters': 0}]
    args = [*curriculum_args(data_root, tmp_path, schedule), '--max_iters=1000',
            '--time_budget=16', '--inject_step_seconds=2', '--log_interval=4']
    train(data_root, tmp_path / 'out', *args)
    records = read_metrics(tmp_path / 'out')
    assert [(m['iter'], m['op']) for m in records if 'op' in m] == [
        (9, 'resize_vocabulary'), (9, 'disable_vocab_remapping')]
    ckpt = load_checkpoint(str(tmp_path / 'out' / 'ckpt.pt'))
    assert ckpt['iter_num'] == 10 and ckpt['model_args']['vocab_size'] == 50368
    assert ckpt['state']['remapping'] is False
    # resumed from the checkpoint saved right after the grow, the last step still trains
    resumed = tmp_path / 'resumed'
    resumed.mkdir()
    shutil.copy(tmp_path / 'out' / 'ckpt_0000009.pt', resumed / 'ckpt.pt')
    train(data_root, resumed, *args, '--init_from=resume')
    assert load_checkpoint(str(resumed / 'ckpt.pt'))['iter_num'] == 10
    assert_same_weights(tmp_path / 'out', resumed)


def test_resize_jump_is_the_one_the_rare_group_split_predicts(data_root, tmp_path):
    """With noise 0 and no random replacements, the grown model is the same function: the val loss
    in the full space exceeds the shrunken one by (fraction of RARE targets) * log(rare group size),
    nothing more."""
    schedule = [{'name': 'resize_vocabulary', 'value': [None, 0.0], 'at_iter': 3},
                {'name': 'disable_vocab_remapping', 'value': None, 'max_wait_iters': 0}]
    args = curriculum_args(data_root, tmp_path, schedule)
    train(data_root, tmp_path / 'out', *args, '--max_iters=4', '--random_token_prob=0.0',
          '--mask_token_prob=1.0')
    evals = [m for m in read_metrics(tmp_path / 'out') if m['iter'] == 3 and 'val_loss' in m]
    before, after = evals
    assert after.get('after_op') and not before.get('after_op')
    remap = torch.load(f'{data_root}/shakespeare/vocab_512.pt', weights_only=True)
    group = int((remap['full_to_shrunk'] == remap['rare_id']).sum())
    predicted = before['val_loss'] + before['val_rare_frac'] * math.log(group)
    assert after['val_loss'] == pytest.approx(predicted, abs=1e-4)
    assert after['val_acc'] <= before['val_acc']  # a RARE hit is no full-token hit
    # the grow's own measure: the grown model's probabilities folded back into RARE are the
    # shrunken model's
    (resize,) = [m for m in read_metrics(tmp_path / 'out') if m.get('op') == 'resize_vocabulary']
    assert abs(resize['fold_kl']) < 1e-9


def staged_schedule(data_root, init: list) -> list:
    """512 tokens, then 4,096 (set_vocab_remapping) at iteration 4, then the full one at 7."""
    return [{'name': 'resize_vocabulary', 'value': init, 'at_iter': 4},
            {'name': 'set_vocab_remapping', 'value': f'{data_root}/shakespeare/vocab_4096.pt',
             'max_wait_iters': 0},
            {'name': 'resize_vocabulary', 'value': init, 'at_iter': 7},
            {'name': 'disable_vocab_remapping', 'value': None, 'max_wait_iters': 0}]


def test_a_staged_grow_gathers_through_each_remapping_and_resumes_exactly(data_root, tmp_path):
    """512 -> 4,096 -> full from pieces: the middle stage keeps the 512 model's rows, starts the
    tokens new to it from their pieces, has a RARE of its own, checkpoints and resumes in it, and
    fill_mask reads its checkpoints through its remapping file."""
    args = curriculum_args(data_root, tmp_path, staged_schedule(data_root, [None, 0.0, 'pieces']))
    run = tmp_path / 'full'
    train(data_root, run, *args)
    grows = [m for m in read_metrics(run) if m.get('op') == 'resize_vocabulary']
    assert [m['iter'] for m in grows] == [4, 7] and all(0 < m['fold_kl'] < 5 for m in grows)
    middle = load_checkpoint(str(run / 'ckpt_0000006.pt'))
    assert middle['model_args']['vocab_size'] == 4096
    assert middle['state']['remapping'] is True and middle['state']['stage'] == 1
    # the first grow: stop right before it, then run it
    out = tmp_path / 'grow'
    out.mkdir()
    shutil.copy(run / 'ckpt_0000003.pt', out / 'ckpt.pt')
    train(data_root, out, *args, '--init_from=resume', '--max_iters=4')
    before = load_checkpoint(str(out / 'ckpt.pt'))
    train(data_root, out, *args, '--init_from=resume', '--max_iters=5')
    after = load_checkpoint(str(out / 'ckpt_0000004.pt'))
    small, large = (torch.load(f'{data_root}/shakespeare/vocab_{k}.pt', weights_only=True)
                    for k in (512, 4096))
    emb = 'model.embeddings.tok_embeddings.weight'
    old_rows, new_rows = before['model'][emb], after['model'][emb]
    assert old_rows.shape[0] == 512 and new_rows.shape[0] == 4096
    to_full, rare = large['shrunk_to_full'], large['rare_id']
    old_id = small['full_to_shrunk'][to_full]
    kept = old_id != small['rare_id']
    kept[rare] = False
    assert torch.equal(new_rows[kept], old_rows[old_id[kept]])
    assert torch.equal(new_rows[rare], old_rows[small['rare_id']])  # RARE stays RARE
    offsets, flat = small['piece_offsets'], small['piece_ids'].long()
    with_pieces = 0
    for j in (~kept).nonzero().flatten().tolist()[1::10]:
        t = int(to_full[j])
        pieces = small['full_to_shrunk'][flat[offsets[t]:offsets[t + 1]]]
        expected = old_rows[pieces].mean(0) if len(pieces) else old_rows[rare]
        assert (new_rows[j] - expected).abs().max() < 1e-6
        with_pieces += len(pieces) > 0
    assert with_pieces > 100
    ckpt = load_checkpoint(str(run / 'ckpt.pt'))
    assert ckpt['model_args']['vocab_size'] == 50368 and ckpt['state']['remapping'] is False
    (candidates,) = MaskFiller(str(run / 'ckpt_0000006.pt'))('To be, or not to [MASK].', top_k=2)
    assert len(candidates) == 2
    # what export_hf.py loads: grown to the full vocabulary through the middle stage's file
    assert load_model(str(run / 'ckpt_0000006.pt')).model.config.vocab_size == 50368
    for resume_at in (4, 6, 7):  # right after the first grow, in the middle stage, after the last
        assert_resumes_exactly(data_root, run, tmp_path / f'resume_{resume_at}', args, resume_at,
                               10)


def test_a_staged_grow_from_rare_is_the_same_function_at_each_step(data_root, tmp_path):
    args = curriculum_args(data_root, tmp_path, staged_schedule(data_root, [None, 0.0]))
    train(data_root, tmp_path / 'out', *args, '--max_iters=8')
    grows = [m for m in read_metrics(tmp_path / 'out') if m.get('op') == 'resize_vocabulary']
    assert len(grows) == 2 and all(abs(m['fold_kl']) < 1e-9 for m in grows)


@pytest.mark.parametrize('case', ['after disabling', 'a smaller file', 'missing'])
def test_a_bad_staged_grow_stops_before_anything_is_written(case, data_root, tmp_path):
    schedule = staged_schedule(data_root, [None, 0.0])
    vocab_512 = f'{data_root}/shakespeare/vocab_512.pt'
    first, expected = vocab_512, 'remapping is already disabled'
    if case == 'after disabling':
        schedule = [schedule[0], schedule[3], dict(schedule[1], value=vocab_512)]
    elif case == 'a smaller file':
        first = f'{data_root}/shakespeare/vocab_4096.pt'
        schedule[1]['value'] = vocab_512
        expected = 'must hold every token of'
    else:
        schedule[1]['value'] = str(tmp_path / 'vocab_9000.pt')
        expected = "set_vocab_remapping's file"
    args = curriculum_args(data_root, tmp_path, schedule)
    message = stop_in_process('train.py', *train_args(data_root, tmp_path / 'out', *args,
                                                      f'--vocab_remapping_file={first}'))
    assert len(message.splitlines()) == 1 and expected in message, message
    assert not (tmp_path / 'out').exists()


def test_a_failing_operation_stops_once_and_keeps_the_checkpoint_before_it(data_root, tmp_path):
    schedule = [{'name': 'resize_vocabulary', 'value': [99999, 0.0], 'at_iter': 3},
                {'name': 'disable_vocab_remapping', 'value': None, 'max_wait_iters': 0}]
    args = curriculum_args(data_root, tmp_path, schedule)
    result = train(data_root, tmp_path / 'out', *args, '--eval_interval=2', '--max_iters=6',
                   check=False)
    assert result.returncode != 0
    assert 'operation 0 (resize_vocabulary) failed at iter 3' in \
        result.stderr.strip().splitlines()[-1]
    ckpt = load_checkpoint(str(tmp_path / 'out' / 'ckpt.pt'))
    assert ckpt['iter_num'] == 2 and ckpt['model_args']['vocab_size'] == 512 and \
        ckpt['state']['executed_ops'] == []
    assert not any('op' in m for m in read_metrics(tmp_path / 'out'))


@pytest.mark.slow
def test_compiled_curriculum_trains_as_eager(data_root, tmp_path):
    # torch.compile with the static-shape sparse head, recompiled (dynamo reset) at each rebuilding
    # operation and when set_mask_rate changes the head's capacity, and StableAdamW's update
    # compiled too, its state carried across the rebuilds and one step skipped on the device: the
    # same losses as the eager run, up to fusion rounding
    args = [*curriculum_args(data_root, tmp_path), '--dropout=0.0', '--optimizer_name=stable_adamw',
            '--inject_nonfinite_at=[4]']
    train(data_root, tmp_path / 'eager', *args)
    train(data_root, tmp_path / 'compiled', *args, '--compile=True', timeout=COMPILE_TIMEOUT)
    eager, compiled = losses(tmp_path / 'eager'), losses(tmp_path / 'compiled')
    assert len(eager) == len(compiled) == 10
    assert compiled == pytest.approx(eager, rel=1e-3)
    ops = [m['op'] for m in read_metrics(tmp_path / 'compiled') if 'op' in m]
    assert ops == [op['name'] for op in CURRICULUM]
    assert [m['iter'] for m in read_metrics(tmp_path / 'compiled')
            if m.get('skipped_nonfinite')] == [4]


@pytest.mark.slow
def test_compiled_phases_train_as_eager(data_root, tmp_path):
    # the context extension's new micro-batch shape compiles a fresh static graph, as the first one
    # was, instead of dynamo turning the old graph's sizes symbolic; more accumulation steps keep
    # the shape and the graph
    path = tmp_path / 'phases.json'
    path.write_text(json.dumps(PHASES))
    args = [f'--schedule={path}', '--dropout=0.0', '--eval_interval=3', '--max_iters=7',
            '--max_position_embeddings=128']
    train(data_root, tmp_path / 'eager', *args)
    result = train(data_root, tmp_path / 'compiled', *args, '--compile=True',
                   timeout=COMPILE_TIMEOUT)
    assert result.stdout.count('compiling the model') == 2  # the start and the context extension
    assert losses(tmp_path / 'compiled') == pytest.approx(losses(tmp_path / 'eager'), rel=1e-3)


def test_best_val_loss_restarts_when_the_token_space_changes(data_root, tmp_path):
    # shrunken-space losses are lower by construction: kept as the best, nothing after the resize
    # would be saved
    schedule = CURRICULUM[:2]
    train(data_root, tmp_path / 'run', *curriculum_args(data_root, tmp_path, schedule),
          '--always_save_checkpoint=False')
    records = [m for m in read_metrics(tmp_path / 'run') if 'val_loss' in m]
    after = next(i for i, m in enumerate(records) if m.get('after_op'))
    full_space = records[after:]
    best = min(full_space, key=lambda m: m['val_loss'])
    ckpt = load_checkpoint(str(tmp_path / 'run' / 'ckpt.pt'))
    assert ckpt['best_val_loss'] == best['val_loss'] and ckpt['iter_num'] == best['iter']
    # what the old best would have blocked
    assert min(m['val_loss'] for m in records[:after]) < best['val_loss']


def test_carried_optimizer_state_goes_to_each_parameter_device_step_included():
    """State parked on the CPU (where checkpoints load) goes where each parameter lives, the 0-dim
    step count too, as fused and capturable AdamW need; the meta device stands in for a GPU."""
    torch.manual_seed(0)
    cpu = torch.nn.Linear(4, 3)
    opt = torch.optim.AdamW(cpu.parameters())
    cpu(torch.randn(2, 4)).sum().backward()
    opt.step()
    named = {name: opt.state[p] for name, p in cpu.named_parameters()}
    named['frozen.weight'] = {k: v.clone() for k, v in named['weight'].items()}
    same = torch.nn.Linear(4, 3)
    carried = torch.optim.AdamW(list(same.named_parameters()))
    assert load_state_by_name(carried, named).keys() == {'frozen.weight'}  # parked for later
    for name, p in same.named_parameters():
        assert all(torch.equal(carried.state[p][k], v) for k, v in named[name].items())
    device = torch.nn.Linear(4, 3, device='meta')
    capturable = torch.optim.AdamW(list(device.named_parameters()), capturable=True)
    load_state_by_name(capturable, named)
    for p in device.parameters():
        assert {k: v.device.type for k, v in capturable.state[p].items()} == \
            dict.fromkeys(named['weight'], 'meta')


def test_the_five_minute_curriculum_config_grows_from_pieces_at_its_fraction(data_root, tmp_path):
    """config/demo_curriculum_cpu.py on an injected clock: 12 s at 1 s an iteration, the grow at 70%
    of it."""
    out = tmp_path / 'out'
    run_script('train.py', 'config/demo_curriculum_cpu.py', f'--data_root={data_root}',
               f'--out_dir={out}', f'--vocab_remapping_file={data_root}/shakespeare/vocab_4096.pt',
               '--time_budget=12', '--inject_step_seconds=1', '--log_interval=1',
               '--eval_interval=6', '--eval_iters=2')
    records = read_metrics(out)
    ops = [(m['iter'], m['op'], m['trigger']) for m in records if 'op' in m]
    assert ops == [(9, 'resize_vocabulary', 'at_fraction'),
                   (9, 'disable_vocab_remapping', 'max_wait_iters')]
    (resize,) = [m for m in records if m.get('op') == 'resize_vocabulary']
    assert resize['value'] == [None, 0.0, 'pieces'] and resize['fold_kl'] > 0
    ckpt = load_checkpoint(str(out / 'ckpt.pt'))
    assert ckpt['iter_num'] == 12 and ckpt['model_args']['vocab_size'] == 50368


def test_the_staged_demo_config_grows_twice_at_its_fractions(data_root, tmp_path):
    """config/demo_staged_cpu.py (make demo) on an injected clock: 20 s at 1 s an iteration, the
    grow into the 18,752 tokens train holds at 70% of it, into the full vocabulary at 97% (read
    at the budget's end, so it fires there and one more step trains)."""
    settings = {}
    exec(open('config/demo_staged_cpu.py').read(), settings)
    for op in settings['schedule']:  # the config names the repository's data folder
        if op['name'] == 'set_vocab_remapping':
            op['value'] = op['value'].replace('data/', f'{data_root}/', 1)
    path = tmp_path / 'schedule.json'
    path.write_text(json.dumps(settings['schedule']))
    out = tmp_path / 'out'
    run_script('train.py', 'config/demo_staged_cpu.py', f'--data_root={data_root}',
               f'--out_dir={out}', f'--vocab_remapping_file={data_root}/shakespeare/vocab_4096.pt',
               f'--schedule={path}', '--time_budget=20', '--inject_step_seconds=1',
               '--log_interval=1', '--eval_interval=10', '--eval_iters=2')
    records = read_metrics(out)
    ops = [(m['iter'], m['op']) for m in records if 'op' in m]
    assert ops == [(14, 'resize_vocabulary'), (14, 'set_vocab_remapping'),
                   (20, 'resize_vocabulary'), (20, 'disable_vocab_remapping')]
    assert all(m['fold_kl'] > 0 for m in records if m.get('op') == 'resize_vocabulary')
    ckpt = load_checkpoint(str(out / 'ckpt.pt'))
    assert ckpt['iter_num'] == 21 and ckpt['model_args']['vocab_size'] == 50368
