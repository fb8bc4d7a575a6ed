"""
Export a train.py checkpoint to a Hugging Face folder: config.json, model.safetensors and the tokenizer files.

    python export_hf.py --ckpt=out-demo/ckpt.pt --out=hf-demo
    python export_hf.py --out_dir=out-demo        # <out_dir>/ckpt.pt -> <out_dir>/hf

- ModernBERT: the native ModernBertForMaskedLM format; AutoModelForMaskedLM, AutoModel, pipeline("fill-mask") and
  SentenceTransformer (mean pooling) load it without remote code.
- NeoBERT: the official chandar-lab layout and config keys, plus hf_neobert/modeling_neobert.py copied into the folder;
  load it with trust_remote_code=True.
- Tokenizer: the one the checkpoint records, checked by its fingerprint: gpt2 and modernbert become transformers
  fast tokenizers with the same ids (the padding slots up to the model's vocabulary are [unused0], [unused1], ...);
  a Hugging Face tokenizer is saved as it loads, with the model's max length and without token_type_ids.
  config.json carries the tokenizer's fingerprint, so a folder whose tokenizer files were swapped is refused.
- A checkpoint still in its shrunken vocabulary is exported in the full one: every core token gets its row, every
  rare token RARE's embedding and RARE's logit minus log(rare tokens), so the export computes the shrunken model's
  function and spreads RARE's probability evenly over the tokens it stands for (resize_vocabulary with no noise).
"""
import json
import os
import shutil
import sys

from checkpoint import checkpoint_encoder, load_checkpoint
from configurator import configure, fail
from model import Encoder
from prepare import Tokenizer, folder_tokenizer, load_remap, load_tokenizer, recorded_hf_tokenizer

DEFAULTS = dict(
    out_dir='out',
    ckpt=None,  # None: <out_dir>/ckpt.pt
    out=None,  # None: hf/ next to the checkpoint
    overwrite=False,  # replace an existing, non-empty output folder
)


# checkpoints -----------------------------------------------------------------------------------------------------

def checkpoint_model(ckpt: dict) -> tuple[Encoder, dict | None]:
    """The model of a train.py checkpoint and, while it trains in a shrunken vocabulary, its remapping (vocab_K.pt)."""
    model = checkpoint_encoder(ckpt)
    if not ckpt.get('state', {}).get('remapping'):  # GUIDE students have no training state
        return model, None
    path = ckpt['config']['vocab_remapping_file']
    hint = "run from the folder train.py ran in, or recreate it with prepare.py --shrink_vocab"
    if not os.path.isfile(path):
        fail(f"the checkpoint is in a shrunken vocabulary and its remapping file {path} is missing; {hint}")
    remap = load_remap(path, hint)
    same_data = remap['fingerprint'] == ckpt['dataset_meta']['fingerprint']
    if not same_data or remap['shrunk_vocab_size'] != model.config.vocab_size:
        fail(f"{path} was made from other data than the checkpoint was trained on (fingerprint or size "
             f"differ); use the vocab_K.pt of the dataset preparation it was trained with")
    return model, remap


def exported_model(folder: str) -> tuple[Encoder, Tokenizer]:
    """The model and tokenizer of a folder written by export_hf.py (or a Hugging Face ModernBERT/NeoBERT folder with
    tokenizer files); SystemExit with one line when it is not one."""
    if folder_tokenizer(folder) is None:  # checks the files against the fingerprint an export records
        fail(f"{folder} has no tokenizer files; export the model with export_hf.py")
    try:
        return Encoder.from_pretrained(folder), load_tokenizer(folder)
    except (OSError, ValueError) as e:  # no config.json, another model type, missing weights
        fail(f"cannot load the model in {folder} ({e})")


def full_vocabulary_model(ckpt: dict) -> Encoder:
    """The checkpoint's model in the tokenizer's full vocabulary (a shrunken one grown without noise)."""
    model, remap = checkpoint_model(ckpt)
    if remap is not None:
        model.resize_vocabulary(remap['vocab_size'], remap['rare_id'], noise_std=0.0,
                                full_to_shrunk=remap['full_to_shrunk'])
    meta = ckpt.get('dataset_meta')  # a GUIDE student made without --dataset has none
    if meta is not None and model.config.vocab_size != meta['vocab_size']:
        fail(f"the model's vocabulary ({model.config.vocab_size}) is not its tokenizer's "
             f"({meta['vocab_size']}); the checkpoint is inconsistent, export another one")
    return model


# tokenizers ------------------------------------------------------------------------------------------------------

# export ----------------------------------------------------------------------------------------------------------

def export(ckpt_path: str, folder: str, overwrite: bool = False) -> None:
    """Write the Hugging Face folder of a train.py checkpoint; an existing non-empty folder needs overwrite=True.
    Everything goes to <folder>.tmp first and is renamed at the end, so a failure leaves the old folder as it was."""
    if not os.path.isfile(ckpt_path):
        fail(f"no checkpoint at {ckpt_path}; train one first (python train.py config/demo_cpu.py)")
    if os.path.isdir(folder) and os.listdir(folder) and not overwrite:
        fail(f"{folder} exists and is not empty; choose another --out or pass --overwrite=True")
    if os.path.exists(folder) and not os.path.isdir(folder):
        fail(f"{folder} is a file; --out must name a folder")
    ckpt = load_checkpoint(ckpt_path)
    model = full_vocabulary_model(ckpt)
    # the tokenizer the checkpoint records, checked by its fingerprint to be the one the model was trained with
    tokenizer = recorded_hf_tokenizer(ckpt.get('tokenizer'), ckpt_path, model.config.max_position_embeddings)
    tmp = folder.rstrip(os.sep) + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        with open(os.path.join(tmp, "config.json")) as f:
            hf_config = json.load(f)
        hf_config["tokenizer_fingerprint"] = ckpt['tokenizer']['fingerprint']
        with open(os.path.join(tmp, "config.json"), "w") as f:
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
