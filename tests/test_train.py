"""train.py end to end on the embedded corpus: the demo learns, accumulation is exact, init_from
forms."""
import json
import math
from pathlib import Path

import pytest
import torch

import runlog
from checkpoint import data_record, load_checkpoint
from conftest import read_metrics, run_script, train
from fill_mask import MaskFiller
from hf import save_pretrained
from mlm import micro_batch_loss
from model import IGNORE_INDEX, Encoder, EncoderConfig
from tokenizer import gpt2_hf_tokenizer


# a tiny ModernBERT: 3 layers so both global (0) and local (1, 2) layers run, window 16 < block 64
def test_demo_config_learns_and_its_checkpoint_reloads(data_root, tmp_path):
    out = tmp_path / 'demo'
    run_script('train.py', 'config/demo_cpu.py', f'--data_root={data_root}', f'--out_dir={out}',
               '--max_iters=80', '--eval_interval=40', '--eval_iters=4')
    evals = [m for m in read_metrics(out) if 'val_loss' in m]
    assert [m['iter'] for m in evals] == [0, 40, 80]
    # the log's first record holds the machine beside the settings: runs of one seed and config
    # on two machines can differ, and the log must say which machine each ran on
    settings = json.loads((out / 'metrics.jsonl').read_text().splitlines()[0])
    assert settings['machine']['torch'] == torch.__version__ and settings['machine']['cpu']
    assert settings['machine']['cpu_capability'] == torch.backends.cpu.get_cpu_capability()
    # a new model starts at the unigram distribution (decoder_bias_init), far below the uniform
    # ln(50,368) = 10.8
    assert evals[0]['val_loss'] < 7.0 and evals[-1]['val_loss'] < evals[0]['val_loss'] - 0.3, evals
    ckpt = load_checkpoint(str(out / 'ckpt.pt'))
    assert ckpt['iter_num'] == 80 and \
        ckpt['model_args'] == {**ckpt['model_args'], 'hidden_size': 128}
    assert not any(k.startswith('_orig_mod.') for k in ckpt['model'])
    filler = MaskFiller(str(out / 'ckpt.pt'))
    (candidates,) = filler('To be, or not to [MASK], that is the question.', top_k=3)
    assert len(candidates) == 3 and all(0 <= p <= 1 for _, p in candidates)
    # a model that learnt puts real mass on its top guesses
    assert sum(p for _, p in candidates) > 0.05


def test_a_new_model_starts_at_the_unigram_distribution_or_at_the_uniform_one(data_root, tmp_path):
    first_loss = {}
    for init in ('unigram', 'zeros'):
        train(data_root, tmp_path / init, '--max_iters=1', '--eval_interval=1',
              f'--decoder_bias_init={init}')
        first_loss[init] = read_metrics(tmp_path / init)[0]['val_loss']
    assert first_loss['zeros'] == pytest.approx(math.log(50368), abs=0.1)  # every token alike
    assert first_loss['unigram'] < first_loss['zeros'] - 3


def test_accumulated_micro_batches_give_the_gradients_of_one_batch():
    torch.manual_seed(0)
    model = Encoder(EncoderConfig(vocab_size=300, hidden_size=32, intermediate_size=64,
                                  num_hidden_layers=3, num_attention_heads=2, local_attention=8,
                                  pad_token_id=0, cls_token_id=1, sep_token_id=2, mask_token_id=3))
    x = torch.randint(4, 300, (6, 24))
    labels = torch.full_like(x, IGNORE_INDEX)
    labels[:2, ::2] = x[:2, ::2]  # micro-batch 1 predicts many tokens, micro-batch 2 few
    labels[2:, 5] = x[2:, 5]

    def grads(micro_batches):
        model.zero_grad()
        n_step = sum((y != IGNORE_INDEX).sum() for _, y in micro_batches)
        for xb, yb in micro_batches:
            _, loss = model(xb, labels=yb)
            micro_batch_loss(loss, (yb != IGNORE_INDEX).sum(), n_step).backward()
        return [p.grad.clone() for p in model.parameters()]

    one = grads([(x, labels)])
    accumulated = grads([(x[:2], labels[:2]), (x[2:], labels[2:])])
    for a, b in zip(one, accumulated):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)


def test_init_from_hf_folder(data_root, tmp_path):
    torch.manual_seed(0)
    config = EncoderConfig(vocab_size=50368, hidden_size=48, intermediate_size=96,
                           num_hidden_layers=3, num_attention_heads=3, local_attention=16,
                           pad_token_id=50260, cls_token_id=50257, sep_token_id=50258,
                           mask_token_id=50259)
    save_pretrained(Encoder(config), str(tmp_path / 'hf'))
    # the data's tokenizer, checked by train.py
    gpt2_hf_tokenizer().save_pretrained(str(tmp_path / 'hf'))
    out = tmp_path / 'out'
    train(data_root, out, f'--init_from=hf:{tmp_path / "hf"}', '--max_iters=2', '--eval_interval=2')
    ckpt = load_checkpoint(str(out / 'ckpt.pt'))
    assert ckpt['model_args']['hidden_size'] == 48 and \
        ckpt['model_args']['num_attention_heads'] == 3
    assert len(read_metrics(out)) == 4  # eval 0, steps 0 and 1, eval 2
    # what the start read before this run is unknown: the history says so, then this run's data
    unknown, this_data = ckpt['data_history']
    assert 'unknown' in unknown['dataset'] and this_data == data_record(ckpt['dataset_meta'])


@pytest.mark.parametrize('config', sorted(
    p.name for p in (Path(__file__).parent.parent / 'config').glob('*.py')))
def test_every_config_parses_and_passes_validation(config, tmp_path):
    """Each config's keys and values reach the data check (an empty data_root), which only a valid
    config passes."""
    result = run_script('train.py', f'config/{config}', f'--data_root={tmp_path}',
                        f'--out_dir={tmp_path / "out"}', check=False)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1 and len(lines) == 1 and 'no prepared dataset in' in lines[0], \
        result.stderr[-2000:]


def test_document_packing_changes_the_windows(data_root, tmp_path):
    # (that packed runs resume exactly: test_reliability.test_resumed_run_equals_uninterrupted)
    first_val_loss = {}
    for packed in (True, False):
        train(data_root, tmp_path / str(packed), f'--pack_documents={packed}', '--max_iters=1',
              '--dropout=0.1')
        first_val_loss[packed] = next(m['val_loss'] for m in read_metrics(tmp_path / str(packed))
                                      if 'val_loss' in m)
    assert first_val_loss[True] != first_val_loss[False]


def test_trains_on_a_sharded_dataset(tmp_path):
    # a corpus prepared in several token files trains, packed or not, and resumes exactly
    # across them
    import prepare
    assert prepare.main([f"--out_dir={tmp_path / 'data' / 'sharded'}", '--shard_tokens=200000',
                         '--num_proc=2']) == 0
    for packed in (False, True):
        common = ['--dataset=sharded', f'--pack_documents={packed}', '--eval_interval=2',
                  '--lr_decay_iters=4']
        full, part = tmp_path / f'full_{packed}', tmp_path / f'part_{packed}'
        train(tmp_path / 'data', full, *common, '--max_iters=4')
        train(tmp_path / 'data', part, *common, '--max_iters=2')
        train(tmp_path / 'data', part, *common, '--max_iters=4', '--init_from=resume')
        a, b = ({m['iter']: m['loss'] for m in read_metrics(d) if 'loss' in m and m['iter'] >= 2}
                for d in (full, part))
        assert list(a) == [2, 3] and a == b


@pytest.mark.parametrize('keep_bytes', [None, 10_000])
def test_a_torn_last_line_of_the_log_is_dropped(tmp_path, keep_bytes):
    """A run killed mid-write leaves half a record; the resumed run must not append onto it."""
    whole = json.dumps({'iter': 0, 'loss': 1.0}) + '\n'
    (tmp_path / 'metrics.jsonl').write_text(whole + '{"iter": 1, "lo')
    log = runlog.RunLog(str(tmp_path), master=True)
    log.open(keep_bytes)
    log({'iter': 1, 'loss': 0.5})
    assert read_metrics(tmp_path) == [{'iter': 0, 'loss': 1.0}, {'iter': 1, 'loss': 0.5}]


def test_eta_and_mfu_leave_out_the_warm_up(monkeypatch):
    """The first iterations compile and warm caches: 10 s each here, then 1 s. The ETA must come
    from the 1 s ones, and leave out evaluations and saves."""
    now = [0.0]
    monkeypatch.setattr(runlog.time, 'time', lambda: now[0])
    clock = runlog.StepClock()
    for i, seconds in enumerate([10.0] * runlog.StepClock.WARMUP + [1.0] * 3):
        now[0] += seconds
        clock.tick()
        assert clock.lap() == seconds
        assert clock.warm == (i >= runlog.StepClock.WARMUP)
        assert (clock.eta(60) == 'after warm-up') == (not clock.warm)
    assert clock.eta(60) == '1.0 min'
    # between log points the host does not wait for the device: a lap averages the iterations since
    # the last one
    for seconds in (0.0, 0.0, 6.0):
        now[0] += seconds
        clock.tick()
    assert clock.lap() == 2.0 and clock.eta(60) == '1.5 min'
    assert clock.add_mfu(0.5) == '50.00%' and clock.add_mfu(0.3) == '48.00%'
    # an operation compiles the step again: its warm-up is left out as the first one was, and the
    # MFU average starts over rather than carry the old shape's
    clock.rewarm()
    for i, seconds in enumerate([10.0] * runlog.StepClock.WARMUP + [0.5] * 3):
        now[0] += seconds
        clock.tick()
        clock.lap()
        assert clock.warm == (i >= runlog.StepClock.WARMUP)
    assert clock.eta(60) == '0.5 min' and clock.add_mfu(0.2) == '20.00%'
    # an evaluation or a save (a new shape's evaluation compiles for minutes) is in no lap and not
    # in the ETA: they are the training steps'
    now[0] += 0.5
    clock.tick()
    with clock.aside():
        now[0] += 100.0
    now[0] += 0.5
    clock.tick()
    assert clock.lap() == 0.5 and clock.eta(60) == '0.5 min'
