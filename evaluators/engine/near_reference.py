"""Near-reference images: a generation whose embedding is as close to a reference photograph of its artifact as a
copy of that photograph would be.

``validate`` refuses perceptual-hash copies of reference photographs (:mod:`..submission.rules.copies`). This is
the second, semantic check, at evaluation, on an embedding the family computes anyway (CultDiff: DINOv2-base,
CuRe: DINOv2-large, for the images and for the references): for an image x with the reference photographs G of
its artifact (``Context.references_of``: all of them, not only the K a metric reads),

    s(x) = max_{g in G} cos(f(x), f(g))        (f: unit embeddings, so a dot product; higher = closer)

and x is **near_reference** when s(x) >= t, the threshold recorded for that embedder. A near-reference image is
left out of every similarity-to-reference metric of its family: its rows are flagged :data:`FLAG` (never
averaged; a unit of several images is computed without it) and counted per metric. Every checked image's s(x) is
recorded in its rows' detail (``nearest_reference``), the value a flagged row would have had too
(``left_out_value``).

The threshold is measured, never guessed: :data:`THRESHOLDS` (``data/near_reference.yaml``) maps an embedder's
identity (model id @ resolved revision, :func:`embedder_key`) to the threshold that
``benchmarks/near_reference_threshold.py`` measured for it on edited copies and distinct photographs of one subject,
with how it was measured. An embedder with no entry is **not checked**, and every result says so
(``not checked (no measured threshold for ...)``), never a silent pass. The ``reference-photos`` control is the
reference photographs by design (and each is compared with the others only): it is not checked either.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np
import yaml

from cultureboard.errors import CultureboardError

from ..submission.controls import REFERENCE_PHOTOS

#: The flag of a row left out because its image is near a reference photograph.
FLAG = "near_reference"
#: The recorded thresholds, by embedder identity.
THRESHOLDS = Path(__file__).parent / "data" / "near_reference.yaml"
#: Where a result says the thresholds came from (repository-relative, never a machine's path).
THRESHOLDS_FILE = "evaluators/engine/data/near_reference.yaml"
#: The notes key of every checked metric (shared by all shards), and the per-metric counts (summed over shards).
NOTE = "near_reference"
LEFT_OUT, CHECKED = "near_reference left out", "near_reference checked"
MEASURE = "python benchmarks/near_reference_threshold.py --scorers FILE --scorer NAME"


def embedder_key(identity: Mapping) -> str:
    """``<model id>@<revision>`` of a scorer identity (:meth:`.scorers.Scorers.identity`)."""
    return f"{identity['model_id']}@{identity['revision']}"


@lru_cache(maxsize=4)
def _read(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise CultureboardError(path, f"cannot read the near-reference thresholds ({type(exc).__name__})",
                                "restore the file from the repository") from None
    for key, entry in data.items() if isinstance(data, dict) else [(None, None)]:
        threshold = entry.get("threshold") if isinstance(entry, dict) else None
        if (not isinstance(threshold, (int, float)) or isinstance(threshold, bool) or not -1 <= threshold <= 1
                or not isinstance(entry.get("measured"), dict)):
            raise CultureboardError(path, f"entry {key!r} is not {{threshold: a cosine in [-1, 1], measured: {{...}}}}",
                                    f"record the entry that `{MEASURE}` prints")
    return data if isinstance(data, dict) else {}


def thresholds(path: Path = THRESHOLDS) -> dict[str, dict]:
    """The recorded entries: {embedder key: {threshold, preprocessing, measured: {...}}}."""
    return _read(Path(path))


@dataclass(frozen=True)
class Check:
    """The near-reference check of one run with one embedder: its threshold, or why there is none."""

    scorer: str
    identity: Mapping
    threshold: float | None
    measured: Mapping | None = None
    why_not: str | None = None

    @property
    def status(self) -> str:
        return "checked" if self.threshold is not None else f"not checked ({self.why_not})"

    def near(self, similarity: float) -> bool:
        """s(x) >= t: at least as close to a reference photograph as the measured copies are."""
        return self.threshold is not None and similarity >= self.threshold

    def record(self) -> dict:
        """What the summary and provenance say about the check (the same in every shard)."""
        return {"status": self.status, "scorer": self.scorer, "model_id": self.identity.get("model_id"),
                "revision": self.identity.get("revision"), "threshold": self.threshold,
                "from": THRESHOLDS_FILE if self.threshold is not None else None, "measured": self.measured}


def check_for(ctx, scorer: str, path: Path = THRESHOLDS) -> Check:
    """The check of ``ctx``'s run with the embedding scorer ``scorer``: its recorded threshold (the entry of its
    identity, whose preprocessing must be the scorer's), or not checked with the reason."""
    identity = ctx.scorers.identity(scorer)
    if ctx.control == REFERENCE_PHOTOS:
        return Check(scorer, identity, None, why_not="the reference-photos control is the reference photographs")
    key = embedder_key(identity)
    entry = thresholds(path).get(key)
    if entry is None:
        return Check(scorer, identity, None, why_not=f"no measured threshold for {key}")
    if entry.get("preprocessing") not in (None, identity.get("preprocessing")):
        return Check(scorer, identity, None, why_not=f"the threshold of {key} was measured with other preprocessing")
    return Check(scorer, identity, float(entry["threshold"]), dict(entry["measured"]))


def nearest(image: np.ndarray, references: np.ndarray) -> float:
    """s(x) = max_g cos(f(x), f(g)) of a unit image embedding with the unit rows of ``references`` (K >= 1)."""
    references = np.atleast_2d(np.asarray(references, dtype=float))
    if not references.size:
        raise ValueError("no reference embedding to compare with")
    return float(np.max(references @ np.asarray(image, dtype=float)))


def similarities(images: Iterable, references_of, image_emb: Mapping, reference_emb: Mapping) -> dict[str, float]:
    """{image sha256: s(x)} of each image (objects with ``sha256`` and ``file_name``) that has reference
    photographs (``references_of(image)``: :class:`.images.ImageSource` s); an embedding missing from either
    mapping is one error naming the image or photograph."""
    out = {}
    for im in images:
        photos = references_of(im)
        if not photos:
            continue
        vector = _embedding(image_emb, im.sha256, im.file_name)
        out[im.sha256] = nearest(vector, np.stack([_embedding(reference_emb, p.sha256, p.label) for p in photos]))
    return out


def _embedding(embeddings: Mapping, sha256: str, label: str) -> np.ndarray:
    if sha256 not in embeddings:
        raise CultureboardError(label, "has no embedding for the near-reference check",
                                "rerun the evaluation (the embedding cache may be damaged: delete it to recompute)")
    return embeddings[sha256]


def leave_out(rows: list[dict], similarity: Mapping[str, float], check: Check, metrics: Iterable[str]) -> list[dict]:
    """Per-image ``rows`` with each checked image's s(x) in their detail (``nearest_reference``), and the rows of
    ``metrics`` of a near-reference image flagged :data:`FLAG` with their value moved to the detail
    (``left_out_value``, with the ``threshold``). A row already flagged keeps its flag (it is not averaged either)."""
    metrics = set(metrics)
    out = []
    for row in rows:
        s = similarity.get(row["sha256"])
        if s is None or row["metric"] not in metrics:
            out.append(row)
            continue
        detail = json.loads(row["detail"]) if row["detail"] else {}
        detail["nearest_reference"] = round(s, 6)
        changed = {"detail": detail}
        if row["flag"] is None and check.near(s):
            detail.update(left_out_value=row["value"], threshold=check.threshold)
            changed.update(value=None, flag=FLAG)
        changed["detail"] = json.dumps(detail, ensure_ascii=False, sort_keys=True)
        out.append({**row, **changed})
    return out


def note(ctx, check: Check, left_out: Mapping[str, int], checked: int) -> None:
    """Record the check on each metric of ``left_out`` ({metric: images left out of it}): the check itself
    (:meth:`Check.record`, ``NOTE``) and the counts (``counts``, summed over shards): images left out, images
    checked (those with reference photographs). The run says what it found, or that it did not check."""
    from cultureboard import progress

    progress.say(f"near-reference check ({check.scorer}): " + (
        f"{max(left_out.values(), default=0)} of {checked} images left out (cosine >= {check.threshold})"
        if check.threshold is not None else check.status))
    for metric, n in left_out.items():
        ctx.note(metric, NOTE, check.record())
        ctx.note(metric, "counts", {LEFT_OUT: int(n), CHECKED: int(checked)})


def summary_block(notes: Mapping[str, Mapping]) -> dict:
    """The summary's ``near_reference``: per checked metric, the check (status, threshold, embedder, where the
    threshold came from and how it was measured) and ``left_out`` / ``checked`` image counts."""
    return {metric: {**facts[NOTE], "left_out": facts.get("counts", {}).get(LEFT_OUT, 0),
                     "checked": facts.get("counts", {}).get(CHECKED, 0)}
            for metric, facts in sorted(notes.items()) if NOTE in facts}
