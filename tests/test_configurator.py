import json
import runpy
import sys

import pytest

from configurator import configure
from conftest import ROOT

DEFAULTS = dict(batch_size=16, learning_rate=6e-4, compile=False, out_dir='out',
                init_from='scratch', max_iters=100, peak_flops=None, schedule=[],
                model_overrides={})


def run(*argv):
    return configure(DEFAULTS, list(argv))


def error_of(*argv) -> str:
    with pytest.raises(SystemExit) as e:
        run(*argv)
    message = str(e.value)
    assert '\n' not in message and 'config error:' in message
    return message


def test_overrides_are_typed_literals():
    cfg = run('--batch_size=32', '--learning_rate=1e-3', '--compile=True', '--init_from=resume')
    assert cfg['batch_size'] == 32 and cfg['learning_rate'] == 1e-3
    assert cfg['compile'] is True and cfg['init_from'] == 'resume'
    assert DEFAULTS['batch_size'] == 16  # the defaults are not mutated


def test_int_accepted_for_float_and_bool_words():
    cfg = run('--learning_rate=1', '--compile=true')
    assert cfg['learning_rate'] == 1.0 and isinstance(cfg['learning_rate'], float)
    assert cfg['compile'] is True
    assert run('--compile=false')['compile'] is False


def test_none_default_is_overridable_and_anything_can_be_none():
    assert run('--peak_flops=1e12')['peak_flops'] == 1e12
    assert run('--max_iters=None')['max_iters'] is None


def test_unknown_key_on_command_line_suggests_close_match():
    message = error_of('--learning_rat=1e-3')
    assert "unknown key 'learning_rat'" in message and "did you mean 'learning_rate'" in message


def test_type_errors():
    assert 'not a valid Python literal of type int' in error_of('--batch_size=big')
    assert 'expected int' in error_of('--batch_size=1.5')
    assert 'expected bool' in error_of('--compile=1')
    assert 'has no value' in error_of('--batch_size')


def test_bare_flags_and_comma_lists():
    assert run('--compile')['compile'] is True  # a bare --flag switches a boolean on
    assert run('--schedule=512,1024')['schedule'] == [512, 1024]
    assert run('--schedule=small,base')['schedule'] == ['small', 'base']
    assert run('--schedule=7')['schedule'] == [7]
    # a literal stays a literal
    assert run("--schedule=[{'name': 'set_lr'}]")['schedule'] == [{'name': 'set_lr'}]


def test_config_file_with_list_dict_and_unknown_key(tmp_path):
    good = tmp_path / 'good.py'
    good.write_text("import math\nbatch_size = 8\n"
                    "schedule = [{'name': 'set_lr', 'value': 1e-4, 'at_iter': 5}]\n"
                    "model_overrides = {'norm_eps': 1e-6}\nlearning_rate = math.sqrt(1e-6)\n")
    cfg = run(str(good), '--batch_size=4')
    assert cfg['batch_size'] == 4 and cfg['schedule'][0]['name'] == 'set_lr'
    assert cfg['model_overrides'] == {'norm_eps': 1e-6} and \
        cfg['learning_rate'] == pytest.approx(1e-3)
    bad = tmp_path / 'bad.py'
    bad.write_text('bach_size = 8\n')
    message = error_of(str(bad))
    assert "unknown key 'bach_size'" in message and str(bad) in message and \
        "'batch_size'" in message
    assert 'not found' in error_of(str(tmp_path / 'missing.py'))
    wrong = tmp_path / 'wrong.py'
    wrong.write_text("schedule = 'nope'\n")
    assert 'expected list' in error_of(str(wrong))


def test_list_from_json_file(tmp_path):
    path = tmp_path / 'schedule.json'
    path.write_text(json.dumps([{'name': 'set_mask_rate', 'value': 0.15, 'at_iter': 3}]))
    assert run(f'--schedule={path}')['schedule'] == \
        [{'name': 'set_mask_rate', 'value': 0.15, 'at_iter': 3}]
    path.write_text('[{')
    assert 'invalid JSON' in error_of(f'--schedule={path}')


HELP = {  # a knob of each script with its default, and words of the comment beside it
    'train.py': ("--weight_decay_convention='torch'", "'decoupled' (wd * lr / peak)"),
    'prepare.py': ('--shard_tokens=1073741824', 'each token file holds at most'),
    'finetune.py': ("--pooling='cls'", "'cls' | 'mean'"),
    'init_guide.py': ('--overwrite=False', 'allow replacing an existing --out'),
    'export_hf.py': ('--ckpt=None', '<out_dir>/ckpt.pt'),
    'fill_mask.py': ('--top_k=5', None),
    'bench.py': ('--quick=False', 'ModernBERT-small at block 512'),
    'plot.py': ("--x='iter'", "'iter' | 'tokens'"),
}


@pytest.mark.parametrize('script', HELP)
def test_help_prints_every_knob_with_its_default_and_comment(script, capsys, monkeypatch):
    monkeypatch.setattr(sys, 'argv', [script, '--help'])
    monkeypatch.chdir(ROOT)
    with pytest.raises(SystemExit) as stop:
        runpy.run_path(script, run_name='__main__')
    assert stop.value.code == 0
    out = capsys.readouterr().out
    knob, comment = HELP[script]
    line = next(line for line in out.splitlines() if line.strip().startswith(knob))
    assert comment is None or comment in line, line


def test_train_py_knobs_are_its_settings_not_its_imports(capsys, monkeypatch):
    monkeypatch.setattr(sys, 'argv', ['train.py', '--help'])
    monkeypatch.chdir(ROOT)
    with pytest.raises(SystemExit):
        runpy.run_path('train.py', run_name='__main__')
    knobs = [line.split('=')[0].strip() for line in capsys.readouterr().out.splitlines()
             if line.startswith('  --')]
    assert '--rare_token_id' in knobs and '--IGNORE_INDEX' not in knobs and '--DROPOUT' not in knobs
    assert len(knobs) == len(set(knobs)) > 60
