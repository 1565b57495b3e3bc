"""What a family's scoring function gets: the submission's images joined with their prompts, its typed
options, and the three scorer kinds behind one cache (one model pass per input, models loaded only when an
uncached input needs them). A family never opens a model or a cache file itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pyarrow.parquet as pq

from cultureboard.dataset_folder import read_references
from cultureboard.errors import CultureboardError

from ..submission.controls import REFERENCE_PHOTOS
from . import embedding, judge, pairwise
from .cache import Cache
from .images import ImageSource
from .scorers import Scorers

#: The prompt fields every score row carries, so results can be sliced without the dataset.
SLICE_FIELDS = ("country", "continent", "region_group", "category", "subcategory", "era", "level")
#: The flag of a row a learned scorer did not score because the image (or its artifact) is in the scorer's own
#: training data (its model folder's record): never averaged; the site badges the metric "entangled" for it.
IN_TRAINING = "in training set"


@dataclass(frozen=True)
class Image:
    """One submitted image: its metadata line, resolved path and prompt row."""

    file_name: str
    path: Path
    sha256: str
    prompt_id: str
    sample_idx: int
    prompt: dict = field(hash=False, compare=False)
    edit_step: int | None = None

    @property
    def source(self) -> ImageSource:
        return ImageSource(self.sha256, self.path, label=self.file_name)


def sources(images) -> list[ImageSource]:
    """Scorer inputs of submitted :class:`Image` s or of :class:`ImageSource` s (reference photographs)."""
    return [im.source if isinstance(im, Image) else im for im in images]


class Context:
    def __init__(self, images: list[Image], prompts: dict[str, dict], dataset: Path, cache: Cache, scorers: Scorers,
                 options: Any = None, seed: int = 0, refused: list[dict] | None = None,
                 shard: tuple[int, int] | None = None, all_images: list[Image] | None = None,
                 control: str | None = None):
        self.images, self.prompts, self.dataset = images, prompts, dataset
        self.control = control  # the submission's ``control`` kind (reference-photos, text-only), None for a model
        self.shard = shard  # (i, n) in a sharded run: rows that read the whole set are shard 0's alone
        self.all_images = images if all_images is None else all_images  # every image, whatever the shard
        self.refused = refused or []  # declared refusals: {prompt_id, sample_idx, reason, prompt}
        self.cache, self.scorers, self.options, self.seed = cache, scorers, options, seed
        self.notes: dict[str, dict] = {}
        self.used_references = False
        self._artifacts: list[dict] | None = None
        self._references: tuple[dict, dict] | None = None

    # -- embedding kind

    def image_embeddings(self, scorer: str, images=None) -> dict[str, np.ndarray]:
        """{sha256: embedding} of ``images`` (default: every submitted image), from the cache or one pass."""
        return embedding.embed_images(self.cache, self.scorers.identity(scorer), lambda: self.scorers.model(scorer),
                                      sources(self.images if images is None else images))

    def text_embeddings(self, scorer: str, texts: list[str]) -> dict[str, np.ndarray]:
        return embedding.embed_texts(self.cache, self.scorers.identity(scorer), lambda: self.scorers.model(scorer),
                                     sorted(set(texts)))

    def logit_scale(self, scorer: str) -> float:
        """The scorer's (exponentiated) logit scale; a scorer without one is an error, never a default."""
        scale = self.scorers.identity(scorer).get("logit_scale")
        if scale is None:
            raise CultureboardError(f"scorer {scorer}", "has no logit scale, which zero-shot probabilities need",
                                    "use a dual-encoder scorer (CLIP, SigLIP) for this metric")
        return float(scale)

    # -- pairwise kind

    def distances(self, scorer: str, pairs: list[tuple]) -> np.ndarray:
        """The pairwise scorer's value for each (a, b): submitted images or reference sources."""
        pairs = [tuple(sources(pair)) for pair in pairs]
        return pairwise.compare_pairs(self.cache, self.scorers.identity(scorer), lambda: self.scorers.model(scorer),
                                      pairs)

    # -- judge kind

    def probability(self, scorer: str, items: list[tuple], answer: str = "Yes") -> np.ndarray:
        """P(answer) for each (image, question)."""
        items = [(sources([im])[0], q) for im, q in items]
        return judge.answer_probability(self.cache, self.scorers.identity(scorer), lambda: self.scorers.model(scorer),
                                        items, answer)

    def yes_no(self, scorer: str, items: list[tuple]) -> tuple[np.ndarray, np.ndarray]:
        """(P(yes), P(no)) for each (image, question), both spellings, one forward pass each (:func:`judge.yes_no`)."""
        items = [(sources([im])[0], q) for im, q in items]
        return judge.yes_no(self.cache, self.scorers.identity(scorer), lambda: self.scorers.model(scorer), items)

    def ask_json(self, scorer: str, items: list[tuple], schema: Mapping, retries: int = 2,
                 max_new_tokens: int = 256) -> list[judge.JudgeAnswer]:
        items = [(sources([im])[0], q) for im, q in items]
        return judge.ask_json(self.cache, self.scorers.identity(scorer), lambda: self.scorers.model(scorer), items,
                              schema, retries, max_new_tokens)

    # -- data

    def artifacts(self) -> list[dict]:
        """The dataset's artifact space (its ``artifacts`` config)."""
        if self._artifacts is None:
            shards = sorted((self.dataset / "data" / "artifacts").glob("*.parquet"))
            if not shards:
                raise CultureboardError(self.dataset, "has no artifacts config, which this prompt set maps images to",
                                        "evaluate against the dataset folder that `cultureboard build` wrote")
            self._artifacts = [r for s in shards for r in pq.read_table(s).to_pylist()]
        return self._artifacts

    def config(self, name: str) -> list[dict]:
        """The rows of the dataset's config ``name`` (e.g. a family's knowledge or descriptor table)."""
        shards = sorted((self.dataset / "data" / name).glob("*.parquet"))
        if not shards:
            raise CultureboardError(self.dataset, f"has no {name} config, which this prompt set reads",
                                    "evaluate against a dataset folder built with it (see cultureboard build dataset --help)")
        return [r for s in shards for r in pq.read_table(s).to_pylist()]

    def references(self) -> tuple[dict[str, list[ImageSource]], dict[str, str]]:
        """The dataset's reference photographs: ({artifact id: its images, best-ranked first}, {artifact id:
        why it has none}) from the ``references`` and ``references-missing`` configs; both empty when the dataset
        has no references. Each image's bytes are checked against its recorded sha256 (the key it is cached by).
        A result that reads them records the references' revision."""
        if self._references is None:
            self.used_references = True
            photos, missing = read_references(self.dataset)
            self._references = ({q: [ImageSource(r["sha256"], data=r["data"], label=f"reference {r['rank']} of {q}")
                                     for r in rows] for q, rows in photos.items()}, missing)
        return self._references

    def references_of(self, image: Image) -> list[ImageSource]:
        """The reference photographs ``image`` is compared with: those of its prompt's artifact, best-ranked first
        (none for a prompt without an artifact). In the ``reference-photos`` control, whose sample k IS the
        artifact's photograph of index k (:func:`~cultureboard.evaluators.submission.controls.make_control`), that
        photograph is left out (leave-one-out), so the control's ceiling never counts a photograph's similarity
        with itself; an artifact with one photograph then leaves the image none."""
        photos = self.references()[0].get(image.prompt.get("artifact_id") or "", [])
        if self.control == REFERENCE_PHOTOS:
            return photos[:image.sample_idx] + photos[image.sample_idx + 1:]
        return photos

    def note(self, metric: str, key: str, value: Any) -> None:
        """Record a fact about ``metric`` that holds for the whole prompt set (e.g. its chance level); shards
        must agree on it."""
        self.notes.setdefault(metric, {})[key] = value


def score_row(metric: str, value: float | None, image: Image | None = None, *, unit_id: str | None = None,
              slices: Mapping | None = None, detail: Mapping | str | None = None, flag: str | None = None) -> dict:
    """A row of scores.parquet: per image (``image``), or per unit of images (``unit_id`` and its ``slices``),
    or about one image of a larger unit (both: e.g. one step of an edit chain, bootstrapped over chains).

    A row with a ``flag`` (e.g. a pool smaller than the group size, a judge that never answered usably) keeps
    its reason and is counted in the summary, never averaged into a value.
    """
    source = {**(image.prompt if image else {}), **(slices or {})}
    if flag is None and (value is None or not np.isfinite(value)):
        raise ValueError(f"{metric}: a row without a finite value needs a flag saying why")
    return {
        "metric": metric,
        "unit_id": (unit_id or image.prompt_id) if image else unit_id,
        "prompt_id": image.prompt_id if image else None,
        "sample_idx": image.sample_idx if image else None,
        "file_name": image.file_name if image else None,
        "sha256": image.sha256 if image else None,
        "value": None if value is None or not np.isfinite(value) else float(value),
        "detail": detail if detail is None or isinstance(detail, str) else json.dumps(detail, ensure_ascii=False,
                                                                                       sort_keys=True),
        "flag": flag,
        "slices": {k: source.get(k) for k in source},
    }
