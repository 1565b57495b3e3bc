"""What a metric family gets to work with: the submission's images joined with their prompts, the
scorers it asks for (loaded once), and the shared embedding cache (one pass per model and image)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .cache import EmbeddingCache
from .scorers import Scorer


@dataclass(frozen=True)
class Metric:
    """A metric's card: shown in results and on the site's metric page."""

    name: str
    family: str
    title: str
    formula: str
    direction: str  # "higher" or "lower" is better
    range: str
    scorer: str | None  # registry name of the scorer it needs, if any
    source: str  # the paper and section it follows
    unit: str = "image"  # "image": one value per image; "pool": one value per pool of images (diversity)


@dataclass
class Image:
    """One submitted image: its metadata line, resolved path and prompt row."""

    file_name: str
    path: Path
    sha256: str
    prompt_id: str
    sample_idx: int
    prompt: dict


@dataclass
class Context:
    images: list[Image]
    prompts: dict[str, dict]  # every prompt of the set, by id (not only the scored ones)
    dataset: Path
    cache: EmbeddingCache
    load: Callable[[str], Scorer]  # registry name -> loaded scorer (memoised by the engine)
    seed: int = 0
    options: dict[str, Any] = field(default_factory=dict)

    def image_embeddings(self, scorer: str) -> dict[str, np.ndarray]:
        """{sha256: embedding} of every image, from the cache or one batched pass."""
        return self.cache.embed_images(self.load(scorer), [(im.sha256, im.path) for im in self.images])

    def text_embeddings(self, scorer: str, texts: list[str]) -> dict[str, np.ndarray]:
        return self.cache.embed_texts(self.load(scorer), sorted(set(texts)))


#: The prompt fields every score row carries, so results can be sliced without the dataset.
SLICE_FIELDS = ("country", "continent", "region_group", "category", "subcategory", "era", "level")


def score_row(metric: str, value: float, image: Image | None = None, *, unit_id: str | None = None,
              slices: dict | None = None, detail: str | None = None) -> dict:
    """A row of scores.parquet: per image (``image``), or per pool of images (``unit_id`` and its ``slices``)."""
    source = image.prompt if image else (slices or {})
    return {
        "metric": metric,
        "unit_id": image.prompt_id if image else unit_id,
        "prompt_id": image.prompt_id if image else None,
        "sample_idx": image.sample_idx if image else None,
        "file_name": image.file_name if image else None,
        "sha256": image.sha256 if image else None,
        "value": float(value),
        "detail": detail,
        **{f: source.get(f) for f in SLICE_FIELDS},
    }
