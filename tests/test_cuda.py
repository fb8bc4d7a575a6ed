"""The CUDA path: FlexAttention against SDPA in bf16 (forward and gradients), and the compiled training forward as
one graph. Skipped without a GPU (CI has none); run with `python -m pytest -q tests/test_cuda.py` on a GPU machine."""
import pytest
import torch

from mlm import prediction_capacity
from model import IGNORE_INDEX, Encoder, EncoderConfig

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def small_model(seed: int = 0) -> Encoder:
    torch.manual_seed(seed)
    config = EncoderConfig(vocab_size=1024, hidden_size=256, num_attention_heads=4, intermediate_size=384,
                           num_hidden_layers=6, pad_token_id=0, cls_token_id=1, sep_token_id=2, mask_token_id=3)
    return Encoder(config).cuda()


def batch(B: int = 4, T: int = 512):
    ids = torch.randint(4, 1024, (B, T), device="cuda")
    labels = torch.where(torch.rand(B, T, device="cuda") < 0.3, ids, IGNORE_INDEX)
    return ids, labels


def relative_error(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


@pytest.mark.parametrize("padded", [False, True])
def test_flex_matches_sdpa_in_bf16_forward_and_backward(padded):
    ids, labels = batch()
    mask = torch.ones_like(ids)
    if padded:
        mask[1, 300:] = 0
        labels[1, 300:] = IGNORE_INDEX
    document_ids = (torch.arange(ids.shape[1], device="cuda") >= 200).long().expand_as(ids)
    for docs in (None, document_ids):
        out = {}
        for impl in ("sdpa", "flex"):
            m = small_model()
            m.config.attn_implementation = impl
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits, loss = m(ids, mask if padded else None, labels, document_ids=docs)
            loss.backward()
            out[impl] = logits, loss, m.model.layers[1].attn.Wqkv.weight.grad
        for a, b in zip(out["flex"], out["sdpa"]):
            assert torch.isfinite(a).all()
            assert relative_error(a, b) < 2e-2


def test_compiled_training_forward_is_one_graph_without_breaks():
    m = small_model()
    m.config.attn_implementation = "flex"
    ids, labels = batch()
    torch._dynamo.reset()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        explained = torch._dynamo.explain(m)(ids, labels=labels, max_predictions=prediction_capacity(ids.numel(), 0.3))
    assert (explained.graph_count, explained.graph_break_count) == (1, 0), explained.break_reasons
