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
from configurator import configure
from model import Encoder, EncoderConfig, load_safetensors_folder
from prepare import load_remap, recorded_hf_tokenizer

DEFAULTS = dict(
    out_dir='out',
    ckpt=None,  # None: <out_dir>/ckpt.pt
    out=None,  # None: hf/ next to the checkpoint
    overwrite=False,  # replace an existing, non-empty output folder
)
NEOBERT_TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'hf_neobert', 'modeling_neobert.py')
NEOBERT_CLASSES = {'AutoConfig': 'NeoBERTConfig', 'AutoModel': 'NeoBERT', 'AutoModelForMaskedLM': 'NeoBERTLMHead'}
# EncoderConfig field -> NeoBERTConfig key, where they differ
NEOBERT_KEYS = dict(max_position_embeddings='max_length', global_rope_theta='rope_theta',
                    initializer_range='embedding_init_range')
NEOBERT_SHARED = ('vocab_size', 'hidden_size', 'num_hidden_layers', 'num_attention_heads', 'intermediate_size',
                  'norm_eps', 'attention_bias', 'mlp_bias', 'decoder_bias', 'embedding_dropout', 'attention_dropout',
                  'mlp_dropout', 'pad_token_id', 'cls_token_id', 'sep_token_id', 'mask_token_id')


# checkpoints -----------------------------------------------------------------------------------------------------

def checkpoint_model(ckpt: dict) -> tuple[Encoder, dict | None]:
    """The model of a train.py checkpoint and, while it trains in a shrunken vocabulary, its remapping (vocab_K.pt)."""
    model = checkpoint_encoder(ckpt)
    if not ckpt.get('state', {}).get('remapping'):  # GUIDE students have no training state
        return model, None
    path = ckpt['config']['vocab_remapping_file']
    hint = "run from the folder train.py ran in, or recreate it with prepare.py --shrink_vocab"
    if not os.path.isfile(path):
        raise SystemExit(f"the checkpoint is in a shrunken vocabulary and its remapping file {path} is missing; {hint}")
    remap = load_remap(path, hint)
    same_data = remap['fingerprint'] == ckpt['dataset_meta']['fingerprint']
    if not same_data or remap['shrunk_vocab_size'] != model.config.vocab_size:
        raise SystemExit(f"{path} was made from other data than the checkpoint was trained on (fingerprint or size "
                         f"differ); use the vocab_K.pt of the dataset preparation it was trained with")
    return model, remap


def full_vocabulary_model(ckpt: dict) -> Encoder:
    """The checkpoint's model in the tokenizer's full vocabulary (a shrunken one grown without noise)."""
    model, remap = checkpoint_model(ckpt)
    if remap is not None:
        model.resize_vocabulary(remap['vocab_size'], remap['rare_id'], noise_std=0.0,
                                full_to_shrunk=remap['full_to_shrunk'])
    meta = ckpt.get('dataset_meta')  # a GUIDE student made without --dataset has none
    if meta is not None and model.config.vocab_size != meta['vocab_size']:
        raise SystemExit(f"the model's vocabulary ({model.config.vocab_size}) is not its tokenizer's "
                         f"({meta['vocab_size']}); the checkpoint is inconsistent, export another one")
    return model


# tokenizers ------------------------------------------------------------------------------------------------------

# models ----------------------------------------------------------------------------------------------------------

def neobert_config_to_hf(config: EncoderConfig) -> dict:
    """config.json of a NeoBERT export: the official NeoBERTConfig keys plus what our NeoBERT can vary."""
    if config.global_attn_every_n_layers != 1:
        raise SystemExit(f"global_attn_every_n_layers={config.global_attn_every_n_layers}: the NeoBERT export "
                         f"supports global attention in every layer (NeoBERT's) only")
    return {
        "architectures": [NEOBERT_CLASSES['AutoModelForMaskedLM']], "model_type": "neobert",
        "auto_map": {auto: f"modeling_neobert.{cls}" for auto, cls in NEOBERT_CLASSES.items()},
        **{k: getattr(config, k) for k in NEOBERT_SHARED},
        **{hf: getattr(config, ours) for ours, hf in NEOBERT_KEYS.items()},
        "decoder_init_range": config.initializer_range, "dtype": "float32",
    }


def neobert_config_from_hf(hf: dict) -> EncoderConfig:
    """EncoderConfig of a NeoBERT config.json (ours, or the official one: absent keys take NeoBERT's values)."""
    kw = {k: hf[k] for k in NEOBERT_SHARED if k in hf}
    kw |= {ours: hf[key] for ours, key in NEOBERT_KEYS.items() if key in hf}
    return EncoderConfig(arch="neobert", global_attn_every_n_layers=1, tie_word_embeddings=False, **kw)


def save_model(model: Encoder, folder: str) -> None:
    """config.json + model.safetensors (+ the NeoBERT modeling file) of the model, in float32."""
    if model.config.arch == "modernbert":
        model.save_pretrained(folder)
        return
    from safetensors.torch import save_file
    hf_config = neobert_config_to_hf(model.config)
    # clone: a tied decoder is written as its own copy (safetensors stores no shared tensors)
    state = {k: v.detach().float().cpu().clone() for k, v in model.state_dict().items()}
    os.makedirs(folder, exist_ok=True)
    save_file(state, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(hf_config, f, indent=2)
    shutil.copy(NEOBERT_TEMPLATE, folder)


def load_folder(folder: str) -> Encoder:
    """Our Encoder from a folder export_hf.py wrote (ModernBERT or NeoBERT)."""
    path = os.path.join(folder, "config.json")
    if not os.path.isfile(path):
        raise SystemExit(f"{folder} has no config.json: give a folder written by export_hf.py")
    with open(path) as f:
        hf = json.load(f)
    if hf.get("model_type") == "modernbert":
        return Encoder.from_pretrained(folder)
    if hf.get("model_type") != "neobert":
        raise SystemExit(f"{path}: model_type {hf.get('model_type')!r} is neither 'modernbert' nor 'neobert'")
    from transformers import AutoConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    from hf_neobert.modeling_neobert import NeoBERTConfig
    if "neobert" not in CONFIG_MAPPING:
        # AutoTokenizer reads config.json: with the class known here it does not ask to trust the folder's copy
        AutoConfig.register("neobert", NeoBERTConfig)
    model = Encoder(neobert_config_from_hf(hf))
    model.load_state_dict(load_safetensors_folder(folder))
    return model


# export ----------------------------------------------------------------------------------------------------------

def export(ckpt_path: str, folder: str, overwrite: bool = False) -> None:
    """Write the Hugging Face folder of a train.py checkpoint; an existing non-empty folder needs overwrite=True.
    Everything goes to <folder>.tmp first and is renamed at the end, so a failure leaves the old folder as it was."""
    if not os.path.isfile(ckpt_path):
        raise SystemExit(f"no checkpoint at {ckpt_path}; train one first (python train.py config/demo_cpu.py)")
    if os.path.isdir(folder) and os.listdir(folder) and not overwrite:
        raise SystemExit(f"{folder} exists and is not empty; choose another --out or pass --overwrite=True")
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise SystemExit(f"{folder} is a file; --out must name a folder")
    ckpt = load_checkpoint(ckpt_path)
    model = full_vocabulary_model(ckpt)
    # the tokenizer the checkpoint records, checked by its fingerprint to be the one the model was trained with
    tokenizer = recorded_hf_tokenizer(ckpt.get('tokenizer'), ckpt_path, model.config.max_position_embeddings)
    tmp = folder.rstrip(os.sep) + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        save_model(model, tmp)
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
