"""
Export a train.py checkpoint to a Hugging Face folder: config.json, model.safetensors and the
tokenizer files.

    python export_hf.py --ckpt=out-demo/ckpt.pt --out=hf-demo
    python export_hf.py --out_dir=out-demo        # <out_dir>/ckpt.pt -> <out_dir>/hf

- ModernBERT: the native ModernBertForMaskedLM format; AutoModelForMaskedLM, AutoModel,
  pipeline("fill-mask") and SentenceTransformer (mean pooling) load it without remote code.
- NeoBERT: the official chandar-lab layout and config keys, plus hf_neobert/modeling_neobert.py
  copied into the folder; load it with trust_remote_code=True.
- Tokenizer: the one the checkpoint records, checked by its fingerprint: gpt2 and modernbert become
  transformers fast tokenizers with the same ids (the padding slots up to the model's vocabulary are
  [unused0], [unused1], ...); a Hugging Face tokenizer is saved as it loads, with the model's max
  length and without token_type_ids. config.json carries the tokenizer's fingerprint, so a folder
  whose tokenizer files were swapped is refused, and the records of every corpus its weights were
  trained on ('pretraining_data': dataset, split rule, fingerprint of each), so that finetune.py
  can tell whether a task's dev and test text was held out of it.
- A checkpoint still in its shrunken vocabulary is exported in the full one: every core token gets
  its row, every rare token RARE's embedding and RARE's logit minus log(rare tokens), so the export
  computes the shrunken model's function and spreads RARE's probability evenly over the tokens it
  stands for (resize_vocabulary with no noise).
"""
import json
import os
import shutil
import sys

from checkpoint import load_model
from configurator import configure
from errors import fail
from hf import save_pretrained
from tokenizer import recorded_hf_tokenizer

DEFAULTS = dict(
    out_dir='out',
    ckpt=None,  # None: <out_dir>/ckpt.pt
    out=None,  # None: hf/ next to the checkpoint
    overwrite=False,  # replace an existing, non-empty output folder
)


def export(ckpt_path: str, folder: str, overwrite: bool = False) -> None:
    """Write the Hugging Face folder of a train.py checkpoint; an existing non-empty folder needs
    overwrite=True. Everything goes to <folder>.tmp first and is renamed at the end, so a failure
    leaves the old folder as it was."""
    if not os.path.isfile(ckpt_path):
        fail(f'no checkpoint at {ckpt_path}; train one first (python train.py config/demo_cpu.py)')
    if os.path.isdir(folder) and os.listdir(folder) and not overwrite:
        fail(f'{folder} exists and is not empty; choose another --out or pass --overwrite=True')
    if os.path.exists(folder) and not os.path.isdir(folder):
        fail(f'{folder} is a file; --out must name a folder')
    loaded = load_model(ckpt_path)
    model = loaded.model
    # the tokenizer the checkpoint records, checked by its fingerprint to be the one the model was
    # trained with
    tokenizer = recorded_hf_tokenizer(loaded.tokenizer, ckpt_path,
                                      model.config.max_position_embeddings)
    tmp = folder.rstrip(os.sep) + '.tmp'
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        save_pretrained(model, tmp)
        tokenizer.save_pretrained(tmp)
        with open(os.path.join(tmp, 'config.json')) as f:
            hf_config = json.load(f)
        hf_config['tokenizer_fingerprint'] = loaded.tokenizer['fingerprint']
        # an export is judged like its checkpoint: finetune.py reads what it was pre-trained on
        hf_config['pretraining_data'] = loaded.history
        with open(os.path.join(tmp, 'config.json'), 'w') as f:
            json.dump(hf_config, f, indent=2)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)


def main(argv: list[str]) -> None:
    cfg = configure(DEFAULTS, argv)
    ckpt = cfg['ckpt'] or os.path.join(cfg['out_dir'], 'ckpt.pt')
    out = cfg['out'] or os.path.join(os.path.dirname(ckpt), 'hf')
    export(ckpt, out, cfg['overwrite'])
    print(f"wrote {out}: {', '.join(sorted(os.listdir(out)))}")


if __name__ == '__main__':
    main(sys.argv[1:])
