"""Disk cache of embeddings: one forward pass per (model, image), shared by every metric that uses the model.

Layout: ``root/<key>/key.json`` + ``root/<key>/shard-*.npz``. The key is a hash of (kind, model id,
resolved revision, preprocessing) (:func:`cache_key`), so a different checkpoint, revision or
preprocessing setting never reads another's vectors; ``key.json`` spells the key out. Each shard
holds the vectors of one batch (``keys``: image sha256 or text sha256, ``vectors``: float32 rows) and
is written to a temporary name and renamed once complete, so a killed run (even SIGKILL) loses at
most the batch in flight and a rerun continues from the shards on disk. Vectors are stored as the
model gave them (float32, exactly), so cached and fresh results are identical.

Images are decoded and preprocessed in DataLoader worker processes (the scorer's picklable
``image_transform``); the main process only runs the model.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import time
from collections import Counter
from pathlib import Path

import numpy as np

from cultureboard.atomic import atomic_write_bytes, atomic_write_text
from cultureboard.errors import CultureboardError

from .scorers import Scorer


def cache_key(kind: str, model_id: str, revision: str, preprocessing: str | None) -> str:
    """The folder name of a cache: the first 32 hex digits of sha256 over the canonical JSON of the key."""
    key = {"kind": kind, "model_id": model_id, "revision": revision, "preprocessing": preprocessing}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """Embeddings cached under ``root``; ``stats`` counts hits and misses (``image_hits``, ``text_misses``, ...)."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.stats: Counter = Counter()

    def folder(self, scorer: Scorer, kind: str) -> Path:
        """The cache folder of ``scorer``'s ``kind`` ("image" or "text") embeddings, created with its key.json."""
        preprocessing = scorer.preprocessing if kind == "image" else scorer.text_preprocessing
        key = {"kind": kind, "model_id": scorer.model_id, "revision": scorer.revision, "preprocessing": preprocessing}
        folder = self.root / cache_key(**key)
        if not (folder / "key.json").is_file():
            atomic_write_text(folder / "key.json", json.dumps(key, indent=2, sort_keys=True) + "\n")
        return folder

    def embed_images(self, scorer: Scorer, items: list[tuple[str, str | os.PathLike]], batch_size: int = 32,
                     num_workers: int | None = None) -> dict[str, np.ndarray]:
        """{sha256: embedding} for ``items`` (sha256, image path): cached vectors, plus one pass over the rest.

        The sha256 is trusted (the validator checks it); duplicates are embedded once. ``num_workers``
        DataLoader processes (default: CPU count - 1, at most 8) open and preprocess the images; each
        finished batch is appended to the cache at once. An image that cannot be decoded is a
        :class:`CultureboardError` naming the file (the batches before it stay cached).
        """
        from torch.utils.data import DataLoader

        folder = self.folder(scorer, "image")
        cached = _read_shards(folder)
        wanted = dict(items)
        missing = [(sha, Path(path)) for sha, path in wanted.items() if sha not in cached]
        self.stats["image_hits"] += len(wanted) - len(missing)
        self.stats["image_misses"] += len(missing)
        if missing:
            if num_workers is None:
                num_workers = min(8, (os.cpu_count() or 1) - 1)
            loader = DataLoader(_ImageFiles([path for _, path in missing], scorer.image_transform),
                                batch_size=batch_size, num_workers=num_workers, collate_fn=_collate,
                                pin_memory=scorer.device.startswith("cuda"))
            for indices, pixels, errors in loader:
                if errors:
                    path, problem = errors[0]
                    raise CultureboardError(path, f"cannot read the image: {problem}",
                                            "replace it with a valid image (cultureboard validate checks every image)")
                keys = [missing[i][0] for i in indices]
                vectors = scorer.encode_pixels(pixels)
                _write_shard(folder, keys, vectors)
                cached.update(zip(keys, vectors))
        return {sha: cached[sha] for sha in wanted}

    def embed_texts(self, scorer: Scorer, texts: list[str], batch_size: int = 256) -> dict[str, np.ndarray]:
        """{text: embedding} for ``texts``: cached vectors (keyed by the text's sha256), plus the missing ones."""
        folder = self.folder(scorer, "text")
        cached = _read_shards(folder)
        wanted = {text_sha256(text): text for text in texts}
        missing = [sha for sha in wanted if sha not in cached]
        self.stats["text_hits"] += len(wanted) - len(missing)
        self.stats["text_misses"] += len(missing)
        for start in range(0, len(missing), batch_size):
            keys = missing[start:start + batch_size]
            vectors = scorer.embed_texts([wanted[sha] for sha in keys])
            _write_shard(folder, keys, vectors)
            cached.update(zip(keys, vectors))
        return {text: cached[sha] for sha, text in wanted.items()}


class _ImageFiles:
    """A map-style dataset: item i = (i, preprocessed tensor), or (i, (path, problem)) if the image cannot be read.

    Errors are returned rather than raised so that the main process reports them (an exception raised in
    a worker reaches the main process only as a re-wrapped traceback).
    """

    def __init__(self, paths: list[Path], transform):
        self.paths, self.transform = paths, transform

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int):
        from PIL import Image

        try:
            with Image.open(self.paths[i]) as image:
                return i, self.transform(image.convert("RGB"))
        except Exception as exc:  # PIL raises many types for a broken file
            return i, (str(self.paths[i]), f"{type(exc).__name__}: {exc}")


def _collate(batch):
    import torch

    indices = [i for i, _ in batch]
    errors = [value for _, value in batch if isinstance(value, tuple)]
    return indices, (None if errors else torch.stack([value for _, value in batch])), errors


def _read_shards(folder: Path) -> dict[str, np.ndarray]:
    vectors: dict[str, np.ndarray] = {}
    for shard in sorted(folder.glob("shard-*.npz")):
        try:
            with np.load(shard, allow_pickle=False) as data:
                vectors.update(zip(data["keys"].tolist(), data["vectors"]))
        except Exception as exc:  # a truncated or foreign file
            raise CultureboardError(shard, f"unreadable embedding cache shard ({type(exc).__name__}: {exc})",
                                    "delete the file; its embeddings will be computed again") from None
    return vectors


def _write_shard(folder: Path, keys: list[str], vectors: np.ndarray) -> None:
    buffer = io.BytesIO()
    np.savez(buffer, keys=np.array(keys), vectors=np.asarray(vectors, dtype=np.float32))
    atomic_write_bytes(folder / f"shard-{time.time_ns()}-{os.getpid()}.npz", buffer.getvalue())
