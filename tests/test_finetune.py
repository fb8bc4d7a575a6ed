"""finetune.py: the metrics against known values, the built-in tasks (shakespeare_works end to end,
shakespeare_lines by probe over a learning-rate grid), the zero-shot MLM scores, a local JSONL task
that a tiny model must learn, GLUE's task table through a stand-in for `datasets`, and the
refusals."""
import json
import re
import sys
import types

import numpy as np
import pytest
import torch

import finetune
from checkpoint import load_model
from conftest import learn_good_or_bad, load_dev_script, run_script, stop_in_process, train
from data import shakespeare_split, shakespeare_works
from model import Encoder
from optim import weight_decay_groups
from tokenizer import load_recorded_tokenizer, load_tokenizer


def test_metrics_against_known_values():
    pred, gold = np.array([1, 1, 0, 0, 1]), np.array([1, 0, 0, 1, 1])
    assert finetune.accuracy(pred, gold) == pytest.approx(3 / 5)
    assert finetune.f1(pred, gold) == pytest.approx(2 / 3)  # tp 2, 3 predicted, 3 actual
    assert finetune.mcc(pred, gold) == pytest.approx(1 / 6)  # (2 * 1 - 1 * 1) / sqrt(3 * 3 * 2 * 2)
    # a constant answer: no correlation
    assert finetune.mcc(np.ones(4), np.array([1, 0, 1, 0])) == 0.0
    assert finetune.pearson(np.array([1., 2, 3, 4]), np.array([2., 4, 6, 8])) == pytest.approx(1.0)
    assert finetune.pearson(np.array([1., 2, 3, 4]), np.array([4., 3, 2, 1])) == pytest.approx(-1.0)
    # ties share their mean rank: ranks [1, 2.5, 2.5, 4] against [1, 3, 2, 4] give
    # 4.5 / sqrt(4.5 * 5)
    assert finetune.spearman(np.array([1., 2, 2, 3]), np.array([1., 3, 2, 4])) == \
        pytest.approx(4.5 / (4.5 * 5) ** 0.5)
    assert finetune.spearman(np.array([1., 2, 3]), np.array([1., 10, 100])) == pytest.approx(1.0)


def test_shakespeare_works_covers_every_work_in_every_split():
    task = finetune.shakespeare_works_task(400)
    held = task.dev + task.tests['test']
    assert task.num_labels == len(task.label_names) == 40 and 'hamlet' in task.label_names
    # every work is asked about in train and test; dev takes whole sections, every fourth
    assert {y for _, y in task.train} == {y for _, y in task.tests['test']} == \
        set(range(task.num_labels))
    assert len({y for _, y in task.dev}) > 20
    # about 15% of the text is held out; passages that share a 13-token span with training text
    # (short exchanges, stage directions) are left out of it
    assert 0.7 * 0.15 / 0.85 * len(task.train) < len(held) < 0.15 / 0.85 * len(task.train)
    assert len(task.dev) == pytest.approx(len(held) / 4, rel=0.1)  # every fourth section
    assert all(len(texts[0]) == 400 for texts, _ in task.train[:100] + held[:100])
    assert 0 < task.majority_baseline() < 0.05
    # line breaks kept, as pre-training reads them
    assert all('\n' in texts[0] for texts, _ in task.train[:100])


def test_shakespeare_lines_pairs_a_line_with_the_next_or_with_one_from_its_own_work():
    task = finetune.shakespeare_lines_task()
    held = task.dev + task.tests['test']
    assert task.num_labels == 2 and len(task.dev) == pytest.approx(len(held) / 4, rel=0.1)
    assert np.mean([y for _, y in task.train]) == pytest.approx(0.5, abs=0.02)
    assert np.mean([y for _, y in held]) == pytest.approx(0.5, abs=0.03)
    # each work's lines as the task reads them: stripped
    works = ['\n'.join(line.strip() for line in text.split('\n'))
             for text in shakespeare_works().values()]
    for (text,), follows in task.train[::2000] + held[::500]:
        first, second = text.split('\n')
        (work,) = [w for w in works if first in w]
        assert second in work and (first + '\n' + second in work) == bool(follows)


def test_zero_shot_text_holds_no_line_pre_training_read():
    """The zero-shot sample: held-out sections without any line that occurs in the training text or
    shares a span of 13 GPT-2 tokens with it (read here from the raw text)."""
    train, held_out = shakespeare_split()
    tok = load_tokenizer('gpt2')
    train_text = '\n'.join(s for sections in train.values() for s in sections)
    lines = {line.strip() for line in train_text.split('\n')}
    ids = tok.encode_ordinary(train_text)
    seen = {tuple(ids[i:i + 13]) for i in range(len(ids) - 12)}
    kept = removed = 0
    for sections in list(held_out.values())[:6]:
        for section in sections:
            text = finetune.unseen_lines(section)
            for line in text.split('\n'):
                line_ids = tok.encode_ordinary(line)
                assert line.strip() not in lines and not any(
                    tuple(line_ids[i:i + 13]) in seen for i in range(len(line_ids) - 12)), line
            kept, removed = kept + len(text), removed + len(section) - len(text)
    assert 0 < removed < kept / 4  # speakers' names and the like go; most of the text stays


@pytest.mark.parametrize('name', ['shakespeare_works', 'shakespeare_lines'])
def test_dev_and_test_text_was_never_trained_on(name):
    """No line or passage of a dev or test example shares a span of 13 or more GPT-2 tokens with the
    text train.bin holds (prepare.py's default split of the embedded corpus, read here from the raw
    text), and each test split holds at least 1,000 examples."""
    task = finetune.load_task(dict(finetune.DEFAULTS, task=name))
    assert len(task.tests['test']) >= 1000 and len(task.dev) >= 300
    train, held_out = shakespeare_split()
    tok = load_tokenizer('gpt2')
    seen = set()
    for sections in train.values():
        for section in sections:
            ids = tok.encode_ordinary(section)
            seen.update(tuple(ids[i:i + 13]) for i in range(len(ids) - 12))
    held_text = '\n'.join(line.strip() for sections in held_out.values() for s in sections
                          for line in s.split('\n'))
    for (text, *_), _ in task.dev + task.tests['test']:
        # from the held-out sections (whose lines the lines task strips)
        assert all(line.strip() in held_text for line in text.split('\n'))
        for piece in [text, *text.split('\n')]:  # the example, and each of its lines
            ids = tok.encode_ordinary(piece)
            assert not any(tuple(ids[i:i + 13]) in seen for i in range(len(ids) - 12)), piece


def test_a_model_of_another_split_is_refused_and_one_from_elsewhere_is_said_so(ckpt, tmp_path,
                                                                               capsys):
    """Every corpus the weights read counts: a start from elsewhere, a GUIDE teacher, a
    distillation teacher, each kept in the checkpoint's data history."""
    other = torch.load(ckpt, weights_only=True)
    (record,) = other['data_history']
    assert record['dataset'] == 'shakespeare'
    old = dict(record, split='by document: ... the held-out works of an older prepare.py')
    other['data_history'] = [old, record]  # pre-trained on another split, then on this one
    torch.save(other, tmp_path / 'other_split.pt')
    stop = stop_in_process('finetune.py', f'--init_from={tmp_path / "other_split.pt"}')
    assert len(stop.splitlines()) == 1 and 'may be in its training data' in stop, stop
    task = finetune.Task('shakespeare_lines', [], [], {'test': []}, 2, ('accuracy',))
    assert finetune.check_held_out(task, [record], ckpt)  # the default split: nothing said
    assert capsys.readouterr().out == ''
    web = dict(dataset='unknown (hf:answerdotai/ModernBERT-base)', split=None, fingerprint=None)
    assert finetune.check_held_out(task, [web, record], 'student.pt') is False
    assert finetune.check_held_out(task, [], 'bare.pt') is False
    out = capsys.readouterr().out
    assert out.count('not on text held out') == 2 and 'ModernBERT-base' in out
    mixed = dict(record, dataset='shakespeare,wiki.txt', split='by document: ...')
    with pytest.raises(SystemExit, match='may be in its training data'):
        finetune.check_held_out(task, [mixed], 'mixed.pt')


def test_a_probe_trains_only_its_linear_layer(ckpt):
    encoder = load_model(ckpt).model
    model = finetune.SequenceClassifier(encoder, 3, 'mean', 0.1, probe=True)
    assert [n for n, p in model.named_parameters() if p.requires_grad] == \
        ['classifier.weight', 'classifier.bias']


def test_head_epochs_fit_the_head_on_the_frozen_encoder_first(ckpt, monkeypatch):
    """--head_epochs trains the head (and, with --standardize, the pooled state's running
    statistics) while the encoder stays as it started; the epochs after train the encoder too. 17
    labels in batches of 8 end in a batch of one, which the running statistics standardize."""
    import copy
    loaded = load_model(ckpt)
    tok = load_recorded_tokenizer(loaded.tokenizer, ckpt)
    task = finetune.load_task(dict(finetune.DEFAULTS))
    data = finetune.encode_task(task, {'dev': task.dev[:8], 'test': task.tests['test'][:8]}, tok,
                                64)
    built, real = [], finetune.SequenceClassifier

    def build(*args):
        built.append(real(*args))
        built[-1].start = copy.deepcopy(built[-1].state_dict())
        return built[-1]

    monkeypatch.setattr(finetune, 'SequenceClassifier', build)
    cfg = dict(finetune.DEFAULTS, max_train_samples=17, batch_size=8, device='cpu',
               standardize=True)
    start = copy.deepcopy(loaded.model.state_dict())
    for epochs, head_epochs in ((0, 2), (1, 1)):
        finetune.finetune(dict(cfg, epochs=epochs, head_epochs=head_epochs), task, loaded.model,
                          data, tok.pad_token_id, 0, 1e-2, False)
        model = built[-1]
        moved = {k: not torch.equal(start[k], v) for k, v in model.encoder.named_parameters()}
        # the MLM head's own weights (head., decoder.) are not on the classifier's path
        body = [m for k, m in moved.items() if k.startswith('model.')]
        assert not any(moved.values()) if epochs == 0 else all(body)
        # the head and the running statistics moved in either case
        assert all(not torch.equal(model.start[k], v) for k, v in model.state_dict().items()
                   if k.startswith(('head.', 'classifier.', 'norm.running_')))


def test_relative_lr_sizes_each_tensors_rate_by_its_growth_over_the_init(ckpt, tmp_path):
    """--relative_lr: a tensor grown to three times its size trains at three times the rate, one
    shrunk to half at half the rate; the classifier's new tensors train at the rate itself, and so,
    nearly, does every tensor of random weights. End to end the option is its own run in the
    cache, and the result says it was set."""
    encoder = load_model(ckpt).model
    reference = finetune.init_rms(encoder.config)

    def rates(encoder: Encoder) -> dict:
        model = finetune.SequenceClassifier(encoder, 2, 'mean', 0.1)
        groups = finetune.relative_lr_groups(weight_decay_groups(model, 0.01), reference, 1e-3)
        assert all(len(g['params']) == 1 for g in groups)
        return {g['params'][0][0]: g['lr'] for g in groups}

    before = rates(encoder)
    embedding, wo = 'encoder.model.embeddings.tok_embeddings.weight', \
        'encoder.model.layers.0.attn.Wo.weight'
    with torch.no_grad():
        encoder.get_parameter(embedding[len('encoder.'):]).mul_(3)
        encoder.get_parameter(wo[len('encoder.'):]).mul_(0.5)
    after = rates(encoder)
    assert after[embedding] / before[embedding] == pytest.approx(3, rel=1e-5)
    assert after[wo] / before[wo] == pytest.approx(0.5, rel=1e-5)
    assert all(lr == 1e-3 for name, lr in after.items() if not name.startswith('encoder.'))
    scratch = rates(finetune.starting_encoder(encoder, True, 1))
    assert all(0.85 < lr / 1e-3 < 1.15 for lr in scratch.values())
    args = [f'--init_from={ckpt}', '--max_train_samples=32', '--max_eval_samples=32',
            '--epochs=1', '--batch_size=16', '--max_length=64', '--zero_shot_tokens=0',
            '--device=cpu', f'--cache_dir={tmp_path}']
    assert not finetune.main(args)['relative_lr']
    assert finetune.main([*args, '--relative_lr'])['relative_lr']
    assert len(list(tmp_path.glob('*.pt'))) == 2  # one run with the option, one without


def test_zero_shot_scores_a_trained_mlm_above_random_weights(ckpt):
    loaded = load_model(ckpt)
    tok = load_recorded_tokenizer(loaded.tokenizer, ckpt)
    trained = finetune.zero_shot([loaded.model], tok, 300, 64, 'cpu')
    random = finetune.zero_shot([Encoder(loaded.model.config)], tok, 300, 64, 'cpu')
    assert trained['tokens'] == random['tokens'] == 300
    assert 0 <= random['masked_accuracy'] <= trained['masked_accuracy'] <= 1
    assert random['pseudo_log_likelihood'] < trained['pseudo_log_likelihood'] < 0


def test_pairs_are_cut_longest_first():
    tok = load_tokenizer('gpt2')
    long, short = ' word' * 40, ' a b c'
    (both_long,), (one_short,) = (finetune.encode([((t, long), 0)], tok, 16) for t in (long, short))
    assert len(both_long) == len(one_short) == 16
    # the short text is kept whole
    assert one_short[1:5] == [*tok.encode_ordinary(short), tok.sep_token_id]
    # halves of the room
    assert both_long.count(tok.sep_token_id) == 2 and both_long.index(tok.sep_token_id) == 1 + 6
    (single,) = finetune.encode([((long,), 0)], tok, 16)
    assert single[0] == tok.cls_token_id and single[-1] == tok.sep_token_id and len(single) == 16


def test_shakespeare_works_end_to_end_with_a_baseline(ckpt, tmp_path):
    common = ['finetune.py', f'--init_from={ckpt}', '--max_train_samples=96',
              '--max_eval_samples=64', '--epochs=1', '--batch_size=16', '--max_length=64',
              '--seeds=0,1,2', '--zero_shot_tokens=256', '--device=cpu']
    out = run_script(*common, '--baseline=scratch', f'--out={tmp_path / "pretrained.json"}')
    run_script(*common, '--task=shakespeare_lines', '--probe', '--learning_rate=1e-4,1e-3,1e-2',
               f'--out={tmp_path / "lines.json"}')
    lines = json.loads((tmp_path / 'lines.json').read_text())
    assert lines['task'] == 'shakespeare_lines' and lines['probe']
    # the rate is chosen on dev; the reported value is the test median at that rate
    assert {'0.0001', '0.001', '0.01'} <= set(lines['grid']) and \
        lines['grid'][f"{lines['learning_rate']:g}"] == max(lines['grid'].values()) == lines['dev']
    assert lines['value'] == \
        pytest.approx(np.median([s['accuracy'] for s in lines['per_seed']]))
    result = json.loads((tmp_path / 'pretrained.json').read_text())
    assert result['task'] == 'shakespeare_works' and result['metric'] == 'accuracy'
    assert not result['from_scratch'] and result['train_examples'] == 96
    assert result['test_examples'] == 64 and len(result['per_seed']) == 3
    assert result['machine']['cpu_capability'] == torch.backends.cpu.get_cpu_capability()
    assert 0 <= result['value'] <= 1
    assert result['interval'][0] <= result['mean'] <= result['interval'][1]
    assert 0 < result['majority_baseline'] < 0.2
    assert 0 <= result['zero_shot']['masked_accuracy'] <= 1 and \
        result['zero_shot']['pseudo_log_likelihood'] < 0
    # the random-weights arm ran the same grid and seeds, and the difference is paired
    base, diff = result['baseline'], result['difference']
    assert base['arm'] == 'scratch' and len(base['per_seed']) == 3 and set(base['grid']) == \
        set(result['grid'])
    assert diff['value'] == pytest.approx(result['mean'] - base['mean'])
    assert diff['interval'][0] <= diff['value'] <= diff['interval'][1]
    assert 'difference' in out.stdout and diff['verdict'] in out.stdout


def test_one_recipe_pre_trained_with_several_seeds_is_one_arm(ckpt, data_root, tmp_path):
    """--init_from=a,b: every fine-tuning seed on each checkpoint, one learning rate for the
    recipe, the intervals over the pre-training seeds too; a checkpoint of another architecture
    is refused."""
    train(data_root, tmp_path / 'seed7', '--max_iters=2', '--eval_interval=2', '--seed=7')
    both = f"{ckpt},{tmp_path / 'seed7' / 'ckpt.pt'}"
    out = run_script('finetune.py', f'--init_from={both}', '--max_train_samples=48',
                     '--max_eval_samples=48', '--epochs=1', '--batch_size=16', '--max_length=64',
                     '--seeds=0,1,2', '--zero_shot_tokens=128', '--device=cpu',
                     '--learning_rate=1e-4,1e-3', '--baseline=scratch',
                     f"--out={tmp_path / 'both.json'}")
    result = json.loads((tmp_path / 'both.json').read_text())
    assert len(result['per_seed']) == 6 and len(result['baseline']['per_seed']) == 3
    assert out.stdout.count('checkpoint 2 of 2') == len(result['grid'])
    assert 'mean over 2 pre-training seeds x 3 fine-tuning seeds' in out.stdout
    assert result['zero_shot']['checkpoints'] == 2 and result['zero_shot']['tokens'] == 128
    assert result['baseline']['zero_shot']['checkpoints'] == 1
    diff = result['difference']
    assert diff['value'] == pytest.approx(result['mean'] - result['baseline']['mean'])
    # dev/finetune_summary.py: each checkpoint's mean over the fine-tuning seeds, minus random
    # weights' mean, with the t-interval over the checkpoints
    summary = run_script('dev/finetune_summary.py', str(tmp_path / 'both.json')).stdout
    means = np.array([s['accuracy'] for s in result['per_seed']]).reshape(2, 3).mean(1)
    assert f'arm (2 checkpoints): {means[0]:.4f} {means[1]:.4f}; {means.mean():.4f} (' in summary
    assert f"minus random weights (its mean): {diff['value']:+.4f} (" in summary
    # another recipe as the baseline: here a deeper model, one checkpoint against the two
    deeper = str(tmp_path / 'deeper' / 'ckpt.pt')
    train(data_root, tmp_path / 'deeper', '--max_iters=2', '--eval_interval=2',
          '--num_hidden_layers=4')
    finetune.main([f'--init_from={both}', f'--baseline={deeper}', '--max_train_samples=32',
                   '--max_eval_samples=32', '--epochs=1', '--batch_size=16', '--max_length=64',
                   '--seeds=0,1,2', '--zero_shot_tokens=0', '--device=cpu',
                   f"--out={tmp_path / 'recipes.json'}"])
    recipes = json.loads((tmp_path / 'recipes.json').read_text())
    assert recipes['baseline']['arm'] == deeper and len(recipes['baseline']['per_seed']) == 3
    assert recipes['difference']['value'] == \
        pytest.approx(recipes['mean'] - recipes['baseline']['mean'])
    stop = stop_in_process('finetune.py', f'--init_from={ckpt},{deeper}')
    assert len(stop.splitlines()) == 1 and 'another architecture' in stop, stop
    stop = stop_in_process('finetune.py', f'--init_from={both}', f'--baseline={both},{deeper}',
                           '--seeds=0,1,2')
    assert 'give one, or one per init_from checkpoint' in stop, stop


def test_the_run_cache_trains_only_runs_it_does_not_hold(ckpt, tmp_path, monkeypatch):
    """--cache_dir: the same comparison again trains nothing and gives the same result; one more
    seed trains only that seed, on each arm; a cache file cut short is run again and replaced."""
    cache = tmp_path / 'cache'
    args = [f'--init_from={ckpt}', '--baseline=scratch', '--max_train_samples=32',
            '--max_eval_samples=32', '--epochs=1', '--batch_size=16', '--max_length=64',
            '--zero_shot_tokens=0', '--device=cpu', f'--cache_dir={cache}']
    first = finetune.main([*args, '--seeds=0,1,2'])
    assert len(list(cache.glob('*.pt'))) == 6  # 3 seeds x 2 arms at the one rate
    trained, real = [], finetune.finetune

    def counted(cfg, task, encoder, data, pad_id, seed, lr, from_scratch, run=None):
        trained.append((seed, from_scratch))
        return real(cfg, task, encoder, data, pad_id, seed, lr, from_scratch, run)

    monkeypatch.setattr(finetune, 'finetune', counted)
    assert finetune.main([*args, '--seeds=0,1,2']) == first and trained == []
    more = finetune.main([*args, '--seeds=0,1,2,3'])
    assert sorted(trained) == [(3, False), (3, True)] and len(more['per_seed']) == 4
    assert more['per_seed'][:3] == first['per_seed']
    cut = sorted(cache.glob('*.pt'))[0]
    cut.write_bytes(cut.read_bytes()[:100])
    trained.clear()
    finetune.main([*args, '--seeds=0,1,2,3'])
    assert len(trained) == 1 and len(list(cache.glob('*.pt'))) == 8


def test_a_setting_change_is_read_back_from_both_caches(ckpt, tmp_path, capsys):
    """dev/setting_change.py: a comparison with random weights made again with --standardize,
    each read back from its run cache (the logs print the runs' paths), gives the arm's and the
    baseline's changes that the two results' means give."""
    args = [f'--init_from={ckpt}', '--baseline=scratch', '--max_train_samples=32', '--epochs=1',
            '--batch_size=16', '--max_length=32', '--zero_shot_tokens=0', '--device=cpu',
            f'--cache_dir={tmp_path}', '--seeds=0,1,2']
    files = []
    for name, setting in (('plain', []), ('standardized', ['--standardize'])):
        for _ in range(2):  # trained, then read back with the paths printed
            capsys.readouterr()
            result = finetune.main([*args, *setting, f'--out={tmp_path / name}.json'])
        (tmp_path / f'{name}.log').write_text(capsys.readouterr().out)
        files += [tmp_path / f'{name}.log', tmp_path / f'{name}.json', result]
    out = run_script('dev/setting_change.py', *map(str, files[:2] + files[3:5])).stdout
    plain, standardized = files[2], files[5]
    arm = standardized['mean'] - plain['mean']
    base = standardized['baseline']['mean'] - plain['baseline']['mean']
    assert f'arm: second minus first {arm:+.4f} (' in out
    assert f'baseline: second minus first {base:+.4f} (' in out
    assert f'gap (arm less baseline): second minus first {arm - base:+.4f} (' in out


def test_a_cached_run_is_known_by_everything_it_depends_on(tmp_path, monkeypatch):
    """A run's file changes with its seed, rate, start weights (for random weights only the
    architecture), each setting that shapes a run, the examples, the device type and the CPU's
    vector kernels."""
    from model import EncoderConfig
    small = dict(vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=1,
                 num_attention_heads=2)
    torch.manual_seed(0)
    encoder, other = Encoder(EncoderConfig(**small)), Encoder(EncoderConfig(**small))
    wider = Encoder(EncoderConfig(**dict(small, hidden_size=64)))
    task = finetune.Task('t', [], [], {'test': []}, 2, ('accuracy',))

    def cache(cfg: dict, labels: list = (0, 1)) -> finetune.RunCache:
        data = dict(train=([[1, 2], [3]], torch.tensor(labels)),
                    evals={'dev': ([[4]], np.array([1])), 'test': ([[5]], np.array([0]))})
        return finetune.RunCache(tmp_path, dict(finetune.DEFAULTS, **cfg), task, data, 0)

    base = cache({})
    path = base.path(encoder, False, 0, 1e-3)
    assert base.path(encoder, False, 0, 1e-3) == path
    changed = [base.path(encoder, False, 1, 1e-3), base.path(encoder, False, 0, 3e-3),
               base.path(other, False, 0, 1e-3), base.path(encoder, True, 0, 1e-3),
               base.path(wider, True, 0, 1e-3), cache({}, [1, 0]).path(encoder, False, 0, 1e-3),
               cache({'device': 'meta'}).path(encoder, False, 0, 1e-3),
               *[cache({k: 'other'}).path(encoder, False, 0, 1e-3)
                 for k in finetune.RUN_SETTINGS]]
    assert path not in changed and len(set(changed)) == len(changed)
    # the same run on a CPU whose vector kernels torch picks otherwise (AVX512 against AVX2)
    other_kernels = 'AVX512' if torch.backends.cpu.get_cpu_capability() != 'AVX512' else 'AVX2'
    monkeypatch.setattr(torch.backends.cpu, 'get_cpu_capability', lambda: other_kernels)
    assert cache({}).path(encoder, False, 0, 1e-3) not in [path, *changed]
    monkeypatch.undo()
    # a setting added later keys only the runs that set it: older caches still read back
    assert 'relative_lr' not in base.common
    assert cache({'relative_lr': True}).path(encoder, False, 0, 1e-3) not in [path, *changed]
    # random weights: the same draw whichever weights of the architecture it is given
    assert base.path(other, True, 0, 1e-3) == base.path(encoder, True, 0, 1e-3)


def test_a_rate_at_the_edge_of_the_grid_extends_it_one_step(monkeypatch):
    """The rate is chosen on dev; a best rate at an edge extends the grid by one step past it, once
    per edge, so no arm is cut off by the grid."""
    tried = []

    def fake_finetune(cfg, task, encoder, data, pad_id, seed, lr, from_scratch, run=None):
        tried.append(lr)
        dev = -abs(np.log10(lr) + 3)  # best at 1e-3
        return dict(dev={'accuracy': dev}, test={'accuracy': 0.5}, predictions=np.zeros(4))

    monkeypatch.setattr(finetune, 'finetune', fake_finetune)
    task = finetune.Task('t', [], [], {'test': []}, 2, ('accuracy',))
    cfg = dict(finetune.DEFAULTS, seeds=[0], learning_rate=[1e-2, 3e-2])
    arm = finetune.run_arm(cfg, task, [None], {}, 0, False)
    assert tried[:2] == [1e-2, 3e-2] and tried[2] == pytest.approx(1e-2 / 3)
    assert len(tried) == 3 and arm['learning_rate'] == pytest.approx(1e-2 / 3)
    tried.clear()
    cfg['learning_rate'] = [1e-4, 1e-3, 1e-2]  # best inside: nothing added
    assert finetune.run_arm(cfg, task, [None], {}, 0, False)['learning_rate'] == 1e-3
    assert tried == [1e-4, 1e-3, 1e-2]


def test_the_paired_bootstrap_interval():
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 2, 1000)
    right = [[gold.copy() for _ in range(3)]]  # one encoder, three seeds
    noisy = [[np.where(rng.random(1000) < 0.3, 1 - gold, gold) for _ in range(3)]]  # 0.7
    coin = [[rng.integers(0, 2, 1000) for _ in range(3)]]  # 0.5
    assert finetune.bootstrap_interval(finetune.accuracy, gold, right) == (1.0, 1.0, 1.0)
    assert finetune.bootstrap_interval(finetune.accuracy, gold, noisy, noisy) == (0.0, 0.0, 0.0)
    value, low, high = finetune.bootstrap_interval(finetune.accuracy, gold, noisy, coin)
    assert 0.15 < low < value < high < 0.25 and value == pytest.approx(
        np.mean([finetune.accuracy(p, gold) for p in noisy[0]])
        - np.mean([finetune.accuracy(p, gold) for p in coin[0]]))
    other_coin = [[rng.integers(0, 2, 1000) for _ in range(3)]]
    value, low, high = finetune.bootstrap_interval(finetune.accuracy, gold, coin, other_coin)
    assert low < 0 < high  # two coins: no difference resolved


def test_the_interval_covers_the_pre_training_seeds():
    """Several checkpoints of one recipe are one arm: the difference pairs each with the baseline
    on the same fine-tuning seed, and the interval widens when the checkpoints disagree."""
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 2, 2000)

    def flip(share: float) -> list:  # three fine-tuning seeds' predictions, share of them wrong
        return [np.where(rng.random(2000) < share, 1 - gold, gold) for _ in range(3)]
    coin = [flip(0.5)]
    agreeing, disagreeing = [flip(0.3), flip(0.3)], [flip(0.1), flip(0.5)]
    value, low, high = finetune.bootstrap_interval(finetune.accuracy, gold, agreeing, coin)
    def mean(arm: list) -> float:
        return float(np.mean([finetune.accuracy(p, gold) for runs in arm for p in runs]))
    assert value == pytest.approx(mean(agreeing) - mean(coin))
    wide = finetune.bootstrap_interval(finetune.accuracy, gold, disagreeing, coin)
    assert wide[0] == pytest.approx(value, abs=0.03) and wide[2] - wide[1] > 3 * (high - low)


def test_write_task_round_trips_through_task_files(tmp_path):
    finetune.main(['--task=shakespeare_lines', f'--write_task={tmp_path}'])
    lines = finetune.shakespeare_lines_task()
    cfg = dict(finetune.DEFAULTS, task='files', train_file=str(tmp_path / 'train.jsonl'),
               validation_file=str(tmp_path / 'dev.jsonl'), test_file=str(tmp_path / 'test.jsonl'))
    again = finetune.files_task(cfg)
    # class names sort as the built-in task's ids: 'elsewhere' 0, 'next' 1
    assert again.label_names == lines.label_names and again.note == ''
    assert (again.train, again.dev, again.tests) == (lines.train, lines.dev, lines.tests)
    record = json.loads((tmp_path / 'test.jsonl').read_text().splitlines()[0])
    assert set(record) == {'text', 'label'} and record['label'] in ('next', 'elsewhere')


def test_without_a_test_file_the_validation_file_is_the_test(tmp_path):
    (tmp_path / 'train.jsonl').write_text(''.join(
        json.dumps(dict(text=f'line {i}', label=['no', 'yes'][i % 2])) + '\n' for i in range(50)))
    (tmp_path / 'val.jsonl').write_text('{"text": "to be", "label": "yes"}\n')
    cfg = dict(finetune.DEFAULTS, task='files', train_file=str(tmp_path / 'train.jsonl'),
               validation_file=str(tmp_path / 'val.jsonl'))
    task = finetune.files_task(cfg)
    assert (len(task.train), len(task.dev), task.tests) == (45, 5, {'test': [(('to be',), 1)]})
    assert 'is the test' in task.note and not set(task.dev) & set(task.train)


def test_a_local_jsonl_task_is_learnt(ckpt, tmp_path):
    result = learn_good_or_bad(ckpt, tmp_path, 'cpu')
    assert result['metric'] == 'accuracy' and set(result['metrics']) == {'accuracy', 'f1'}
    assert result['value'] > 0.9, result


def test_scores_in_a_csv_or_tsv_are_a_regression_as_in_jsonl(tmp_path):
    """A CSV or TSV holds only text: its labels are read as the numbers they spell, so the same
    data gives the same task whichever file holds it (scores a regression, class ids classes)."""
    rows = [('to be', 3.5), ('or not', 1.25), ('to be', 4.0), ('that is', 2)]

    def task(kind, data):
        suffix = {'jsonl': 'jsonl', 'csv': 'csv', 'tsv': 'tsv'}[kind]
        path = tmp_path / f'{len(list(tmp_path.iterdir()))}.{suffix}'
        if kind == 'jsonl':
            path.write_text(''.join(json.dumps(dict(text=t, label=y)) + '\n' for t, y in data))
        else:
            sep = ',' if kind == 'csv' else '\t'
            path.write_text(f'text{sep}label\n' + ''.join(f'{t}{sep}{y}\n' for t, y in data))
        cfg = dict(finetune.DEFAULTS, train_file=str(path), validation_file=str(path))
        return finetune.files_task(cfg)

    jsonl = task('jsonl', rows)
    assert jsonl.num_labels == 1 and jsonl.metrics[0] == 'spearman'
    for kind in ('csv', 'tsv'):
        other = task(kind, rows)
        assert (other.num_labels, other.metrics, other.train) == \
            (jsonl.num_labels, jsonl.metrics, jsonl.train)
    classes = [('to be', 1), ('or not', 0), ('that is', 1)]
    from_csv, from_jsonl = task('csv', classes), task('jsonl', classes)
    assert from_csv.tests == from_jsonl.tests == \
        {'test': [(('to be',), 1), (('or not',), 0), (('that is',), 1)]}
    words = [('to be', 'yes'), ('or not', 'nan')]  # text stays text, 'nan' included
    assert task('csv', words).label_names == ['nan', 'yes']


def test_glue_tasks_through_datasets(ckpt, monkeypatch):
    """The GLUE table (fields, labels, metrics, MNLI's two validation sets) through a stand-in for
    datasets."""
    rng = np.random.default_rng(0)

    def load_dataset(path, name):
        assert path == 'nyu-mll/glue'
        fields, num_labels, _, evals = finetune.GLUE_TASKS[name]

        def rows(n):
            return [{**{f: f'text {i} for {f}' for f in fields},
                     'label': float(rng.random() * 5)
                     if num_labels == 1 else int(rng.integers(num_labels))}
                    for i in range(n)]
        return {'train': rows(32), **{split: rows(16) for split in evals}}

    monkeypatch.setitem(sys.modules, 'datasets', types.SimpleNamespace(load_dataset=load_dataset))
    args = [f'--init_from={ckpt}', '--epochs=1', '--batch_size=8',
            '--max_length=32', '--device=cpu']
    mnli = finetune.main([*args, '--task=glue/mnli'])
    assert mnli['metric'] == 'accuracy' and \
        set(mnli['metrics']) == {'accuracy', 'accuracy_validation_mismatched'}
    stsb = finetune.main([*args, '--task=glue/stsb'])
    assert stsb['metric'] == 'spearman' and stsb['majority_baseline'] is None and \
        -1 <= stsb['value'] <= 1
    assert finetune.main([*args, '--task=glue/mrpc'])['metrics'].keys() == {'f1', 'accuracy'}
    monkeypatch.setitem(sys.modules, 'datasets', None)  # not installed
    with pytest.raises(SystemExit, match='pip install datasets'):
        finetune.main([*args, '--task=glue/cola'])


REFUSALS = {
    'unknown task': (['--task=squad'],
                     "unknown task 'squad'; use shakespeare_works, shakespeare_lines, glue/"),
    'bad learning rate': (['--learning_rate=1e-3,-1'],
                          'learning_rate=[0.001, -1]: give numbers > 0'),
    'unknown glue task': (['--task=glue/wnli'], "unknown GLUE task 'wnli'"),
    'no checkpoint': (['--init_from=nope.pt'], 'no checkpoint at nope.pt'),
    'missing field': (['--task=files', '--train_file={tmp}/a.jsonl',
                       '--validation_file={tmp}/a.jsonl', '--text_fields=premise'],
                      "record 1, has no field 'premise'"),
    'unseen label': (['--task=files', '--train_file={tmp}/a.jsonl',
                      '--validation_file={tmp}/b.jsonl'],
                     "has label 'maybe', which"),
    'not json': (['--task=files', '--train_file={tmp}/c.jsonl', '--validation_file={tmp}/a.jsonl'],
                 'cannot read'),
    'bad pooling': (['--pooling=max'], "pooling='max' is not one of cls, mean"),
    'probe with head epochs': (['--probe', '--head_epochs=2'], 'use one of them'),
    'negative head epochs': (['--head_epochs=-1'], 'head_epochs=-1 must be at least 0'),
    'cache_dir a file': (['--cache_dir={tmp}/a.jsonl', '--max_train_samples=8',
                          '--max_eval_samples=8'], 'cannot be a folder'),
}


@pytest.mark.parametrize('case', REFUSALS)
def test_bad_input_gets_one_line(case, ckpt, tmp_path):
    (tmp_path / 'a.jsonl').write_text('{"text": "to be", "label": "yes"}\n'
                                      '{"text": "or not", "label": "no"}\n')
    (tmp_path / 'b.jsonl').write_text('{"text": "to be", "label": "maybe"}\n')
    (tmp_path / 'c.jsonl').write_text('{"text": "to be", "lab\n')
    args, message = REFUSALS[case]
    stop = stop_in_process('finetune.py', f'--init_from={ckpt}',
                           *[a.format(tmp=tmp_path) for a in args])
    assert len(stop.splitlines()) == 1 and message in stop, stop


def test_a_model_without_a_tokenizer_is_refused(ckpt, tmp_path):
    bare = torch.load(ckpt, weights_only=True)
    del bare['tokenizer']
    torch.save(bare, tmp_path / 'bare.pt')
    assert 'records no tokenizer' in stop_in_process('finetune.py',
                                                     f'--init_from={tmp_path / "bare.pt"}')


def test_frozen_probes_on_finetunings_labels_gather_by_arm(ckpt, tmp_path):
    """dev/diagnose.py labels=N seed=S probes the N passages finetune.py's seed S fine-tunes on and
    scores test too; dev/probe_summary.py averages each checkpoint over label seeds and pairs each
    arm with random weights drawn for the same label seed."""
    outputs = {}
    for name, extra in (('pre_s1', []), ('pre_s1_scratch', ['scratch'])):
        for seed in (0, 1):
            out = run_script('dev/diagnose.py', ckpt, *extra, 'labels=40', f'seed={seed}').stdout
            line = next(x for x in out.splitlines() if x.startswith('final probe mean'))
            assert line.startswith(f'final probe mean, 40 labels, seed {seed}: dev ')
            outputs[name, seed] = float(line.rsplit(' ', 1)[1])
            (tmp_path / f'{name}_labels_40_seed_{seed}.txt').write_text(out)
    (tmp_path / 'unfinished_s2_labels_40_seed_0.txt').write_text('emb probe mean 0.1\n')
    summary = run_script('dev/probe_summary.py', *map(str, tmp_path.iterdir())).stdout
    assert 'unfinished' not in summary
    test = [outputs['pre_s1', s] for s in (0, 1)]
    drawn = [outputs['pre_s1_scratch', s] for s in (0, 1)]
    assert 'pre_s1: dev' in summary and f'test {np.mean(test):.4f} (label seeds [0, 1])' in summary
    paired = np.array(test) - np.array(drawn)
    m = re.search(r'minus random weights (\S+) \(one seed\) over pre-training seeds, (\S+) '
                  r'\((\S+) to (\S+)\) paired by label seed', summary)
    assert m and abs(float(m[1]) - paired.mean()) < 2e-4 and abs(float(m[2]) - paired.mean()) < 2e-4
    assert float(m[3]) < paired.mean() < float(m[4])  # two label seeds: a t-interval with 1 df


def test_diagnose_probes_line_pairs_and_val_loss_split_reads_train_text(ckpt):
    """dev/diagnose.py task=lines probes shakespeare_lines' pairs (scored on its test pairs too);
    dev/val_loss_split.py --split=train reads the same checkpoint on train text, and a split
    it does not know gets one line and a non-zero exit."""
    out = run_script('dev/diagnose.py', ckpt, 'task=lines', 'labels=40', 'seed=0').stdout
    assert out.splitlines()[0].split()[:2] == [ckpt, 'shakespeare_lines']
    line = next(x for x in out.splitlines() if x.startswith('final probe mean'))
    assert line.startswith('final probe mean, 40 labels, seed 0: dev ')
    assert 0 < float(line.rsplit(' ', 1)[1]) < 1
    reads = {split: json.loads(run_script('dev/val_loss_split.py', *args, ckpt).stdout)
             for split, args in (('val', ()), ('train', ('--split=train',)))}
    assert reads['train']['split'] == 'train' and reads['val']['split'] == 'val'
    assert reads['train']['unseen_share'] == 0  # train holds every token of its own text
    assert reads['train']['val_loss'] != reads['val']['val_loss'] > 0
    bad = run_script('dev/val_loss_split.py', '--split=test', ckpt, check=False)
    assert bad.returncode != 0 and bad.stderr.strip().splitlines() == [
        "--split=test: the split is 'train' or 'val'"]


def test_val_loss_split_reads_runs_of_another_batch_size_on_one_sample(ckpt, tmp_path):
    """--sample_of reads every checkpoint on the named run's evaluation batches: the same weights
    saved with another batch size, count and seed read alike through either route, and unlike the
    weights' own sample."""
    other = torch.load(ckpt, map_location='cpu', weights_only=False)
    other['config'] = dict(other['config'], batch_size=3, eval_iters=2, seed=11)
    other['state'] = {k: v for k, v in other['state'].items() if k != 'batch_size'}
    torch.save(other, tmp_path / 'other.pt')
    split_losses = load_dev_script('val_loss_split').split_losses
    own = split_losses(ckpt)['val_loss']
    sample = f'--sample_of={tmp_path / "other.pt"}'
    on_other = json.loads(run_script('dev/val_loss_split.py', sample, ckpt).stdout)['val_loss']
    assert on_other == split_losses(str(tmp_path / 'other.pt'))['val_loss'] != own
    assert split_losses(ckpt, sample_of=ckpt)['val_loss'] == own
    bad = run_script('dev/val_loss_split.py', f'--sample_of={tmp_path / "none.pt"}', ckpt,
                     check=False)
    assert bad.returncode != 0 and bad.stderr.strip().splitlines() == [
        f'--sample_of={tmp_path / "none.pt"}: no such checkpoint; give a run\'s ckpt.pt']


def test_swap_parts_splits_a_checkpoint_into_rows_and_body(ckpt, data_root, tmp_path):
    """dev/swap_parts.py: 'embedding' draws the token rows afresh and keeps the rest; 'body' keeps
    the rows and draws the rest (the LayerNorm after the rows included); the tied decoder follows
    the rows; 'row_scale' and 'row_center' change only the rows; 'rare_rows' and 'core_rows' draw
    afresh the rows outside, or inside, a remapping file's kept ids; bad arguments stop with one
    line and write nothing."""
    from checkpoint import checkpoint_encoder, load_checkpoint
    trained = checkpoint_encoder(load_checkpoint(ckpt))
    source = trained.state_dict()
    torch.manual_seed(7)
    fresh = Encoder(trained.config).state_dict()
    rows = 'model.embeddings.tok_embeddings.weight'
    for part, kept_rows in (('embedding', False), ('body', True)):
        out = tmp_path / f'{part}.pt'
        run_script('dev/swap_parts.py', ckpt, part, '7', str(out))
        model = checkpoint_encoder(load_checkpoint(str(out)))
        assert model.decoder.weight is model.model.tok_embeddings.weight
        for name, w in model.state_dict().items():
            from_source = (name in (rows, 'decoder.weight')) == kept_rows
            assert torch.equal(w, (source if from_source else fresh)[name]), (part, name)

    def rows_only(part: str) -> Encoder:
        """The checkpoint after a row_* part: every weight but the rows kept, the move reported."""
        out = tmp_path / f'{part}.pt'
        said = run_script('dev/swap_parts.py', ckpt, part, '7', str(out)).stdout
        model = checkpoint_encoder(load_checkpoint(str(out)))
        for name, w in model.state_dict().items():
            if name not in (rows, 'decoder.weight'):
                assert torch.equal(w, source[name]), (part, name)
        assert 'mean-pooled states moved by' in said
        return model

    # row_scale: each row rescaled to the fresh rows' RMS, the same encoder function up to the
    # LayerNorm's eps
    scaled = rows_only('row_scale')
    row_rms = scaled.state_dict()[rows].pow(2).mean(1).sqrt()
    assert torch.allclose(row_rms, fresh[rows].pow(2).mean().sqrt().expand_as(row_rms), rtol=1e-4)
    ids = torch.randint(0, trained.config.vocab_size, (2, 16))
    with torch.no_grad():
        cos = torch.nn.functional.cosine_similarity(trained.eval().encode(ids),
                                                    scaled.eval().encode(ids), dim=-1)
    assert cos.min() > 0.999
    # row_center: each row moved by the same vector, to a zero mean
    centred = rows_only('row_center').state_dict()
    shift = source[rows] - centred[rows]
    assert torch.allclose(shift, source[rows].mean(0).expand_as(shift), atol=1e-6)
    assert centred[rows].mean(0).abs().max() < 1e-6
    # rare_rows / core_rows: the rows of one side of the 512-token remapping's kept ids fresh
    remapping = str(data_root / 'shakespeare' / 'vocab_512.pt')
    core = torch.zeros(trained.config.vocab_size, dtype=torch.bool)
    core[torch.load(remapping, weights_only=False)['shrunk_to_full']] = True
    assert 0 < core.sum() < len(core)
    for part, fresh_rows in (('rare_rows', ~core), ('core_rows', core)):
        out = tmp_path / f'{part}.pt'
        said = run_script('dev/swap_parts.py', ckpt, part, '7', str(out), remapping).stdout
        assert f'{int(fresh_rows.sum())} of {len(core)} rows drawn afresh' in said
        model = checkpoint_encoder(load_checkpoint(str(out))).state_dict()
        for name, w in model.items():
            if name not in (rows, 'decoder.weight'):
                assert torch.equal(w, source[name]), (part, name)
        assert torch.equal(model[rows][fresh_rows], fresh[rows][fresh_rows])
        assert torch.equal(model[rows][~fresh_rows], source[rows][~fresh_rows])
        assert torch.equal(model['decoder.weight'], model[rows])
    for args, says in (((ckpt, 'head', '0', str(tmp_path / 'x.pt')), "unknown part 'head'"),
                       ((ckpt, 'body', '0', ckpt), 'is the source checkpoint'),
                       ((ckpt, 'rare_rows', '0', str(tmp_path / 'x.pt')),
                        'and only they, take a remapping'),
                       ((ckpt, 'body', '0', str(tmp_path / 'x.pt'), remapping),
                        'and only they, take a remapping'),
                       ((ckpt, 'core_rows', '0', str(tmp_path / 'x.pt'), str(tmp_path / 'no.pt')),
                        'no such remapping file')):
        assert says in stop_in_process('dev/swap_parts.py', *args)
    assert not (tmp_path / 'x.pt').exists()


def test_embedding_rows_reads_rms_and_cosine_by_frequency(ckpt, data_root, tmp_path):
    """dev/embedding_rows.py: five frequency groups that cover the vocabulary; the initial draw's
    rows have the init's RMS and no shared direction, and a checkpoint's RMS is its rows' own; a
    folder without counts.npy stops with one line."""
    from checkpoint import checkpoint_encoder, load_checkpoint
    out = run_script('dev/embedding_rows.py', str(data_root / 'shakespeare'), ckpt).stdout
    initial, trained = out.splitlines()
    groups = re.findall(r'seen (\S+) \((\d+)\): RMS ([\d.]+), cosine (-?[\d.]+)', initial)
    model = checkpoint_encoder(load_checkpoint(ckpt))
    assert [g[0] for g in groups] == ['1000+', '50-999', '5-49', '1-4', '0']
    assert sum(int(g[1]) for g in groups) == model.config.vocab_size
    std = model.config.initializer_range
    assert all(0.8 * std < float(g[2]) < std and abs(float(g[3])) < 0.02 for g in groups)
    rows = model.model.tok_embeddings.weight.detach()
    rms = rows.pow(2).mean(1).sqrt()
    counts = np.bincount(np.memmap(data_root / 'shakespeare' / 'train.bin', dtype=np.uint16),
                         minlength=model.config.vocab_size)
    often = rms[torch.from_numpy(counts >= 1000)].median()
    assert trained.startswith(f'{ckpt}: seen 1000+') and f'RMS {often:.3f},' in trained
    assert trained.endswith(f'rows under RMS 0.005: {int((rms < 0.005).sum())}')
    missing = run_script('dev/embedding_rows.py', str(tmp_path), ckpt, check=False)
    assert missing.returncode != 0 and 'has no counts.npy' in missing.stderr
    assert 'Traceback' not in missing.stderr
