"""bench.py on a tiny shape: the JSON rows, the memory accounting, the table, and bad input."""
import json

import pytest
import torch

import bench
from model import Encoder, EncoderConfig

KEYS = {'impl', 'variant', 'attn', 'sparse', 'compile', 'vocab_size', 'device', 'device_name',
        'shape', 'block', 'dtype', 'block_size', 'batch_size', 'tokens_per_s', 'peak_mem_mb', 'mfu',
        'compile_s', 'graphs', 'graph_breaks', 'hf_best'}


def run_bench(data_root, tmp_path, *args: str) -> list[dict]:
    out = tmp_path / 'rows.json'
    bench.main(['--shapes=tiny', '--block_sizes=64', '--batch_size=2', '--reps=1',
                '--compile=False', '--shrunk_vocab=512', f'--data_root={data_root}',
                f'--out={out}', *args])
    return json.loads(out.read_text())


def test_rows_table_and_memory_on_a_tiny_shape(data_root, tmp_path, capsys):
    rows = run_bench(data_root, tmp_path)
    printed = capsys.readouterr().out
    # the speed table and the profile breakdown
    assert printed.count('| tiny | 64 | ours | sdpa |') == 2
    packed = [r for r in rows if r['variant'] == 'sdpa, documents packed']
    by = {(r['impl'], r['sparse'], r['vocab_size']): r for r in rows if r not in packed}
    assert set(by) == {('hf', False, 50368), ('hf', True, 50368), ('ours', True, 50368),
                       ('ours', True, 512)}
    assert len(packed) == 1 and packed[0]['vocab_size'] == 50368 and packed[0]['vs_hf_best'] > 0
    for r in rows:
        assert KEYS <= set(r), r
        setting = r['device'], r['dtype'], r['block_size'], r['batch_size'], r['compile']
        assert setting == ('cpu', 'float32', 64, 2, False)
        assert r['tokens_per_s'] > 0 and 0 < r['mfu'] < 1 and 0 < r['of_matmul'] < 1
        assert 0 < r['data_ms'] < r['step_ms']
        assert (r['shape'], r['block'], r['attn'], r['hf_best']) == \
            ('tiny', 64, 'sdpa', 'sparse, sdpa')
        # eager: dynamo compiles nothing
        assert r['compile_s'] == 0 and r['graphs'] == r['graph_breaks'] == 0
        assert all(r['op_s'][k] > 0
                   for k in ('matmul', 'attention', 'elementwise', 'loss', 'optimizer')), r['op_s']
    hf_best = by['hf', True, 50368]
    assert hf_best['vs_hf_best'] == 1.0 and hf_best['vs_hf_default'] > 0
    assert by['ours', True, 50368]['vs_hf_best'] == pytest.approx(
        by['ours', True, 50368]['tokens_per_s'] / hf_best['tokens_per_s'])

    # at the optimizer step weights, gradients and both AdamW moments are alive: at least 4 copies
    # of the weights
    config = EncoderConfig(**bench.SHAPES['tiny'], vocab_size=50368, pad_token_id=50260,
                           cls_token_id=50257, sep_token_id=50258, mask_token_id=50259)
    weights_mb = Encoder(config).get_num_params() * 4 / 2**20
    for key in [('hf', False, 50368), ('hf', True, 50368), ('ours', True, 50368)]:
        assert by[key]['peak_mem_mb'] >= 4 * weights_mb, key
    # dense logits: at least one more [128 rows, 50368] fp32 tensor than the sparse head needs
    assert by['hf', False, 50368]['peak_mem_mb'] - hf_best['peak_mem_mb'] > 128 * 50368 * 4 / 2**20
    assert by['ours', True, 512]['peak_mem_mb'] < by['ours', True, 50368]['peak_mem_mb'] / 4


def test_a_row_with_a_teacher_holds_the_teachers_weights_too(data_root, tmp_path):
    rows = {r['variant']: r
            for r in run_bench(data_root, tmp_path, '--teacher=tiny', '--shrunk_vocab=0')}
    student, distilling = rows['sdpa'], rows['sdpa, tiny teacher']
    config = EncoderConfig(**bench.SHAPES['tiny'], vocab_size=50368, pad_token_id=50260,
                           cls_token_id=50257, sep_token_id=50258, mask_token_id=50259)
    teacher_mb = Encoder(config).get_num_params() * 4 / 2**20
    assert distilling['peak_mem_mb'] > student['peak_mem_mb'] + teacher_mb
    assert distilling['tokens_per_s'] > 0 and distilling['vs_hf_best'] > 0


def test_a_variant_out_of_memory_is_reported_and_the_others_go_on(data_root, tmp_path,
                                                                  capsys, monkeypatch):
    step = bench.train_step

    def dense_logits_run_out(v, batch, autocast):
        if v.impl == 'hf' and not v.sparse and v.seconds:  # its second timed step
            raise torch.OutOfMemoryError('CUDA out of memory. Tried to allocate 12.00 GiB')
        step(v, batch, autocast)

    monkeypatch.setattr(bench, 'train_step', dense_logits_run_out)
    rows = run_bench(data_root, tmp_path, '--reps=3')
    out, err = capsys.readouterr()
    assert 'hf dense logits, sdpa: out of memory; the other variants go on' in err
    assert '| tiny | 64 | hf | dense logits, sdpa | 50,368 | out of memory |' in out
    by = {(r['impl'], r['sparse'], r['vocab_size']): r for r in rows
          if 'documents' not in r['variant']}
    assert by['hf', False, 50368]['error'] == 'out of memory' and \
        'tokens_per_s' not in by['hf', False, 50368]
    for key in [('hf', True, 50368), ('ours', True, 50368), ('ours', True, 512)]:
        assert by[key]['tokens_per_s'] > 0 and by[key]['vs_hf_best'] > 0 and \
            by[key]['vs_hf_default'] is None


# kernel and op names as an H100 profile of the compiled step recorded them
# (assets/gpu/h100/bench_small.log)
@pytest.mark.parametrize('name, kind', [
    ('aten::_cudnn_attention_backward', 'attention'),
    ('triton_tem_fused_flex_attention_backward_transpose_view_13', 'attention'),
    ('aten::_flash_attention_forward', 'attention'),
    ('aten::mm', 'matmul'),
    ('triton_tem_fused_addmm_gelu_1', 'matmul'),
    ('triton_poi_fused__to_copy_arange_cat_div_mul_neg_pow_reciprocal_sin_slice_unsqueeze_15',
     'elementwise'),
    ('triton_poi_fused__unsafe_view_cat_gelu_gelu_backward_mul_split_view_9', 'elementwise'),
    # the copy into attention
    ('triton_poi_fused__scaled_dot_product_cudnn_attention_view_3', 'elementwise'),
    ('triton_red_fused__log_softmax_nll_loss_backward_4', 'loss'),
    ('aten::nll_loss_forward', 'loss'),
    ('Memset (Device)', 'other'),
])
def test_profiled_kernels_are_grouped_by_kind(name, kind):
    assert bench.op_kind(name) == kind
    assert bench.op_kind(name, in_optimizer=True) == 'optimizer'


def test_only_the_variants_asked_for(data_root, tmp_path):
    rows = run_bench(data_root, tmp_path, '--hf=best', '--shrunk_vocab=0')
    assert [(r['impl'], r['variant']) for r in rows] == [('hf', 'sparse, sdpa'), ('ours', 'sdpa'),
                                                         ('ours', 'sdpa, documents packed')]
    assert [r['optimizer'] for r in rows] == ['AdamW', 'AdamW', 'AdamW']
    rows = run_bench(data_root, tmp_path, '--hf=none', '--shrunk_vocab=0',
                     '--optimizer_name=stable_adamw')
    assert [r['impl'] for r in rows] == ['ours', 'ours'] and rows[0]['vs_hf_best'] is None
    # the recipe's, as train.py builds it
    assert [r['optimizer'] for r in rows] == ['StableAdamW', 'StableAdamW']


def test_compile_modes_as_variants_and_one_that_fails_is_reported(data_root, tmp_path,
                                                                  capsys, monkeypatch):
    step = bench.train_step

    def autotune_fails(v, batch, autocast):
        if v.mode == 'max-autotune':
            raise RuntimeError('no valid triton configs')
        step(v, batch, autocast)

    monkeypatch.setattr(bench, 'train_step', autotune_fails)
    rows = run_bench(data_root, tmp_path, '--hf=none', '--shrunk_vocab=0', '--warmup=2',
                     '--compile_modes=reduce-overhead,max-autotune')
    assert 'ours sdpa, compile max-autotune: failed: RuntimeError: no valid triton configs' in \
        capsys.readouterr().err
    by = {r['variant']: r for r in rows}
    assert set(by) == {'sdpa', 'sdpa, compile reduce-overhead', 'sdpa, compile max-autotune',
                       'sdpa, documents packed'}
    assert by['sdpa, compile max-autotune']['error'].startswith('failed: RuntimeError')
    # on the CPU the mode compiles, without CUDA graphs
    graphed = by['sdpa, compile reduce-overhead']
    assert graphed['compile'] and graphed['graphs'] >= 1 and graphed['tokens_per_s'] > 0
    assert not by['sdpa']['compile'] and by['sdpa']['tokens_per_s'] > 0


def test_optimizer_step_alone(tmp_path, capsys):
    out = tmp_path / 'rows.json'
    bench.main(['--optimizer', '--shapes=tiny', '--reps=2', '--warmup=1', f'--out={out}'])
    rows = {r['variant']: r for r in json.loads(out.read_text())}
    assert set(rows) == {'optimizer, adamw', 'optimizer, stable_adamw',
                         'optimizer, stable_adamw, compiled'}
    assert rows['optimizer, adamw']['vs_adamw'] == 1.0
    assert rows['optimizer, stable_adamw']['vs_adamw'] > 0 and \
        rows['optimizer, stable_adamw, compiled']['vs_adamw'] > 0
    assert all(r['tensors'] == 23 and r['step_ms'] > 0 for r in rows.values())
    assert '| tiny | stable_adamw | 23 |' in capsys.readouterr().out


def test_attention_alone_dense_window_against_blocks(tmp_path, capsys):
    out = tmp_path / 'attention.json'
    bench.main(['--attention', '--shapes=tiny', '--block_sizes=128,256', '--batch_size=1',
                '--reps=2', '--warmup=1', f'--out={out}'])
    rows = json.loads(out.read_text())
    assert '| tiny | 256 | attention, banded | 2 |' in capsys.readouterr().out
    assert [(r['block_size'], r['variant'], r['blocks']) for r in rows] == [
        # one window: a single block either way
        (128, 'attention, dense', 1), (128, 'attention, banded', 1),
        (256, 'attention, dense', 1), (256, 'attention, banded', 2)]
    for r in rows:
        assert r['step_ms'] > 0 and r['vs_dense'] > 0 and \
            (r['device'], r['dtype']) == ('cpu', 'float32')
        assert r['vs_dense'] == 1.0 or r['variant'] != 'attention, dense'


@pytest.mark.parametrize('args, message', [
    (['--block_sizes=512,x'], '--block_sizes=512,x must be a comma list of positive integers'),
    (['--shapes=huge'], '--shapes=huge: each must be one of tiny, demo, small, base'),
    (['--teacher=huge'], '--teacher=huge must be one of tiny, demo, small, base'),
    (['--hf=fastest'], '--hf=fastest must be all, best or none'),
    (['--attns=flex'], '--attns=flex: each must be sdpa (FlexAttention trains only on CUDA)'),
    (['--optimizer_name=sgd'], '--optimizer_name=sgd must be adamw or stable_adamw'),
    (['--eager=False'], '--eager=False leaves nothing to time without --compile=True'),
    (['--compile_modes=fast'],
     '--compile_modes=fast: each must be one of reduce-overhead, max-autotune-no-cudagraphs'),
    (['--shrunk_vocab=777'], 'vocab_777.pt not found'),
    (['--block_sizes=100000'], "exceeds ModernBERT's max_position_embeddings=8192"),
])
def test_bad_input_is_one_clear_line_and_writes_nothing(data_root, tmp_path, capsys, args, message):
    out = tmp_path / 'rows.json'
    with pytest.raises(SystemExit) as e:
        bench.main([f'--data_root={data_root}', f'--out={out}', '--quick', *args])
    assert e.value.code != 0
    err = capsys.readouterr().err + str(e.value.code)
    assert message in err
    assert not out.exists()


def test_missing_dataset_names_the_prepare_command(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        bench.main([f'--data_root={tmp_path}', '--quick', '--out='])
    assert 'meta.json missing' in str(e.value.code) and 'python prepare.py' in str(e.value.code)
