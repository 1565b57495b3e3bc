"""The LAION aesthetic predictor as a scorer: a linear head on L2-normalised CLIP ViT-L/14 image embeddings.

The head is the "improved aesthetic predictor" (Schuhmann et al., ``sac+logos+ava1-l14-linearMSE``), as the
Hub file ``trl-lib/ddpo-aesthetic-predictor/aesthetic-model.pth`` ships it (TRL's DDPO example, which ECB
loads): a state dict of ``torch.nn.Sequential`` layers 0, 2, 4, 6, 7 = Linear 768->1024->128->64->16->1.
Between them the training code had Dropout (identity at inference), so the canonical head is affine:
score(x) = W x + b, on a roughly 1-10 scale, higher = more aesthetic. ECB's released code put ReLU at
positions 1, 3 and 5 instead (the same keys load without error), which computes another function;
``activation: relu`` reproduces it (registry entry ``laion-aesthetic-ecb-relu``), for comparison with ECB's
released numbers only.

Backend ``laion-aesthetic`` (embedding kind): the scorer's image "embedding" is the one-element vector
[score], cached like any embedding by the image's sha256 and the scorer's identity (the activation is part
of its preprocessing). CLIP is ``transformers`` ``CLIPModel.get_image_features`` with its own processor (resize
to 224 bicubic, centre crop, CLIP mean/std: what the head was trained on), L2-normalised before the head.

Registry fields: ``model`` (the CLIP Hub id), ``revision`` (its revision), ``head: {repo, file, revision}``,
``activation: linear | relu``; a local ``path`` holds a CLIP ``save_pretrained`` folder with the head's
state dict in ``aesthetic-model.pth`` beside it (the tiny stand-in's layout).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from cultureboard.errors import CultureboardError
from cultureboard.provenance import file_sha256

from ...engine.embedding import TRANSFORMERS_FILES, TransformersScorer
from ...engine.scorers import LOAD_FIX, Backend, hub_files, local_files, register_backend
from ...engine.tiny_scorers import register_tiny, save_tiny_clip

BACKEND = "laion-aesthetic"
HEAD_FILE = "aesthetic-model.pth"
ACTIVATIONS = ("linear", "relu")
#: The Sequential indices of the head's Linear layers (ECB's and the canonical head's alike).
LINEAR_LAYERS = (0, 2, 4, 6, 7)
#: The registry entries (name -> fields); scorers.yaml holds the same.
ENTRIES = {
    "laion-aesthetic": {
        "backend": BACKEND, "model": "openai/clip-vit-large-patch14", "revision": "main",
        "head": {"repo": "trl-lib/ddpo-aesthetic-predictor", "file": HEAD_FILE, "revision": "main"},
        "activation": "linear", "role": ["aesthetics"]},
    "laion-aesthetic-ecb-relu": {
        "backend": BACKEND, "model": "openai/clip-vit-large-patch14", "revision": "main",
        "head": {"repo": "trl-lib/ddpo-aesthetic-predictor", "file": HEAD_FILE, "revision": "main"},
        "activation": "relu", "role": ["aesthetics (ECB's released variant)"]},
}


def head_module(state: Mapping, activation: str):
    """The head as ``torch.nn.Sequential``: Linear layers at :data:`LINEAR_LAYERS` with the shapes of
    ``state`` (keys ``layers.<i>.weight`` / ``.bias``), identity (``linear``) or ReLU (``relu``) at 1, 3, 5,
    nothing between 6 and 7; weights loaded strictly (a missing or extra key is an error)."""
    import torch

    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, not {activation!r}")
    layers = []
    for i in range(LINEAR_LAYERS[-1] + 1):
        if i in LINEAR_LAYERS:
            out_dim, in_dim = state[f"layers.{i}.weight"].shape
            layers.append(torch.nn.Linear(in_dim, out_dim))
        else:
            layers.append(torch.nn.ReLU() if activation == "relu" else torch.nn.Identity())
    module = torch.nn.Sequential(*layers)
    module.load_state_dict({k.removeprefix("layers."): v.float() for k, v in state.items()}, strict=True)
    return module.eval()


class AestheticScorer(TransformersScorer):
    """CLIP image tower + the aesthetic head; :meth:`encode_pixels` returns (N, 1) scores, not unit vectors."""

    def __init__(self, name: str, model_id: str, revision: str, device: str, dtype: str, folder: Path, head: Path,
                 activation: str):
        import torch

        super().__init__(name, model_id, revision, device, dtype, folder, True, {})
        state = torch.load(head, map_location="cpu", weights_only=True)
        width = self.model.config.projection_dim
        if state.get("layers.0.weight") is None or state["layers.0.weight"].shape[1] != width:
            raise CultureboardError(f"scorer {name}", f"{head.name} is not an aesthetic head for {width}-d CLIP "
                                    "embeddings (layers.0.weight missing or of another width)", LOAD_FIX)
        self.head = head_module(state, activation).to(device)
        self.preprocessing += f"; L2-normalised get_image_features -> LAION aesthetic head ({activation})"
        self.text_preprocessing = None  # no text: the scorer scores images only
        self.logit_scale = self.logit_bias = None

    def encode_pixels(self, pixels) -> np.ndarray:
        import torch

        unit = torch.from_numpy(super().encode_pixels(pixels)).to(self.device)
        with torch.inference_mode():
            return self.head(unit).float().cpu().numpy()


def _locate(name: str, entry: Mapping, memo=None):
    if "path" in entry:
        path, model_id, revision = local_files(name, entry, memo)
        if not (path / HEAD_FILE).is_file():
            raise CultureboardError(f"scorer {name}", f"{path} lacks {HEAD_FILE}",
                                    "save the CLIP model with save_pretrained and the head's state dict beside it")
        return (path, path / HEAD_FILE), model_id, revision
    clip, clip_revision = hub_files(name, entry["model"], str(entry.get("revision", "main")), TRANSFORMERS_FILES)
    head = entry["head"]
    head_folder, head_revision = hub_files(name, head["repo"], str(head.get("revision", "main")), [head["file"]])
    head_path = head_folder / head["file"]
    digest = hashlib.sha256(f"{clip_revision}+{head_revision}+{file_sha256(head_path)}".encode()).hexdigest()[:16]
    return ((clip, head_path), f"{entry['model']}+{head['repo']}/{head['file']}",
            f"{clip_revision}+{head_revision}:{digest}")


def _check(entry: Mapping) -> str | None:
    if entry.get("activation", "linear") not in ACTIVATIONS:
        return f"activation must be one of {', '.join(ACTIVATIONS)}"
    if "path" in entry:
        return None
    head = entry.get("head")
    if "model" not in entry or not isinstance(head, Mapping) or not {"repo", "file"} <= set(head):
        return "needs `model` (a CLIP Hub id) and `head: {repo, file}`, or a local `path`"
    return None


register_backend(BACKEND, Backend(
    kind="embedding", locate=_locate, check=_check,
    build=lambda name, entry, files, model_id, revision, device, dtype: AestheticScorer(
        name, model_id, revision, device, dtype, files[0], files[1], entry.get("activation", "linear"))))


def save_tiny_aesthetic(path: str | Path, seed: int = 0) -> Path:
    """A tiny stand-in: the tiny CLIP of the engine's stand-ins and a random head with the canonical layer
    indices (widths projection -> 32 -> 16 -> 8 -> 4 -> 1), in the local layout :func:`_locate` reads."""
    import torch

    path = save_tiny_clip(path, seed=seed)
    from transformers import CLIPConfig

    width = CLIPConfig.from_pretrained(path).projection_dim
    dims = (width, 32, 16, 8, 4, 1)
    generator = torch.Generator().manual_seed(seed)
    state = {}
    for k, i in enumerate(LINEAR_LAYERS):
        state[f"layers.{i}.weight"] = torch.randn(dims[k + 1], dims[k], generator=generator) / dims[k] ** 0.5
        state[f"layers.{i}.bias"] = torch.randn(dims[k + 1], generator=generator)
    torch.save(state, Path(path) / HEAD_FILE)
    return Path(path)


for _name in ENTRIES:
    register_tiny(_name, save_tiny_aesthetic)
