"""
The process group of a train.py run under torchrun (NCCL on CUDA, gloo on the CPU), the one
collective the training loop needs, and stopping cleanly on a signal. A run without torchrun is a
group of one: every helper here then does nothing.
"""
import os
import signal
import sys
import threading

import torch
import torch.distributed as dist

from errors import fail, first_line


def init_distributed(backend: str) -> None:
    """init_process_group, safe under torchrun --max-restarts. torchrun's agent keeps its store
    across restarts, and a relaunched worker that read the last attempt's addresses there would wait
    on them forever: each attempt gets keys of its own. The restart count that names them agrees on
    one node only, hence the refusal on several."""
    if os.environ.get('TORCHELASTIC_USE_AGENT_STORE') != 'True':
        dist.init_process_group(backend)
        return
    if int(os.environ['GROUP_WORLD_SIZE']) > 1 and int(os.environ['TORCHELASTIC_MAX_RESTARTS']) > 0:
        fail('torchrun --max-restarts on several nodes needs a new store for each attempt: set '
             "TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 in torchrun's environment")
    store = dist.TCPStore(os.environ['MASTER_ADDR'], int(os.environ['MASTER_PORT']),
                          is_master=False)
    store = dist.PrefixStore(f"attempt_{os.environ['TORCHELASTIC_RESTART_COUNT']}", store)
    dist.init_process_group(backend, store=store, rank=int(os.environ['RANK']),
                            world_size=int(os.environ['WORLD_SIZE']))


def setup(device: str) -> tuple[bool, int, int, str]:
    """(ddp, rank, world_size, device): torchrun sets RANK; each process then takes the GPU of its
    LOCAL_RANK."""
    if int(os.environ.get('RANK', -1)) == -1:
        return False, 0, 1, device
    init_distributed('nccl' if device.startswith('cuda') else 'gloo')
    if device.startswith('cuda'):
        device = f'cuda:{int(os.environ["LOCAL_RANK"])}'
        torch.cuda.set_device(device)
    return True, dist.get_rank(), dist.get_world_size(), device


def wait_for_device(device: str) -> None:
    """Wait until the work the host queued on a GPU is done (a CPU runs nothing ahead)."""
    if device.startswith('cuda'):
        torch.cuda.synchronize(device)


def all_reduce(t: torch.Tensor, op=dist.ReduceOp.SUM) -> torch.Tensor:
    """t reduced over the ranks, in place (t itself in a group of one)."""
    if dist.is_initialized():
        dist.all_reduce(t, op=op)
    return t


def fail_together(problem: str, elsewhere: str, device: str) -> None:
    """Stop every rank with one line when any has a problem (its own message there, `elsewhere` on
    the others). The ranks wait for each other here, in place of a barrier that the others would
    wait at for ever."""
    if all_reduce(torch.tensor(float(bool(problem)), device=device), dist.ReduceOp.MAX).item():
        fail(problem or elsewhere)


def check_shared_folder(folder: str, device: str) -> None:
    """Stop every rank with one line unless all of them see the file rank 0 writes in `folder`: each
    rank decides from what it sees there whether to resume (init_from='auto'), so on several nodes
    it must be one shared folder."""
    if not dist.is_initialized():
        return
    rank0 = dist.get_rank() == 0
    token = all_reduce(torch.tensor(int.from_bytes(os.urandom(6), 'big') if rank0 else 0,
                                    device=device))
    # this attempt's own name: no stale file answers
    marker = os.path.join(folder, f'.rank0-{token.item()}')
    problem = ''
    if rank0:
        try:
            os.makedirs(folder, exist_ok=True)
            open(marker, 'w').close()
        except OSError as e:
            problem = (f'cannot write to out_dir {folder} ({first_line(e)}); give a folder rank 0 '
                       f'can write')
    # every rank waits here until rank 0 has written the marker (or said it could not) before
    # it looks
    fail_together(problem, f'rank 0 cannot write to out_dir {folder} (its error says why)', device)
    unseen = int(all_reduce(torch.tensor(int(not os.path.exists(marker)), device=device)).item())
    if rank0:
        os.remove(marker)
    if unseen:
        fail(f'{unseen} of {dist.get_world_size()} ranks do not see the file rank 0 wrote in '
             f'out_dir {folder}: on several nodes out_dir must be on a filesystem they all share; '
             f'give such an --out_dir')


class StopSignal:
    """SIGTERM or SIGINT (a scheduler's preemption, Ctrl-C) asks the run to stop: it finishes the
    step, saves and exits. Every rank must stop at the same iteration, so under DDP they agree at
    log points, where the host waits for the GPU anyway."""

    def __init__(self):
        self.requested = threading.Event()
        signal.signal(signal.SIGTERM, lambda signum, frame: self.requested.set())
        signal.signal(signal.SIGINT, lambda signum, frame: self.requested.set())

    def agreed(self, it: int, every: int, device: str) -> bool:
        """Whether the run stops after iteration it - 1 (it: the next iteration; every: the log
        interval)."""
        if not dist.is_initialized():
            return self.requested.is_set()
        if it % every:
            return False
        requested = torch.tensor(float(self.requested.is_set()), device=device)
        return all_reduce(requested, dist.ReduceOp.MAX).item() > 0


def shutdown() -> None:
    """The end of a finished run: under torchrun every rank leaves the group together and exits
    here, without Python's finalization. Finalization frees what the backend's worker threads may
    still hold, and a worker that then needs the interpreter aborts the process ("terminate called
    without an active exception", with no Python frame left): a finished run's rank killed by
    SIGABRT and torchrun reporting the run failed, seen on a loaded 2-core machine. By now the
    checkpoint and the logs are written and closed (the log files are opened per line)."""
    if not dist.is_initialized():
        return
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
