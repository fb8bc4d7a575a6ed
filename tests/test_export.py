"""export_hf.py: trained checkpoints in Hugging Face form, fill-mask through transformers,
sentence-transformers."""
import math
import os

import pytest
import torch
from transformers import AutoModel, AutoModelForMaskedLM, AutoTokenizer, pipeline

import export_hf
import fill_mask
import prepare
from checkpoint import data_record, load_checkpoint, load_model
from conftest import train
from data import documents
from export_hf import export
from fill_mask import SENTENCES, MaskFiller
from hf import save_pretrained
from model import Encoder, EncoderConfig
from tokenizer import GPT2_VOCAB_SIZE, SPECIAL_NAMES, hf_tokenizer, load_tokenizer

TEXTS = SENTENCES + ['Friends, [MASK], countrymen, lend me your [MASK].']
# 20 steps at a high learning rate: predictions far enough from uniform that the top 5 has
# no near-ties
QUICK = ('--max_iters=20', '--eval_interval=20', '--learning_rate=1e-2', '--min_lr=1e-3')


@pytest.fixture(scope='module')
def modernbert(data_root, tmp_path_factory):
    """(checkpoint, export folder) of a tiny ModernBERT, exported by the command line (in this
    process)."""
    out = tmp_path_factory.mktemp('modernbert')
    train(data_root, out, *QUICK)
    export_hf.main([f'--out_dir={out}'])
    return str(out / 'ckpt.pt'), str(out / 'hf')


@pytest.fixture(scope='module')
def neobert(data_root, tmp_path_factory):
    out = tmp_path_factory.mktemp('neobert')
    train(data_root, out, '--arch=neobert', *QUICK)
    export(str(out / 'ckpt.pt'), str(out / 'hf'))
    return str(out / 'ckpt.pt'), str(out / 'hf')


def padded_batch(seq_len: int = 100) -> tuple[torch.Tensor, torch.Tensor]:
    """Two random sequences longer than the tiny model's window (16); the second padded after
    70 tokens."""
    torch.manual_seed(0)
    ids = torch.randint(0, 50257, (2, seq_len))
    mask = torch.ones_like(ids)
    mask[1, 70:] = 0
    return ids, mask


def our_model(ckpt: str) -> Encoder:
    return load_model(ckpt, full_vocabulary=False).model.eval()


def pipeline_top_k(fill, text: str) -> list[list[tuple[str, float]]]:
    """A fill-mask pipeline's top 5 as fill_mask.py gives them: per [MASK], (token,
    probability) pairs."""
    results = fill(text, top_k=5)
    per_mask = results if isinstance(results[0], list) else [results]  # one list per [MASK]
    return [[(r['token_str'], r['score']) for r in candidates] for candidates in per_mask]


def assert_same_top_k(a: list[list[tuple[str, float]]], b: list[list[tuple[str, float]]]) -> None:
    assert [[t for t, _ in row] for row in a] == [[t for t, _ in row] for row in b]
    torch.testing.assert_close(torch.tensor([[p for _, p in row] for row in a]),
                               torch.tensor([[p for _, p in row] for row in b]),
                               rtol=1e-4, atol=1e-7)


def test_an_export_keeps_the_record_of_its_pre_training_data(modernbert):
    """finetune.py judges an export like its checkpoint: whether a task's dev and test text was
    held out of its pre-training."""
    ckpt, folder = modernbert
    loaded, exported = load_model(ckpt), load_model(folder)
    assert exported.history == loaded.history == [data_record(loaded.checkpoint['dataset_meta'])]
    (record,) = exported.history
    assert record['dataset'] == 'shakespeare' and 'by section' in record['split']
    assert load_model('hf:' + folder).history == loaded.history


@torch.no_grad()
def test_modernbert_export_gives_our_logits_through_auto_classes(modernbert):
    ckpt, folder = modernbert
    assert {'config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'} <= \
        set(os.listdir(folder))
    ids, mask = padded_batch()
    ours, _ = our_model(ckpt)(ids, mask)
    hf = AutoModelForMaskedLM.from_pretrained(folder).eval()
    assert type(hf).__name__ == 'ModernBertForMaskedLM'
    logits = hf(input_ids=ids, attention_mask=mask).logits
    # padded positions predict nothing; the two implementations treat those rows differently
    valid = mask.bool()
    assert (logits - ours)[valid].abs().max() <= 1e-5
    base = AutoModel.from_pretrained(folder).eval()
    hidden = base(input_ids=ids, attention_mask=mask).last_hidden_state
    assert (hf.decoder(hf.head(hidden)) - ours)[valid].abs().max() <= 1e-5


def test_gpt2_tokenizer_export_has_prepare_ids(modernbert):
    tok = AutoTokenizer.from_pretrained(modernbert[1])
    ref = load_tokenizer('gpt2')
    assert len(tok) == GPT2_VOCAB_SIZE
    assert {n: getattr(tok, f'{n}_token_id') for n in SPECIAL_NAMES} == \
        {n: getattr(ref, f'{n}_token_id') for n in SPECIAL_NAMES}
    assert set(ref.special_ids) <= set(tok.all_special_ids)
    docs = [d for d, _ in documents('shakespeare')]
    text = '\n\n'.join(docs)[:100_000] + '\n\u00e9t\u00e9 \U0001f600  tabs\t\tand  spaces  \n'
    ids = tok(text, add_special_tokens=False, split_special_tokens=True)['input_ids']
    assert ids == ref.encode_ordinary(text) and len(ids) > 20_000
    assert tok.decode(ids) == text
    # special tokens written in the text
    for sentence in TEXTS + ['<|endoftext|>[CLS] a[SEP]b [PAD][UNK]']:
        encoded = tok(sentence)
        assert encoded['input_ids'] == [ref.cls_token_id, *ref.encode(sentence), ref.sep_token_id]
        assert set(encoded) == {'input_ids', 'attention_mask'}


def test_hf_tokenizer_is_saved_as_it_loads(tmp_path):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import BertTokenizerFast
    specials = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']
    backend = Tokenizer(models.WordPiece(unk_token='[UNK]'))
    backend.normalizer, backend.pre_tokenizer = normalizers.BertNormalizer(), \
        pre_tokenizers.BertPreTokenizer()
    backend.train_from_iterator(SENTENCES * 5,
                                trainers.WordPieceTrainer(vocab_size=200, special_tokens=specials))
    BertTokenizerFast(tokenizer_object=backend).save_pretrained(str(tmp_path / 'bert'))
    hf_tokenizer(str(tmp_path / 'bert'),
                 model_max_length=128).save_pretrained(str(tmp_path / 'out'))
    original, copy = (AutoTokenizer.from_pretrained(str(tmp_path / p)) for p in ('bert', 'out'))
    assert type(copy) is type(original) and copy.model_max_length == 128
    for text in TEXTS:
        assert copy(text)['input_ids'] == original(text)['input_ids']
    # no token_type_ids: neither model takes them
    assert set(copy(TEXTS[0])) == {'input_ids', 'attention_mask'}


def test_fill_mask_pipeline_top_k_equals_fill_mask_py(modernbert):
    ckpt, folder = modernbert
    fill, from_checkpoint, from_folder = pipeline('fill-mask', model=folder), MaskFiller(ckpt), \
        MaskFiller(folder)
    for text in TEXTS:
        expected = from_checkpoint(text, top_k=5)
        assert_same_top_k(pipeline_top_k(fill, text), expected)
        assert_same_top_k(from_folder(text, top_k=5), expected)
        assert expected[0][0][1] > 0.01  # a model that learnt, not a near-uniform one


def test_fill_mask_script_reads_an_exported_folder(modernbert, capsys):
    fill_mask.main([f'--ckpt={modernbert[1]}', f'--text={TEXTS[-1]}', '--top_k=3'])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == TEXTS[-1] and \
        [line.split(':')[0] for line in lines[1:]] == ['  [MASK] 0', '  [MASK] 1']
    first_guess = MaskFiller(modernbert[1])(TEXTS[-1], top_k=3)[0][0][0]
    assert lines[1].startswith(f'  [MASK] 0: {first_guess!r}')


def test_sentence_transformer_mean_pools_the_export(modernbert):
    from sentence_transformers import SentenceTransformer
    folder = modernbert[1]
    st = SentenceTransformer(folder, device='cpu')
    sentences = ['To be, or not to be.', 'A horse! a horse! my kingdom for a horse!']
    embeddings = st.encode(sentences, convert_to_tensor=True)
    tok, base = AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder).eval()
    batch = tok(sentences, padding=True, return_tensors='pt')
    with torch.no_grad():
        hidden = base(**batch).last_hidden_state
    weights = batch['attention_mask'].unsqueeze(-1).float()
    expected = (hidden * weights).sum(1) / weights.sum(1)
    assert embeddings.shape == (2, 32)
    torch.testing.assert_close(embeddings, expected, rtol=1e-4, atol=1e-5)
    assert not torch.allclose(embeddings[0], embeddings[1])


@torch.no_grad()
def test_neobert_export_loads_with_remote_code_and_gives_our_logits(neobert):
    ckpt, folder = neobert
    assert 'modeling_neobert.py' in os.listdir(folder)
    ids, mask = padded_batch()
    ours, _ = our_model(ckpt)(ids, mask)
    hf = AutoModelForMaskedLM.from_pretrained(folder, trust_remote_code=True).eval()
    assert type(hf).__name__ == 'NeoBERTLMHead'
    logits = hf(input_ids=ids, attention_mask=mask).logits
    assert (logits - ours)[mask.bool()].abs().max() <= 1e-5
    base = AutoModel.from_pretrained(folder, trust_remote_code=True).eval()
    assert type(base).__name__ == 'NeoBERT'
    hidden = base(input_ids=ids, attention_mask=mask).last_hidden_state
    assert (hf.decoder(hidden) - ours)[mask.bool()].abs().max() <= 1e-5
    # the masked-LM loss over the labelled positions
    labels = torch.where(torch.rand(ids.shape) < 0.3, ids, -100)
    torch.testing.assert_close(hf(input_ids=ids, labels=labels).loss,
                               our_model(ckpt)(ids, labels=labels)[1])
    expected = MaskFiller(ckpt)(TEXTS[-1])
    assert_same_top_k(MaskFiller(folder)(TEXTS[-1]), expected)
    assert_same_top_k(pipeline_top_k(pipeline('fill-mask', model=folder,
                                              trust_remote_code=True), TEXTS[-1]), expected)


@torch.no_grad()
def test_shrunken_checkpoint_exports_in_the_full_vocabulary(data_root, tmp_path):
    train(data_root, tmp_path, f'--vocab_remapping_file={data_root}/shakespeare/vocab_512.pt',
          '--max_iters=4', '--eval_interval=4')
    export(str(tmp_path / 'ckpt.pt'), str(tmp_path / 'hf'))
    loaded = load_model(str(tmp_path / 'ckpt.pt'), full_vocabulary=False)
    shrunk, remap = loaded.model, loaded.remap
    hf = AutoModelForMaskedLM.from_pretrained(str(tmp_path / 'hf')).eval()
    full_to_shrunk, rare = remap['full_to_shrunk'], remap['full_to_shrunk'] == remap['rare_id']
    assert hf.config.vocab_size == GPT2_VOCAB_SIZE and hf.config.mask_token_id == 50259
    ids, _ = padded_batch()
    logits = hf(input_ids=ids).logits
    expected, _ = shrunk.eval()(full_to_shrunk[ids])
    # a core token keeps its logit; each rare token gets RARE's minus log(rare tokens): their sum is
    # RARE's probability
    expected = expected[..., full_to_shrunk] - math.log(int(rare.sum())) * rare
    assert (logits - expected).abs().max() <= 1e-5


def test_a_tokenizer_trained_by_prepare_goes_through_training_and_export(tmp_path):
    # prepare.py --train_tokenizer -> train.py -> export_hf.py -> transformers, with nothing but
    # the data folder
    assert prepare.main([f"--out_dir={tmp_path / 'data' / 'mine'}",
                         '--train_tokenizer=512', '--num_proc=1']) == 0
    train(tmp_path / 'data', tmp_path / 'out', '--dataset=mine', *QUICK)
    export(str(tmp_path / 'out' / 'ckpt.pt'), str(tmp_path / 'hf'))
    tok = AutoTokenizer.from_pretrained(str(tmp_path / 'hf'))
    hf = AutoModelForMaskedLM.from_pretrained(str(tmp_path / 'hf')).eval()
    assert len(tok) == hf.config.vocab_size == 512 and \
        hf.config.mask_token_id == tok.mask_token_id == 4
    batch = tok(TEXTS, return_tensors='pt', padding=True)
    expected, _ = our_model(str(tmp_path / 'out' / 'ckpt.pt'))(batch['input_ids'],
                                                               batch['attention_mask'])
    valid = batch['attention_mask'].bool()  # padded positions predict nothing
    assert (hf(**batch).logits - expected)[valid].abs().max() <= 1e-5


def test_export_refuses_bad_input_and_overwrites_only_when_asked(modernbert, tmp_path):
    ckpt, _ = modernbert
    with pytest.raises(SystemExit, match='no checkpoint at'):
        export_hf.main([f'--ckpt={tmp_path / "nothing.pt"}'])
    (tmp_path / 'hf').mkdir()
    (tmp_path / 'hf' / 'keep.txt').write_text('mine')
    with pytest.raises(SystemExit,
                       match='not empty; choose another --out or pass --overwrite=True'):
        export(ckpt, str(tmp_path / 'hf'))
    assert os.listdir(tmp_path / 'hf') == ['keep.txt']
    export(ckpt, str(tmp_path / 'hf'), overwrite=True)
    assert 'keep.txt' not in os.listdir(tmp_path / 'hf') and \
        'model.safetensors' in os.listdir(tmp_path / 'hf')
    # a shrunken-vocabulary checkpoint whose remapping file is gone
    state = load_checkpoint(ckpt)
    state['state']['remapping'], state['config']['vocab_remapping_file'] = True, \
        str(tmp_path / 'vocab_512.pt')
    torch.save(state, tmp_path / 'shrunk.pt')
    with pytest.raises(SystemExit, match='its remapping file .* is missing'):
        export(str(tmp_path / 'shrunk.pt'), str(tmp_path / 'shrunk'))
    assert not os.path.exists(tmp_path / 'shrunk') and not os.path.exists(tmp_path / 'shrunk.tmp')
    neobert_local = Encoder(EncoderConfig(arch='neobert', vocab_size=64, hidden_size=16,
                                          intermediate_size=32, num_hidden_layers=2,
                                          num_attention_heads=2, global_attn_every_n_layers=2,
                                          pad_token_id=0, cls_token_id=1, sep_token_id=2,
                                          mask_token_id=3))
    with pytest.raises(SystemExit, match='global attention in every layer'):
        save_pretrained(neobert_local, str(tmp_path / 'neobert'))
