"""
What a train.py run reports as it goes, from rank 0 only: records appended to out_dir/metrics.jsonl
(one JSON object per line, what plot.py reads), the same records to wandb when it is on, and the
lines printed on stdout.
"""
import json
import os
import platform
import time
from contextlib import contextmanager

import torch

from distributed import wait_for_device
from errors import fail, first_line


def cpu_name() -> str:
    """The CPU's model name where Linux says it, else what the platform module knows."""
    try:
        with open('/proc/cpuinfo') as f:
            return next(line.split(':', 1)[1].strip() for line in f
                        if line.startswith('model name'))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def machine() -> dict:
    """What a run's numbers depend on besides its settings: the torch build, the vector kernels it
    picked for this CPU (AVX2, AVX512, ...), its threads, and the CPU and the GPU it uses by name
    (CUDA is initialised only in a run on it, so a CPU run never opens a GPU to ask). One seed and
    config trained on two machines round differently and can end measurably apart."""
    info = dict(torch=torch.__version__, cpu=cpu_name(),
                cpu_capability=torch.backends.cpu.get_cpu_capability(),
                threads=torch.get_num_threads())
    if torch.cuda.is_initialized():
        info['gpu'] = torch.cuda.get_device_name()
    return info


class RunLog:
    """metrics.jsonl, wandb and stdout of one run; every call on a rank other than 0 does
    nothing."""

    def __init__(self, out_dir: str, master: bool):
        self.path = os.path.join(out_dir, 'metrics.jsonl')
        self.master = master
        self.wandb = None

    def size(self) -> int:
        """Bytes logged so far: a checkpoint keeps it, so that a resumed run knows where its log
        left off."""
        return os.path.getsize(self.path) if os.path.exists(self.path) else 0

    def run_settings(self) -> dict | None:
        """The settings of the run that started the log (its first record), None when it has none
        (an empty log, or one written before runs recorded them)."""
        if not self.size():
            return None
        with open(self.path) as f:
            try:
                return json.loads(f.readline()).get('run_settings')
            except (json.JSONDecodeError, AttributeError, UnicodeDecodeError):
                return None

    def open(self, keep_bytes: int | None, wandb_settings: dict | None = None,
             run_settings: dict | None = None) -> str | None:
        """Start logging: keep the first keep_bytes of the log (0 for a fresh run; a resumed one
        drops the records of the steps after its checkpoint, from an attempt that was killed, and
        logs them again, so that the log holds each iteration once; None keeps it all); a new log
        starts with run_settings, so that a restart can tell its own log from another run's; with
        wandb_settings, wandb.init them. Returns wandb's run id."""
        if not self.master:
            return None
        run_id = None
        # first: a wandb that cannot start stops the run with the log as it was
        if wandb_settings is not None:
            import wandb
            try:
                run_id = wandb.init(resume='allow', **wandb_settings).id
            except wandb.errors.Error as e:  # no API key, no network, a bad project name
                fail(f'wandb_log=True, but wandb cannot start ({first_line(e)}); run `wandb login` '
                     f'or set WANDB_API_KEY, or pass --wandb_mode=offline (`wandb sync` uploads it '
                     f'later) or --wandb_log=False')
            self.wandb = wandb
        os.makedirs(os.path.dirname(self.path) or '.', exist_ok=True)
        if keep_bytes is not None and self.size() > keep_bytes:
            os.truncate(self.path, keep_bytes)
        self._drop_torn_line()
        if run_settings is not None and not self.size():
            # the file only: wandb has the settings as its run config
            with open(self.path, 'a') as f:
                f.write(json.dumps(dict(iter=0, run_settings=run_settings, machine=machine()))
                        + '\n')
        return run_id

    def _drop_torn_line(self) -> None:
        """A run killed mid-write leaves a last line without its newline; appending to it would
        corrupt the next record too, so it goes."""
        if not self.size():
            return
        with open(self.path, 'rb+') as f:
            f.seek(-1, os.SEEK_END)
            if f.read(1) == b'\n':
                return
            f.seek(0)
            f.truncate(f.read().rfind(b'\n') + 1)

    def __call__(self, record: dict | None = None, line: str | None = None) -> None:
        """Append record (which has an 'iter') to the log and to wandb; print line."""
        if not self.master:
            return
        if record is not None:
            with open(self.path, 'a') as f:
                f.write(json.dumps(record) + '\n')
            if self.wandb is not None:
                self.wandb.log({k: v for k, v in record.items() if k != 'iter'},
                               step=record['iter'])
        if line is not None:
            print(line)

    def step(self, it: int, budget, clock: 'StepClock', mfu: float | None, **record) -> None:
        """Log training step it: record (loss, lr, tokens_per_s, ...) with the smoothed MFU, and its
        progress line (budget: curriculum.TimeBudget). mfu: this lap's, None while the clock is
        warming up."""
        mfu_text = clock.add_mfu(mfu) if mfu is not None else '-'
        self(dict(iter=it, **record, mfu=clock.mfu),
             f"iter {it}: loss {record['loss']:.4f}, lr {record['lr']:.2e}, "
             f"{record['tokens_per_s']:,.0f} tok/s, mfu {mfu_text}, "
             f'{100 * budget.fraction(it + 1):.1f}% done, eta {budget.eta(it, clock)}')

    def finish(self) -> None:
        if self.wandb is not None:
            self.wandb.finish()


class StepClock:
    """The iteration times behind the progress line. Between log points nothing waits for the GPU
    and the host runs ahead of it, so one iteration's time means nothing: times are taken at log
    points, after the waits there, and averaged over the iterations since the last one. The first
    WARMUP iterations of a process (compilation, allocator and cache warm-up) would skew the ETA and
    MFU: both leave them out, and so after a recompile. Evaluations and saves are left out too (a
    new shape's evaluation compiles as long as its step): tokens/s, MFU and the ETA are the training
    steps', as a time budget counts them."""
    WARMUP = 5

    def __init__(self, device: str = 'cpu'):
        self.device = device
        self.t_lap = self.t_warm = time.time()
        self.ticks = self.lap_ticks = 0
        self.warm = False  # the last lap had no warm-up iteration in it
        self.rewarm()

    def rewarm(self) -> None:
        """Call when the step is built again (a new model or shape, compiled anew): the next WARMUP
        iterations are warm-up again, and the ETA and MFU start over from the ones after them."""
        self.warm_from = self.ticks + self.WARMUP  # the tick at which warm-up ends
        self.warm_ticks = 0  # the tick at which it ended; 0 while it lasts
        self.mfu = -1.0  # smoothed; negative until measured

    @contextmanager
    def aside(self):
        """Time spent in here (an evaluation, a save) counts in no lap and not in the ETA. The
        steps the host queued before it finish first, in the lap's time."""
        wait_for_device(self.device)
        t = time.time()
        yield
        spent = time.time() - t
        self.t_lap += spent
        self.t_warm += spent

    def tick(self) -> None:
        """Call once per iteration."""
        self.ticks += 1

    def lap(self) -> float:
        """Call where the host has just waited for the device: seconds per iteration since the last
        call."""
        now = time.time()
        dt = (now - self.t_lap) / max(1, self.ticks - self.lap_ticks)
        self.warm = self.lap_ticks >= self.warm_from
        if not self.warm_ticks and self.ticks >= self.warm_from:
            self.t_warm, self.warm_ticks = now, self.ticks
        self.t_lap, self.lap_ticks = now, self.ticks
        return dt

    def eta(self, iters_left: int) -> str:
        if not self.warm:
            return 'after warm-up'
        per_iter = (self.t_lap - self.t_warm) / (self.lap_ticks - self.warm_ticks)
        return f'{iters_left * per_iter / 60:.1f} min'

    def add_mfu(self, mfu: float) -> str:
        """Fold one iteration's MFU into the moving average; the average as text."""
        self.mfu = mfu if self.mfu < 0 else 0.9 * self.mfu + 0.1 * mfu
        return f'{self.mfu:.2%}'
