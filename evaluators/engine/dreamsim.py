"""Pairwise backend ``dreamsim``: DreamSim (Fu et al., NeurIPS 2023) through the ``dreamsim`` package.

    d(x, y) = 1 - cos(e(x), e(y))

with e the package's embedding: the CLS / projected features of the type's ViT backbones (``ensemble``:
DINO ViT-B/16 CLS, CLIP ViT-B/16 and OpenCLIP ViT-B/16 embeddings, concatenated), LoRA-finetuned on the
NIGHTS human similarity triplets, then centred and L2-normalised. Range [0, 2]; lower is more similar;
d(x, x) = 0 and d(x, y) = d(y, x). Images are preprocessed as the package does: resized to 224 x 224
(bicubic, aspect ratio not kept, no crop), values in [0, 1] (the model normalises per backbone itself).

Loading goes through the package's own entry point, ``dreamsim.dreamsim(pretrained=True, cache_dir=FOLDER,
dreamsim_type=TYPE)``. The package downloads its checkpoint zip from GitHub into FOLDER (done here in
``locate`` when the type's files are missing, so that the revision can fingerprint them), and while building,
torch.hub fetches the DINO code (``facebookresearch/dino:main``) and its backbone weights into the same folder
(the package points torch.hub at it; this module restores torch.hub's folder afterwards). A local ``path``
is such a folder, already complete (it loads offline); its revision is ``local:<sha256 of its files>``.
Without ``path`` the folder is ``cache_dir`` (default ``<torch hub dir>/dreamsim``) and the revision the
sha256 of the package's checkpoint files of the type.

Registry fields: ``dreamsim_type`` (one of :data:`DREAMSIM_TYPES`, default ``ensemble``), ``cache_dir``.

The tiny stand-in (:func:`save_tiny_dreamsim`) is the ``dino_vitb16`` type: the package hard-codes full-size
ViT-B/16 shapes for its CLIP and OpenCLIP branches (2 x 86M parameters, too slow for CI), while the DINO
branch's architecture comes from the torch.hub repository in the cache folder. The stand-in folder therefore
holds a stand-in of that repository (a ``hubconf.py`` building DINO's ``VisionTransformer``, as vendored by the
dreamsim package, 12 blocks of width 16), random backbone weights, a random DINO head and a random LoRA adapter
(peft) in the package's layout; everything from ``dreamsim.dreamsim`` on is the package's own code. What the
stand-in does not exercise: the ensemble's CLIP / OpenCLIP loaders and the GitHub downloads.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

import numpy as np

from cultureboard.errors import CultureboardError
from cultureboard.provenance import file_sha256, folder_sha256

from .scorers import Backend, local_files, register_backend
from .tiny_scorers import register_tiny

#: The package's model types (``dreamsim.config.dreamsim_weights``, 0.2.1, less the ``_patch`` variants).
DREAMSIM_TYPES = ("ensemble", "dino_vitb16", "dinov2_vitb14", "open_clip_vitb32", "clip_vitb32", "synclr_vitb16")
#: The files ``dreamsim.model.download_weights`` requires in the cache folder for each type (0.2.1).
REQUIRED = {
    "ensemble": ("dino_vitb16_pretrain.pth", "open_clip_vitb16_pretrain.pth.tar", "clip_vitb16_pretrain.pth.tar",
                 "ensemble_lora"),
    "dino_vitb16": ("dino_vitb16_pretrain.pth", "dino_vitb16_single_lora"),
    "dinov2_vitb14": ("dinov2_vitb14_pretrain.pth", "dinov2_vitb14_single_lora"),
    "open_clip_vitb32": ("open_clip_vitb32_pretrain.pth.tar", "open_clip_vitb32_single_lora"),
    "clip_vitb32": ("clip_vitb32_pretrain.pth.tar", "clip_vitb32_single_lora"),
    "synclr_vitb16": ("synclr_vit_b_16.pth", "synclr_vitb16_single_lora"),
}
#: The side images are resized to (``dreamsim.config.dreamsim_args["img_size"]``).
IMAGE_SIZE = 224


class DreamSimResize:
    """PIL image -> (3, 224, 224) tensor in [0, 1]: the package's preprocessing (bicubic resize to a square,
    ``ToTensor``), as a picklable callable for DataLoader workers."""

    def __init__(self, size: int = IMAGE_SIZE):
        self.size = size

    def __call__(self, image):
        from torchvision import transforms

        resize = transforms.Resize((self.size, self.size), interpolation=transforms.InterpolationMode.BICUBIC)
        return transforms.ToTensor()(resize(image.convert("RGB")))


class DreamSimScorer:
    """A DreamSim model loaded by the package from ``folder`` (see the module doc)."""

    def __init__(self, name: str, model_id: str, revision: str, device: str, dtype: str, folder: Path,
                 dreamsim_type: str):
        import torch
        import torch.hub
        from dreamsim import dreamsim

        self.name, self.model_id, self.revision, self.device, self.dtype = name, model_id, revision, device, dtype
        previous = torch.hub._hub_dir  # the package calls torch.hub.set_dir(folder): put the process's back
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                model, _ = dreamsim(pretrained=True, device=device, cache_dir=str(folder), dreamsim_type=dreamsim_type)
        finally:
            torch.hub._hub_dir = previous
        self.model = model.eval()  # weights stay float32: see compare
        self.image_transform = DreamSimResize()
        version = metadata.version("dreamsim")
        self.preprocessing = (f"dreamsim {version} type={dreamsim_type}; resize {IMAGE_SIZE}x{IMAGE_SIZE} bicubic, "
                              "[0, 1]")

    def compare(self, a, b) -> np.ndarray:
        """DreamSim distances 1 - cos(e(a), e(b)) of two stacked batches (N, 3, 224, 224) in [0, 1].

        A dtype other than float32 runs under autocast rather than by casting the model: the package keeps the
        CLIP / OpenCLIP projections as plain tensors that ``model.to(dtype)`` does not convert, so a cast ensemble
        fails with a dtype mismatch (seen on cuda in fp16)."""
        import torch

        device = self.device.split(":")[0]
        with torch.inference_mode(), torch.autocast(device, dtype=getattr(torch, self.dtype),
                                                    enabled=self.dtype != "float32"):
            d = self.model(a.to(self.device), b.to(self.device))
        return d.float().reshape(len(a)).cpu().numpy()


def _missing(folder: Path, dreamsim_type: str) -> list[str]:
    return [f for f in REQUIRED[dreamsim_type] if not (folder / f).exists()]


def _locate(name: str, entry: Mapping, memo=None):
    kind = entry.get("dreamsim_type", "ensemble")
    if "path" in entry:
        path, model_id, revision = local_files(name, entry, memo)
        missing = _missing(path, kind)
        if missing:
            raise CultureboardError(f"scorer {name}", f"{path} lacks {', '.join(missing)} of DreamSim {kind}",
                                    "point `path` at a folder that dreamsim(cache_dir=...) filled, or set "
                                    "`dreamsim_type` to the type it holds")
        return (path, kind), model_id, revision
    import torch.hub

    folder = Path(entry.get("cache_dir") or Path(torch.hub.get_dir()) / "dreamsim").expanduser()
    if _missing(folder, kind):
        try:
            from dreamsim.model import download_weights

            folder.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.redirect_stdout(io.StringIO()):
                download_weights(str(folder), kind)
        except Exception as exc:  # offline, unreachable, a broken zip
            raise CultureboardError(f"scorer {name}", f"cannot download the DreamSim {kind} checkpoint into {folder} "
                                    f"({type(exc).__name__})", "fill that folder on a machine with network "
                                    "(dreamsim.dreamsim(cache_dir=...)), or point `path` at such a folder in "
                                    "--scorers FILE") from None
    digest = hashlib.sha256()
    for part in REQUIRED[kind]:
        target = folder / part
        fingerprint = folder_sha256(target, memo=memo) if target.is_dir() else (
            memo.sha256(target) if memo is not None else file_sha256(target))
        digest.update(part.encode() + b"\0" + fingerprint.encode())
    return (folder, kind), f"dreamsim:{kind}", f"sha256:{digest.hexdigest()}"


def _check(entry: Mapping) -> str | None:
    kind = entry.get("dreamsim_type", "ensemble")
    if kind not in DREAMSIM_TYPES:
        return f"dreamsim_type must be one of {', '.join(DREAMSIM_TYPES)}, not {kind!r}"
    return None


register_backend("dreamsim", Backend(
    kind="pairwise", locate=_locate, check=_check,
    build=lambda name, entry, files, model_id, revision, device, dtype: DreamSimScorer(
        name, model_id, revision, device, dtype, files[0], files[1])))


# ------------------------------------------------------------------------------------------ stand-in

#: The DINO code's torch.hub folder name inside the cache folder (``facebookresearch/dino:main``).
DINO_REPO = "facebookresearch_dino_main"
#: Where DINO's hubconf fetches the ViT-B/16 backbone from; torch.hub keeps it as checkpoints/<file name>.
DINO_BACKBONE_URL = "https://dl.fbaipublicfiles.com/dino/dino_vitbase16_pretrain/dino_vitbase16_pretrain.pth"
#: The stand-in backbone: DINO's VisionTransformer, patch 16, narrow; 12 blocks because the package reads block 11.
_TINY_VIT = {"embed_dim": 16, "depth": 12, "num_heads": 2, "mlp_ratio": 2.0}
_HUBCONF = '''"""Stand-in for the facebookresearch/dino torch.hub repository (written by cultureboard's tiny stand-ins).

dino_vitb16 builds DINO's VisionTransformer (the copy the dreamsim package vendors) with the narrow shape of
standin_config.json and, like DINO's own hubconf, loads its weights with torch.hub.load_state_dict_from_url
(found in the cache, never downloaded). Random weights: its outputs measure nothing.
"""
import json
import os
from functools import partial

import torch
from dreamsim.feature_extraction.vision_transformer import VisionTransformer

dependencies = ["torch"]
URL = "{url}"


def dino_vitb16(pretrained=True, **kwargs):
    with open(os.path.join(os.path.dirname(__file__), "standin_config.json"), encoding="utf-8") as fh:
        config = json.load(fh)
    model = VisionTransformer(patch_size=16, num_classes=0, qkv_bias=True,
                              norm_layer=partial(torch.nn.LayerNorm, eps=1e-6), **config, **kwargs)
    if pretrained:
        model.load_state_dict(torch.hub.load_state_dict_from_url(URL, map_location="cpu"), strict=True)
    return model
'''.replace("{url}", DINO_BACKBONE_URL)


def _clip_as_dino_state(seed: int):
    """A random CLIP ViT-B/16 in the layout of the package's ``clip_vitb16_pretrain.pth.tar`` (and the OpenCLIP
    one): its ``vit_base`` with the pre-norm as ``pos_drop``, plus the 768 x 512 projection ``proj``."""
    import torch
    from dreamsim.feature_extraction.vision_transformer import vit_base

    torch.manual_seed(seed)
    vit = vit_base(patch_size=16)
    vit.pos_drop = torch.nn.LayerNorm(vit.embed_dim)
    return {"state_dict": {**vit.state_dict(), "proj": torch.randn(vit.embed_dim, 512) * vit.embed_dim ** -0.5}}


def save_tiny_dreamsim(path: str | Path, seed: int = 0, dreamsim_type: str = "dino_vitb16",
                       dino: dict | None = None) -> Path:
    """A DreamSim cache folder with random weights, in the layout the package reads: ``dino_vitb16_pretrain.pth``
    (the DINO head under ``student``), the LoRA adapter folder (peft, on the attention ``qkv`` layers, random
    non-zero), and the torch.hub side: ``facebookresearch_dino_main/`` (a stand-in hubconf, see the module doc),
    ``checkpoints/dino_vitbase16_pretrain.pth`` (the DINO backbone, of shape ``dino``: default 12 blocks of width 16)
    and ``trusted_list``.

    ``dreamsim_type="dino_vitb16"`` (the tests' stand-in: load it with ``dreamsim_type: dino_vitb16``) or
    ``"ensemble"``, which adds the CLIP and OpenCLIP branches at the package's fixed ViT-B/16 size (random,
    2 x 86M parameters: for the GPU check, not for CI)."""
    import json
    import warnings
    from functools import partial

    import torch
    import torch.hub
    from dreamsim.config import dreamsim_args
    from dreamsim.feature_extraction.vision_transformer import VisionTransformer
    from dreamsim.model import PerceptualModel
    from peft import LoraConfig, get_peft_model

    if dreamsim_type not in ("dino_vitb16", "ensemble"):
        raise ValueError("stand-ins exist for dreamsim_type dino_vitb16 and ensemble")
    dino = dino or _TINY_VIT
    path = Path(path)
    repo = path / DINO_REPO
    (path / "checkpoints").mkdir(parents=True, exist_ok=True)
    repo.mkdir(exist_ok=True)
    (repo / "hubconf.py").write_text(_HUBCONF, encoding="utf-8")
    (repo / "standin_config.json").write_text(json.dumps(dino), encoding="utf-8")
    (path / "trusted_list").write_text("", encoding="utf-8")
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    vit = VisionTransformer(patch_size=16, num_classes=0, qkv_bias=True,
                            norm_layer=partial(torch.nn.LayerNorm, eps=1e-6), **dino)
    torch.save(vit.state_dict(), path / "checkpoints" / DINO_BACKBONE_URL.rsplit("/", 1)[-1])
    width, hidden, bottleneck = dino["embed_dim"], 8, 4
    shapes = {"mlp.0": (hidden, width), "mlp.2": (hidden, hidden), "mlp.4": (bottleneck, hidden)}
    head = {f"module.head.{layer}.{kind}": torch.randn(shape if kind == "weight" else shape[:1], generator=generator)
            for layer, shape in shapes.items() for kind in ("weight", "bias")}
    head["module.head.last_layer.weight"] = torch.randn(width, bottleneck, generator=generator)
    torch.save({"student": head}, path / "dino_vitb16_pretrain.pth")
    if dreamsim_type == "ensemble":
        for k, name in enumerate(("clip_vitb16_pretrain.pth.tar", "open_clip_vitb16_pretrain.pth.tar"), 1):
            torch.save(_clip_as_dino_state(seed + k), path / name)
    settings = {k: v for k, v in dreamsim_args["model_config"][dreamsim_type].items() if k != "lora"}
    previous = torch.hub._hub_dir
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = PerceptualModel(**settings, lora=True, load_dir=str(path), device="cpu", normalize_embeds=True)
            model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, bias="none",
                                                     target_modules=["qkv"]))
    finally:
        torch.hub._hub_dir = previous
    with torch.no_grad():
        for key, value in model.named_parameters():
            if "lora_B" in key:  # peft starts B at zero (an adapter that changes nothing): make it count
                value.copy_(torch.randn(value.shape, generator=generator) * 0.5)
    model.save_pretrained(path / REQUIRED[dreamsim_type][-1])
    return path


register_tiny("dreamsim", save_tiny_dreamsim, settings=", dreamsim_type: dino_vitb16")
