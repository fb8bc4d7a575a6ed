"""
A run's full-space val loss read three ways, on the evaluation batches train.py used (the same 10
batches for every run of a seed): as train.py logs it; with every token train never holds folded
into one class (its probabilities summed), so that rows no arm ever trained on do not weigh; and
over the targets train holds only. Also the share of targets train never holds and their mean loss.
One JSON line per checkpoint (docs/curriculum.md's staged grow). With --split=train the same read
on windows of the text the run trained on: the gap between the two says how much of a run's loss is
memorised text rather than what carries to new text. With --sample_of=<ckpt> every checkpoint is
read on that run's evaluation batches (its batch shape, count and seed), so that runs of different
batch sizes are compared on the same windows and masks.

    python dev/val_loss_split.py out-a/ckpt.pt out-b/ckpt.pt > val_loss_split.jsonl
    python dev/val_loss_split.py --split=train out-a/ckpt.pt out-b/ckpt.pt
    python dev/val_loss_split.py --sample_of=out-a/ckpt.pt out-b8/ckpt.pt out-a/ckpt.pt
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from checkpoint import load_checkpoint, load_model  # noqa: E402
from data import load_counts, shard_paths  # noqa: E402
from mlm import EVAL_BATCHES, TokenSpace, masked_batch, seed_for  # noqa: E402
from model import IGNORE_INDEX  # noqa: E402


@torch.no_grad()
def split_losses(source: str, split: str = 'val', sample_of: str | None = None) -> dict:
    ckpt = load_checkpoint(source)
    config, meta = ckpt['config'], ckpt['dataset_meta']
    sample = load_checkpoint(sample_of) if sample_of else ckpt
    data_dir = os.path.join(config['data_root'], config['dataset'])
    unseen = torch.as_tensor(load_counts(data_dir, meta, 'prepare the data again') == 0)
    model = load_model(source).model.eval()
    rate = config['eval_mask_rate'] or config['mask_rate']
    shape = sample['state'].get('batch_size', sample['config']['batch_size']), \
        sample['state'].get('block_size', sample['config']['block_size'])
    sums = torch.zeros(5, dtype=torch.float64)  # loss, folded loss, n, held loss, held n
    unseen_nll = []
    for k in range(sample['config']['eval_iters']):
        x, y, documents = masked_batch(
            shard_paths(data_dir, split, meta), meta, shape, TokenSpace(meta, 'cpu'), None, rate,
            (config['mask_token_prob'], config['random_token_prob']),
            seed_for(sample['config']['seed'], EVAL_BATCHES, 1, k), 'cpu', config['pack_documents'])
        logits, _ = model(x, labels=y, document_ids=documents)
        logp = logits.double().log_softmax(-1)
        target = y.reshape(-1)[y.reshape(-1) != IGNORE_INDEX]
        nll = -logp.gather(1, target[:, None])[:, 0]
        folded = -torch.where(unseen[target], logp[:, unseen].logsumexp(-1),
                              logp.gather(1, target[:, None])[:, 0])
        held = ~unseen[target]
        sums += torch.tensor([nll.sum(), folded.sum(), len(target), nll[held].sum(), held.sum()],
                             dtype=torch.float64)
        unseen_nll.append(nll[~held])
    loss, folded, n, held_loss, held_n = sums.tolist()
    unseen_nll = torch.cat(unseen_nll)
    return dict(ckpt=source, split=split, iter=ckpt['iter_num'], val_loss=loss / n,
                folded=folded / n, held=held_loss / held_n, unseen_share=1 - held_n / n,
                unseen_loss=float(unseen_nll.mean()) if len(unseen_nll) else None)


if __name__ == '__main__':
    args = sys.argv[1:]
    options = {'split': 'val', 'sample_of': None}
    while args and args[0].startswith('--') and '=' in args[0]:
        key, value = args.pop(0)[2:].split('=', 1)
        if key not in options:
            sys.exit(f'--{key}: unknown option; use --split=val|train or --sample_of=<ckpt>')
        options[key] = value
    if options['split'] not in ('train', 'val'):
        sys.exit(f"--split={options['split']}: the split is 'train' or 'val'")
    if options['sample_of'] and not os.path.isfile(options['sample_of']):
        sys.exit(f"--sample_of={options['sample_of']}: no such checkpoint; give a run's ckpt.pt")
    for path in args:
        print(json.dumps(split_losses(path, **options)), flush=True)
