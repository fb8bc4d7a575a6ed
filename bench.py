"""
Speed and memory of one training step (forward, backward, AdamW step) of our Encoder side by side
with transformers' ModernBertForMaskedLM loaded with the same weights.

    python bench.py                 # ModernBERT-small at block 512 and 1024
                                      (and ModernBERT-base on CUDA)
    python bench.py --quick         # ModernBERT-small at block 512, eager only: minutes on a CPU
    python bench.py --out=bench_results.json --shapes=small --block_sizes=512 --reps=7
    python bench.py --attention     # sliding-window attention alone: the dense window vs blocks
    python bench.py --optimizer     # one optimizer step alone: StableAdamW against fused AdamW
    python bench.py --teacher=base  # also ours with a ModernBERT-base teacher (train.py --teacher)
    python bench.py --hf=best --eager=False --attns=flex --optimizer_name=stable_adamw
                                    # a short GPU run
    python bench.py --compile_modes=reduce-overhead  # also ours compiled with CUDA graphs

Every variant of a shape trains on the same batches: windows of the prepared corpus, masked the way
train.py masks them. The variants take turns, one step each per round (the order rotates), so a busy
machine slows them alike; tokens/s comes from the median step, the speed-ups over Hugging Face are
medians of the per-round ratios. Hugging Face runs as users run it by default (dense logits) and at
its best (sparse_prediction=True, SDPA); ours always predicts sparsely. On the CPU the step is fp32;
on CUDA it runs under bf16 autocast. Peak memory is the tensors held between steps (weights,
buffers, optimizer state) plus the most the step allocates on top of them.
"""
import copy
import itertools
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import traceback
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from types import SimpleNamespace

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

from attention import attention, band_mask, flex_masks, mask_rule, rope_cos_sin
from configurator import configure
from data import load_dataset, load_remap, shard_paths
from distill import mixed_loss
from errors import fail, first_line
from hf import save_pretrained
from mlm import TokenSpace, masked_batch, prediction_capacity, seed_for
from model import IGNORE_INDEX, SPECIAL_IDS, Encoder, EncoderConfig
from optim import configure_optimizers, step_unless

SHAPES = {
    'tiny': dict(hidden_size=64, num_hidden_layers=3, num_attention_heads=2,
                 intermediate_size=128),  # smoke tests
    'demo': dict(hidden_size=128, num_hidden_layers=4, num_attention_heads=4,
                 intermediate_size=256, local_attention=64),  # config/demo_cpu.py
    'small': dict(hidden_size=384, num_hidden_layers=12, num_attention_heads=6,
                  intermediate_size=768),
    'base': dict(hidden_size=768, num_hidden_layers=22, num_attention_heads=12,
                 intermediate_size=1152),
}
COMPILE_MODES = ('reduce-overhead', 'max-autotune-no-cudagraphs', 'max-autotune')
# reference section 6: a 2-core CPU of this kind in fp32, an H100/H200 in dense bf16
PEAK_FLOPS = {'cpu': 135e9, 'cuda': 989e12}
# kinds of op in the profile breakdown, first match wins: substrings of the op's (or the kernel's)
# lowercased name. Inductor names its pointwise and reduction kernels (triton_poi_, triton_red_,
# triton_per_, triton_for_) after every op they fuse, so "attention" in such a name is the copy or
# RoPE around attention, not attention itself; they are elementwise unless they compute the loss.
# Everything launched inside an optimizer's step is "optimizer".
FUSED_ELEMENTWISE = ('triton_poi_', 'triton_red_', 'triton_per_', 'triton_for_')
OP_KINDS = {'loss': ('cross_entropy', 'nll_loss', 'log_softmax'),
            'attention': ('attention', 'sdpa', 'flash', 'fmha'),
            'matmul': ('aten::mm', 'aten::addmm', 'aten::bmm', 'aten::linear', 'gemm',
                       'triton_tem_fused_mm', 'triton_tem_fused_addmm', 'triton_tem_fused_bmm'),
            'elementwise': (*FUSED_ELEMENTWISE, 'aten::'),
            'optimizer': ()}
# train.py's masking recipe
MASK_RATE, MASK_TOKEN_PROB, RANDOM_TOKEN_PROB = 0.30, 0.8, 0.1


DEFAULTS = dict(
    quick=False,  # ModernBERT-small at block 512, batch 4 on the CPU, eager only, 2 timed rounds
    out='bench_results.json',  # JSON file for the rows ('' writes none)
    device='cuda' if torch.cuda.is_available() else 'cpu',
    shapes=[],  # of SHAPES (default: small, and base on CUDA)
    # time only the sliding-window attention of the shapes' local layers (RoPE + SDPA, forward +
    # backward), the dense window against blocks of one window, to tune attention.BAND_FROM_WINDOWS
    attention=False,
    optimizer=False,  # time only the optimizer step on the shapes' parameters: StableAdamW against
    #   fused AdamW
    block_sizes=[],  # default 512,1024; --quick 512; --attention 192,256,384,512,1024
    batch_size=None,  # default 8 on the CPU (--quick 4), 32 on CUDA
    compile=None,  # also time torch.compile'd variants of ours (default: on, off with --quick)
    # also time ours (the last of attns, full vocabulary) compiled in each of these torch.compile
    # modes: 'reduce-overhead' (CUDA graphs), 'max-autotune-no-cudagraphs', 'max-autotune'. One that
    # fails is reported
    compile_modes=[],
    eager=True,  # time the eager variants too (False, with compile: only the compiled ones, a
    #   shorter GPU run)
    attns=[],  # our attention implementations to time (default: sdpa, and flex on CUDA)
    # ours steps with this optimizer (optim.configure_optimizers; compiled with the model as
    # train.py does): 'adamw' (fused) | 'stable_adamw' (ModernBERT's recipe). Hugging Face steps
    # with the Trainer's default, fused AdamW
    optimizer_name='adamw',
    hf='all',  # Hugging Face variants: 'all' | 'best' (only its fastest: sparse flex_attention
    #   compiled on CUDA,
    # sparse SDPA on the CPU) | 'none'
    warmup=None,  # untimed rounds, the last of which measures memory (default 2; 3 when compiling)
    reps=None,  # timed rounds (default 5; --quick 2)
    data_root='data',
    dataset='shakespeare',
    shrunk_vocab=4096,  # also time ours on data/<dataset>/vocab_K.pt's shrunken vocabulary
    #   (0: skip)
    teacher='',  # also time ours distilling from a teacher of this shape (random weights), as
    #   train.py --teacher
    peak_flops=None,  # for MFU (default: 135e9 CPU, 989e12 CUDA)
    seed=1337,
)


def parse_args(argv: list[str]) -> SimpleNamespace:
    """--key=value options (configurator.configure) with their defaults resolved, checked."""
    args = SimpleNamespace(**configure(DEFAULTS, argv))
    if args.device not in ('cpu', 'cuda'):
        fail(f'--device={args.device} must be cpu or cuda')
    if args.device == 'cuda' and not torch.cuda.is_available():
        fail('--device=cuda but CUDA is not available; pass --device=cpu')
    args.shapes = args.shapes or (['small', 'base'] if args.device == 'cuda' and not args.quick
                                  else ['small'])
    if not set(args.shapes) <= set(SHAPES):
        fail(f"--shapes={','.join(map(str, args.shapes))}: each must be one of {', '.join(SHAPES)}")
    cuda = args.device == 'cuda'
    args.attns = args.attns or (['sdpa', 'flex'] if cuda else ['sdpa'])
    if not set(args.attns) <= ({'sdpa', 'flex'} if cuda else {'sdpa'}):
        fail(f"--attns={','.join(map(str, args.attns))}: each must be sdpa"
             f"{' or flex' if cuda else ''} (FlexAttention trains only on CUDA)")
    if args.optimizer_name not in ('adamw', 'stable_adamw'):
        fail(f'--optimizer_name={args.optimizer_name} must be adamw or stable_adamw')
    if args.hf not in ('all', 'best', 'none'):
        fail(f'--hf={args.hf} must be all, best or none')
    if args.teacher and args.teacher not in SHAPES:
        fail(f"--teacher={args.teacher} must be one of {', '.join(SHAPES)} (or '' for none)")
    args.block_sizes = args.block_sizes or ([192, 256, 384, 512, 1024] if args.attention
                                            else [512] if args.quick else [512, 1024])
    if not all(isinstance(b, int) and b > 0 for b in args.block_sizes):
        fail(f"--block_sizes={','.join(map(str, args.block_sizes))} must be a comma list of "
             f'positive integers, e.g. 512,1024')
    longest = EncoderConfig().max_position_embeddings
    if max(args.block_sizes) > longest:
        fail(f"--block_sizes={max(args.block_sizes)} exceeds ModernBERT's "
             f'max_position_embeddings={longest}')
    args.batch_size = args.batch_size or (32 if args.device == 'cuda' else 4 if args.quick else 8)
    args.compile = (not args.quick) if args.compile is None else args.compile
    args.reps = (2 if args.quick else 5) if args.reps is None else args.reps
    args.warmup = (3 if args.compile else 2) if args.warmup is None else args.warmup
    if not (args.eager or args.compile):
        fail('--eager=False leaves nothing to time without --compile=True')
    if not set(args.compile_modes) <= set(COMPILE_MODES):
        fail(f"--compile_modes={','.join(map(str, args.compile_modes))}: each must be one of "
             f"{', '.join(COMPILE_MODES)}")
    if args.batch_size < 1 or args.reps < 1 or args.warmup < 1:
        fail('--batch_size, --reps and --warmup must be at least 1')
    if args.shrunk_vocab < 0:
        fail(f'--shrunk_vocab={args.shrunk_vocab} must be a vocabulary size from prepare.py '
             '--shrink_vocab, or 0 to skip')
    args.peak_flops = args.peak_flops or PEAK_FLOPS[args.device]
    return args


# --------------------------------------------------------------------------------------------------
# data: the path train.py feeds its steps through

@dataclass
class Corpus:
    data_dir: str
    meta: dict
    full: TokenSpace
    shrunk: TokenSpace | None  # the shrunken token space, with the full -> shrunk map
    full_to_shrunk: torch.Tensor | None
    remap: dict | None


def load_corpus(args: SimpleNamespace) -> Corpus:
    data_dir = os.path.join(args.data_root, args.dataset)
    hint = (f'run: python prepare.py --dataset={args.dataset} '
            f'--shrink_vocab={args.shrunk_vocab or 4096}')
    # the token files whole and longer than a block
    meta = load_dataset(data_dir, max(args.block_sizes), hint)
    remap = full_to_shrunk = shrunk = None
    if args.shrunk_vocab:
        path = os.path.join(data_dir, f'vocab_{args.shrunk_vocab}.pt')
        if not os.path.isfile(path):
            fail(f'{path} not found; {hint}, or pass --shrunk_vocab=0')
        remap = load_remap(path, hint)
        full_to_shrunk = remap['full_to_shrunk'].to(args.device)
        shrunk = TokenSpace(remap, args.device)
    return Corpus(data_dir, meta, TokenSpace(meta, args.device), shrunk, full_to_shrunk, remap)


def sync(device: str) -> None:
    if device == 'cuda':
        torch.cuda.synchronize()


def timed(fn, device: str) -> tuple[float, object]:
    """Seconds fn takes (with the device's queued work finished before and after) and what it
    returns."""
    sync(device)
    t0 = time.perf_counter()
    out = fn()
    sync(device)
    return time.perf_counter() - t0, out


def timed_batches(corpus: Corpus, args: SimpleNamespace, block_size: int,
                  seed: int) -> tuple[dict, dict]:
    """One round's batch of each kind, {"full": (x, y, None), "documents": (x, y, document ids),
    "shrunk": ...}, and the seconds each took: windows (whole documents, packed), host-to-device
    copy, masking and (shrunk) remapping, as train.py makes them (mlm.masked_batch)."""
    batches, seconds = {}, {}
    kinds = [('full', corpus.full, None, False), ('documents', corpus.full, None, True)]
    if corpus.shrunk is not None:
        kinds.append(('shrunk', corpus.shrunk, corpus.full_to_shrunk, False))
    paths = shard_paths(corpus.data_dir, 'train', corpus.meta)
    for name, space, mapping, packed in kinds:
        seconds[name], batches[name] = timed(
            lambda: masked_batch(paths, corpus.meta, (args.batch_size, block_size), space, mapping,
                                 MASK_RATE, (MASK_TOKEN_PROB, RANDOM_TOKEN_PROB), seed, args.device,
                                 packed), args.device)
    return batches, seconds


# --------------------------------------------------------------------------------------------------
# the variants

@dataclass
class Variant:
    impl: str  # "ours" | "hf"
    name: str
    sparse: bool
    compiled: bool
    # its batches: "full", "documents" (the full token space, documents packed) or "shrunk"
    space: str
    raw: torch.nn.Module  # the module (its parameters and config)
    net: torch.nn.Module  # what runs the step: raw, or torch.compile(raw)
    optimizer: torch.optim.Optimizer
    attn: str = 'sdpa'  # the attention implementation
    max_predictions: int | None = None  # ours compiled: the static-shape head's rows
    first_seconds: float = 0.0  # the first step: compilation included
    graphs: int = 0  # graphs dynamo compiled, and graph breaks, over the warm-up steps
    graph_breaks: int = 0
    seconds: list = field(default_factory=list)
    predicted: list = field(default_factory=list)
    peak_bytes: int = 0
    op_seconds: dict = field(default_factory=dict)  # the profiled step's self time by kind of op
    top_other: list = field(default_factory=list)  # its largest other ops
    mode: str | None = None  # its torch.compile mode (None: eager)
    # why it stopped taking steps (out of memory, or a compile mode that failed), if it did
    error: str = ''
    # ours distilling: the frozen teacher (compiled with the student)
    teacher: torch.nn.Module | None = None

    def loss(self, x: torch.Tensor, y: torch.Tensor,
             documents: torch.Tensor | None) -> torch.Tensor:
        if self.impl == 'hf':
            return self.net(input_ids=x, labels=y).loss
        logits, loss = self.net(x, labels=y, document_ids=documents,
                                max_predictions=self.max_predictions)
        if self.teacher is None:
            return loss
        with torch.no_grad():
            teacher_logits = self.teacher(x, labels=y, document_ids=documents,
                                          max_predictions=self.max_predictions)[0]
        return mixed_loss(loss, logits, teacher_logits, y, 0.5, 1.0)[0]


def hf_variants(ours: Encoder, args: SimpleNamespace, optimizer) -> list[Variant]:
    """transformers' ModernBertForMaskedLM with our weights: by default (dense logits, SDPA) and
    with sparse prediction, with each attention implementation a user would pick (on CUDA: SDPA and
    FlexAttention, eager and compiled). An implementation this transformers does not offer is left
    out with a note."""
    from transformers import ModernBertForMaskedLM
    from transformers.utils import logging
    logging.disable_progress_bar()
    cuda = args.device == 'cuda'
    options = [(False, 'sdpa', False)] + [(True, attn, compiled) for attn in
                                          (('sdpa', 'flex_attention') if cuda else ('sdpa',))
                                          for compiled in ((False, True) if cuda and args.compile
                                                           else (False,))]
    if args.hf == 'best':
        options = options[-1:]
    elif args.hf == 'none':
        options = []
    if not args.eager:
        options = [o for o in options if o[2] or not args.compile]
    variants = []
    with tempfile.TemporaryDirectory() as folder:
        save_pretrained(ours, folder)
        for sparse, attn, compiled in options:
            try:
                m = ModernBertForMaskedLM.from_pretrained(folder, attn_implementation=attn,
                                                          sparse_prediction=sparse).to(args.device)
            except (ImportError, ValueError) as e:
                print(f'  hf {attn}: not available here ({str(e).splitlines()[0]})',
                      file=sys.stderr)
                continue
            name = (f"{'sparse' if sparse else 'dense logits'}, {attn}"
                    f"{', compile' if compiled else ''}")
            variants.append(Variant('hf', name, sparse, compiled, 'full', m,
                                    torch.compile(m) if compiled else m, optimizer(m.parameters()),
                                    attn=attn))
    return variants


def build_variants(shape: str, corpus: Corpus, args: SimpleNamespace,
                   block_size: int) -> tuple[list, dict]:
    """The variants of one shape, and our eager model of each token space (for the FLOP count)."""
    torch.manual_seed(args.seed)
    meta = corpus.meta
    config = EncoderConfig(**SHAPES[shape], vocab_size=meta['vocab_size'],
                           **{k: meta[k] for k in SPECIAL_IDS})
    ours = {'full': Encoder(config).to(args.device)}
    if corpus.remap is not None:
        small = Encoder(replace(config, vocab_size=corpus.remap['shrunk_vocab_size'],
                                **{k: corpus.remap[k] for k in SPECIAL_IDS}))
        body = {k: v for k, v in ours['full'].state_dict().items()
                if v.shape == small.state_dict()[k].shape}
        small.load_state_dict(body, strict=False)  # the body starts from the same weights
        ours['shrunk'] = small.to(args.device)
    # each as its users train it: HF with the Trainer's default optimizer (adamw_torch_fused), ours
    # as train.py does
    lr, betas, eps, decay = 1e-4, (0.9, 0.98), 1e-6, 1e-5
    variants = hf_variants(ours['full'], args,
                           lambda params: torch.optim.AdamW(params, lr, betas, eps, decay,
                                                            fused=True))
    # ours: SDPA (the Band) on any device, FlexAttention on CUDA; documents packed (attention within
    # each, as train.py's pack_documents) and the shrunken vocabulary with the fastest
    # (attention, torch.compile mode or None for eager, token space)
    attns, fastest = args.attns, 'default' if args.compile else None
    modes = ((None,) if args.eager else ()) + (('default',) if args.compile else ())
    options = [(attn, mode, 'full') for attn in attns for mode in modes]
    options += [(attns[-1], mode, 'full') for mode in args.compile_modes]
    ours['documents'] = ours['full']
    options += [(attns[-1], fastest, 'documents')]
    if 'shrunk' in ours:
        options += [(attns[-1], fastest, 'shrunk')]
    if args.teacher:
        options += [(attns[-1], fastest, 'teacher')]
    capacity = prediction_capacity(args.batch_size * block_size, MASK_RATE)
    for attn, mode, space in options:
        # a teacher reads the student's batches
        data_space = 'full' if space == 'teacher' else space
        raw = copy.deepcopy(ours[data_space])
        raw.config.attn_implementation = attn
        compiled = mode is not None
        name = attn + ('' if mode is None else ', compile' if mode == 'default'
                       else f', compile {mode}')
        name += {'full': '', 'documents': ', documents packed',
                 'shrunk': f', vocab {raw.config.vocab_size}',
                 'teacher': f', {args.teacher} teacher'}[space]
        optimizer = configure_optimizers(raw, decay, lr, betas, args.device, eps=eps,
                                         optimizer=args.optimizer_name, compiled=compiled)
        variants.append(Variant('ours', name, True, compiled, data_space, raw,
                                torch.compile(raw, mode=mode) if compiled else raw, optimizer,
                                attn=attn, max_predictions=capacity if compiled else None,
                                mode=mode))
        if space == 'teacher':
            teacher = (Encoder(replace(config, **SHAPES[args.teacher])).to(args.device).eval()
                       .requires_grad_(False))
            variants[-1].teacher = torch.compile(teacher) if compiled else teacher
    return variants, ours


# --------------------------------------------------------------------------------------------------
# one training step, its time and its memory

def train_step(v: Variant, batch: tuple, autocast) -> None:
    with autocast:
        loss = v.loss(*batch)
    loss.backward()
    v.optimizer.step()
    v.optimizer.zero_grad(set_to_none=True)


def drop(v: Variant, why: str) -> None:
    """Take a variant out of the remaining rounds and give its memory back, so that the others go
    on."""
    v.error = why
    v.optimizer.state.clear()
    v.raw.zero_grad(set_to_none=True)
    v.raw.to('cpu')
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    print(f'  {v.impl} {v.name}: {why}; the other variants go on', file=sys.stderr, flush=True)


def held_bytes(v: Variant) -> int:
    """Bytes of the tensors a variant holds between steps: parameters (tied ones once), buffers,
    optimizer state."""
    state = [t for s in v.optimizer.state.values() for t in s.values() if torch.is_tensor(t)]
    teacher = [*v.teacher.parameters(), *v.teacher.buffers()] if v.teacher is not None else []
    tensors = {t.data_ptr(): t.numel() * t.element_size()
               for t in (*v.raw.parameters(), *v.raw.buffers(), *state, *teacher)}
    return sum(tensors.values())


def profiled_step(step, device: str) -> tuple[int, torch.profiler.profile]:
    """Run one step under the profiler: the most it allocates beyond what was allocated before it,
    and the profile."""
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == 'cuda' else [])
    if device == 'cuda':
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    with profile(activities=activities, profile_memory=True) as prof:
        step()
        sync(device)
    if device == 'cuda':
        return torch.cuda.max_memory_allocated() - before, prof
    # the CPU allocator keeps no statistics: the profiler's memory events (+bytes on allocation,
    # -bytes on free) give the running total of what the step allocates
    events = sorted((e for e in prof.profiler.kineto_results.events() if e.name() == '[memory]'),
                    key=lambda e: e.start_ns())
    return max(itertools.accumulate(e.nbytes() for e in events), default=0), prof


def op_kind(name: str, in_optimizer: bool = False) -> str:
    """The kind of a profiled op or kernel (OP_KINDS), "other" when none fits."""
    if in_optimizer:
        return 'optimizer'
    name = name.lower()
    fused = name.startswith(FUSED_ELEMENTWISE)
    return next((kind for kind, parts in OP_KINDS.items()
                 if any(p in name for p in parts) and not (fused and kind == 'attention')), 'other')


def op_seconds(prof: profile, device: str) -> tuple[dict, list]:
    """Self time of a profiled step by kind of op (on CUDA the device time of the kernels each op
    launched), and the names of the three largest ops of kind "other"."""
    seconds = dict.fromkeys((*OP_KINDS, 'other'), 0.0)
    other = {}
    for e in prof.events():
        # CUDA kernels: their time is already counted on the op that ran them
        if e.device_type != DeviceType.CPU:
            continue
        t = (e.self_device_time_total if device == 'cuda' else e.self_cpu_time_total) / 1e6
        if not t:
            continue
        # the op itself or the nearest of its callers that is an optimizer's step (or zero_grad)
        within = e
        while within is not None and not within.name.startswith('Optimizer.'):
            within = within.cpu_parent
        kind = op_kind(e.name, within is not None)
        seconds[kind] += t
        if kind == 'other':
            other[e.name] = other.get(e.name, 0.0) + t
    return seconds, sorted(other, key=other.get, reverse=True)[:3]


def take_step(v: Variant, batch: tuple, r: int, args: SimpleNamespace, autocast) -> None:
    """Variant v's step of round r: untimed while warming up (the first compiles; the last is
    profiled and measures memory), timed after."""
    step = lambda: train_step(v, batch, autocast)  # noqa: E731
    if r == args.warmup - 1:
        held = held_bytes(v)
        peak, prof = profiled_step(step, args.device)
        v.peak_bytes = held + peak
        v.op_seconds, v.top_other = op_seconds(prof, args.device)
    elif r >= args.warmup:
        v.seconds.append(timed(step, args.device)[0])
        v.predicted.append(int((batch[1] != IGNORE_INDEX).sum()))
    else:
        before = graph_counts()
        dt = timed(step, args.device)[0]
        v.first_seconds = v.first_seconds or dt
        v.graphs, v.graph_breaks = (v.graphs + a - b for a, b in zip(graph_counts(), before))


def run_rounds(variants: list[Variant], corpus: Corpus, args: SimpleNamespace,
               block_size: int) -> dict:
    """Warm-up rounds, then timed rounds; in each, every variant takes one step on the round's
    batch. Returns the data path's seconds per batch for each token space."""
    autocast = (torch.autocast('cuda', dtype=torch.bfloat16) if args.device == 'cuda'
                else nullcontext())
    data_seconds = {}
    for r in range(args.warmup + args.reps):
        batches, seconds = timed_batches(corpus, args, block_size,
                                         seed_for(args.seed, block_size, r))
        live = [v for v in variants if not v.error]
        k = r % len(live)
        for v in live[k:] + live[:k]:  # rotate, so no variant always follows the same one
            try:
                take_step(v, batches[v.space], r, args, autocast)
            except torch.OutOfMemoryError:
                # at long blocks some implementations do not fit: say so, go on
                drop(v, 'out of memory')
            except Exception as e:
                # a compile mode on trial that fails costs the run none of the other rows
                if v.mode in (None, 'default'):
                    raise
                traceback.print_exc()
                drop(v, f'failed: {first_line(e)}'[:200])
        if r >= args.warmup:
            for space, s in seconds.items():
                data_seconds.setdefault(space, []).append(s)
        print(f'  round {r + 1}/{args.warmup + args.reps} done', file=sys.stderr, flush=True)
    return {space: statistics.median(s) for space, s in data_seconds.items()}


def graph_counts() -> tuple[int, int]:
    """Graphs dynamo has compiled and graph breaks it has met, so far in this process."""
    from torch._dynamo.utils import counters
    return counters['stats']['unique_graphs'], sum(counters['graph_break'].values())


def matmul_flops(device: str) -> float:
    """FLOP/s of a large square matmul in the step's dtype, the fastest of 10 after warm-up: the
    most this machine's matmul kernels deliver now, to set the model's FLOP/s against."""
    dtype = torch.bfloat16 if device == 'cuda' else torch.float32
    a, b = (torch.randn(2048, 2048, device=device, dtype=dtype) for _ in range(2))
    seconds = [timed(lambda: a @ b, device)[0] for _ in range(12)]
    return 2 * 2048**3 / min(seconds[2:])


def attention_rows(shape: str, block_size: int, args: SimpleNamespace) -> list[dict]:
    """The shape's local-layer attention alone (RoPE + SDPA, forward + backward, no padding) at
    block_size: the dense window (one block) and blocks of one window, taking turns; the speed-up is
    the median per-round ratio."""
    c = EncoderConfig(**SHAPES[shape])
    half = c.local_attention // 2
    dtype = torch.bfloat16 if args.device == 'cuda' else torch.float32
    rope = rope_cos_sin(block_size, c.head_dim, c.local_rope_theta, args.device)
    rule = mask_rule(None, None, half)
    bands = {'dense': band_mask(rule, block_size, half, block_size, args.device),
             'banded': band_mask(rule, block_size, half, 2 * half, args.device)}
    if args.device == 'cuda':  # FlexAttention's backward runs only there
        bands['flex'] = flex_masks(None, block_size, half, {'local'}, args.device)['local']
    q, k, v = (torch.randn(args.batch_size, c.num_attention_heads, block_size, c.head_dim,
                           device=args.device, dtype=dtype, requires_grad=True) for _ in range(3))

    def step(band):
        attention(q, k, v, rope, band, 0.0).sum().backward()
        q.grad = k.grad = v.grad = None

    seconds = {name: [] for name in bands}
    for r in range(args.warmup + args.reps):
        for name, band in bands.items():
            dt = timed(lambda: step(band), args.device)[0]
            if r >= args.warmup:
                seconds[name].append(dt)
    return [dict(impl='ours', variant=f'attention, {name}', model=shape, device=args.device,
                 dtype=str(dtype)[6:], block_size=block_size, batch_size=args.batch_size,
                 blocks=len(getattr(band, 'spans', [0])),
                 step_ms=1e3 * statistics.median(seconds[name]),
                 vs_dense=statistics.median(d / s for d, s in zip(seconds['dense'], seconds[name])))
            for name, band in bands.items()]


def optimizer_rows(shape: str, args: SimpleNamespace) -> list[dict]:
    """One optimizer step alone on the shape's parameters (vocabulary 50,368) with random gradients:
    each optimizer train.py offers, as optim.configure_optimizers builds it, taking turns; the ratio
    is the median per-round one."""
    torch.manual_seed(args.seed)
    raw = Encoder(EncoderConfig(**SHAPES[shape], vocab_size=50368)).to(args.device)
    for p in raw.parameters():
        p.grad = torch.randn_like(p) * 1e-3
    # compiled: as train.py builds it with --compile
    names = ('adamw', 'stable_adamw', 'stable_adamw, compiled')
    optimizers = {n: configure_optimizers(raw, 1e-5, 1e-4, (0.9, 0.98), args.device, eps=1e-6,
                                          optimizer=n.split(',')[0],
                                          compiled=n.endswith('compiled'))
                  for n in names}
    seconds = {n: [] for n in names}
    # as train.py steps: skip decided on the device
    finite = torch.zeros((), dtype=torch.bool, device=args.device)
    for r in range(args.warmup + args.reps):
        for n in names:
            dt = timed(lambda: step_unless(optimizers[n], finite), args.device)[0]
            if r >= args.warmup:
                seconds[n].append(dt)
    tensors = sum(1 for _ in raw.parameters())
    return [dict(impl='ours', variant=f'optimizer, {n}', model=shape, device=args.device,
                 tensors=tensors, params=raw.get_num_params(),
                 step_ms=1e3 * statistics.median(seconds[n]),
                 vs_adamw=statistics.median(s / a for s, a in zip(seconds[n], seconds['adamw'])))
            for n in names]


def optimizer_markdown(rows: list[dict]) -> str:
    lines = ['| model | optimizer | tensors | ms per step | vs fused AdamW |',
             '|---|---|---|---|---|']
    lines += [f"| {r['model']} | {r['variant'].removeprefix('optimizer, ')} | {r['tensors']} "
              f"| {r['step_ms']:.1f} | {r['vs_adamw']:.2f}x |" for r in rows]
    return '\n'.join(lines)


def attention_markdown(rows: list[dict]) -> str:
    lines = ['| model | block | variant | blocks | ms (forward + backward) | vs dense |',
             '|---|---|---|---|---|---|']
    lines += [f"| {r['model']} | {r['block_size']} | {r['variant']} | {r['blocks']} "
              f"| {r['step_ms']:.1f} | {r['vs_dense']:.2f}x |" for r in rows]
    return '\n'.join(lines)


def rows_for(shape: str, block_size: int, variants: list[Variant], ours: dict, data_seconds: dict,
             args: SimpleNamespace) -> list[dict]:
    tokens = args.batch_size * block_size
    device_name = (torch.cuda.get_device_name() if args.device == 'cuda'
                   else platform.processor() or 'cpu')
    common = dict(device=args.device, device_name=device_name, shape=shape, model=shape,
                  block=block_size, block_size=block_size, batch_size=args.batch_size,
                  dtype='bfloat16' if args.device == 'cuda' else 'float32')
    rows = [dict(impl=v.impl, variant=v.name, attn=v.attn, sparse=v.sparse, compile=v.compiled,
                 vocab_size=v.raw.config.vocab_size, error=v.error, **common)
            for v in variants if v.error]
    variants = [v for v in variants if not v.error]
    # HF best: the fastest of its sparse-prediction variants; HF default: dense logits, eager SDPA
    hf = {sparse: min((v for v in variants if v.impl == 'hf' and v.sparse == sparse),
                      key=lambda v: statistics.median(v.seconds), default=None)
          for sparse in (False, True)}
    for v in variants:
        dt = statistics.median(v.seconds)
        # a dense head predicts every row
        predicted = statistics.mean(v.predicted) if v.sparse else tokens
        mfu = ours[v.space].estimate_mfu(tokens, predicted, dt, args.peak_flops, seq_len=block_size)

        def speedup(base: Variant | None) -> float | None:
            # per round, so that a machine whose speed drifts between rounds compares steps taken
            # side by side
            return base and statistics.median(b / s for b, s in zip(base.seconds, v.seconds))

        rows.append(dict(
            impl=v.impl, variant=v.name, attn=v.attn, sparse=v.sparse, compile=v.compiled,
            vocab_size=v.raw.config.vocab_size, optimizer=type(v.optimizer).__name__, **common,
            compile_s=v.first_seconds - dt if v.compiled else 0.0, graphs=v.graphs,
            graph_breaks=v.graph_breaks, hf_best=hf[True] and hf[True].name,
            tokens_per_s=tokens / dt, peak_mem_mb=v.peak_bytes / 2**20, mfu=mfu,
            of_matmul=mfu * args.peak_flops / args.matmul_flops, vs_hf_best=speedup(hf[True]),
            vs_hf_default=speedup(hf[False]), step_ms=1e3 * dt, data_ms=1e3 * data_seconds[v.space],
            op_s=v.op_seconds, top_other_ops=v.top_other))
    return rows


def markdown(rows: list[dict]) -> str:
    lines = ['| model | block | impl | variant | vocab | tokens/s | vs HF best | vs HF default '
             '| peak MB | MFU | of matmul | data path | compile s | graphs / breaks |',
             '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|']
    ratio = lambda x: '-' if x is None else f'{x:.2f}x'  # noqa: E731
    for r in rows:
        if r.get('error'):
            lines.append(f"| {r['model']} | {r['block_size']} | {r['impl']} | {r['variant']} "
                         f"| {r['vocab_size']:,} | {r['error']} |" + ' |' * 8)
            continue
        lines.append(f"| {r['model']} | {r['block_size']} | {r['impl']} | {r['variant']} "
                     f"| {r['vocab_size']:,} | {r['tokens_per_s']:,.0f} | {ratio(r['vs_hf_best'])} "
                     f"| {ratio(r['vs_hf_default'])} | {r['peak_mem_mb']:,.0f} "
                     f"| {100 * r['mfu']:.1f}% | {100 * r['of_matmul']:.0f}% "
                     f"| {100 * r['data_ms'] / r['step_ms']:.2f}% | {r['compile_s']:.0f} "
                     f"| {r['graphs']} / {r['graph_breaks']} |")
    return '\n'.join(lines)


def profile_markdown(rows: list[dict]) -> str:
    kinds = (*OP_KINDS, 'other')
    lines = [f"| model | block | impl | variant | profiled s | {' | '.join(kinds)} "
             '| largest other ops |',
             '|---|---|---|---|---|' + '---|' * len(kinds) + '---|']
    for r in (r for r in rows if not r.get('error')):
        total = sum(r['op_s'].values())
        shares = ' | '.join(f"{100 * r['op_s'][k] / total:.0f}%" for k in kinds)
        lines.append(f"| {r['model']} | {r['block_size']} | {r['impl']} | {r['variant']} "
                     f"| {total:.2f} | {shares} | {', '.join(r['top_other_ops'])} |")
    return '\n'.join(lines)


def step_rows(args: SimpleNamespace) -> list[dict]:
    """The training-step table: every variant of every shape and block size."""
    corpus = load_corpus(args)
    if args.device == 'cuda':
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    args.matmul_flops = matmul_flops(args.device)
    rows = []
    for shape in args.shapes:
        for block_size in args.block_sizes:
            print(f'{shape}, block {block_size}, batch {args.batch_size}, {args.device}',
                  file=sys.stderr, flush=True)
            variants, ours = build_variants(shape, corpus, args, block_size)
            data_seconds = run_rounds(variants, corpus, args, block_size)
            rows += rows_for(shape, block_size, variants, ours, data_seconds, args)
            # as it goes: a run stopped at a time limit keeps the shapes it finished
            write_rows(rows, args.out)
            del variants, ours
            if args.device == 'cuda':
                torch.cuda.empty_cache()
    dtype = 'bf16 autocast' if args.device == 'cuda' else 'fp32'
    print(f"{rows[0]['device_name']}, {dtype}, batch {args.batch_size}, torch {torch.__version__}; "
          f'HF best = the fastest sparse HF variant; medians of {args.reps} '
          f'rounds after {args.warmup} warm-up; MFU against {args.peak_flops / 1e9:,.0f} GFLOP/s; '
          f'of matmul = model FLOP/s as a share of the fastest 2048^3 matmul, measured now: '
          f'{args.matmul_flops / 1e9:,.0f} GFLOP/s; data path = windows + masking (+ remapping) '
          'as % of the step')
    print(markdown(rows))
    print('\nWhere the time goes: self time by kind of op in the warm-up step that measured memory '
          '(under the profiler, so small ops weigh more than in the timed steps)')
    print(profile_markdown(rows))
    return rows


def write_rows(rows: list[dict], out: str) -> None:
    """The rows as JSON to out (none when out is ''), replaced whole so that a reader never sees
    half a file."""
    if out:
        with open(out + '.tmp', 'w') as f:
            json.dump(rows, f, indent=1)
        os.replace(out + '.tmp', out)


def main(argv: list[str] | None = None) -> list[dict]:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.optimizer:
        rows = [r for shape in args.shapes for r in optimizer_rows(shape, args)]
        print(f'{args.device}, torch {torch.__version__}; medians of {args.reps} rounds after '
              f'{args.warmup} warm-up')
        print(optimizer_markdown(rows))
    elif args.attention:
        rows = [r for shape in args.shapes for block_size in args.block_sizes
                for r in attention_rows(shape, block_size, args)]
        print(f'{args.device}, batch {args.batch_size}, torch {torch.__version__}; medians of '
              f'{args.reps} rounds after {args.warmup} warm-up')
        print(attention_markdown(rows))
    else:
        rows = step_rows(args)
    write_rows(rows, args.out)
    return rows


if __name__ == '__main__':
    main()
