"""`evaluate --device cuda` on a machine with an NVIDIA driver takes the device without importing torch (a rerun whose
outputs are all cached never needs it) and checks it before the first model is loaded."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cultureboard import device as devices
from cultureboard.errors import CultureboardError


def test_a_cuda_device_is_taken_without_torch_where_a_driver_is():
    script = ("import sys\nfrom cultureboard import device\ndevice._has_nvidia_driver = lambda: True\n"
              "print(device.choose_device('cuda:1', defer=True), 'torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["cuda:1", "False"]


def test_a_deferred_device_is_checked_before_a_model_loads(tiny_scorers, monkeypatch):
    import torch

    from cultureboard.evaluators.engine.scorers import Scorers

    if torch.cuda.is_available():
        pytest.skip("needs a machine where cuda is not available")
    monkeypatch.setattr(devices, "_has_nvidia_driver", lambda: True)
    assert devices.choose_device("cuda", defer=True) == "cuda"
    with pytest.raises(CultureboardError, match="'cuda' is not available on this machine"):
        devices.choose_device("cuda")  # without defer: at once, as before
    pool = Scorers(tiny_scorers, "cuda", "float16")
    with pytest.raises(CultureboardError, match="'cuda' is not available on this machine"):
        pool.model("clip-vit-l-14")
    monkeypatch.setattr(devices, "_has_nvidia_driver", lambda: False)
    with pytest.raises(CultureboardError, match="'cuda' is not available on this machine"):
        devices.choose_device("cuda", defer=True)  # no driver: torch decides at once
