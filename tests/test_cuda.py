"""The CUDA path: FlexAttention against SDPA in bf16 (forward and gradients), the compiled training
forward as one graph, the optimizer step (the non-finite skip included) without a host sync, and
fine-tuning under bf16 autocast. Skipped without a GPU (CI has none); run with
`python -m pytest -q tests/test_cuda.py` on a GPU machine."""
import pytest
import torch

from conftest import learn_good_or_bad
from mlm import prediction_capacity
from model import IGNORE_INDEX, Encoder, EncoderConfig
from optim import configure_optimizers, step_unless

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA GPU')


def small_model(seed: int = 0) -> Encoder:
    torch.manual_seed(seed)
    config = EncoderConfig(vocab_size=1024, hidden_size=256, num_attention_heads=4,
                           intermediate_size=384, num_hidden_layers=6, pad_token_id=0,
                           cls_token_id=1, sep_token_id=2, mask_token_id=3)
    return Encoder(config).cuda()


def batch(B: int = 4, T: int = 512):
    ids = torch.randint(4, 1024, (B, T), device='cuda')
    labels = torch.where(torch.rand(B, T, device='cuda') < 0.3, ids, IGNORE_INDEX)
    return ids, labels


def relative_error(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


@pytest.mark.parametrize('padded', [False, True])
def test_flex_matches_sdpa_in_bf16_forward_and_backward(padded):
    ids, labels = batch()
    mask = torch.ones_like(ids)
    if padded:
        mask[1, 300:] = 0
        labels[1, 300:] = IGNORE_INDEX
    document_ids = (torch.arange(ids.shape[1], device='cuda') >= 200).long().expand_as(ids)
    for docs in (None, document_ids):
        out = {}
        for impl in ('sdpa', 'flex'):
            m = small_model()
            m.config.attn_implementation = impl
            with torch.autocast('cuda', dtype=torch.bfloat16):
                logits, loss = m(ids, mask if padded else None, labels, document_ids=docs)
            loss.backward()
            out[impl] = logits, loss, m.model.layers[1].attn.Wqkv.weight.grad
        for a, b in zip(out['flex'], out['sdpa']):
            assert torch.isfinite(a).all()
            assert relative_error(a, b) < 2e-2


def test_compiled_training_forward_is_one_graph_without_breaks():
    m = small_model()
    m.config.attn_implementation = 'flex'
    ids, labels = batch()
    torch._dynamo.reset()
    with torch.autocast('cuda', dtype=torch.bfloat16):
        explained = torch._dynamo.explain(m)(ids, labels=labels,
                                             max_predictions=prediction_capacity(ids.numel(), 0.3))
    assert (explained.graph_count, explained.graph_break_count) == (1, 0), explained.break_reasons


@pytest.mark.parametrize('optimizer', ['adamw', 'stable_adamw'])
def test_optimizer_step_skips_on_the_device_without_waiting(optimizer):
    # train.py's step as the GPU runs it: fused AdamW, or StableAdamW compiled, handed the skip flag
    # as found_inf; after the warm-up (compilation), neither the step nor the skip may make the host
    # wait for the GPU
    models = [small_model(), small_model()]
    optimizers = [configure_optimizers(m, 0.1, 1e-3, (0.9, 0.98), 'cuda', optimizer=optimizer,
                                       compiled=compiled)
                  for m, compiled in zip(models, (False, True))]
    ids, labels = batch()
    for it in range(4):
        for m, opt in zip(models, optimizers):
            loss = m(ids, labels=labels)[1]
            loss.backward()
            skip = ~torch.isfinite(loss.detach() * (float('inf') if it == 2 else 1.0))
            torch.cuda.set_sync_debug_mode('error' if it > 0 else 'default')
            try:
                step_unless(opt, skip)
            finally:
                torch.cuda.set_sync_debug_mode('default')
            opt.zero_grad(set_to_none=True)
    for a, b in zip(*(m.parameters() for m in models)):
        assert torch.isfinite(b).all()
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5)
    assert all(s['step'].item() == 3 for s in optimizers[1].state.values())


def test_fine_tuning_in_bf16_learns_a_task(ckpt, tmp_path):
    # finetune.py runs under bf16 autocast on a GPU: the task the CPU test learns in float32 is
    # learnt here too
    result = learn_good_or_bad(ckpt, tmp_path, 'cuda')
    assert result['value'] > 0.9, result
