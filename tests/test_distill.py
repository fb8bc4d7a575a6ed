"""Knowledge distillation (distill.py, train.py's teacher): the losses against hand-written
references, the curriculum's folding of the teacher's distribution, training with a teacher of
another architecture across a vocabulary resize, a GUIDE student's hidden-state target, and bad
teachers. Exact resume with a teacher: test_reliability's resume cases."""
import pytest
import torch

import init_guide
from checkpoint import load_checkpoint, save_checkpoint
from conftest import read_metrics, stop_in_process, train, train_args
from distill import HIDDEN_LOSSES, distillation_loss, hidden_loss, mixed_loss, soft_targets
from model import IGNORE_INDEX, Encoder, EncoderConfig

SMALL = dict(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
             num_attention_heads=2)


def masked(seed: int = 0, shape=(3, 20), vocab: int = 96) -> tuple[torch.Tensor, torch.Tensor]:
    """Random inputs and labels with about 30% of the positions predicted."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(vocab, shape, generator=g)
    labels = torch.where(torch.rand(shape, generator=g) < 0.3,
                         torch.randint(vocab, shape, generator=g), IGNORE_INDEX)
    return x, labels


def test_the_loss_and_its_gradients_equal_a_hand_written_reference():
    torch.manual_seed(0)
    student, teacher = Encoder(EncoderConfig(**SMALL)), \
        Encoder(EncoderConfig(**{**SMALL, 'num_hidden_layers': 3}))
    x, labels = masked()
    w, T = 0.7, 2.0
    # train.py's path: the sparse heads padded to a fixed number of rows, which must not count
    capacity = int((labels != IGNORE_INDEX).sum()) + 9
    logits, mlm = student(x, labels=labels, max_predictions=capacity)
    with torch.no_grad():
        teacher_logits = teacher(x, labels=labels, max_predictions=capacity)[0]
    loss, _ = mixed_loss(mlm, logits, teacher_logits, labels, w, T)
    grads = torch.autograd.grad(loss, list(student.parameters()))
    # the reference: dense logits, the predicted positions picked out, the formulas written out
    keep = labels != IGNORE_INDEX
    s, t = student(x)[0][keep], teacher(x)[0][keep].detach()
    p, log_q = (t / T).softmax(-1), (s / T).log_softmax(-1)
    ce = -s.log_softmax(-1).gather(1, labels[keep][:, None]).mean()
    kl = (p * (p.log() - log_q)).sum(-1).mean()
    reference = (1 - w) * ce + w * T ** 2 * kl
    torch.testing.assert_close(loss, reference, rtol=1e-5, atol=1e-6)
    for got, want in zip(grads, torch.autograd.grad(reference, list(student.parameters()))):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize('kind', HIDDEN_LOSSES)
def test_the_hidden_state_loss_and_its_gradients_equal_a_hand_written_reference(kind):
    torch.manual_seed(0)
    student = Encoder(EncoderConfig(**SMALL))
    teacher = Encoder(EncoderConfig(**{**SMALL, 'hidden_size': 64, 'num_attention_heads': 4,
                                       'intermediate_size': 96}))
    projection = torch.linalg.qr(torch.randn(64, 32))[0]  # orthonormal columns, as GUIDE's PCA map
    x, labels = masked(2)
    capacity = int((labels != IGNORE_INDEX).sum()) + 5  # padded rows must not count
    hidden = student(x, labels=labels, max_predictions=capacity, return_hidden=True)[2]
    with torch.no_grad():
        teacher_hidden = teacher(x, labels=labels, max_predictions=capacity, return_hidden=True)[2]
    loss = hidden_loss(hidden, teacher_hidden, projection, labels, kind)
    params = list(student.model.parameters())  # the head and decoder play no part
    grads = torch.autograd.grad(loss, params)
    keep = labels != IGNORE_INDEX
    s, t = student.encode(x)[keep], (teacher.encode(x)[keep] @ projection).detach()
    if kind == 'cosine':
        reference = (1 - (s * t).sum(-1) / (s.norm(dim=-1) * t.norm(dim=-1))).mean()
    else:
        reference = ((s - t) ** 2).mean()
    torch.testing.assert_close(loss, reference, rtol=1e-5, atol=1e-6)
    for got, want in zip(grads, torch.autograd.grad(reference, params)):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-6)


def test_kl_and_the_hidden_state_loss_are_zero_when_the_student_is_the_teacher():
    torch.manual_seed(0)
    model = Encoder(EncoderConfig(**SMALL))
    x, labels = masked(1)
    logits, _, hidden = model(x, labels=labels, return_hidden=True)
    for T in (1.0, 2.0):
        assert distillation_loss(logits, soft_targets(logits, T), labels, T).abs() < 1e-6
    assert distillation_loss(logits[:0], soft_targets(logits[:0], 1.0), labels * 0 + IGNORE_INDEX,
                             1.0) == 0
    for kind in HIDDEN_LOSSES:
        assert hidden_loss(hidden, hidden, torch.eye(SMALL['hidden_size']), labels,
                           kind).abs() < 1e-6


def test_the_folded_distribution_sums_to_one_and_is_the_teachers_on_kept_tokens():
    torch.manual_seed(0)
    full, rare = 50, 2  # shrunken: ids 0, 1 special, 2 RARE, then 7 kept tokens
    kept = torch.randperm(full - 2)[:7] + 2
    full_to_shrunk = torch.full((full,), rare)
    full_to_shrunk[[0, 1]] = torch.tensor([0, 1])
    full_to_shrunk[kept] = torch.arange(3, 10)
    logits = 3 * torch.randn(6, full)
    p, folded = soft_targets(logits, 1.5), soft_targets(logits, 1.5, full_to_shrunk, 10)
    torch.testing.assert_close(folded.sum(-1), torch.ones(6))
    torch.testing.assert_close(folded[:, 3:], p[:, kept])
    torch.testing.assert_close(folded[:, rare], p[:, full_to_shrunk == rare].sum(-1))


def test_a_neobert_teacher_distils_into_a_modernbert_student_across_the_vocabulary_resize(
        data_root, tmp_path):
    train(data_root, tmp_path / 'teacher', '--arch=neobert', '--max_iters=2', '--eval_interval=2')
    schedule = ("--schedule=[{'name': 'resize_vocabulary', 'value': [None, 0.0], 'at_iter': 2}, "
                "{'name': 'disable_vocab_remapping', 'value': None, 'at_iter': 2}]")
    out = tmp_path / 'student'
    train(data_root, out, f'--teacher={tmp_path / "teacher" / "ckpt.pt"}', '--max_iters=4',
          '--eval_interval=2', f'--vocab_remapping_file={data_root}/shakespeare/vocab_512.pt',
          schedule)
    steps = [m for m in read_metrics(out) if 'distill_loss' in m]
    # two steps in the shrunken space, two in the full one
    assert [m['iter'] for m in steps] == [0, 1, 2, 3]
    for m in steps:
        assert m['distill_loss'] > 0 and \
            m['loss'] == pytest.approx(0.5 * m['mlm_loss'] + 0.5 * m['distill_loss'])
    assert load_checkpoint(str(out / 'ckpt.pt'))['teacher']['source'] == \
        str(tmp_path / 'teacher' / 'ckpt.pt')


def test_a_guide_student_learns_the_teachers_hidden_states_through_the_pca_map(data_root, tmp_path,
                                                                               ckpt):
    # half the width of the session's tiny checkpoint, its teacher
    student = str(tmp_path / 'student.pt')
    init_guide.main([f'--teacher={ckpt}', f'--out={student}', '--hidden_size=16',
                     '--num_attention_heads=1', '--intermediate_size=32', '--num_hidden_layers=2',
                     '--guide_layers=all'])
    projection = load_checkpoint(student)['guide']['projection']
    assert projection.shape == (32, 16)
    out = tmp_path / 'run'
    train(data_root, out, f'--init_from={student}', f'--teacher={ckpt}',
          '--distill_hidden_weight=2.0', '--max_iters=2', '--eval_interval=2')
    steps = [m for m in read_metrics(out) if 'hidden_loss' in m]
    assert [m['iter'] for m in steps] == [0, 1]
    for m in steps:
        assert 0 < m['hidden_loss'] < 2  # 1 - cosine
        assert m['loss'] == pytest.approx(0.5 * m['mlm_loss'] + 0.5 * m['distill_loss']
                                          + 2.0 * m['hidden_loss'])
    # the map goes on with the student, so that a run started from this checkpoint has it too
    assert torch.equal(load_checkpoint(str(out / 'ckpt.pt'))['guide']['projection'], projection)


def test_bad_teachers_stop_with_one_line(data_root, tmp_path, ckpt):
    def stop(*args):
        return stop_in_process('train.py', *train_args(data_root, tmp_path / 'run', '--max_iters=2',
                                                       *args))

    assert 'no teacher checkpoint at' in stop(f'--teacher={tmp_path / "missing.pt"}')
    other = load_checkpoint(ckpt)
    other['tokenizer'] = dict(other['tokenizer'], name='another', fingerprint='0' * 64)
    save_checkpoint(other, str(tmp_path / 'other.pt'))
    assert 'the same ids mean other tokens' in stop(f'--teacher={tmp_path / "other.pt"}')
    assert 'distill_weight must be in [0, 1]' in stop(f'--teacher={ckpt}', '--distill_weight=1.5')
    assert 'distill_hidden_weight must be >= 0 and needs a --teacher' in \
        stop('--distill_hidden_weight=1')
    # a student narrower than the teacher with no GUIDE map has no hidden-state target
    message = stop(f'--teacher={ckpt}', '--distill_hidden_weight=1', '--hidden_size=16',
                   '--num_attention_heads=1')
    assert "needs a map from the teacher's 32 hidden dimensions to the student's 16" in message
    # a run trained with a teacher resumes only with that teacher
    train(data_root, tmp_path / 'run', f'--teacher={ckpt}', '--max_iters=1', '--eval_interval=1')
    message = stop('--init_from=resume')
    assert f'was trained with teacher {ckpt}' in message and 'this run has no teacher' in message
