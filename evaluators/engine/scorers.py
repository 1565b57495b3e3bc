"""Scorers: named image/text encoders loaded from real checkpoints through transformers or open_clip.

The registry (``data/scorers.yaml``, see its header) names each scorer's backend, checkpoint and
revision; a scorer config file (``--scorers FILE``) overrides entries or adds new ones, and can point
any scorer at a local ``path``. :func:`load_scorer` downloads (or finds in the Hugging Face cache) the
checkpoint, records the resolved commit hash, and builds the model with the library's own classes:

* ``transformers-dual-encoder``: ``AutoModel`` + ``AutoProcessor`` (CLIPModel, SiglipModel, ...),
  embeddings from ``get_image_features`` / ``get_text_features``;
* ``transformers-image-encoder``: ``AutoModel`` + ``AutoImageProcessor`` (DINOv2, ...), embedding =
  ``pooler_output`` (the CLS token after the final layer norm);
* ``open_clip``: ``open_clip.create_model_and_transforms(architecture, pretrained=checkpoint file)``, or
  a local folder in open_clip's Hub layout (``open_clip_config.json`` + weights); ``open_clip.get_tokenizer``.

Every embedding is float32 and L2-normalised. Loading sets PyTorch to deterministic mode (eval, no
dropout, ``torch.use_deterministic_algorithms(True, warn_only=True)``): the same inputs give the same
bits on the same device. :mod:`.embedding_cache` adds batching, DataLoader decoding and the disk cache.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import yaml

from cultureboard.device import choose_device, choose_dtype
from cultureboard.errors import CultureboardError
from cultureboard.provenance import folder_sha256

REGISTRY_PATH = Path(__file__).parent / "data" / "scorers.yaml"
BACKENDS = ("transformers-dual-encoder", "transformers-image-encoder", "open_clip")
#: Files of a transformers checkpoint that are downloaded (configs, tokenizers, safetensors weights).
TRANSFORMERS_FILES = ["*.json", "*.txt", "*.model", "*.safetensors"]
#: ``preprocess`` keys of an open_clip entry (passed as ``image_<key>`` to create_model_and_transforms).
OPEN_CLIP_PREPROCESS = ("resize_mode", "interpolation", "mean", "std")
TEXT_DEFAULTS = {"padding": "longest", "max_length": None, "lowercase": False}
LOAD_FIX = "download it on a machine with network, or point it at a local folder in --scorers FILE"


# ----------------------------------------------------------------------------------------- registry

def load_registry(config: str | os.PathLike | Mapping | None = None) -> dict[str, dict]:
    """The registry entries, with the overrides of ``config`` (a YAML file or a mapping) merged in.

    An override of a known name replaces the fields it gives; an unknown name must be a complete
    entry. Relative ``path`` values in a config file are taken relative to that file's folder.
    """
    registry = _read_yaml(REGISTRY_PATH)
    source, base = "scorer config", Path.cwd()
    if isinstance(config, (str, os.PathLike)):
        source, base = str(config), Path(config).resolve().parent
        config = _read_yaml(Path(config))
    for name, override in (config or {}).items():
        if not isinstance(override, Mapping):
            raise CultureboardError(source, f"entry {name!r} is not a mapping", "write NAME: {field: value, ...}")
        override = dict(override)
        if "path" in override:
            override["path"] = str(base / Path(override["path"]).expanduser())
        registry[name] = {**registry.get(name, {}), **override}
    for name, entry in registry.items():
        _check_entry(name, entry, source)
    return registry


def _read_yaml(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise CultureboardError(path, f"cannot read the scorer registry/config: {exc}",
                                "pass a readable YAML file") from None
    if not isinstance(data, dict):
        raise CultureboardError(path, "is not a mapping of scorer names to entries", "write NAME: {field: value, ...}")
    return data


def _check_entry(name: str, entry: Mapping, source: str) -> None:
    def fail(problem: str) -> None:
        raise CultureboardError(source, f"scorer {name!r}: {problem}", "see the header of evaluators/engine/data/scorers.yaml")

    backend = entry.get("backend")
    if backend not in BACKENDS:
        fail(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    if backend == "open_clip":
        if "path" not in entry and not ("model" in entry and isinstance(entry.get("weights"), Mapping)):
            fail("an open_clip scorer needs `model` and `weights: {repo, file}`, or a local `path`")
        unknown = set(entry.get("preprocess") or {}) - set(OPEN_CLIP_PREPROCESS)
        if unknown:
            fail(f"unknown preprocess keys {sorted(unknown)} (known: {', '.join(OPEN_CLIP_PREPROCESS)})")
    elif "path" not in entry and "model" not in entry:
        fail("needs a Hub `model` id or a local `path`")
    unknown = set(entry.get("text") or {}) - set(TEXT_DEFAULTS)
    if unknown:
        fail(f"unknown text keys {sorted(unknown)} (known: {', '.join(TEXT_DEFAULTS)})")


# -------------------------------------------------------------------------------------- the scorer

class Scorer:
    """A loaded scorer: a model on a device, its preprocessing, and the provenance that keys its cache.

    ``revision`` is the resolved commit hash of the Hub checkpoint, or ``local:<sha256>`` of a local
    path's files. ``preprocessing`` names every image preprocessing setting and ``text_preprocessing``
    the tokenisation (both are part of the embedding cache key). ``logit_scale`` (already
    exponentiated) and ``logit_bias`` turn cosines into zero-shot logits: softmax over
    ``logit_scale * cos`` for CLIP (bias 0), ``sigmoid(logit_scale * cos + logit_bias)`` for SigLIP;
    both are None for image-only encoders.

    ``image_transform`` maps one RGB ``PIL.Image`` to a (3, H, W) tensor and is picklable, so that
    DataLoader workers can run it; :meth:`encode_pixels` runs the model on a stacked batch.
    """

    backend: str
    image_transform: Callable
    logit_scale: float | None = None
    logit_bias: float | None = None
    text_preprocessing: str | None = None

    def __init__(self, name: str, model_id: str, revision: str, device: str, dtype: str):
        self.name, self.model_id, self.revision, self.device, self.dtype = name, model_id, revision, device, dtype
        self.preprocessing = ""

    def provenance(self) -> dict:
        """What a result records about this scorer."""
        return {key: getattr(self, key) for key in (
            "name", "backend", "model_id", "revision", "preprocessing", "text_preprocessing", "device", "dtype")}

    def encode_pixels(self, pixels) -> np.ndarray:
        """Embed a batch of preprocessed images (N, 3, H, W): float32, L2-normalised rows."""
        import torch

        with torch.inference_mode():
            return _normalise(self._image_features(pixels.to(self.device, getattr(torch, self.dtype))))

    def embed_images(self, images: list) -> np.ndarray:
        """Embed ``PIL.Image`` s as one batch (for many images use :class:`.embedding_cache.EmbeddingCache`)."""
        import torch

        return self.encode_pixels(torch.stack([self.image_transform(image.convert("RGB")) for image in images]))

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` as one batch: float32, L2-normalised rows."""
        import torch

        if self.text_preprocessing is None:
            raise CultureboardError(f"scorer {self.name}", "is an image encoder and has no text tower",
                                    "use a dual-encoder scorer for text-image metrics")
        with torch.inference_mode():
            return _normalise(self._text_features(list(texts)))

    def _image_features(self, pixels):
        raise NotImplementedError

    def _text_features(self, texts: list[str]):
        raise NotImplementedError


def _normalise(features) -> np.ndarray:
    import torch

    return torch.nn.functional.normalize(features.float(), dim=-1).cpu().numpy()


def _pooled(output):
    """transformers 4 returns the embedding tensor, transformers 5 a model output holding it in pooler_output."""
    return output if hasattr(output, "dim") else output.pooler_output


class TransformersScorer(Scorer):
    """A transformers checkpoint: dual encoder (``get_image_features``/``get_text_features``) or image encoder."""

    def __init__(self, name: str, model_id: str, revision: str, device: str, dtype: str, folder: Path,
                 backend: str, text: Mapping):
        import torch
        from transformers import AutoImageProcessor, AutoModel, AutoProcessor

        super().__init__(name, model_id, revision, device, dtype)
        self.backend = backend
        self.dual = dual = backend == "transformers-dual-encoder"
        processor = (AutoProcessor if dual else AutoImageProcessor).from_pretrained(folder)
        self.model = AutoModel.from_pretrained(folder).to(device=device, dtype=getattr(torch, dtype)).eval()
        image_processor = processor.image_processor if dual else processor
        self.image_transform = _HFImageTransform(image_processor)
        settings = {k: v for k, v in image_processor.to_dict().items()
                    if v is not None and k not in ("processor_class", "image_processor_type")}
        self.preprocessing = f"{type(image_processor).__name__} {json.dumps(settings, sort_keys=True, default=str)}"
        if dual:
            self.tokenizer = processor.tokenizer
            text = {**TEXT_DEFAULTS, **text}
            if text["max_length"] is None:
                text["max_length"] = self.model.config.text_config.max_position_embeddings
            self.text = text
            self.text_preprocessing = f"{type(self.tokenizer).__name__} {json.dumps(text, sort_keys=True)}"
            self.logit_scale = self.model.logit_scale.detach().exp().item()
            bias = getattr(self.model, "logit_bias", None)
            self.logit_bias = bias.detach().item() if bias is not None else 0.0

    def _image_features(self, pixels):
        encode = self.model.get_image_features if self.dual else self.model
        return _pooled(encode(pixel_values=pixels))

    def _text_features(self, texts: list[str]):
        if self.text["lowercase"]:
            texts = [t.lower() for t in texts]
        tokens = self.tokenizer(texts, padding=self.text["padding"], max_length=self.text["max_length"],
                                truncation=True, padding_side="right", return_tensors="pt").to(self.device)
        return _pooled(self.model.get_text_features(**tokens))


class _HFImageTransform:
    """A transformers image processor as a picklable ``PIL.Image -> (3, H, W) tensor`` callable."""

    def __init__(self, image_processor):
        self.image_processor = image_processor

    def __call__(self, image):
        return self.image_processor(images=image, return_tensors="pt")["pixel_values"][0]


class OpenClipScorer(Scorer):
    """An open_clip model: a built-in architecture with a checkpoint file, or a folder in open_clip's Hub layout."""

    backend = "open_clip"

    def __init__(self, name: str, model_id: str, revision: str, device: str, dtype: str, architecture: str,
                 checkpoint: Path, preprocess: Mapping):
        import open_clip

        super().__init__(name, model_id, revision, device, dtype)
        if checkpoint.is_dir():
            self.model_name, pretrained = f"local-dir:{checkpoint}", None
        else:
            self.model_name, pretrained = architecture, str(checkpoint)
        precision = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}[dtype]
        self.model, _, self.image_transform = open_clip.create_model_and_transforms(
            self.model_name, pretrained=pretrained, precision=precision, device=device,
            **{f"image_{key}": value for key, value in preprocess.items()})
        self.model.eval()
        cfg = self.model.visual.preprocess_cfg
        self.preprocessing = "open_clip " + json.dumps(cfg, sort_keys=True, default=list)
        self.text_preprocessing = (f"open_clip.get_tokenizer({self.model_name}) "
                                   f"context_length={self.model.context_length}")
        self.logit_scale = self.model.logit_scale.detach().exp().item()
        bias = getattr(self.model, "logit_bias", None)
        self.logit_bias = bias.detach().item() if bias is not None else 0.0

    @functools.cached_property
    def tokenizer(self):
        """Loaded on first use: image-only uses (retrieval) need no tokenizer files."""
        import open_clip

        try:
            return open_clip.get_tokenizer(self.model_name)
        except Exception as exc:  # e.g. the tokenizer's Hub repo is not cached and the Hub is offline
            raise CultureboardError(f"scorer {self.name}", f"cannot load the tokenizer of {self.model_name}: "
                                    f"{type(exc).__name__}: {exc}", LOAD_FIX) from None

    def _image_features(self, pixels):
        return self.model.encode_image(pixels)

    def _text_features(self, texts: list[str]):
        return self.model.encode_text(self.tokenizer(texts).to(self.device))


# ------------------------------------------------------------------------------------------ loading

def load_scorer(name: str, config: str | os.PathLike | Mapping | None = None, device: str | None = None,
                dtype: Any = None) -> Scorer:
    """Load the scorer ``name`` of the registry (with ``config``'s overrides) on ``device`` in ``dtype``.

    Device defaults to cuda, then mps, then cpu; dtype to float16 on cuda and float32 elsewhere. A
    checkpoint that is neither cached nor downloadable, a missing local path or a checkpoint the
    library cannot load is a :class:`CultureboardError` naming the scorer and the fix.
    """
    import torch

    registry = load_registry(config)
    if name not in registry:
        raise CultureboardError(f"scorer {name}", "is not in the registry or the scorer config",
                                "choose one of " + ", ".join(sorted(registry)) + " or add it in --scorers FILE")
    entry = registry[name]
    device = choose_device(device)
    dtype = choose_dtype(device, dtype)
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # lets cuBLAS be deterministic
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False
    torch.manual_seed(0)
    if entry["backend"] == "open_clip":
        weights = entry.get("weights") or {}
        files, revision = _locate(name, entry, weights.get("repo"), [weights.get("file")])
        if "path" in entry:
            checkpoint = files
            if files.is_file() and not entry.get("model"):
                raise CultureboardError(f"scorer {name}", f"{files} is a checkpoint file but no architecture is given",
                                        "add `model: ARCHITECTURE` (an open_clip model name) to the entry")
            model_id = str(files) if files.is_dir() else f"{entry.get('model')}:{files}"
        else:
            checkpoint = files / weights["file"]
            model_id = f"{entry['model']}:{weights['repo']}/{weights['file']}"
        _check_open_clip_files(name, checkpoint)
        build = functools.partial(OpenClipScorer, architecture=entry.get("model"), checkpoint=checkpoint,
                                  preprocess=entry.get("preprocess") or {})
    else:
        files, revision = _locate(name, entry, entry.get("model"), TRANSFORMERS_FILES)
        model_id = str(files) if "path" in entry else entry["model"]
        build = functools.partial(TransformersScorer, folder=files, backend=entry["backend"],
                                  text=entry.get("text") or {})
    try:
        return build(name, model_id, revision, device, dtype)
    except Exception as exc:  # the libraries raise many types for a broken or incomplete checkpoint
        raise CultureboardError(f"scorer {name}", f"cannot load {files}: {type(exc).__name__}: {exc}",
                                LOAD_FIX) from None


def _locate(name: str, entry: Mapping, repo: str | None, patterns: list[str]) -> tuple[Path, str]:
    """The local files of a scorer's checkpoint and its resolved revision.

    A ``path`` is used as it is (revision ``local:<sha256 of its files>``); otherwise the files matching
    ``patterns`` are fetched from the Hub repo at ``revision`` (or found in the cache when offline) and
    the revision is the commit hash that names the snapshot folder.
    """
    if "path" in entry:
        path = Path(entry["path"])
        if not path.exists():
            raise CultureboardError(f"scorer {name}", f"local path {path} does not exist",
                                    "fix `path` in --scorers FILE, or remove it to use the Hub checkpoint")
        return path, "local:" + folder_sha256(path)
    from huggingface_hub import snapshot_download

    revision = str(entry.get("revision", "main"))
    try:
        folder = Path(snapshot_download(repo, revision=revision, allow_patterns=patterns))
    except Exception as exc:  # offline and not cached, unknown repo or revision, network errors
        raise CultureboardError(f"scorer {name}", f"cannot get {repo}@{revision}: {type(exc).__name__}: {exc}",
                                LOAD_FIX) from None
    return folder, folder.name


def _check_open_clip_files(name: str, checkpoint: Path) -> None:
    """open_clip silently initialises random weights when a folder has none: refuse that."""
    if checkpoint.is_dir():
        if not (checkpoint / "open_clip_config.json").is_file() or not any(
                any(checkpoint.glob(pattern)) for pattern in ("*.safetensors", "*.bin", "*.pth")):
            raise CultureboardError(f"scorer {name}", f"{checkpoint} lacks open_clip_config.json or weights",
                                    "use open_clip's Hub layout (open_clip_config.json + open_clip_model.safetensors)"
                                    " or point `path` at a checkpoint file")
    elif not checkpoint.is_file():
        raise CultureboardError(f"scorer {name}", f"the checkpoint {checkpoint.name} is not in {checkpoint.parent}",
                                "fix `weights: {repo, file}` in --scorers FILE")
