"""Rules on copies, by perceptual hash (:mod:`..perceptual`): no image is a copy of a reference photograph of its
prompt's artifact (resized, re-encoded, cropped by 10%, mirrored, tinted), and no two prompts with different texts
share an image that is a near-copy (resized, re-encoded, mirrored, tinted; identical bytes are ``file.duplicate_image``)
unless both were generated from one seed.

An image is compared with the photographs of its own prompt's artifact (the dataset's ``references`` config), the
ones every similarity-to-reference metric compares it with: a copy of them would top those metrics. The
``reference-photos`` control is those photographs by design and is not compared with them; no control is checked
for near-copies (the copying controls hand one picture to several prompts on purpose). Images already reported
unreadable are left to that report; a dataset whose reference photographs cannot be read is a usage error.
"""

from __future__ import annotations

import hashlib
import io
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image

from cultureboard.dataset_folder import REFERENCE_CONFIGS, read_references
from cultureboard.errors import CultureboardError

from ..format import CONTROL_KINDS, METADATA, is_refusal
from ..perceptual import THRESHOLD, distances, image_hashes, views
from .report import Run, remake, show

CODES: dict[str, str] = {
    "image.copies_reference": "an image is a copy of a reference photograph of its prompt's artifact (perceptual hash)",
    "image.near_duplicate": "near-copies of one picture for prompts with different texts (perceptual hash; warning "
                            "without a dataset)",
}
#: The control that is the reference photographs themselves.
REFERENCE_PHOTOS = CONTROL_KINDS[0]


def check(run: Run) -> None:
    """Hash each listed local image that opens and compare it with its artifact's photographs and with the other
    prompts' images; counts the images hashed (``hashed_images``) in the report."""
    spec = run.spec
    if not run.listed or (run.prompts is None and run.dataset is not None):
        return  # nothing local, or a dataset that could not be used (reported already)
    images = _hash_images(run)
    run.hashed_images = len(images)
    control = spec.control if spec is not None else None
    if run.prompts is not None and control != REFERENCE_PHOTOS:
        _check_references(run, images)
    if control is None:
        _check_near_copies(run, images)


def _hash_images(run: Run) -> list[tuple[int, dict, np.ndarray]]:
    """(line, row, hashes: the image's and its mirror's) of each listed image (a regular file: links are never
    read) that opens and is not featureless, in metadata order; hashed in a thread pool (the image library
    releases the GIL while decoding and resizing)."""
    broken = {p.file for p in run.problems if p.severity == "error" and p.code.startswith("file.")}
    todo, seen = [], set()
    for n, row in run.rows:
        name = row.get("file_name")
        if is_refusal(row) or name not in run.listed or name not in run.files or name in broken or name in seen:
            continue
        seen.add(name)
        todo.append((n, row))
    with ThreadPoolExecutor(run.workers or min(8, os.cpu_count() or 1)) as pool:
        hashed = pool.map(lambda item: _hashes(os.path.join(run.root, item[1]["file_name"])), todo)
        return [(n, row, both) for (n, row), both in zip(todo, hashed) if both is not None]


#: The hashes of the images hashed lately (:func:`_hashes`), by the sha256 of their bytes: a folder validated again in
#: one process (the demo validates each submission, then ``evaluate`` and the site's submissions page do) decodes
#: nothing again. At most :data:`_HASHES_KEPT` (about 0.5 KB each); cleared when full.
_HASHES: dict[bytes, np.ndarray | None] = {}
_HASHES_KEPT = 100_000


def _hashes(path: str) -> np.ndarray | None:
    """:func:`~..perceptual.image_hashes` of the image file at ``path`` (None: featureless, or unreadable), remembered
    by the sha256 of its bytes (the hashes are a function of them)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None  # reported by the image rules
    key = hashlib.sha256(data).digest()
    if key in _HASHES:
        return _HASHES[key]
    try:
        with Image.open(io.BytesIO(data)) as image:
            both = image_hashes(image)
    except (OSError, ValueError, Image.DecompressionBombError):
        return None  # reported by the image rules
    if len(_HASHES) >= _HASHES_KEPT:
        _HASHES.clear()
    _HASHES[key] = both
    return both


def _check_references(run: Run, images: list[tuple[int, dict, np.ndarray]]) -> None:
    """Each image against the views of its prompt's artifact's photographs."""
    size = run.spec.size if run.spec is not None else None
    photos = reference_views(run.dataset, size[0] / size[1] if size else None)
    by_artifact: dict[str, list[tuple[int, dict, np.ndarray]]] = {}
    for item in images:
        artifact = (run.prompts.get(item[1].get("prompt_id")) or {}).get("artifact_id")
        if artifact in photos:
            by_artifact.setdefault(artifact, []).append(item)
    where = f"{run.dataset.name}/data/{REFERENCE_CONFIGS[0]}"
    for artifact, items in by_artifact.items():
        refs = photos[artifact]
        d = distances(np.array([both[0] for _, _, both in items]), [v for _, v in refs])
        for (n, row, _), near in zip(items, d):
            j = int(near.argmin())
            if near[j] <= THRESHOLD:
                rank, sha = refs[j][0]
                run.error("image.copies_reference", row["file_name"], f"is a copy of reference photograph {artifact} "
                          f"rank {rank} ({where}, sha256 {sha[:12]}): perceptual-hash distance {near[j]} <= "
                          f"{THRESHOLD} ({METADATA}:{n})", remake("submit the model's own generation for this prompt"))


def _check_near_copies(run: Run, images: list[tuple[int, dict, np.ndarray]]) -> None:
    """Pairs of distinct images (different sha256) of prompts with different texts (no dataset: different ids)
    and different seeds within THRESHOLD, the second compared as it is and mirrored; one problem per image, naming
    the first it copies. Images of one seed are not compared: a pipeline starts every prompt of a seed from the
    same noise, which fixes the layout the hash sees (a model that barely reads the prompt gives near-copies)."""
    if len(images) < 2:
        return
    prompts = run.prompts
    d = distances(np.array([both[0] for _, _, both in images]), [both for _, _, both in images])
    for i, (n, row, _) in enumerate(images):
        for j in np.flatnonzero(d[i, :i] <= THRESHOLD):
            m, other, _ = images[j]
            a, b = other.get("prompt_id"), row.get("prompt_id")
            if other.get("sha256") == row.get("sha256") or a == b or other.get("seed") == row.get("seed"):
                continue  # identical bytes: file.duplicate_image; one prompt's samples, and one seed's, may look alike
            if prompts is None:
                run.warn("image.near_duplicate", f"{METADATA}:{n}", f"{show(row['file_name'])} (prompt {show(b)}) is a "
                         f"near-copy of {show(other['file_name'])} (line {m}, prompt {show(a)}): perceptual-hash "
                         f"distance {d[i, j]}", "pass --dataset to compare the prompt texts")
                break
            pa, pb = prompts.get(a), prompts.get(b)
            if pa and pb and (pa["text"], pa["negative_prompt"]) != (pb["text"], pb["negative_prompt"]):
                run.error("image.near_duplicate", f"{METADATA}:{n}", f"{show(row['file_name'])} (prompt {show(b)}) is "
                          f"a near-copy of {show(other['file_name'])} (line {m}, prompt {show(a)}, a different text): "
                          f"perceptual-hash distance {d[i, j]} <= {THRESHOLD}", remake("generate each prompt's own image"))
                break


#: The views of the reference photographs read lately, by (dataset folder, its references' files, aspect).
_VIEWS: dict[tuple, dict[str, list[tuple[tuple[int, str], np.ndarray]]]] = {}
_VIEWS_KEPT = 4


def reference_views(dataset: Path, aspect: float | None) -> dict[str, list[tuple[tuple[int, str], np.ndarray]]]:
    """{artifact id: [((rank, sha256), views of the photograph at ``aspect``), ...]} of the dataset's reference
    photographs (featureless ones left out); empty without a references config. Remembered for the folders validated
    against one dataset, keyed by the references' files (name, size, mtime); an unreadable photograph is a
    usage error naming it."""
    folder = dataset / "data" / REFERENCE_CONFIGS[0]
    shards = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
    key = (os.path.realpath(dataset), aspect, tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in shards))
    if key in _VIEWS:
        return _VIEWS[key]
    photos, _ = read_references(dataset) if shards else ({}, {})
    out: dict[str, list[tuple[tuple[int, str], np.ndarray]]] = {}
    for artifact, rows in photos.items():
        for r in rows:
            try:
                with Image.open(io.BytesIO(r["data"])) as image:
                    image.load()
                    seen = views(image.convert("RGB"), aspect)
            except (OSError, ValueError, Image.DecompressionBombError) as exc:
                raise CultureboardError(folder, f"holds a reference photograph of {artifact} (rank {r['rank']}) that "
                                        f"cannot be read as an image ({exc})", "rebuild it: cultureboard "
                                        "fetch-references --dataset DIR", exit_code=2) from None
            if seen is not None:
                out.setdefault(artifact, []).append(((r["rank"], r["sha256"]), seen))
    if len(_VIEWS) >= _VIEWS_KEPT:
        _VIEWS.clear()
    _VIEWS[key] = out
    return out
