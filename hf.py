"""
Hugging Face folders, both ways, for both architectures: config.json conversions, safetensors
weights, hub downloads.
ModernBERT is transformers' own ModernBertForMaskedLM (loads without remote code); NeoBERT uses the
official chandar-lab config keys plus hf_neobert/modeling_neobert.py copied into the folder
(trust_remote_code=True).
checkpoint.load_model reads folders through load_pretrained; export_hf.py writes them with
save_pretrained.
"""
import json
import os
import shutil

import torch

from errors import fail
from model import SPECIAL_IDS, Encoder, EncoderConfig
from tokenizer import TOKENIZER_FILES

# ModernBERT (transformers' ModernBertConfig) ------------------------------------------------------

# fields whose name and meaning are the same in transformers' ModernBertConfig
HF_SHARED_FIELDS = ('vocab_size', 'hidden_size', 'intermediate_size', 'num_hidden_layers',
                    'num_attention_heads', 'max_position_embeddings', 'local_attention', 'norm_eps',
                    'norm_bias', 'attention_bias', 'mlp_bias', 'classifier_bias', 'decoder_bias',
                    'tie_word_embeddings', *SPECIAL_IDS, 'embedding_dropout', 'attention_dropout',
                    'mlp_dropout', 'initializer_range', 'initializer_cutoff_factor')


def config_from_hf(hf: dict) -> EncoderConfig:
    """EncoderConfig from a ModernBertConfig dict (config.json), transformers 4.48 style
    (global_rope_theta, local_rope_theta, global_attn_every_n_layers) or 5.x style (rope_parameters,
    layer_types)."""
    if hf.get('model_type') != 'modernbert':
        raise ValueError(f"model_type={hf.get('model_type')!r}: only ModernBERT "
                         "(model_type 'modernbert') checkpoints can be loaded")
    for name in ('hidden_activation', 'classifier_activation'):
        if hf.get(name, 'gelu') != 'gelu':
            raise ValueError(f'{name}={hf[name]!r} is not supported: '
                             "this ModernBERT uses exact GELU ('gelu')")
    kw = {k: hf[k] for k in HF_SHARED_FIELDS if hf.get(k) is not None}
    rope = hf.get('rope_parameters') or {}
    for kind, old_key, field in (('full_attention', 'global_rope_theta', 'global_rope_theta'),
                                 ('sliding_attention', 'local_rope_theta', 'local_rope_theta')):
        params = rope.get(kind) or {}
        if params.get('rope_type', 'default') != 'default':
            raise ValueError(f"rope_type={params['rope_type']!r} for {kind} is not supported: "
                             "only 'default' RoPE")
        theta = params.get('rope_theta', hf.get(old_key))
        if theta is not None:
            kw[field] = float(theta)
    layer_types = hf.get('layer_types')
    if layer_types:
        glob = [i for i, t in enumerate(layer_types) if t == 'full_attention']
        n = glob[1] if len(glob) > 1 else len(layer_types)
        if layer_types != ['full_attention' if i % n == 0 else 'sliding_attention'
                           for i in range(len(layer_types))]:
            raise ValueError(f'layer_types {layer_types} is not a '
                             "'layer i is global when i % n == 0' pattern")
        kw['global_attn_every_n_layers'] = n
    elif hf.get('global_attn_every_n_layers') is not None:
        kw['global_attn_every_n_layers'] = hf['global_attn_every_n_layers']
    return EncoderConfig(arch='modernbert', **kw)


def config_to_hf(config: EncoderConfig, dtype: torch.dtype = torch.float32) -> dict:
    """ModernBertConfig dict for config.json, readable by transformers 4.48 and 5.x (both key styles
    written)."""
    if config.arch != 'modernbert':
        raise ValueError(f'arch={config.arch!r} has no transformers class yet: '
                         'only ModernBERT exports to Hugging Face')
    kinds = [config.layer_kind(i) for i in range(config.num_hidden_layers)]
    return {
        'architectures': ['ModernBertForMaskedLM'], 'model_type': 'modernbert',
        **{k: getattr(config, k) for k in HF_SHARED_FIELDS},
        'hidden_activation': 'gelu', 'classifier_activation': 'gelu',
        'bos_token_id': config.cls_token_id, 'eos_token_id': config.sep_token_id,
        'global_attn_every_n_layers': config.global_attn_every_n_layers,
        'global_rope_theta': config.global_rope_theta, 'local_rope_theta': config.local_rope_theta,
        'layer_types': ['full_attention' if k == 'global' else 'sliding_attention' for k in kinds],
        'rope_parameters': {'full_attention': {'rope_type': 'default',
                                               'rope_theta': config.global_rope_theta},
                            'sliding_attention': {'rope_type': 'default',
                                                  'rope_theta': config.local_rope_theta}},
        'dtype': str(dtype).removeprefix('torch.'),
    }


# NeoBERT (the official config keys) ---------------------------------------------------------------

NEOBERT_TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'hf_neobert',
                                'modeling_neobert.py')
NEOBERT_CLASSES = {'AutoConfig': 'NeoBERTConfig', 'AutoModel': 'NeoBERT',
                   'AutoModelForMaskedLM': 'NeoBERTLMHead'}
# EncoderConfig field -> NeoBERTConfig key, where they differ
NEOBERT_KEYS = dict(max_position_embeddings='max_length', global_rope_theta='rope_theta',
                    initializer_range='embedding_init_range')
NEOBERT_SHARED = ('vocab_size', 'hidden_size', 'num_hidden_layers', 'num_attention_heads',
                  'intermediate_size', 'norm_eps', 'attention_bias', 'mlp_bias', 'decoder_bias',
                  'embedding_dropout', 'attention_dropout', 'mlp_dropout', *SPECIAL_IDS)


def neobert_config_to_hf(config: EncoderConfig) -> dict:
    """config.json of a NeoBERT export: the official NeoBERTConfig keys plus what our NeoBERT can
    vary."""
    if config.global_attn_every_n_layers != 1:
        fail(f'global_attn_every_n_layers={config.global_attn_every_n_layers}: the NeoBERT export '
             f"supports global attention in every layer (NeoBERT's) only")
    return {
        'architectures': [NEOBERT_CLASSES['AutoModelForMaskedLM']], 'model_type': 'neobert',
        'auto_map': {auto: f'modeling_neobert.{cls}' for auto, cls in NEOBERT_CLASSES.items()},
        **{k: getattr(config, k) for k in NEOBERT_SHARED},
        **{hf: getattr(config, ours) for ours, hf in NEOBERT_KEYS.items()},
        'decoder_init_range': config.initializer_range, 'dtype': 'float32',
    }


def neobert_config_from_hf(hf: dict) -> EncoderConfig:
    """EncoderConfig of a NeoBERT config.json (ours, or the official one: absent keys take NeoBERT's
    values)."""
    kw = {k: hf[k] for k in NEOBERT_SHARED if k in hf}
    kw |= {ours: hf[key] for ours, key in NEOBERT_KEYS.items() if key in hf}
    return EncoderConfig(arch='neobert', global_attn_every_n_layers=1, tie_word_embeddings=False,
                         **kw)


# folders ------------------------------------------------------------------------------------------

def load_pretrained(name_or_path: str) -> Encoder:
    """The Encoder of a Hugging Face folder or hub id: ModernBertForMaskedLM, or a NeoBERT folder
    export_hf.py wrote (or the official one). Special ids that config.json leaves out (no saved
    ModernBertConfig has a mask_token_id) come from the folder's tokenizer files when it has them,
    and stay unset otherwise."""
    folder = hf_folder(name_or_path)
    path = os.path.join(folder, 'config.json')
    if not os.path.isfile(path):
        raise FileNotFoundError(f'{folder} has no config.json: give a Hugging Face model folder '
                                f'(ModernBERT, or a NeoBERT folder written by export_hf.py)')
    with open(path) as f:
        hf = json.load(f)
    if any(hf.get(name) is None for name in SPECIAL_IDS):
        hf = tokenizer_special_ids(folder) | {k: v for k, v in hf.items() if v is not None}
    if hf.get('model_type') == 'neobert':
        register_neobert()
        config = neobert_config_from_hf(hf)
    else:
        config = config_from_hf(hf)
    model = Encoder(config)
    state = {k: v for k, v in load_safetensors_folder(folder).items()
             if not k.endswith('inv_freq')}
    # tied checkpoints usually omit it
    if config.tie_word_embeddings and 'decoder.weight' not in state:
        state['decoder.weight'] = state['model.embeddings.tok_embeddings.weight']
    model.load_state_dict(state, strict=True)
    return model


def save_pretrained(model: Encoder, folder: str) -> None:
    """config.json + model.safetensors (+ NeoBERT's modeling file) that transformers loads, in the
    model's dtype."""
    from safetensors.torch import save_file
    c = model.config
    hf_config = (config_to_hf(c, model.decoder.weight.dtype) if c.arch == 'modernbert'
                 else neobert_config_to_hf(c))
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    if c.arch == 'modernbert' and c.tie_word_embeddings:
        del state['decoder.weight']  # safetensors stores no shared tensors; transformers re-ties it
    elif c.tie_word_embeddings:
        # NeoBERT's code expects its own copy
        state['decoder.weight'] = state['decoder.weight'].clone()
    os.makedirs(folder, exist_ok=True)
    save_file(state, os.path.join(folder, 'model.safetensors'), metadata={'format': 'pt'})
    with open(os.path.join(folder, 'config.json'), 'w') as f:
        json.dump(hf_config, f, indent=2)
    if c.arch == 'neobert':
        shutil.copy(NEOBERT_TEMPLATE, folder)


def register_neobert() -> None:
    """Make transformers know model_type 'neobert' in this process: AutoTokenizer reads config.json,
    and with the class known here it does not ask to trust the folder's copy of the modeling
    file."""
    from transformers import AutoConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    from hf_neobert.modeling_neobert import NeoBERTConfig
    if 'neobert' not in CONFIG_MAPPING:
        AutoConfig.register('neobert', NeoBERTConfig)


def hf_folder(name_or_path: str) -> str:
    """A local folder as it is; a hub id downloaded (config, weights and tokenizer files) to the
    local cache."""
    if os.path.isdir(name_or_path):
        return name_or_path
    from huggingface_hub import snapshot_download
    files = ['config.json', '*.safetensors', 'model.safetensors.index.json', 'tokenizer*',
             'special_tokens_map.json', 'vocab.*', 'merges.txt']
    return snapshot_download(name_or_path, allow_patterns=files)


def tokenizer_special_ids(folder: str) -> dict:
    """pad/cls/sep/mask ids of the tokenizer saved in folder ({} when it has no tokenizer files)."""
    if not any(os.path.isfile(os.path.join(folder, f)) for f in TOKENIZER_FILES):
        return {}
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(folder)
    return {name: getattr(tok, name) for name in SPECIAL_IDS if getattr(tok, name) is not None}


def load_safetensors_folder(folder: str) -> dict:
    """All tensors of a folder's model.safetensors, or of the shards its index names."""
    from safetensors.torch import load_file
    index = os.path.join(folder, 'model.safetensors.index.json')
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)['weight_map'].values()))
    else:
        files = ['model.safetensors']
    state = {}
    for name in files:
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            raise FileNotFoundError(f'{path} is missing: '
                                    'from_pretrained needs config.json and safetensors weights')
        state.update(load_file(path))
    return state
