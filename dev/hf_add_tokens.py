"""
transformers' recipe for a domain vocabulary, as a baseline for prepare.py --extend_tokenizer
(docs/domain.md): the same new strings added to an exported model's tokenizer with
tokenizer.add_tokens (matched as whole strings before BPE runs), and the model's rows from
resize_token_embeddings(mean_resizing=True). The folder it writes tokenizes a corpus through
prepare.py --tokenizer=<folder> and trains through train.py --init_from=hf:<folder>.

    python export_hf.py --ckpt=out-downstream/ckpt.pt --out=hf-downstream
    python dev/hf_add_tokens.py hf-downstream data/code/tokenizer hf-downstream-added
    python prepare.py --dataset=data/raw/code --out_dir=data/code-added \
        --tokenizer=hf-downstream-added
    python train.py config/domain_cpu.py --init_from=hf:hf-downstream-added --dataset=code-added
"""
import json
import os
import sys

import torch
from transformers import AddedToken, AutoModelForMaskedLM, AutoTokenizer

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from errors import fail  # noqa: E402
from tokenizer import tokenizer_fingerprint  # noqa: E402


def main() -> None:
    if len(sys.argv) != 4:
        fail('usage: python dev/hf_add_tokens.py <exported model folder> '
             '<extended tokenizer folder> <out folder>')
    source, extended, out = sys.argv[1:]
    if os.path.exists(out):
        fail(f'{out} exists: name a new folder')
    try:
        with open(os.path.join(extended, 'extension.json')) as f:
            new = json.load(f)['new_tokens']
    except (OSError, ValueError, KeyError):
        fail(f'{extended} holds no extension.json: prepare.py --extend_tokenizer=N writes one')
    tok = AutoTokenizer.from_pretrained(source)
    texts = [tok.decode(t['pieces']) for t in new]
    added = tok.add_tokens([AddedToken(t, normalized=False) for t in texts])
    torch.manual_seed(0)  # mean_resizing samples the new rows
    model = AutoModelForMaskedLM.from_pretrained(source)
    model.resize_token_embeddings(len(tok), mean_resizing=True)
    model.config.tokenizer_fingerprint = tokenizer_fingerprint(tok)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    print(f'{out}: {added:,} tokens added to {source}, vocabulary {model.config.vocab_size:,}')


if __name__ == '__main__':
    main()
