"""
Knowledge distillation for train.py: a frozen teacher's soft targets on the predicted rows, mixed
into the MLM loss (DistilBERT's recipe: the loss is (1 - w) * cross-entropy + w * T^2 *
KL(teacher || student) at temperature T).

The teacher reads the student's masked input and predicts at the same rows through its own sparse
head, so its cost is one forward pass of its encoder plus its decoder on the predicted rows only. In
the curriculum's shrunken phase the student predicts in the shrunken token space: the teacher reads
the input mapped back to full ids (RARE becomes [UNK], as the remapping file defines) and its
distribution is folded into the shrunken space, RARE receiving the summed probability of every token
it stands for.

Optionally the student's final hidden states are also pulled towards the teacher's, read in the
student's basis through GUIDE's PCA map M (init_guide.py saves it in the student checkpoint): the
student keeps living in the teacher's principal subspace, where GUIDE put it (DistilBERT's cosine
loss on the hidden states, across widths).
"""
from typing import Callable

import torch
import torch.nn.functional as F

from checkpoint import fit_model_to_data, load_model, unknown_data, weights_fingerprint
from errors import fail
from model import IGNORE_INDEX, Encoder
from tokenizer import data_tokenizer, require_same_tokenizer


def load_teacher(source: str, meta: dict, block_size: int,
                 device: str) -> tuple[Encoder, dict, list]:
    """The frozen teacher at source (a .pt, a Hugging Face folder or hf:<id>, grown to the full
    vocabulary), checked to read the run's data, in eval mode on device; its record (source,
    fingerprint) for the checkpoint; and its data history (unknown when it keeps none). SystemExit
    with one line when it cannot be the teacher of this data."""
    loaded = load_model(source, role='teacher')
    require_same_tokenizer(loaded.tokenizer, data_tokenizer(meta), f'the teacher {source}',
                           f"the data ({meta['dataset']})")
    teacher = loaded.model
    # in eval mode it attends with SDPA (FlexAttention only trains); the checks are the student's
    fit_model_to_data(teacher, meta, meta['vocab_size'], block_size, 'auto', role='teacher')
    teacher.eval().requires_grad_(False)
    return (teacher.to(device), dict(source=source, fingerprint=weights_fingerprint(teacher)),
            loaded.history or [unknown_data(source)])


def soft_targets(teacher_logits: torch.Tensor, temperature: float,
                 full_to_shrunk: torch.Tensor | None = None, shrunk_size: int = 0) -> torch.Tensor:
    """The teacher's distribution [rows, V] at temperature T, in float32; with full_to_shrunk (full
    id -> shrunken id) folded into the shrunken space of shrunk_size ids, each receiving the summed
    probability of its full ids."""
    p = F.softmax(teacher_logits.float() / temperature, dim=-1)
    if full_to_shrunk is None:
        return p
    return p.new_zeros(p.shape[0], shrunk_size).index_add_(1, full_to_shrunk, p)


def distillation_loss(student_logits: torch.Tensor, targets: torch.Tensor, labels: torch.Tensor,
                      temperature: float) -> torch.Tensor:
    """T^2 * KL(targets || softmax(student_logits / T)), the mean over the predicted rows (Hinton et
    al.'s T^2 keeps the gradient's scale independent of T)."""
    log_q = F.log_softmax(student_logits.float() / temperature, dim=-1)
    kl = F.kl_div(log_q, targets, reduction='none').sum(-1)  # p log p - p log q, 0 where p is 0
    return temperature ** 2 * mean_over_predictions(kl, labels)


def mean_over_predictions(values: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The mean of per-row values over the real predicted rows: those past the number of labels (the
    padding of a fixed-size head, Encoder.forward's max_predictions) do not count; no prediction
    gives 0."""
    n = (labels != IGNORE_INDEX).sum()
    real = torch.arange(values.shape[0], device=values.device) < n
    return torch.where(real, values, 0.0).sum() / n.clamp(min=1)


def mixed_loss(mlm_loss: torch.Tensor, student_logits: torch.Tensor, teacher_logits: torch.Tensor,
               labels: torch.Tensor, weight: float, temperature: float,
               full_to_shrunk: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The training loss (1 - w) * mlm_loss + w * T^2 * KL on the predicted rows, and its
    distillation part. The logits are both models' sparse-head rows for the same labels;
    full_to_shrunk folds the teacher's into a shrunken student's space."""
    targets = soft_targets(teacher_logits, temperature, full_to_shrunk, student_logits.shape[-1])
    kl = distillation_loss(student_logits, targets, labels, temperature)
    return (1 - weight) * mlm_loss + weight * kl, kl


HIDDEN_LOSSES = ('cosine', 'mse')


def check_distill_settings(config: dict) -> None:
    """train.py's distillation knobs; SystemExit with one line on a bad value."""
    if config['teacher'] is not None and not (0.0 <= config['distill_weight'] <= 1.0
                                              and config['distill_temperature'] > 0):
        fail('distill_weight must be in [0, 1] and distill_temperature > 0')
    if config['distill_hidden_weight'] < 0 or (config['distill_hidden_weight']
                                               and config['teacher'] is None):
        fail('distill_hidden_weight must be >= 0 and needs a --teacher')


def hidden_loss(student_hidden: torch.Tensor, teacher_hidden: torch.Tensor,
                projection: torch.Tensor, labels: torch.Tensor,
                kind: str = 'cosine') -> torch.Tensor:
    """The distance between the student's final hidden states at the predicted rows [rows, H_s] and
    the teacher's [rows, H_t] mapped into the student's basis (teacher_hidden @ projection,
    projection [H_t, H_s]), in float32, the mean over the predicted rows as for the soft targets:
    'cosine' 1 - cosine similarity (DistilBERT's; blind to the scale), 'mse' the squared difference
    averaged over the dimensions."""
    s, t = student_hidden.float(), teacher_hidden.float() @ projection
    if kind == 'cosine':
        distance = 1 - F.cosine_similarity(s, t, dim=-1)
    else:
        distance = (s - t).pow(2).mean(-1)
    return mean_over_predictions(distance, labels)


def hidden_projection(saved: torch.Tensor | None, teacher_width: int, student_width: int,
                      source: str) -> torch.Tensor:
    """The map [H_t, H_s] from the teacher's hidden space to the student's: the one saved with the
    student (GUIDE's PCA map, carried in every train.py checkpoint after it), else the identity when
    the widths are equal. SystemExit with one line when there is none or it does not fit these two
    models."""
    if saved is None:
        if teacher_width != student_width:
            fail(f"distill_hidden_weight needs a map from the teacher's {teacher_width} hidden "
                 f"dimensions to the student's {student_width}, and {source} has none; start from "
                 "init_guide.py's student (--init_from=student.pt saves its PCA map) or set "
                 'distill_hidden_weight=0')
        return torch.eye(student_width)
    if tuple(saved.shape) != (teacher_width, student_width):
        fail(f'the hidden-state map in {source} is {tuple(saved.shape)}, not (teacher '
             f'{teacher_width}, student {student_width}): it was made for another teacher; pass '
             'the teacher init_guide.py used, or set distill_hidden_weight=0')
    return saved.float()


class Teacher:
    """The frozen teacher of a train.py run (one copy on every rank), its record for the checkpoint,
    and the loss it makes of a student's micro-batch. config: the run's settings (teacher,
    distill_*)."""

    def __init__(self, config: dict, meta: dict, block_size: int, device: str,
                 student: Encoder, guide: dict | None, student_source: str, compiled: bool,
                 log: Callable):
        self.model, self.record, self.history = load_teacher(config['teacher'], meta, block_size,
                                                             device)
        self.weight, self.temperature = config['distill_weight'], config['distill_temperature']
        self.hidden_weight, self.hidden_kind = \
            config['distill_hidden_weight'], config['distill_hidden_loss']
        if self.model.get_num_params() < student.get_num_params():
            log(line=f'the teacher ({self.model.get_num_params() / 1e6:.2f}M parameters) is '
                     'smaller than the student')
        # the teacher's hidden space -> the student's, with distill_hidden_weight
        self.projection = None
        if self.hidden_weight:
            self.projection = hidden_projection((guide or {}).get('projection'),
                                                self.model.config.hidden_size,
                                                student.config.hidden_size,
                                                student_source).to(device)
        self.part_names = ('mlm_loss', 'distill_loss') + \
            (('hidden_loss',) if self.projection is not None else ())
        if compiled:
            self.model = torch.compile(self.model)

    def loss(self, mlm_loss: torch.Tensor, logits: torch.Tensor, hidden: list[torch.Tensor],
             x: torch.Tensor, y: torch.Tensor, documents: torch.Tensor | None, capacity: int | None,
             space: tuple) -> tuple[torch.Tensor, torch.Tensor]:
        """A micro-batch's loss, from the student's MLM loss, logits at the predicted rows and (with
        a hidden-state target) final hidden states; and its parts [MLM, soft targets, hidden states
        (0 when unused)]. space: the data's token space now, (full id -> its id, None when full;
        its TokenSpace), as Curriculum.space gives it."""
        full_to_shrunk, token_space = space
        if full_to_shrunk is not None:  # the teacher reads full ids: RARE becomes [UNK]
            x = token_space.to_full[x]
        with torch.no_grad():  # the labels only choose the rows; the teacher's own loss is not used
            t_logits, _, t_hidden = self.model(x, labels=y, document_ids=documents,
                                               max_predictions=capacity, return_hidden=True)
        loss, kl = mixed_loss(mlm_loss, logits, t_logits, y, self.weight, self.temperature,
                              full_to_shrunk)
        h_loss = torch.zeros_like(kl)
        if hidden:
            h_loss = hidden_loss(hidden[0], t_hidden, self.projection, y, self.hidden_kind)
        return loss + self.hidden_weight * h_loss, \
            torch.stack([p.float() for p in (mlm_loss, kl, h_loss)])


def _described(record: dict | None) -> str:
    return f"teacher {record['source']} (weights {record['fingerprint']})" if record else \
        'no teacher'


def check_same_teacher(saved: dict | None, record: dict | None, path: str) -> None:
    """Stop with one line unless a resumed run has the teacher (or no teacher) its checkpoint at
    path was trained with: another one would change the loss mid-run, and resume would no longer
    continue that run."""
    if saved != record:
        fail(f'{path} was trained with {_described(saved)} but this run has {_described(record)}; '
             f"resume with --teacher={saved['source'] if saved else None}, or start a new run from "
             f'it with --init_from={path}')
