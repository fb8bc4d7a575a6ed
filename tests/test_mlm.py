import numpy as np
import torch

import mlm
from mlm import TokenSpace, get_document_windows, mask_tokens, micro_batch_loss
from model import IGNORE_INDEX

SPACE = dict(vocab_size=1000, mask_token_id=3, special_token_ids=[0, 1, 2, 3, 4, 999])


def test_masking_statistics_over_a_million_positions():
    space = TokenSpace(SPACE, 'cpu')
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(0, 1000, (1000, 1000), generator=gen)
    inputs, labels = mask_tokens(x, space, 0.30, 0.8, 0.1, gen)
    special = space.special[x]
    selected = labels != IGNORE_INDEX
    assert not (selected & special).any(), 'a special token was selected'
    assert abs(selected.float().sum() / (~special).sum() - 0.30) < 0.01
    assert torch.equal(labels[selected], x[selected])
    as_mask = (inputs == 3) & selected
    changed = (inputs != x) & selected & ~as_mask
    kept = (inputs == x) & selected
    n = selected.sum()
    assert abs(as_mask.sum() / n - 0.8) < 0.01
    # a random draw can hit the original token: the kept share absorbs 1/|random ids| of the
    # random share
    assert abs(changed.sum() / n - 0.1) < 0.01 and abs(kept.sum() / n - 0.1) < 0.01
    assert not space.special[inputs[changed]].any(), 'a random replacement was a special token'
    assert torch.equal(inputs[~selected], x[~selected])


def test_neobert_recipe_masks_everything_selected():
    space = TokenSpace(SPACE, 'cpu')
    gen = torch.Generator().manual_seed(1)
    x = torch.randint(5, 999, (200, 500), generator=gen)
    inputs, labels = mask_tokens(x, space, 0.20, 1.0, 0.0, gen)
    selected = labels != IGNORE_INDEX
    assert (inputs[selected] == 3).all() and abs(selected.float().mean() - 0.20) < 0.01


def test_micro_batch_loss_weights_by_predicted_tokens():
    losses = torch.tensor([2.0, 4.0]), torch.tensor([10, 30])
    total = sum(micro_batch_loss(loss, n, losses[1].sum()) for loss, n in zip(*losses))
    assert torch.allclose(total, torch.tensor((2.0 * 10 + 4.0 * 30) / 40))
    empty = micro_batch_loss(torch.tensor(float('nan')), torch.tensor(0), torch.tensor(40))
    assert empty.item() == 0.0


def test_remapping_happens_before_masking_and_never_touches_labels():
    # a table in which index -1 (from a label -100) would give 54
    full_to_shrunk = torch.arange(1000) % 50 + 5
    full_to_shrunk[:5] = torch.arange(5)
    space = TokenSpace(dict(vocab_size=1000, shrunk_vocab_size=55, mask_token_id=3,
                            special_token_ids=[0, 1, 2, 3, 4]), 'cpu')
    gen = torch.Generator().manual_seed(2)
    x = torch.randint(0, 1000, (64, 256), generator=gen)
    inputs, labels = mask_tokens(x, space, 0.3, 0.8, 0.1, gen, full_to_shrunk)
    selected = labels != IGNORE_INDEX
    assert torch.equal(labels[selected], full_to_shrunk[x][selected])
    assert (labels[~selected] == IGNORE_INDEX).all() and inputs.max() < 55
    assert torch.equal(inputs[~selected], full_to_shrunk[x][~selected])


def write_documents(folder, lengths: list[int], cls_id: int = 1) -> list[list[int]]:
    """A token file of documents [CLS] t t ... with distinct tokens; returns the documents."""
    docs, next_token = [], 10
    for n in lengths:
        docs.append([cls_id] + list(range(next_token, next_token + n - 1)))
        next_token += n
    np.array([t for d in docs for t in d], dtype=np.uint16).tofile(folder / 'train.bin')
    return docs


def test_document_windows_start_at_documents_and_number_them(tmp_path):
    docs = write_documents(tmp_path, [5, 40, 3, 9, 17, 2, 30])
    block = 8
    x, documents = get_document_windows([str(tmp_path / 'train.bin')], 'uint16', 400, block, 1,
                                        torch.Generator().manual_seed(0), 'cpu')
    assert x.shape == documents.shape == (400, block) and (x[:, 0] == 1).all()
    assert torch.equal(documents, torch.cumsum(x == 1, dim=1))  # a new id at every [CLS], from 1
    text = [t for d in docs for t in d]  # every token but [CLS] occurs once
    for row in x.tolist():
        i = text.index(row[1])
        if text[i - 1] == 1:  # a window from a document's own [CLS]: the file as it is
            assert text[i - 1:i - 1 + block] == row
        else:  # a later piece of a long document: [CLS], then the file from there
            assert text[i:i + block - 1] == row[1:]
    # every token of the long documents is reached, not only their first window (the file's last
    # piece, which cannot fill a window, is the one place left out)
    seen = set(x.flatten().tolist())
    assert set(docs[1]) <= seen and set(docs[4]) <= seen


def test_documents_are_found_a_chunk_at_a_time(tmp_path, monkeypatch):
    # the [CLS] scan reads a bounded piece of the file at a time: any chunk size finds the
    # same pieces
    write_documents(tmp_path, [5, 40, 3, 9, 17, 2, 30] * 5)
    path = str(tmp_path / 'train.bin')
    whole = mlm.document_pieces.__wrapped__(path, 'uint16', 1, 8)
    for chunk in (1, 7, 40, 10_000):
        monkeypatch.setattr(mlm, 'SCAN_CHUNK', chunk)
        for a, b in zip(mlm.document_pieces.__wrapped__(path, 'uint16', 1, 8), whole):
            assert np.array_equal(a, b)
    assert len(whole[0]) > 35  # every document starts a piece, the long ones more than one


def test_many_shards_are_each_scanned_once_per_run(tmp_path):
    # document packing draws every batch's windows across all shards: each shard's index is built
    # once, however many shards there are (a bounded cache re-read every shard at every batch past
    # its size)
    paths = []
    for k in range(19):
        (tmp_path / f'{k}').mkdir()
        write_documents(tmp_path / f'{k}', [30, 12, 50] * 4)
        paths.append(str(tmp_path / f'{k}' / 'train.bin'))
    mlm.document_pieces.cache_clear()
    gen = torch.Generator().manual_seed(0)
    for _ in range(20):
        mlm.get_document_windows(paths, 'uint16', 4, 16, 1, gen, 'cpu')
    info = mlm.document_pieces.cache_info()
    assert (info.misses, info.hits) == (19, 19 * 19)


def test_windows_of_several_files_lie_within_one_and_cover_all(tmp_path):
    # a split in three files: every window (random or document-packed) is a run of one file, and
    # each file gets windows in proportion to what it holds
    files = []
    for k, lengths in enumerate([[30] * 20, [12, 50, 7] * 10, [25] * 8]):
        (tmp_path / f'{k}').mkdir()
        docs = write_documents(tmp_path / f'{k}', lengths)
        # distinct tokens per file
        files.append(np.array([t + 1000 * k * (t != 1) for d in docs for t in d]))
        files[-1].astype(np.uint16).tofile(tmp_path / f'{k}' / 'train.bin')
    paths = [str(tmp_path / f'{k}' / 'train.bin') for k in range(3)]
    gen = torch.Generator().manual_seed(0)
    x = mlm.get_windows(paths, 'uint16', 3000, 16, gen, 'cpu').numpy()
    y, documents = mlm.get_document_windows(paths, 'uint16', 3000, 16, 1, gen, 'cpu')
    for rows, packed in ((x, False), (y.numpy(), True)):
        which = []
        for row in rows:
            # a packed window may put a [CLS] of its own in front
            content = row[1:] if packed else row
            # the first token that is not [CLS]: unique in all files
            j = int(np.flatnonzero(content != 1)[0])
            k = content[j] // 1000
            i = int(np.flatnonzero(files[k] == content[j])[0]) - j
            assert np.array_equal(files[k][i:i + len(content)], content)
            which.append(k)
        share = np.bincount(which, minlength=3) / len(rows)
        assert np.allclose(share, [len(f) / sum(map(len, files)) for f in files], atol=0.04), \
            (packed, share)
    assert (y[:, 0] == 1).all() and torch.equal(documents, torch.cumsum(y == 1, dim=1))


def test_document_windows_draw_tokens_as_uniformly_as_random_windows(tmp_path):
    # short documents, then one long one: 600 of 1,200 tokens
    write_documents(tmp_path, [3] * 200 + [600])
    x, _ = get_document_windows([str(tmp_path / 'train.bin')], 'uint16', 4000, 16, 1,
                                torch.Generator().manual_seed(0), 'cpu')
    first = x[:, 1]  # the token after [CLS]: from a short document or from the long one
    from_long = (first >= 10 + 3 * 200).float().mean().item()
    # about half the windows start in the long document, half in the short ones
    assert 0.4 < from_long < 0.6


def test_unigram_logits_are_the_log_frequencies_of_what_mlm_predicts():
    # token 5 is special: counted in the corpus, never predicted
    counts = np.array([0, 5, 3, 0, 2, 10])
    space = TokenSpace(dict(vocab_size=6, mask_token_id=5, special_token_ids=[5]), 'cpu')
    logits = mlm.unigram_logits(counts, space)
    assert logits.exp().sum() == torch.tensor(1.0).float()
    # add-one, the special at the floor
    assert torch.allclose(logits.exp(), torch.tensor([1, 6, 4, 1, 3, 1]) / 16.0)
    # shrunken: tokens 2, 3 and 4 are RARE (id 2), which predicts for all of them
    shrunk = TokenSpace(dict(shrunk_vocab_size=4, vocab_size=6, mask_token_id=3,
                             special_token_ids=[3]), 'cpu')
    folded = mlm.unigram_logits(counts, shrunk, torch.tensor([0, 1, 2, 2, 2, 3]))
    assert torch.allclose(folded.exp(), torch.tensor([1, 6, 6, 1]) / 14.0)
