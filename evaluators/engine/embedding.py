"""Embedding scorers: image (and text) encoders of transformers and open_clip, and their cached use.

Backends (registered in :mod:`.scorers`):

* ``transformers-dual-encoder``: ``AutoModel`` + ``AutoProcessor`` (CLIPModel, SiglipModel, ...), embeddings
  from ``get_image_features`` / ``get_text_features``;
* ``transformers-image-encoder``: ``AutoModel`` + ``AutoImageProcessor`` (DINOv2, ...), embedding =
  ``pooler_output`` (the CLS token after the final layer norm);
* ``open_clip``: ``open_clip.create_model_and_transforms(architecture, pretrained=checkpoint file)``, or a
  local folder in open_clip's Hub layout (``open_clip_config.json`` + weights); ``open_clip.get_tokenizer``.

Every embedding is float32 and L2-normalised. ``logit_scale`` (exponentiated) and ``logit_bias`` turn
cosines into zero-shot logits (softmax over ``logit_scale * cos`` for CLIP, bias 0; ``sigmoid(logit_scale *
cos + logit_bias)`` for SigLIP); image-only encoders have neither. :func:`embed_images` and
:func:`embed_texts` go through the on-disk cache (:mod:`.cache`): one forward pass per (model, input), in fixed-shape
batches where the scorer's probe allows it, else each input alone (:mod:`.batching`: either way a vector never
depends on its batch-mates or on what the cache held), images decoded and preprocessed in batches in DataLoader
worker processes.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from cultureboard import progress
from cultureboard.errors import CultureboardError

from .batching import in_batches, mode_of
from .cache import Cache, text_sha256
from .images import ImageSource, Opened, decode_batches
from .scorers import LOAD_FIX, Backend, hub_files, local_files, register_backend
from .weights import checkpoint_files, filled_from_checkpoint

#: Files of a transformers checkpoint that are downloaded (configs, tokenizers, safetensors weights).
TRANSFORMERS_FILES = ["*.json", "*.txt", "*.model", "*.safetensors", "*.jinja"]
#: ``preprocess`` keys of an open_clip entry (passed as ``image_<key>`` to create_model_and_transforms).
OPEN_CLIP_PREPROCESS = ("resize_mode", "interpolation", "mean", "std")
TEXT_DEFAULTS = {"padding": "longest", "max_length": None, "lowercase": False}


class EmbeddingScorer:
    """A loaded encoder. ``image_transform`` maps one RGB ``PIL.Image`` to a (3, H, W) tensor and is
    picklable (DataLoader workers run it); :meth:`encode_pixels` runs the model on a stacked batch."""

    image_transform: Callable
    logit_scale: float | None = None
    logit_bias: float | None = None
    text_preprocessing: str | None = None

    def __init__(self, name: str, model_id: str, revision: str, device: str, dtype: str):
        self.name, self.model_id, self.revision, self.device, self.dtype = name, model_id, revision, device, dtype
        self.preprocessing = ""

    def encode_pixels(self, pixels) -> np.ndarray:
        """Embed a batch of preprocessed images (N, 3, H, W): float32, L2-normalised rows."""
        import torch

        with torch.inference_mode():
            return _normalise(self._image_features(pixels.to(self.device, getattr(torch, self.dtype))))

    def embed_images(self, images: list) -> np.ndarray:
        """Embed ``PIL.Image`` s as one batch (for many images use :func:`embed_images`)."""
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


def hf_image_settings(image_processor) -> str:
    """A transformers image processor's settings, as a cache-key string."""
    settings = {k: v for k, v in image_processor.to_dict().items()
                if v is not None and k not in ("processor_class", "image_processor_type")}
    return f"{type(image_processor).__name__} {json.dumps(settings, sort_keys=True, default=str)}"


class TransformersScorer(EmbeddingScorer):
    """A transformers checkpoint: dual encoder (``get_image_features``/``get_text_features``) or image encoder."""

    def __init__(self, name: str, model_id: str, revision: str, device: str, dtype: str, folder: Path,
                 dual: bool, text: Mapping):
        import torch
        from transformers import AutoImageProcessor, AutoModel, AutoProcessor

        super().__init__(name, model_id, revision, device, dtype)
        self.dual = dual
        processor = (AutoProcessor if dual else AutoImageProcessor).from_pretrained(folder)
        # built on the meta device by transformers, safetensors memory-mapped and read straight to the device
        self.model = AutoModel.from_pretrained(folder, device_map=device).to(dtype=getattr(torch, dtype)).eval()
        image_processor = processor.image_processor if dual else processor
        self.image_transform = _HFImageTransform(image_processor)
        self.preprocessing = hf_image_settings(image_processor)
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


class OpenClipScorer(EmbeddingScorer):
    """An open_clip model: a built-in architecture with a checkpoint file, or a folder in open_clip's Hub layout."""

    def __init__(self, name: str, model_id: str, revision: str, device: str, dtype: str, architecture: str | None,
                 checkpoint: Path, preprocess: Mapping):
        import open_clip

        super().__init__(name, model_id, revision, device, dtype)
        if checkpoint.is_dir():
            self.model_name, pretrained = f"local-dir:{checkpoint}", None
        else:
            self.model_name, pretrained = architecture, str(checkpoint)
        precision = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}[dtype]
        with filled_from_checkpoint(device, checkpoint_files(checkpoint)):  # no random init, memory-mapped
            self.model, _, self.image_transform = open_clip.create_model_and_transforms(
                self.model_name, pretrained=pretrained, precision=precision, device=device,
                **{f"image_{key}": value for key, value in preprocess.items()})
        self.model.eval()
        cfg = self.model.visual.preprocess_cfg
        self.preprocessing = "open_clip " + json.dumps(cfg, sort_keys=True, default=list)
        tokenizer = (open_clip.get_model_config(self.model_name) or {}).get("text_cfg", {}).get("hf_tokenizer_name")
        self.text_preprocessing = (f"open_clip tokenizer {tokenizer or 'clip-bpe'} "
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
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise CultureboardError(f"scorer {self.name}", f"cannot load the tokenizer of {self.model_name}: "
                                    f"{type(exc).__name__}: {first}", LOAD_FIX) from None

    def _image_features(self, pixels):
        return self.model.encode_image(pixels)

    def _text_features(self, texts: list[str]):
        return self.model.encode_text(self.tokenizer(texts).to(self.device))


# ------------------------------------------------------------------------------------------ backends

def locate_transformers(name: str, entry: Mapping, memo=None):
    if "path" in entry:
        return local_files(name, entry, memo)
    folder, revision = hub_files(name, entry["model"], str(entry.get("revision", "main")), TRANSFORMERS_FILES)
    return folder, entry["model"], revision


def check_transformers(entry: Mapping) -> str | None:
    if "path" not in entry and "model" not in entry:
        return "needs a Hub `model` id or a local `path`"
    unknown = set(entry.get("text") or {}) - set(TEXT_DEFAULTS)
    return f"unknown text keys {sorted(unknown)} (known: {', '.join(TEXT_DEFAULTS)})" if unknown else None


def _locate_open_clip(name: str, entry: Mapping, memo=None):
    if "path" in entry:
        path, model_id, revision = local_files(name, entry, memo)
        if path.is_file() and not entry.get("model"):
            raise CultureboardError(f"scorer {name}", f"{path} is a checkpoint file but no architecture is given",
                                    "add `model: ARCHITECTURE` (an open_clip model name) to the entry")
        checkpoint = path
        model_id = model_id if path.is_dir() else f"{entry['model']}:{model_id}"
    else:
        weights = entry["weights"]
        folder, revision = hub_files(name, weights["repo"], str(entry.get("revision", "main")), [weights["file"]])
        checkpoint, model_id = folder / weights["file"], f"{entry['model']}:{weights['repo']}/{weights['file']}"
    _check_open_clip_files(name, checkpoint)
    return checkpoint, model_id, revision


def _check_open_clip(entry: Mapping) -> str | None:
    if "path" not in entry and not ("model" in entry and isinstance(entry.get("weights"), Mapping)):
        return "an open_clip scorer needs `model` and `weights: {repo, file}`, or a local `path`"
    unknown = set(entry.get("preprocess") or {}) - set(OPEN_CLIP_PREPROCESS)
    return f"unknown preprocess keys {sorted(unknown)} (known: {', '.join(OPEN_CLIP_PREPROCESS)})" if unknown else None


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


register_backend("transformers-dual-encoder", Backend(
    kind="embedding", locate=locate_transformers, check=check_transformers,
    build=lambda name, entry, files, model_id, revision, device, dtype: TransformersScorer(
        name, model_id, revision, device, dtype, files, True, entry.get("text") or {})))
register_backend("transformers-image-encoder", Backend(
    kind="embedding", locate=locate_transformers, check=check_transformers,
    build=lambda name, entry, files, model_id, revision, device, dtype: TransformersScorer(
        name, model_id, revision, device, dtype, files, False, {})))
register_backend("open_clip", Backend(
    kind="embedding", locate=_locate_open_clip, check=_check_open_clip,
    build=lambda name, entry, files, model_id, revision, device, dtype: OpenClipScorer(
        name, model_id, revision, device, dtype, entry.get("model"), files, entry.get("preprocess") or {})))


# --------------------------------------------------------------------------------------- cached use

def image_key(identity: Mapping) -> dict:
    """What an image embedding depends on besides the image: the cache key of a scorer's image vectors."""
    return {"kind": "image-embedding", **{k: identity[k] for k in ("model_id", "revision", "dtype", "preprocessing")},
            "computed": mode_of(identity, "image")}


def text_key(identity: Mapping) -> dict:
    return {"kind": "text-embedding", "model_id": identity["model_id"], "revision": identity["revision"],
            "dtype": identity["dtype"], "preprocessing": identity["text_preprocessing"],
            "computed": mode_of(identity, "text")}


def embed_images(cache: Cache, identity: Mapping, model: Callable[[], EmbeddingScorer], items: list[ImageSource],
                 batch_size: int = 32, num_workers: int | None = None) -> dict[str, np.ndarray]:
    """{sha256: embedding} of ``items``: cached vectors, plus one pass over the rest (``model()`` is called
    only then), in fixed batches or each image alone as the scorer's probe found (:mod:`.batching`). Each finished batch is stored at once, so a killed run loses at most the
    batch in flight."""
    store = cache.store(image_key(identity))
    wanted = {item.sha256: item for item in items}
    found = store.get(list(wanted))
    missing = [item for sha, item in wanted.items() if sha not in found]
    if missing:
        opened = Opened(missing, batch_size)  # the first batches decode while the model loads
        scorer = model()
        with progress.stage(f"embedding images with {identity['name']}", len(missing)) as shown:
            for batch, pixels in decode_batches(missing, scorer.image_transform, batch_size, num_workers, opened):
                vectors = store.put([item.sha256 for item in batch],
                                    in_batches(mode_of(identity, "image"), scorer.encode_pixels, pixels))
                found.update(zip((item.sha256 for item in batch), vectors))
                shown.advance(len(batch))
    return {sha: found[sha] for sha in wanted}


def embed_texts(cache: Cache, identity: Mapping, model: Callable[[], EmbeddingScorer], texts: list[str],
                batch_size: int = 256) -> dict[str, np.ndarray]:
    """{text: embedding} for ``texts``: cached vectors (keyed by the text's sha256), plus the missing ones (in fixed
    batches where the scorer's probe found that padding to a longer batch-mate changes no bits, else each alone)."""
    if identity.get("text_preprocessing") is None:
        raise CultureboardError(f"scorer {identity['name']}", "is an image encoder and has no text tower",
                                "use a dual-encoder scorer for text-image metrics")
    store = cache.store(text_key(identity))
    wanted = {text_sha256(text): text for text in texts}
    found = store.get(list(wanted))
    missing = [sha for sha in wanted if sha not in found]
    if missing:
        scorer = model()
        with progress.stage(f"embedding texts with {identity['name']}", len(missing), "texts") as shown:
            for start in range(0, len(missing), batch_size):
                keys = missing[start:start + batch_size]
                vectors = store.put(keys, in_batches(mode_of(identity, "text"), scorer.embed_texts,
                                                     [wanted[sha] for sha in keys]))
                found.update(zip(keys, vectors))
                shown.advance(len(keys))
    return {text: found[sha] for sha, text in wanted.items()}
