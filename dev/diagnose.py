"""Diagnose a checkpoint: per-layer linear probes, rank, cosine, attention entropy, weight RMS.

    python dev/diagnose.py out-demo/ckpt.pt            # the pre-trained model
    python dev/diagnose.py out-demo/ckpt.pt scratch    # the same architecture, random weights
    python dev/diagnose.py out-demo/ckpt.pt labels=300 seed=1   # fine-tuning's 300 passages
    python dev/diagnose.py out-demo/ckpt.pt task=lines labels=5000   # shakespeare_lines' pairs

The probes learn from 2,000 training passages (shakespeare_works; task=lines: line pairs) and
are scored on dev. With labels=N they learn from the N examples that `finetune.py
--max_train_samples=N --seeds=S` fine-tunes on for seed=S (random weights: the draw fine-tuning's
seed S starts from), and the final mean-pooled probe is scored on test as well: its settings are
fixed here, nothing is chosen on test.
"""
import math
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import attention as A  # noqa: E402
import finetune as FT  # noqa: E402
import model as M  # noqa: E402
from checkpoint import load_model  # noqa: E402
from tokenizer import load_recorded_tokenizer  # noqa: E402

A.BAND_FROM_WINDOWS = 10 ** 9  # dense bool masks so entropy is easy
path = sys.argv[1]
scratch = 'scratch' in sys.argv[2:]
opts = dict(a.split('=', 1) for a in sys.argv[2:] if '=' in a)
labels, seed = int(opts.get('labels', 0)), int(opts.get('seed', 0))
torch.manual_seed(seed)
loaded = load_model(path)
enc = loaded.model
tok = load_recorded_tokenizer(loaded.tokenizer, path)
if scratch:  # fine-tuning's own draw for this seed
    enc = FT.starting_encoder(enc, True, seed)
enc.eval()

task = (FT.shakespeare_lines_task() if opts.get('task') == 'lines'
        else FT.shakespeare_works_task(400))
if labels:
    train = [task.train[i] for i in FT.labelled_subset(len(task.train), labels, seed)]
else:
    train = FT.sample(task.train, 2000)
val = task.dev
test = task.tests['test']
ids_tr = FT.encode(train, tok, 128)
ids_va = FT.encode(val, tok, 128)
y_tr = torch.tensor([y for _, y in train])
y_va = torch.tensor([y for _, y in val])

entropies = {}
orig_attention = M.attention


def attn_with_entropy(q, k, v, rope, mask, dropout_p):
    cos, sin = rope
    qq, kk = A.apply_rope(q, cos, sin), A.apply_rope(k, cos, sin)
    s = qq @ kk.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if mask is not None:
        m = mask.masks[0] if isinstance(mask, A.Band) else mask
        s = s.masked_fill(~m, float('-inf'))
        nkeys = m.expand_as(s).sum(-1).float()
    else:
        nkeys = torch.full(s.shape[:-1], s.shape[-1], dtype=torch.float)
    p = s.softmax(-1)
    ent = -(p * p.clamp_min(1e-12).log()).sum(-1) / nkeys.clamp_min(2).log()
    entropies.setdefault(attn_with_entropy.layer, []).append(ent.mean().item())
    attn_with_entropy.layer += 1
    return orig_attention(q, k, v, rope, mask, dropout_p)


M.attention = attn_with_entropy


@torch.no_grad()
def features(ids):
    outs = []
    for s in range(0, len(ids), 64):
        x, mask = FT.collate(ids[s:s + 64], tok.pad_token_id, 'cpu')
        hs = []
        hooks = [layer.register_forward_hook(lambda m, i, o: hs.append(o))
                 for layer in enc.model.layers]
        attn_with_entropy.layer = 0
        emb = enc.model.embeddings(x)
        h = enc.encode(x, mask)
        for hk in hooks:
            hk.remove()
        w = mask.unsqueeze(-1).float()
        layers = [emb] + hs + [h]
        # per layer: the mean over the real tokens, then the [CLS] state
        outs.append(torch.stack([torch.cat([(x_l * w).sum(1) / w.sum(1), x_l[:, 0]], -1)
                                 for x_l in layers]))
    return torch.cat(outs, 1)  # [L+2, N, 2H]


def probe(Xtr, *evals):
    """Fit the standardized linear probe on Xtr once; its accuracy on each (X, y) of evals."""
    mu, sd = Xtr.mean(0), Xtr.std(0) + 1e-6
    Xtr = (Xtr - mu) / sd
    W = torch.zeros(Xtr.shape[1], task.num_labels, requires_grad=True)
    b = torch.zeros(task.num_labels, requires_grad=True)
    opt = torch.optim.LBFGS([W, b], max_iter=200, line_search_fn='strong_wolfe')

    def closure():
        opt.zero_grad()
        loss = F.cross_entropy(Xtr @ W + b, y_tr) + 1e-3 * (W ** 2).sum()
        loss.backward()
        return loss
    opt.step(closure)
    return [(((X - mu) / sd @ W + b).argmax(-1) == y).float().mean().item() for X, y in evals]


def eff_rank(X):
    X = X - X.mean(0)
    s = torch.linalg.svdvals(X)
    p = s / s.sum()
    return math.exp(-(p * p.clamp_min(1e-12).log()).sum().item())


def mean_cos(X):
    Xn = F.normalize(X, dim=-1)
    c = Xn @ Xn.T
    n = len(X)
    return ((c.sum() - n) / (n * n - n)).item()


Ftr = features(ids_tr)
n_layers = len(enc.model.layers)
ent = {k: np.mean(v) for k, v in entropies.items()}
entropies.clear()
Fva = features(ids_va)
H = enc.config.hidden_size
names = ['emb'] + [f'L{i}' for i in range(n_layers)] + ['final']
print(f"{path} {task.name} {'SCRATCH' if scratch else ''}")
for i, name in enumerate(names):
    mean_tr, cls_tr = Ftr[i, :, :H], Ftr[i, :, H:]
    mean_va, cls_va = Fva[i, :, :H], Fva[i, :, H:]
    (acc_mean,), (acc_cls,) = probe(mean_tr, (mean_va, y_va)), probe(cls_tr, (cls_va, y_va))
    print(f"{name:6s} probe mean {acc_mean:.3f} cls {acc_cls:.3f} | "
          f"rank mean {eff_rank(mean_tr):5.1f} cls {eff_rank(cls_tr):5.1f} | "
          f"cos mean {mean_cos(mean_tr):.2f} cls {mean_cos(cls_tr):.2f} | "
          f"rms {Ftr[i, :, :H].pow(2).mean().sqrt():.2f}")
if labels:
    Fte = features(FT.encode(test, tok, 128))
    y_te = torch.tensor([y for _, y in test])
    dev_acc, test_acc = probe(Ftr[-1, :, :H], (Fva[-1, :, :H], y_va), (Fte[-1, :, :H], y_te))
    print(f"final probe mean, {len(train)} labels, seed {seed}: "
          f"dev {dev_acc:.4f} test {test_acc:.4f}")
print("attention entropy (normalized) per layer:", ' '.join(f"{ent[k]:.2f}" for k in sorted(ent)))
for i, layer in enumerate(enc.model.layers):
    matrices = {n: p for n, p in layer.named_parameters() if p.ndim == 2}
    rms = {n: p.pow(2).mean().sqrt().item() for n, p in matrices.items()}
    top = {n: torch.linalg.matrix_norm(p, 2).item() for n, p in matrices.items()}
    print(f"L{i} weight rms " + ' '.join(f"{n}={v:.3f}/{top[n]:.2f}" for n, v in rms.items()))
e = enc.model.tok_embeddings.weight
print(f"emb rms {e.pow(2).mean().sqrt():.3f}")
