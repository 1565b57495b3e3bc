"""Print the pip option that installs PyTorch's CPU build on a machine without an NVIDIA GPU.

PyPI's Linux wheels of torch are the CUDA build (about 5 GB more, with the nvidia-* packages). On a machine
without an NVIDIA GPU (no working ``nvidia-smi``) this prints ``--extra-index-url`` of PyTorch's CPU index, whose
``+cpu`` builds pip then prefers (``torch==2.14.1`` in constraints.txt matches ``2.14.1+cpu``); with a GPU, or
where that index cannot be reached within a few seconds (an offline mirror), it prints nothing and pip installs
PyPI's build. Used by the README's first command: ``pip install -c constraints.txt $(python3 tools/torch_index.py) -e .``
"""

from __future__ import annotations

import socket
import subprocess
import sys
from urllib.parse import urlparse

CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def has_nvidia_gpu() -> bool:
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def reachable(url: str, timeout: float = 3.0) -> bool:
    try:
        socket.create_connection((urlparse(url).hostname, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def pip_options(gpu: bool, index_reachable: bool) -> list[str]:
    """The pip options that choose the torch build: the CPU index only without a GPU and with the index at hand."""
    return ["--extra-index-url", CPU_INDEX] if not gpu and index_reachable else []


if __name__ == "__main__":
    gpu = has_nvidia_gpu()
    print(" ".join(pip_options(gpu, not gpu and reachable(CPU_INDEX))))
    sys.exit(0)
