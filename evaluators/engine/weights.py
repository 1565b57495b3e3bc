"""Building a scorer's model at the cost of reading its checkpoint: no random initialisation that the checkpoint
then replaces, checkpoints memory-mapped, tensors made on the target device.

open_clip builds a model with random weights and then loads the checkpoint into it; for ViT-H-14 (HPS v2.1) the
random draws alone took about 5 s of a 27 s first run on a GPU machine, and ``torch.load`` read the whole pickled
checkpoint into memory before copying it. :func:`filled_from_checkpoint` wraps such a library call: inside it,
modules are built on the target device with their tensors allocated but not filled (the in-place initialisers
of ``torch.nn.init`` return their tensor untouched), and ``torch.load`` memory-maps zip checkpoints. What the
library then loads with ``load_state_dict(strict=True)`` overwrites every parameter and persistent buffer, so
the model is the one the ordinary build gives, bit for bit (``tests/test_weights.py`` compares every tensor and
the embeddings); buffers a module computes itself (a causal mask) are computed as usual, on the device.

transformers builds on the meta device and memory-maps safetensors itself: its models need only
``device_map`` (straight to the device) and are left to it.
"""

from __future__ import annotations

import contextlib
import zipfile
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def filled_from_checkpoint(device: str, checkpoints: list[Path]) -> Iterator[None]:
    """Inside: modules are built on ``device`` without initialising their tensors, and ``torch.load``
    memory-maps its file (only when every pickled file among ``checkpoints`` is in torch's zip format, which mmap
    needs; safetensors files are memory-mapped by their own loader).

    Only for a call that overwrites every parameter from a checkpoint with ``strict=True`` (open_clip's
    ``create_model_and_transforms`` with a checkpoint file or a local folder holding one): otherwise the model
    would keep uninitialised memory. Not thread-safe: it swaps ``torch.nn.init``'s functions while it runs."""
    import torch
    from torch.utils.serialization import config

    pickled = [p for p in checkpoints if p.suffix != ".safetensors"]
    mmap = all(zipfile.is_zipfile(p) for p in pickled)
    names = [n for n in dir(torch.nn.init) if n.endswith("_") and not n.startswith("_")]
    saved = {n: getattr(torch.nn.init, n) for n in names}
    previous = config.load.mmap
    for name in names:
        setattr(torch.nn.init, name, _unfilled)
    config.load.mmap = mmap
    try:
        with torch.device(device):
            yield
    finally:
        config.load.mmap = previous
        for name, function in saved.items():
            setattr(torch.nn.init, name, function)


def _unfilled(tensor, *args, **kwargs):
    """Stands in for an initialiser of ``torch.nn.init``: the tensor as allocated."""
    return tensor


def checkpoint_files(checkpoint: Path) -> list[Path]:
    """The weight files a checkpoint file or folder (open_clip's Hub layout) may hold."""
    if checkpoint.is_file():
        return [checkpoint]
    return sorted(p for pattern in ("*.safetensors", "*.bin", "*.pth", "*.pt") for p in checkpoint.glob(pattern))
