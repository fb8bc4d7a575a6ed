"""init_guide.py: the PCA projection, exact reproduction of the teacher at full width, the head /
neuron slicing, the layer mapping, importance selection, bad input, and train.py starting from a
student."""
import dataclasses
import os

import pytest
import torch

import init_guide
from attention import rope_cos_sin
from checkpoint import data_record, load_checkpoint
from conftest import run_script
from hf import load_pretrained, save_pretrained
from init_guide import guide, keep_units, layer_map, map_layer, pca_projection, student_config
from model import Encoder, EncoderConfig

SPECIAL = dict(pad_token_id=0, cls_token_id=1, sep_token_id=2, mask_token_id=3)
# 6 layers, a global one every 3rd (0 and 3), heads of 16 dims; every bias on so each projection
# is exercised
TEACHER = dict(vocab_size=300, hidden_size=64, intermediate_size=96, num_hidden_layers=6,
               num_attention_heads=4, local_attention=8, norm_bias=True, attention_bias=True,
               mlp_bias=True, classifier_bias=True, **SPECIAL)
STUDENT = ['--hidden_size=32', '--num_hidden_layers=4', '--num_attention_heads=2',
           '--intermediate_size=48']


@torch.no_grad()
def make_teacher(seed: int = 0, **overrides) -> Encoder:
    """A random teacher moved off its init, so norms and biases are not trivially 1 and 0."""
    torch.manual_seed(seed)
    teacher = Encoder(EncoderConfig(**{**TEACHER, **overrides}))
    for p in teacher.parameters():
        p.add_(0.1 * torch.randn_like(p))
    return teacher


def teacher_folder(tmp_path, **overrides) -> str:
    folder = str(tmp_path / 'teacher')
    save_pretrained(make_teacher(**overrides), folder)
    return folder


def ids(vocab_size: int = 300, seq_len: int = 40) -> torch.Tensor:
    """Sequences longer than the window of 8, so the local layers really slide."""
    return torch.randint(4, vocab_size, (2, seq_len), generator=torch.Generator().manual_seed(1))


def layer0_output(model: Encoder, x: torch.Tensor) -> torch.Tensor:
    """Embeddings then layer 0 (a global layer: no mask without padding)."""
    rope = rope_cos_sin(x.shape[1], model.config.head_dim, model.config.global_rope_theta, x.device)
    return model.model.layers[0](model.model.embeddings(x), rope, None)


# ---- the projection

def test_pca_projection_is_orthonormal_and_explains_the_planted_variance():
    g = torch.Generator().manual_seed(0)
    basis = torch.linalg.qr(torch.randn(64, 64, generator=g))[0]
    scales = torch.tensor([10.0] * 8 + [0.1] * 56)  # 8 strong directions, a weak rest
    # an offset mean that PCA must remove
    emb = 3.0 + torch.randn(5000, 64, generator=g) * scales @ basis.T
    M, explained = pca_projection(emb, 8)
    assert M.shape == (64, 8)
    torch.testing.assert_close(M.T @ M, torch.eye(8), atol=1e-5, rtol=0)
    expected = 8 * 100 / (8 * 100 + 56 * 0.01)
    assert 0 < explained <= 1 and explained == pytest.approx(expected, abs=2e-3)
    # M spans the strong directions: projecting them onto M keeps (almost) all of them
    strong = basis[:, :8]
    assert (M @ M.T @ strong).norm() / strong.norm() > 0.999
    M4, explained4 = pca_projection(emb, 4)
    assert 0 < explained4 < explained
    M_full, explained_full = pca_projection(emb, 64)
    assert torch.equal(M_full, torch.eye(64)) and explained_full == 1.0


# ---- exactness at full width: the strongest check of every slice

def test_full_size_student_reproduces_the_teacher_logits(tmp_path):
    folder = teacher_folder(tmp_path)
    out = str(tmp_path / 'student.pt')
    record = init_guide.main([f'--teacher={folder}', f'--out={out}', '--hidden_size=64',
                              '--num_hidden_layers=6', '--num_attention_heads=4',
                              '--intermediate_size=96', '--guide_layers=all',
                              '--select=importance'])
    assert record['explained_variance'] == 1.0 and record['layer_map'] == {i: i for i in range(6)}
    ckpt = load_checkpoint(out)
    student = Encoder(EncoderConfig(**ckpt['model_args']))
    student.load_state_dict(ckpt['model'])
    teacher = load_pretrained(folder)
    x = ids()
    with torch.no_grad():
        torch.testing.assert_close(student(x)[0], teacher(x)[0], atol=1e-5, rtol=0)


def test_full_width_guide_layers_0_reproduces_layer_0_only():
    teacher = make_teacher()
    torch.manual_seed(0)
    student, record = guide(teacher, teacher.config, guide_layers=None)
    assert record['layer_map'] == {0: 0}
    x = ids()
    with torch.no_grad():
        assert torch.equal(layer0_output(student, x), layer0_output(teacher, x))
        assert not torch.equal(student.model.layers[1].attn.Wqkv.weight,
                               teacher.model.layers[1].attn.Wqkv.weight)
        assert torch.equal(student.decoder.bias, teacher.decoder.bias)
        assert student.decoder.weight is student.model.tok_embeddings.weight  # still tied


@pytest.mark.parametrize('seed', [0, 1])
def test_permuted_heads_and_neurons_give_the_same_layer(seed):
    """Keeping all heads and neurons in a shuffled order changes nothing only if Q, K, V, Wo's
    columns, both Wi halves and mlp Wo's columns are cut with the same indices."""
    teacher = make_teacher(seed)
    g = torch.Generator().manual_seed(seed)
    student = Encoder(teacher.config)
    for i in (0, 1):  # layer 1 also has an attn_norm
        with torch.no_grad():
            map_layer(student.model.layers[i], teacher.model.layers[i], torch.eye(64),
                      torch.randperm(4, generator=g), torch.randperm(96, generator=g))
    student.model.embeddings.load_state_dict(teacher.model.embeddings.state_dict())
    x = ids()
    rope = rope_cos_sin(x.shape[1], 16, teacher.config.local_rope_theta, x.device)
    with torch.no_grad():
        h = teacher.model.embeddings(x)
        for i in (0, 1):
            torch.testing.assert_close(student.model.layers[i](h, rope, None),
                                       teacher.model.layers[i](h, rope, None), atol=1e-5, rtol=0)


# ---- a smaller student

def test_default_student_is_modernbert_small_with_the_right_shapes_and_names(tmp_path):
    """From a teacher folder wider than ModernBERT-small (448 hidden, 7 heads of 64), the default
    dimensions give a checkpoint with exactly ModernBERT-small's names and shapes, the rest of the
    config the teacher's."""
    folder = str(tmp_path / 'teacher')
    torch.manual_seed(0)
    teacher = EncoderConfig(vocab_size=2000, hidden_size=448, intermediate_size=768,
                            num_hidden_layers=12, num_attention_heads=7, local_attention=16,
                            global_rope_theta=9999.0, **SPECIAL)
    save_pretrained(Encoder(teacher), folder)
    out = str(tmp_path / 'student.pt')
    record = init_guide.main([f'--teacher={folder}', f'--out={out}'])
    assert 0 < record['explained_variance'] < 1 and record['layer_map'] == {0: 0} and \
        record['teacher'] == folder
    ckpt = load_checkpoint(out)
    small = EncoderConfig(**{**vars(teacher), 'hidden_size': 384, 'num_hidden_layers': 12,
                             'num_attention_heads': 6, 'intermediate_size': 768})
    assert ckpt['model_args'] == vars(small)
    with torch.device('meta'):  # names and shapes only: no time spent on a random init
        expected = Encoder(small)
    assert {k: v.shape for k, v in ckpt['model'].items()} == \
        {k: v.shape for k, v in expected.state_dict().items()}
    expected.load_state_dict(ckpt['model'], assign=True)  # strict


def test_student_from_a_train_py_checkpoint_keeps_its_dataset_meta_and_trains(data_root, tmp_path,
                                                                              capsys):
    common = ['--block_size=64', '--batch_size=2', '--eval_iters=1', '--device=cpu',
              '--dtype=float32', '--compile=False', f'--data_root={data_root}']
    run_script('train.py', '--hidden_size=64', '--intermediate_size=96', '--num_hidden_layers=3',
               '--num_attention_heads=2', '--local_attention=16', '--max_iters=1',
               '--eval_interval=1', f'--out_dir={tmp_path / "teacher"}', *common)
    out = str(tmp_path / 'student.pt')
    init_guide.main([f'--teacher={tmp_path / "teacher" / "ckpt.pt"}', f'--out={out}',
                     '--hidden_size=32', '--num_hidden_layers=2', '--num_attention_heads=1',
                     '--intermediate_size=48', '--guide_layers=all'])
    printed = capsys.readouterr().out
    assert 'explain' in printed and '0 <- 0, 1 <- 2' in printed
    teacher_ckpt, ckpt = load_checkpoint(str(tmp_path / 'teacher' / 'ckpt.pt')), \
        load_checkpoint(out)
    assert ckpt['dataset_meta'] == teacher_ckpt['dataset_meta']
    # the student's weights come from the teacher's: it keeps the teacher's data history
    assert ckpt['data_history'] == teacher_ckpt['data_history'] == \
        [data_record(teacher_ckpt['dataset_meta'])]
    assert ckpt['model_args']['local_attention'] == 16 and ckpt['model_args']['hidden_size'] == 32
    run_script('train.py', f'--init_from={out}', '--max_iters=2', '--eval_interval=2',
               f'--out_dir={tmp_path / "student"}', *common)
    trained = load_checkpoint(str(tmp_path / 'student' / 'ckpt.pt'))
    assert trained['iter_num'] == 2 and trained['data_history'] == ckpt['data_history']


def test_guide_layers_all_maps_global_layers_to_global_slots_in_order():
    base = EncoderConfig()
    small = EncoderConfig(hidden_size=384, num_hidden_layers=12, num_attention_heads=6,
                          intermediate_size=768)
    assert list(layer_map(base, small, 'all').values()) == \
        [0, 2, 4, 6, 8, 10, 12, 13, 16, 18, 19, 20]
    for depth in range(1, 23):
        student = dataclasses.replace(small, num_hidden_layers=depth)
        mapping = layer_map(base, student, 'all')
        targets = list(mapping.values())
        # in order, each once
        assert list(mapping) == list(range(depth)) and targets == sorted(set(targets))
        assert all(base.layer_kind(j) == student.layer_kind(i) for i, j in mapping.items())
        stretch = 21 / max(depth - 1, 1)  # near the evenly spaced depths
        assert max(abs(j - i * stretch) for i, j in mapping.items()) <= 2
    assert layer_map(base, base, 'all') == {i: i for i in range(22)}
    assert layer_map(base, small, None) == layer_map(base, small, 0) == {0: 0}


def test_mapped_layers_hold_the_projected_teacher_layers():
    teacher = make_teacher()
    config = student_config(teacher.config, 32, 2, 2, 48)
    torch.manual_seed(0)
    student, record = guide(teacher, config, 'all')
    assert record['layer_map'] == {0: 0, 1: 5}
    M, _ = pca_projection(teacher.model.tok_embeddings.weight, 32)
    with torch.no_grad():
        torch.testing.assert_close(student.model.tok_embeddings.weight,
                                   teacher.model.tok_embeddings.weight @ M)
        for i, j in record['layer_map'].items():
            s, t = student.model.layers[i], teacher.model.layers[j]
            # first 2 heads of 16
            torch.testing.assert_close(s.attn.Wo.weight, M.T @ t.attn.Wo.weight[:, :32])
            torch.testing.assert_close(s.mlp.Wo.weight, M.T @ t.mlp.Wo.weight[:, :48])
            # the gate half
            torch.testing.assert_close(s.mlp.Wi.weight[48:], t.mlp.Wi.weight[96:144] @ M)
            torch.testing.assert_close(s.mlp_norm.weight, (M ** 2).T @ t.mlp_norm.weight)
            torch.testing.assert_close(s.mlp_norm.bias, M.T @ t.mlp_norm.bias)
        torch.testing.assert_close(student.head.dense.weight, M.T @ teacher.head.dense.weight @ M)
        torch.testing.assert_close(student.decoder.bias, teacher.decoder.bias)


def test_select_importance_keeps_the_largest_norm_heads_and_neurons():
    teacher = make_teacher()
    layer = teacher.model.layers[0]
    with torch.no_grad():
        layer.attn.Wqkv.weight.view(3, 4, 16, 64)[:, [1, 3]] *= 5  # heads 1 and 3 are the big ones
        layer.mlp.Wo.weight[:, 40:88:2] *= 5  # 24 big neurons
    assert keep_units(torch.tensor([1.0, 5.0, 2.0, 4.0]), 2, 'importance').tolist() == [1, 3]
    config = student_config(teacher.config, 32, 2, 2, 24)
    torch.manual_seed(0)
    student, record = guide(teacher, config, 0, select='importance')
    assert record['kept_heads'] == {0: [1, 3]}
    M, _ = pca_projection(teacher.model.tok_embeddings.weight, 32)
    with torch.no_grad():
        q_rows = torch.cat([torch.arange(16, 32), torch.arange(48, 64)])
        torch.testing.assert_close(student.model.layers[0].attn.Wqkv.weight[:32],
                                   layer.attn.Wqkv.weight[q_rows] @ M)
        torch.testing.assert_close(student.model.layers[0].mlp.Wo.weight,
                                   M.T @ layer.mlp.Wo.weight[:, 40:88:2])
    _, first = guide(teacher, config, 0, select='first')
    assert first['kept_heads'] == {0: [0, 1]}


# ---- bad input: one line naming the problem, nothing written

@pytest.mark.parametrize('args, message', [
    (['--hidden_size=128', '--num_attention_heads=8'],
     'hidden_size=128 is larger than the teacher'),
    (['--num_hidden_layers=7'], 'num_hidden_layers=7 is larger than the teacher'),
    (['--intermediate_size=200'], 'intermediate_size=200 is larger'),
    (['--hidden_size=32', '--num_attention_heads=3'], 'not divisible by num_attention_heads=3'),
    (['--hidden_size=32', '--num_attention_heads=1'],
     'head_dim 32 (hidden_size / num_attention_heads) differs'),
    (['--guide_layers=2'], 'guide_layers=2 must be 0'),
    (['--select=random'], "select='random' must be"),
])
def test_bad_student_options_fail_clearly(tmp_path, args, message):
    folder = teacher_folder(tmp_path)
    out = tmp_path / 'student.pt'
    with pytest.raises(SystemExit) as e:
        init_guide.main([f'--teacher={folder}', f'--out={out}', *STUDENT, *args])
    assert message in str(e.value) and '\n' not in str(e.value)
    assert not out.exists()


def test_unloadable_teachers_and_unknown_tokenizers_fail_clearly(tmp_path, data_root):
    out, folder, garbage = tmp_path / 'student.pt', teacher_folder(tmp_path), \
        tmp_path / 'garbage.pt'
    garbage.write_bytes(b'not a checkpoint')
    result = run_script('init_guide.py', '--teacher=answerdotai/ModernBERT-base',
                        f'--out={out}', check=False)
    assert result.returncode == 1 and not out.exists()
    assert 'cannot be reached (offline' in result.stderr and \
        'local ModernBertForMaskedLM folder' in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    cases = [
        (str(tmp_path / 'missing.pt'), [], 'no teacher checkpoint at'),
        (str(garbage), [], 'not a complete checkpoint'),
        (str(tmp_path), [], 'cannot load teacher'),  # a folder without config.json
        (folder, ['--dataset=shakespeare', f'--data_root={data_root}'], 'records no tokenizer'),
        (folder, ['--dataset=nothing', f'--data_root={data_root}'], 'no prepared dataset'),
    ]
    for teacher, extra, message in cases:
        with pytest.raises(SystemExit) as e:
            init_guide.main([f'--teacher={teacher}', f'--out={out}', *STUDENT, *extra])
        assert message in str(e.value), str(e.value)
        assert not out.exists()


def test_an_existing_output_is_not_overwritten(tmp_path):
    folder = teacher_folder(tmp_path)
    out = tmp_path / 'student.pt'
    out.write_bytes(b'keep me')
    with pytest.raises(SystemExit, match='exists; pass --overwrite=True'):
        init_guide.main([f'--teacher={folder}', f'--out={out}', *STUDENT])
    assert out.read_bytes() == b'keep me'
    init_guide.main([f'--teacher={folder}', f'--out={out}', *STUDENT, '--overwrite=True'])
    assert load_checkpoint(str(out))['model_args']['hidden_size'] == 32
    assert not [f for f in os.listdir(tmp_path) if f.endswith('.tmp')]
