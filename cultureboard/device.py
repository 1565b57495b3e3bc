"""One device and dtype chooser for every stage that runs a model (generate, evaluate)."""

from __future__ import annotations

import os
import sys
from typing import Any

from .errors import CultureboardError

#: Accepted spellings of a dtype -> its torch name.
DTYPES = {"float32": "float32", "fp32": "float32", "float16": "float16", "fp16": "float16", "half": "float16",
          "bfloat16": "bfloat16", "bf16": "bfloat16"}


def choose_device(device: str | None = None, *, defer: bool = False) -> str:
    """``device`` if given (checked to exist), else cuda, then mps, then cpu.

    torch is imported only where an accelerator could be present: ``cpu``, or no device on a machine without an
    NVIDIA or AMD driver and not a Mac, is decided without it (a fully cached rerun then never imports torch).
    With ``defer``, a ``cuda`` device given on a machine with an NVIDIA driver is taken without torch too, and
    :func:`require_device` checks it before the first model is loaded (a rerun on a GPU machine whose outputs are
    all cached then imports no torch either)."""
    if device == "cpu" or (device is None and not _may_have_accelerator()):
        return "cpu"
    if defer and str(device).split(":")[0] == "cuda" and _has_nvidia_driver():
        return str(device)
    return require_device(device)


def require_device(device: str | None) -> str:
    """``device`` checked to exist with torch (None: the first of cuda, mps, cpu there is); an absent one is the
    ``--device`` error naming those there are."""
    if device == "cpu":
        return "cpu"
    import torch

    available = {"cpu": True, "cuda": torch.cuda.is_available(), "mps": torch.backends.mps.is_available()}
    if device is None:
        return next(d for d in ("cuda", "mps", "cpu") if available[d])
    if not available.get(str(device).split(":")[0], False):
        raise CultureboardError("--device", f"{device!r} is not available on this machine",
                                "choose one of " + ", ".join(d for d, ok in available.items() if ok), exit_code=2)
    return str(device)


def _may_have_accelerator() -> bool:
    """Whether torch could find a GPU here: Apple silicon, an NVIDIA driver, or AMD's ROCm device."""
    return sys.platform == "darwin" or _has_nvidia_driver() or os.path.exists("/dev/kfd")


def _has_nvidia_driver() -> bool:
    return any(os.path.exists(p) for p in ("/proc/driver/nvidia/version", "/dev/nvidia0"))


def choose_dtype(device: str, dtype: Any = None) -> str:
    """``dtype`` normalised to a name (float32, float16, bfloat16); default float16 on cuda, else float32."""
    if dtype is None:
        return "float16" if device.startswith("cuda") else "float32"
    name = str(dtype).removeprefix("torch.")
    if name not in DTYPES:
        raise CultureboardError("--dtype", f"unknown dtype {dtype!r}", "use float32, float16 or bfloat16", exit_code=2)
    return DTYPES[name]
