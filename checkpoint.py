"""
Atomic checkpoint files, shared by train.py, init_guide.py and export_hf.py.

A checkpoint is written to a temporary file in the same folder, flushed, fsynced and then renamed over
the target, so a crash at any point leaves the old file or the new one, never a partial one.
"""
import glob
import os
import tempfile

import torch

from model import Encoder, EncoderConfig

TMP_SUFFIX = '.tmp'


def save_checkpoint(obj: dict, path: str) -> None:
    """torch.save(obj, path) atomically."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    prefix = f'.{os.path.basename(path)}.'
    # a process killed mid-write cannot clean up after itself: remove its leftovers now
    for stale in glob.glob(os.path.join(folder, glob.escape(prefix) + '*' + TMP_SUFFIX)):
        os.remove(stale)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=TMP_SUFFIX)
    try:
        with os.fdopen(fd, 'wb') as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.remove(tmp)
        raise
    # make the rename itself durable
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def load_checkpoint(path: str) -> dict:
    """Load a checkpoint written by save_checkpoint onto the CPU (weights_only: no code runs)."""
    return torch.load(path, map_location='cpu', weights_only=True)


def checkpoint_encoder(ckpt: dict) -> Encoder:
    """The Encoder a checkpoint holds: its config from model_args, its weights from model."""
    model = Encoder(EncoderConfig(**ckpt['model_args']))
    model.load_state_dict(ckpt['model'])
    return model
