"""CultDiff-S, the learned cultural similarity (Bayramli et al., ACL 2025, section 3.3): the model, its folder
and its pairwise scorer backend ``cultdiff-s`` (registry entry ``cultdiff.learned``).

The model is a twin ("Siamese") ViT: one ``transformers.ViTModel`` f embeds both images of a pair; the
embedding is the CLS token of the last layer after the final layer norm (no pooler, no projection head),
L2-normalised. The similarity of two images is

    s(x, y) = cos(f(x), f(y))   in [-1, 1], higher is more similar, s(x, x) = 1,

as the paper scores it (it trains on Euclidean distances; on unit vectors ||f(x) - f(y)||^2 = 2 - 2 s(x, y), so
training and scoring agree).

A model folder (what ``cultureboard train cultdiff-s`` writes, loadable by ``path``, or from the Hub by
``model: ORG/REPO`` and ``revision``) holds ``config.json`` + ``model.safetensors`` (the encoder, as
``ViTModel.save_pretrained`` writes it), ``preprocessor_config.json`` (its image processor), ``cultdiff_s.json``
(:data:`SETTINGS_FILE`: pooling, normalisation, format version), ``training.json`` (the full training record,
whose ``trained_on`` lists every artifact and image, by sha256, the model learned from: :func:`trained_on`) and
``README.md`` (the model card). A learned scorer never grades its own training data: the family scores only
images whose artifact, image and reference photographs are all outside ``trained_on``. No CultDiff-S weights were released, so the registry entry names no
checkpoint: set ``path`` (or ``model``) in ``--scorers FILE``; until then the family flags the metric's rows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from cultureboard.errors import CultureboardError

from ...engine.embedding import TRANSFORMERS_FILES, _HFImageTransform, hf_image_settings
from ...engine.scorers import Backend, hub_files, local_files, register_backend
from ...engine.tiny_scorers import TINY_IMAGE_SIZE, register_tiny

SETTINGS_FILE = "cultdiff_s.json"
#: What :data:`SETTINGS_FILE` says about the embedding; a folder that says otherwise is refused.
SETTINGS = {"format": "cultdiff-s", "version": 2, "pooling": "cls", "normalize": True}  # 2: training.json trained_on
#: The model folder's training record; its ``trained_on`` lists the artifacts and images (sha256) it learned from.
TRAINING_FILE = "training.json"
BACKEND = "cultdiff-s"
NO_MODEL = ("no CultDiff-S model is configured (none was released)",
            ("train one (cultureboard train cultdiff-s ... --out MODEL_DIR) and set `cultdiff.learned: {path: "
             "MODEL_DIR}` in --scorers FILE, or `model: ORG/REPO` for one on the Hub"))


def embed(model, pixels):
    """f(x): the CLS token of the last hidden state (after ViTModel's final layer norm), L2-normalised; a torch
    tensor (N, hidden) with gradients when the model is in training."""
    import torch

    hidden = model(pixel_values=pixels).last_hidden_state[:, 0]
    return torch.nn.functional.normalize(hidden, dim=-1)


def load_encoder(folder: str | Path):
    """(ViTModel, image processor) of a model or initialisation folder in transformers' layout."""
    from transformers import AutoImageProcessor, ViTModel

    return ViTModel.from_pretrained(folder, add_pooling_layer=False), AutoImageProcessor.from_pretrained(folder)


def image_transform(processor) -> _HFImageTransform:
    """The processor as a picklable PIL image -> (3, S, S) tensor callable (the engine's transformers transform)."""
    return _HFImageTransform(processor)


def check_model_folder(folder: Path, name: str = "cultdiff.learned") -> None:
    """A CultDiff-S folder must say what it is (:data:`SETTINGS_FILE`) and hold the encoder and its processor."""
    try:
        settings = json.loads((folder / SETTINGS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise CultureboardError(f"scorer {name}", f"{folder} has no readable {SETTINGS_FILE}: it is not a CultDiff-S "
                                "model folder", "point it at the --out folder of `cultureboard train cultdiff-s`") from None
    wrong = {k: settings.get(k) for k, v in SETTINGS.items() if settings.get(k) != v}
    if wrong:
        raise CultureboardError(f"scorer {name}", f"{folder / SETTINGS_FILE} says {wrong}, this version reads "
                                f"{SETTINGS}", "retrain the model with this version of cultureboard")
    missing = [f for f in ("config.json", "preprocessor_config.json", TRAINING_FILE) if not (folder / f).is_file()]
    if missing or not any(folder.glob("*.safetensors")):
        raise CultureboardError(f"scorer {name}", f"{folder} lacks {', '.join(missing) or 'the weights'}",
                                "point it at a complete CultDiff-S model folder")


class CultDiffSScorer:
    """A CultDiff-S model as a pairwise scorer: :meth:`compare` gives cos(f(a), f(b))."""

    def __init__(self, name: str, model_id: str, revision: str, device: str, dtype: str, folder: Path):
        import torch

        self.name, self.model_id, self.revision, self.device, self.dtype = name, model_id, revision, device, dtype
        model, processor = load_encoder(folder)
        self.model = model.to(device=device, dtype=getattr(torch, dtype)).eval()
        self.image_transform = image_transform(processor)
        self.preprocessing = f"cultdiff-s v{SETTINGS['version']} cls, l2; " + hf_image_settings(processor)

    def compare(self, a, b) -> np.ndarray:
        """cos(f(a), f(b)) of two stacked batches of preprocessed images."""
        import torch

        dtype = getattr(torch, self.dtype)
        with torch.inference_mode():
            ea, eb = (embed(self.model, x.to(self.device, dtype)) for x in (a, b))
        return (ea * eb).sum(dim=-1).float().cpu().numpy()


def model_folder(name: str, entry: Mapping) -> Path:
    """The folder of a registry entry's CultDiff-S model (its ``path``, or its Hub snapshot), checked, unhashed."""
    if "path" in entry:
        folder = Path(entry["path"])
    elif entry.get("model"):
        folder = hub_files(name, entry["model"], str(entry.get("revision", "main")), [*TRANSFORMERS_FILES, "*.md"])[0]
    else:
        raise CultureboardError(f"scorer {name}", *NO_MODEL)
    check_model_folder(folder, name)
    return folder


def _locate(name: str, entry: Mapping, memo=None):
    if "path" not in entry:
        path = model_folder(name, entry)
        return path, entry["model"], path.name
    path, model_id, revision = local_files(name, entry, memo)
    check_model_folder(path, name)
    return path, model_id, revision


def trained_on(folder: Path, name: str = "cultdiff.learned") -> tuple[frozenset[str], frozenset[str]]:
    """(artifact ids, image sha256s) the model of ``folder`` was trained on, from its :data:`TRAINING_FILE`."""
    try:
        record = json.loads((folder / TRAINING_FILE).read_text(encoding="utf-8"))["trained_on"]
        artifacts, images = record["artifacts"], record["images"]
        if not all(isinstance(x, str) for x in [*artifacts, *images]):
            raise ValueError("not text")
    except (OSError, ValueError, KeyError, TypeError):
        raise CultureboardError(f"scorer {name}", f"{folder / TRAINING_FILE} does not say what the model was trained "
                                "on (trained_on: artifacts, images)", "retrain the model with this version of "
                                "cultureboard (`cultureboard train cultdiff-s`)") from None
    return frozenset(artifacts), frozenset(images)


def _check(entry: Mapping) -> str | None:
    model = entry.get("model")
    return None if model is None or isinstance(model, str) else "model must be a Hub id (ORG/REPO)"


def configured(entry: Mapping) -> bool:
    """Whether a registry entry names a CultDiff-S model (a local path or a Hub id)."""
    return bool(entry.get("path") or entry.get("model"))


register_backend(BACKEND, Backend(
    kind="pairwise", locate=_locate, check=_check,
    build=lambda name, entry, files, model_id, revision, device, dtype: CultDiffSScorer(
        name, model_id, revision, device, dtype, files)))


# ------------------------------------------------------------------------------------------ stand-in

def tiny_config(image_size: int = TINY_IMAGE_SIZE):
    """A ViT of the smallest shapes (one layer, width 16, patches of 8 px): the tests' initialisation."""
    from transformers import ViTConfig

    return ViTConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                     image_size=image_size, patch_size=8)


def save_tiny_init(path: str | Path, seed: int = 0, image_size: int = TINY_IMAGE_SIZE) -> Path:
    """A tiny random ``ViTModel`` + ``ViTImageProcessor`` folder: an initialisation for training in tests."""
    import torch
    from transformers import ViTImageProcessor, ViTModel

    torch.manual_seed(seed)
    path = Path(path)
    ViTModel(tiny_config(image_size), add_pooling_layer=False).save_pretrained(path)
    ViTImageProcessor(size={"height": image_size, "width": image_size}).save_pretrained(path)
    return path


def save_tiny_cultdiff_s(path: str | Path, seed: int = 0) -> Path:
    """An untrained tiny CultDiff-S model folder (random encoder, the settings file, a training record that it
    was trained on nothing, a one-line card): the stand-in of ``cultdiff.learned``. Its similarities measure
    nothing."""
    path = save_tiny_init(path, seed)
    (path / SETTINGS_FILE).write_text(json.dumps(SETTINGS, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    (path / TRAINING_FILE).write_text(json.dumps({"trained_on": {"artifacts": [], "images": []}}) + "\n",
                                      encoding="utf-8")
    (path / "README.md").write_text("# CultDiff-S stand-in\n\nRandom weights, untrained: for tests and demos only.\n",
                                    encoding="utf-8")
    return path


register_tiny("cultdiff.learned", save_tiny_cultdiff_s)
