"""The path a ModernBERT user takes with ModernBERT's own tokenizer (teacher folder -> prepare ->
GUIDE student -> train -> export -> pipeline), and the refusals wherever a model meets data of
another tokenizer with as many ids."""
import json
import shutil

import pytest
import torch
from transformers import AutoTokenizer, pipeline

import export_hf
import init_guide
import prepare
from checkpoint import load_checkpoint, save_checkpoint
from conftest import MODERNBERT_IDS, run_script, shakespeare_texts, train
from fill_mask import MaskFiller
from hf import load_pretrained, save_pretrained
from model import Encoder, EncoderConfig
from tokenizer import data_tokenizer, gpt2_hf_tokenizer, modernbert_hf_tokenizer

STUDENT = ['--hidden_size=32', '--num_hidden_layers=2', '--num_attention_heads=1',
           '--intermediate_size=48']
SENTENCE = 'The capital of France is [MASK].'


@pytest.fixture(scope='module')
def teacher(tmp_path_factory) -> str:
    """A ModernBERT-architecture teacher in ModernBERT's vocabulary, saved as a transformers folder
    with ModernBERT's tokenizer files beside it (what a hub download of answerdotai/ModernBERT-base
    holds, at toy size)."""
    folder = tmp_path_factory.mktemp('teacher')
    torch.manual_seed(0)
    save_pretrained(Encoder(EncoderConfig(vocab_size=50368, hidden_size=64, intermediate_size=96,
                                          num_hidden_layers=3, num_attention_heads=2,
                                          local_attention=16)), str(folder))
    modernbert_hf_tokenizer().save_pretrained(str(folder))
    return str(folder)


@pytest.fixture(scope='module')
def plays(tmp_path_factory, teacher):
    """A corpus of eight plays' openings, prepared with the teacher's folder as the tokenizer and
    with --tokenizer=modernbert: the same tokenizer, so the same fingerprint either way."""
    corpus, root = tmp_path_factory.mktemp('corpus'), tmp_path_factory.mktemp('data')
    for name, text in list(shakespeare_texts().items())[:8]:
        (corpus / name).write_text(text[:30_000])
    metas = {}
    for out, tokenizer in (('plays', teacher), ('plays_builtin', 'modernbert')):
        assert prepare.main([f'--dataset={corpus}', f'--tokenizer={tokenizer}',
                             f'--out_dir={root / out}', '--num_proc=1']) == 0
        metas[out] = json.loads((root / out / 'meta.json').read_text())
    assert metas['plays']['tokenizer_fingerprint'] == \
        metas['plays_builtin']['tokenizer_fingerprint']
    assert metas['plays']['mask_token_id'] == 50284
    return root


@pytest.fixture(scope='module')
def trained_student(tmp_path_factory, teacher, plays) -> str:
    out = tmp_path_factory.mktemp('student')
    init_guide.main([f'--teacher={teacher}', '--dataset=plays', f'--data_root={plays}',
                     f'--out={out / "student.pt"}', *STUDENT])
    train(plays, out / 'run', '--dataset=plays', f'--init_from={out / "student.pt"}',
          '--max_iters=4', '--eval_interval=4', '--eval_iters=2', '--block_size=64',
          '--batch_size=4')
    return str(out)


def one_line_failure(result, *expected: str) -> str:
    assert result.returncode == 1, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and all(e in lines[0] for e in expected), result.stderr[-2000:]
    return lines[0]


def test_guide_student_trains_and_exports_with_modernbert_tokenizer(trained_student, tmp_path):
    ckpt = f'{trained_student}/run/ckpt.pt'
    meta = load_checkpoint(ckpt)['dataset_meta']
    assert load_checkpoint(f'{trained_student}/student.pt')['tokenizer'] == data_tokenizer(meta)
    export_hf.main([f'--ckpt={ckpt}', f'--out={tmp_path / "hf"}'])
    tokenizer = AutoTokenizer.from_pretrained(str(tmp_path / 'hf'))
    for text, expected in MODERNBERT_IDS.items():
        assert tokenizer(text)['input_ids'] == expected
    fill = pipeline('fill-mask', model=str(tmp_path / 'hf'), top_k=3)
    predicted = [r['token'] for r in fill(SENTENCE)]
    model = load_pretrained(str(tmp_path / 'hf')).eval()
    with torch.no_grad():
        logits = model(torch.tensor([MODERNBERT_IDS[SENTENCE]]))[0][0, 6]
    assert predicted == logits.topk(3).indices.tolist()
    # fill_mask.py reads the checkpoint's tokenizer by its record and finds the same [MASK]
    assert len(MaskFiller(ckpt)(SENTENCE, top_k=3)[0]) == 3


def test_models_of_one_tokenizer_refuse_data_of_another(trained_student, teacher,
                                                        data_root, tmp_path):
    # the default gpt2 data has 50,368 ids too: every size check passes, the tokenizer check
    # does not
    student = f'{trained_student}/student.pt'
    for init in (student, f'hf:{teacher}', f'{trained_student}/run/ckpt.pt'):
        result = train(data_root, tmp_path / 'run', f'--init_from={init}', check=False)
        one_line_failure(result, 'is tokenized with gpt2', 'python prepare.py --tokenizer=')
        assert not (tmp_path / 'run').exists()
    result = run_script('init_guide.py', f'--teacher={teacher}', '--dataset=shakespeare',
                        f'--data_root={data_root}', f'--out={tmp_path / "s.pt"}',
                        *STUDENT, check=False)
    one_line_failure(result, 'is tokenized with gpt2')
    # a folder with no tokenizer files cannot show what its ids mean
    bare = tmp_path / 'bare'
    shutil.copytree(teacher, bare,
                    ignore=shutil.ignore_patterns('tokenizer*', 'special_tokens_map.json'))
    result = run_script('init_guide.py', f'--teacher={bare}', '--dataset=shakespeare',
                        f'--data_root={data_root}', f'--out={tmp_path / "s.pt"}',
                        *STUDENT, check=False)
    one_line_failure(result, 'records no tokenizer')
    assert not (tmp_path / 's.pt').exists()


def test_changed_tokenizers_are_refused_at_export_and_fill_mask(trained_student, tmp_path):
    ckpt = load_checkpoint(f'{trained_student}/run/ckpt.pt')
    # what the model was trained with is not what loads now
    ckpt['tokenizer']['fingerprint'] = '0' * 64
    save_checkpoint(ckpt, str(tmp_path / 'changed.pt'))
    result = run_script('export_hf.py', f'--ckpt={tmp_path / "changed.pt"}',
                        f'--out={tmp_path / "hf"}', check=False)
    one_line_failure(result, 'is not the one', 'was trained with')
    assert not (tmp_path / 'hf').exists()
    result = run_script('fill_mask.py', f'--ckpt={tmp_path / "changed.pt"}', check=False)
    one_line_failure(result, 'is not the one')
    # an exported folder whose tokenizer files were replaced by another tokenizer's
    export_hf.main([f'--ckpt={trained_student}/run/ckpt.pt', f'--out={tmp_path / "hf"}'])
    gpt2_hf_tokenizer().save_pretrained(str(tmp_path / 'hf'))
    result = run_script('fill_mask.py', f'--ckpt={tmp_path / "hf"}', check=False)
    one_line_failure(result, 'are not those its model was exported with')
