"""
GUIDE initialization: a smaller ModernBERT student projected out of a larger trained teacher,
instead of random weights.

    python init_guide.py --teacher=answerdotai/ModernBERT-base --out=student.pt
        # ModernBERT-small, layer 0 guided
    python init_guide.py --teacher=out-teacher/ckpt.pt --out=student.pt --hidden_size=128 \
        --num_hidden_layers=4 --num_attention_heads=2 --intermediate_size=256 --guide_layers=all \
        --select=importance
    python train.py config/demo_cpu.py --init_from=student.pt ...

PCA of the teacher's token embeddings gives M (teacher hidden x student hidden, orthonormal
columns); the student's hidden state stands for M^T h of the teacher's. Every weight is carried into
that space: inputs in the hidden space are multiplied by M, outputs by M^T, and the heads and GeGLU
neurons the student keeps are cut out of the teacher's matrices consistently (Q, K, V and Wo's
columns; the GELU half, the gate half and mlp Wo's columns).
"""
import os
import sys
from dataclasses import asdict, replace

import torch
import torch.nn as nn

from checkpoint import LoadedModel, load_model, save_checkpoint, unknown_data
from configurator import configure
from data import load_meta
from errors import fail
from model import Encoder, EncoderConfig, ModernBertLayer
from tokenizer import data_tokenizer, require_same_tokenizer

DEFAULTS = dict(
    teacher='answerdotai/ModernBERT-base',  # hub id, local ModernBertForMaskedLM folder, or a
    #                                         train.py ckpt.pt
    out=None,  # the student checkpoint to write, e.g. student.pt
    overwrite=False,  # allow replacing an existing --out
    # student dimensions; everything else (vocabulary, window, RoPE, layer pattern) is the teacher's
    hidden_size=384,
    num_hidden_layers=12,
    num_attention_heads=6,
    intermediate_size=768,
    guide_layers=None,  # None or 0: only layer 0 comes from the teacher (the original script);
    #                     'all': every layer
    select='first',  # 'first' | 'importance': which teacher heads and neurons the student keeps
    dataset=None,  # optional prepared dataset: its tokenizer must be the teacher's; its meta.json
    #                is stored
    data_root='data',
    seed=1337,  # the random init of the layers that are not guided
)


# --------------------------------------------------------------------------------------------------
# The mapping

def pca_projection(embeddings: torch.Tensor, k: int) -> tuple[torch.Tensor, float]:
    """M [H, k] with orthonormal columns, the top-k principal directions of the embedding rows, and
    the share of the variance they explain. For k == H it is the identity: LayerNorm is not
    rotation-invariant, so only the identity keeps a full-width student exactly the teacher."""
    H = embeddings.shape[1]
    if k == H:
        return torch.eye(H), 1.0
    x = embeddings.double()
    x = x - x.mean(0)
    eigvals, eigvecs = torch.linalg.eigh(x.T @ x)  # ascending
    top = eigvals.flip(0)[:k].clamp(min=0)
    return eigvecs.flip(1)[:, :k].float().contiguous(), \
        (top.sum() / eigvals.clamp(min=0).sum()).item()


def keep_units(norms: torch.Tensor, k: int, select: str) -> torch.Tensor:
    """Ascending indices of the k heads or neurons to keep: the first k, or the k with the largest
    weight norms."""
    keep = torch.arange(k) if select == 'first' else norms.topk(k).indices
    return keep.sort().values


def unit_map(n: int, keep: torch.Tensor) -> torch.Tensor:
    """[n, len(keep)] selection matrix: multiplying by it cuts the kept units out exactly (products
    with 1 and 0)."""
    return torch.eye(n)[:, keep]


def copy_linear(dst: nn.Linear, src: nn.Linear, out_map: torch.Tensor,
                in_map: torch.Tensor) -> None:
    """dst = out_map^T src in_map: each map (teacher size x student size) carries one side into
    the student."""
    dst.weight.copy_(out_map.T @ src.weight @ in_map)
    if src.bias is not None:
        dst.bias.copy_(out_map.T @ src.bias)


def copy_norm(dst: nn.LayerNorm, src: nn.LayerNorm, M: torch.Tensor) -> None:
    """Weight: the diagonal of M^T diag(w) M, the per-dimension scale closest to the teacher's in
    the student's space (with M = I, w itself). Bias: M^T b, like any output in the hidden space."""
    dst.weight.copy_((M ** 2).T @ src.weight)
    if src.bias is not None:
        dst.bias.copy_(M.T @ src.bias)


def map_layer(dst: ModernBertLayer, src: ModernBertLayer, M: torch.Tensor, heads: torch.Tensor,
              neurons: torch.Tensor) -> None:
    """Student layer dst from teacher layer src, keeping the given teacher heads and
    GeGLU neurons."""
    H, head_dim, inter = M.shape[0], src.attn.head_dim, src.mlp.Wo.in_features
    head_dims = (heads[:, None] * head_dim + torch.arange(head_dim)).flatten()
    # Wqkv rows are [Q; K; V], each of all heads: keep the same heads in all three
    copy_linear(dst.attn.Wqkv, src.attn.Wqkv,
                unit_map(3 * H, torch.cat([head_dims + j * H for j in range(3)])), M)
    copy_linear(dst.attn.Wo, src.attn.Wo, M, unit_map(H, head_dims))
    # Wi rows are [GELU input; gate]: keep the same neurons in both halves and in mlp Wo's columns
    copy_linear(dst.mlp.Wi, src.mlp.Wi,
                unit_map(2 * inter, torch.cat([neurons, neurons + inter])), M)
    copy_linear(dst.mlp.Wo, src.mlp.Wo, M, unit_map(inter, neurons))
    if isinstance(src.attn_norm, nn.LayerNorm) and isinstance(dst.attn_norm, nn.LayerNorm):
        copy_norm(dst.attn_norm, src.attn_norm, M)
    copy_norm(dst.mlp_norm, src.mlp_norm, M)


def unit_norms(layer: ModernBertLayer) -> tuple[torch.Tensor, torch.Tensor]:
    """Squared weight norm of each head (its Q, K, V rows and Wo columns) and each GeGLU neuron (its
    two Wi rows and its mlp Wo column)."""
    attn, mlp = layer.attn, layer.mlp
    H = attn.Wo.out_features
    heads = (attn.Wqkv.weight.view(3, attn.n_head, attn.head_dim, H).pow(2).sum((0, 2, 3))
             + attn.Wo.weight.view(H, attn.n_head, attn.head_dim).pow(2).sum((0, 2)))
    neurons = mlp.Wi.weight.view(2, -1, H).pow(2).sum((0, 2)) + mlp.Wo.weight.pow(2).sum(0)
    return heads, neurons


def layer_map(teacher: EncoderConfig, student: EncoderConfig, guide_layers) -> dict[int, int]:
    """Student layer -> teacher layer. 'all': student layer i stands at depth
    i * (L_t - 1) / (L_s - 1) of the teacher and takes a teacher layer of its own kind (global or
    local attention), the layers in order and each used once, with the least total distance to
    those depths (a small dynamic programme); otherwise only layer 0."""
    if guide_layers != 'all':
        return {0: 0}
    stretch = (teacher.num_hidden_layers - 1) / max(student.num_hidden_layers - 1, 1)
    # teacher layer of the last student layer placed -> (total distance, teacher layers)
    best = {-1: (0.0, [])}
    for i in range(student.num_hidden_layers):
        best = {j: min((cost + abs(j - i * stretch), chosen + [j])
                       for last, (cost, chosen) in best.items() if last < j)
                for j in range(min(best) + 1, teacher.num_hidden_layers)
                if teacher.layer_kind(j) == student.layer_kind(i)}
    return dict(enumerate(min(best.values())[1]))


@torch.no_grad()
def guide(teacher: Encoder, config: EncoderConfig, guide_layers=None,
          select: str = 'first') -> tuple[Encoder, dict]:
    """The student (config) initialized from the teacher, and a record of what was done. Layers the
    mapping leaves out keep Encoder's random init (seed it before calling)."""
    student = Encoder(config)
    t, s = teacher.model, student.model
    M, explained = pca_projection(t.tok_embeddings.weight, config.hidden_size)
    # rows projected as they are, mean included: every teacher layer sees the mean, so the student's
    # input keeps it
    s.tok_embeddings.weight.copy_(t.tok_embeddings.weight @ M)  # the tied decoder follows
    copy_norm(s.embeddings.norm, t.embeddings.norm, M)
    copy_norm(s.final_norm, t.final_norm, M)
    copy_linear(student.head.dense, teacher.head.dense, M, M)
    copy_norm(student.head.norm, teacher.head.norm, M)
    if not config.tie_word_embeddings:
        student.decoder.weight.copy_(teacher.decoder.weight @ M)
    if teacher.decoder.bias is not None:
        student.decoder.bias.copy_(teacher.decoder.bias)
    mapping, kept_heads = layer_map(teacher.config, config, guide_layers), {}
    for i, j in mapping.items():
        head_norms, neuron_norms = unit_norms(t.layers[j])
        heads = keep_units(head_norms, config.num_attention_heads, select)
        map_layer(s.layers[i], t.layers[j], M, heads,
                  keep_units(neuron_norms, config.intermediate_size, select))
        kept_heads[i] = heads.tolist()
    # the map is kept: train.py's distill_hidden_weight reads the teacher's hidden states through it
    return student, dict(explained_variance=explained, layer_map=mapping, kept_heads=kept_heads,
                         guide_layers=guide_layers, select=select, projection=M.contiguous())


# --------------------------------------------------------------------------------------------------
# Command line: load the teacher, check the student, write a checkpoint train.py starts from

def load_guide_teacher(source: str) -> LoadedModel:
    """The teacher as it was trained (a shrunken vocabulary stays shrunken), with its tokenizer
    record (None when nothing records it: a Hugging Face folder without tokenizer files), the
    dataset meta of a train.py checkpoint and its data history."""
    loaded = load_model(source, full_vocabulary=False, role='teacher')
    if loaded.model.config.arch != 'modernbert':
        fail(f'the teacher is a {loaded.model.config.arch} model: '
             f'GUIDE maps ModernBERT weights only')
    return loaded


def student_config(teacher: EncoderConfig, hidden_size: int, num_hidden_layers: int,
                   num_attention_heads: int, intermediate_size: int) -> EncoderConfig:
    """The teacher's config with the student's dimensions, after checking that the teacher
    holds them."""
    wanted = dict(hidden_size=hidden_size, num_hidden_layers=num_hidden_layers,
                  num_attention_heads=num_attention_heads, intermediate_size=intermediate_size)
    for name, value in wanted.items():
        if value > getattr(teacher, name):
            fail(f"{name}={value} is larger than the teacher's {getattr(teacher, name)}: the "
                 "student must be at most the teacher's size")
    try:
        config = replace(teacher, **wanted)
    except ValueError as e:
        fail(f'invalid student: {e}')
    if config.head_dim != teacher.head_dim:
        fail(f"the student's head_dim {config.head_dim} (hidden_size / num_attention_heads) "
             f"differs from the teacher's {teacher.head_dim}: GUIDE keeps whole teacher heads; use "
             f"num_attention_heads={hidden_size // teacher.head_dim}")
    return config


def main(argv: list[str]) -> dict:
    """Write the student checkpoint; return its guide record."""
    cfg = configure(DEFAULTS, argv)
    if not cfg['out']:
        fail('pass --out=<student.pt>, the checkpoint to write')
    if os.path.exists(cfg['out']) and not cfg['overwrite']:
        fail(f"{cfg['out']} exists; pass --overwrite=True to replace it")
    if cfg['guide_layers'] not in (None, 0, 'all'):
        fail(f"guide_layers={cfg['guide_layers']!r} must be 0 (layer 0 only) or 'all'")
    if cfg['select'] not in ('first', 'importance'):
        fail(f"select={cfg['select']!r} must be 'first' or 'importance'")
    meta, tokenizer = None, None
    if cfg['dataset'] is not None:
        data_dir = os.path.join(cfg['data_root'], cfg['dataset'])
        meta = load_meta(data_dir,
                         f"run: python prepare.py --out_dir={data_dir} --tokenizer=<the teacher's>")
    loaded = load_guide_teacher(cfg['teacher'])
    teacher, tokenizer = loaded.model, loaded.tokenizer
    teacher_meta = (loaded.checkpoint or {}).get('dataset_meta')
    if meta is not None:
        require_same_tokenizer(tokenizer, data_tokenizer(meta), f"the teacher {cfg['teacher']}",
                               f'the data in {data_dir}')
        if meta['vocab_size'] != teacher.config.vocab_size:
            fail(f"the teacher's vocabulary ({teacher.config.vocab_size}) does not match the "
                 f"dataset's ({meta['vocab_size']}): it was trained on a shrunken vocabulary; "
                 "leave out --dataset and its checkpoint's dataset meta is kept")
        tokenizer = data_tokenizer(meta)  # the same ids; under the name prepare.py knows it by
    meta = meta or teacher_meta
    config = student_config(teacher.config, cfg['hidden_size'], cfg['num_hidden_layers'],
                            cfg['num_attention_heads'], cfg['intermediate_size'])
    torch.manual_seed(cfg['seed'])
    student, record = guide(teacher, config, cfg['guide_layers'], cfg['select'])
    record['teacher'] = cfg['teacher']
    tc = teacher.config
    print(f"teacher {cfg['teacher']}: {tc.hidden_size} hidden x {tc.num_hidden_layers} layers, "
          f'{tc.num_attention_heads} heads, {tc.intermediate_size} intermediate, '
          f'{teacher.get_num_params() / 1e6:.2f}M')
    print(f'student: {config.hidden_size} hidden x {config.num_hidden_layers} layers, '
          f'{config.num_attention_heads} heads, {config.intermediate_size} intermediate, '
          f'{student.get_num_params() / 1e6:.2f}M')
    print(f'PCA of the token embeddings: {config.hidden_size} directions explain '
          f"{record['explained_variance']:.4f} of the variance")
    random = config.num_hidden_layers - len(record['layer_map'])
    print('student layer <- teacher layer: '
          + ', '.join(f'{i} <- {j}' for i, j in record['layer_map'].items())
          + f" (select={cfg['select']})"
          + (f'; {random} layers keep their random init' if random else ''))
    ckpt = dict(model=student.state_dict(), model_args=asdict(config), guide=record,
                tokenizer=tokenizer)
    if meta is not None:
        ckpt['dataset_meta'] = meta
    # the student's weights come from the teacher's: what the teacher read, the student has too
    ckpt['data_history'] = loaded.history or [unknown_data(cfg['teacher'])]
    save_checkpoint(ckpt, cfg['out'])
    print(f"saved {cfg['out']}; train it with: python train.py ... --init_from={cfg['out']}")
    return record


if __name__ == '__main__':
    main(sys.argv[1:])
