"""Pairwise scorers: a distance of two images computed by a model, and its cached use.

Backend ``lpips`` (the ``lpips`` package, Zhang et al. 2018): d(x, y) = sum over layers l of the spatial
mean of || w_l * (f_l(x) - f_l(y)) ||^2, with f_l the unit-normalised activations of a backbone (AlexNet by
default, as CuRe and CultDiff use) and w_l the package's learned linear weights (v0.1). Lower is more
similar; d(x, x) = 0. Images are resized (shorter side to ``size``, bicubic) and centre-cropped to a square
so that any two images compare, then scaled to [-1, 1] as the package expects.

The model is built with the package's own class and loaded from two files: the backbone's ImageNet weights
(torchvision's file, fetched into the torch hub cache) and the package's linear weights; a local ``path``
holds ``backbone.pth`` and ``linear.pth`` instead (the tiny stand-ins). Families register other pairwise
backends (a learned similarity, DreamSim) with :func:`.scorers.register_backend`; anything with the
attributes below and a ``compare(a, b)`` method works with :func:`compare_pairs`.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from cultureboard import progress
from cultureboard.errors import CultureboardError
from cultureboard.provenance import file_sha256

from .batching import in_batches, mode_of
from .cache import Cache, item_sha256
from .images import ImageSource, decode_batches
from .scorers import LOAD_FIX, Backend, local_files, register_backend

#: torchvision's AlexNet ImageNet weights (AlexNet_Weights.IMAGENET1K_V1), the backbone of LPIPS-alex.
ALEXNET_URL = "https://download.pytorch.org/models/alexnet-owt-7be5be79.pth"
#: The backbone's ``features`` layer index -> the LPIPS slice that holds it (lpips.pretrained_networks.alexnet).
_ALEX_SLICES = {0: 1, 3: 2, 6: 3, 8: 4, 10: 5}


class SquareResize:
    """PIL image -> (3, size, size) tensor in [-1, 1]: shorter side to ``size`` (bicubic), centre crop."""

    def __init__(self, size: int):
        self.size = size

    def __call__(self, image):
        import torch

        return torch.from_numpy(square_pixels(image, self.size)).permute(2, 0, 1)


def square_pixels(image, size: int) -> np.ndarray:
    """:class:`SquareResize` without torch: (size, size, 3) float32 in [-1, 1] (x / 127.5 - 1 in float32)."""
    from PIL import Image

    w, h = image.size
    scale = size / min(w, h)
    image = image.resize((max(size, round(w * scale)), max(size, round(h * scale))), Image.BICUBIC)
    left, top = (image.width - size) // 2, (image.height - size) // 2
    image = image.crop((left, top, left + size, top + size))
    return np.asarray(image, dtype=np.float32) / np.float32(127.5) - np.float32(1.0)


class LPIPSScorer:
    """LPIPS through the ``lpips`` package's ``LPIPS`` class, weights loaded from files (see the module doc)."""

    def __init__(self, name: str, model_id: str, revision: str, device: str, dtype: str, backbone: Path,
                 linear: Path, net: str, version: str, size: int):
        import lpips
        import torch

        self.name, self.model_id, self.revision, self.device, self.dtype = name, model_id, revision, device, dtype
        model = lpips.LPIPS(net=net, version=version, pretrained=False, pnet_rand=True, verbose=False)
        state = _backbone_state(torch.load(backbone, map_location="cpu", weights_only=True))
        state.update({k: v for k, v in torch.load(linear, map_location="cpu", weights_only=True).items()
                      if k.startswith("lin")})
        state.update({k.replace("lin", "lins.", 1): v for k, v in list(state.items()) if k[:3] == "lin" and k[3].isdigit()})
        model.load_state_dict({**model.state_dict(), **state}, strict=True)
        missing = [k for k in model.state_dict() if k.startswith(("net.", "lin")) and k not in state]
        if missing:
            raise CultureboardError(f"scorer {name}", f"the weight files lack {missing[:3]}", LOAD_FIX)
        self.model = model.to(device=device, dtype=getattr(torch, dtype)).eval()
        self.image_transform = SquareResize(size)
        self.preprocessing = f"lpips net={net} version={version}; shorter side {size} bicubic, centre crop, [-1, 1]"

    def compare(self, a, b) -> np.ndarray:
        """LPIPS distances of two stacked batches (N, 3, S, S) in [-1, 1]."""
        import torch

        dtype = getattr(torch, self.dtype)
        with torch.inference_mode():
            d = self.model(a.to(self.device, dtype), b.to(self.device, dtype))
        return d.float().reshape(len(a)).cpu().numpy()


def _backbone_state(features: Mapping) -> dict:
    """torchvision AlexNet weights (``features.i.*``) -> the LPIPS module's names (``net.slice<k>.i.*``)."""
    state = {}
    for key, value in features.items():
        parts = key.split(".")
        if parts[0] == "features" and int(parts[1]) in _ALEX_SLICES:
            state[f"net.slice{_ALEX_SLICES[int(parts[1])]}.{'.'.join(parts[1:])}"] = value
        elif parts[0] == "net":  # already in the LPIPS names (a stand-in's backbone.pth)
            state[key] = value
    return state


def _locate_lpips(name: str, entry: Mapping, memo=None):
    if "path" in entry:
        path, model_id, revision = local_files(name, entry, memo)
        files = (path / "backbone.pth", path / "linear.pth")
        if not all(f.is_file() for f in files):
            raise CultureboardError(f"scorer {name}", f"{path} lacks backbone.pth or linear.pth",
                                    "write both files (see evaluators/engine/tiny_scorers.py)")
        return files, model_id, revision
    import lpips
    import torch

    net, version = entry.get("net", "alex"), str(entry.get("version", "0.1"))
    linear = Path(lpips.__file__).parent / "weights" / f"v{version}" / f"{net}.pth"
    url = entry.get("backbone_url", ALEXNET_URL)
    backbone = Path(torch.hub.get_dir()) / "checkpoints" / url.rsplit("/", 1)[-1]
    if not backbone.is_file():
        try:
            torch.hub.load_state_dict_from_url(url, progress=False, check_hash=True)
        except Exception as exc:  # offline, unreachable, or a corrupt download
            raise CultureboardError(f"scorer {name}", f"cannot download the backbone weights {url} "
                                    f"({type(exc).__name__})", f"put the file in {backbone.parent}, or {LOAD_FIX}") from None
    digest = hashlib.sha256((file_sha256(backbone) + file_sha256(linear)).encode()).hexdigest()
    return (backbone, linear), f"lpips:{net}:v{version}", f"sha256:{digest}"


def _check_lpips(entry: Mapping) -> str | None:
    if entry.get("net", "alex") != "alex":
        return "only net: alex is supported (the backbone CuRe and CultDiff use)"
    size = entry.get("size", 256)
    return None if isinstance(size, int) and 16 <= size <= 4096 else "size must be an integer from 16 to 4096"


register_backend("lpips", Backend(
    kind="pairwise", locate=_locate_lpips, check=_check_lpips,
    build=lambda name, entry, files, model_id, revision, device, dtype: LPIPSScorer(
        name, model_id, revision, device, dtype, files[0], files[1], entry.get("net", "alex"),
        str(entry.get("version", "0.1")), int(entry.get("size", 256)))))


# --------------------------------------------------------------------------------------- cached use

def pair_key(identity: Mapping) -> dict:
    return {"kind": "pairwise", **{k: identity[k] for k in ("model_id", "revision", "dtype", "preprocessing")},
            "computed": mode_of(identity, "pair")}


def compare_pairs(cache: Cache, identity: Mapping, model: Callable, pairs: list[tuple[ImageSource, ImageSource]],
                  batch_size: int = 32, chunk: int = 256) -> np.ndarray:
    """The scorer's value for each (a, b) in ``pairs`` (in that order), cached by the two images' sha256.

    Missing pairs are computed ``chunk`` at a time: the chunk's distinct images are decoded once, then compared in
    fixed batches or one pair per pass as the scorer's probe found (:mod:`.batching`: either way a value never
    depends on the pairs beside it), stored
    ``batch_size`` pairs at a time.
    """
    store = cache.store(pair_key(identity))
    keys = [item_sha256(a.sha256, b.sha256) for a, b in pairs]
    found = store.get(keys)
    todo = list({k: (a, b) for k, (a, b) in zip(keys, pairs) if k not in found}.items())
    if todo:
        import torch

        scorer = model()
        with progress.stage(f"comparing image pairs with {identity['name']}", len(todo), "pairs") as shown:
            for start in range(0, len(todo), chunk):
                part = todo[start:start + chunk]
                sources = list({src.sha256: src for _, pair in part for src in pair}.values())
                pixels = {}
                for batch, stacked in decode_batches(sources, scorer.image_transform, batch_size):
                    pixels.update(zip((s.sha256 for s in batch), stacked))
                for b in range(0, len(part), batch_size):
                    sub = part[b:b + batch_size]
                    values = store.put([k for k, _ in sub], in_batches(
                        mode_of(identity, "pair"), scorer.compare, torch.stack([pixels[a.sha256] for _, (a, _b) in sub]),
                        torch.stack([pixels[b_.sha256] for _, (_a, b_) in sub])))
                    found.update(zip((k for k, _ in sub), values))
                    shown.advance(len(sub))
    return np.array([float(found[k]) for k in keys])
