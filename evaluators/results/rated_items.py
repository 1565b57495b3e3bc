"""Ratings name only submissions and images that exist, wherever the import can look them up.

Every study's import (``studies.import_study``) checks its common-format rows against the folder it was given:

* a **submissions** folder (``--submissions``: ``SUBMISSIONS/<id>/metadata.jsonl``, or one submission folder
  holding ``metadata.jsonl`` itself): a rated submission must be one of its folders, a rated image one of the
  rows of its ``metadata.jsonl``;
* a **results** folder (``--results``: ``RESULTS/<id>/scores.parquet``): a rated submission must have results
  there, a rated image scores.

A row names an image by ``image_sha256``, ``file_name``, or ``prompt_id`` with ``sample_idx`` (a row with a
``prompt_id`` and no ``sample_idx`` rates the prompt, e.g. a CuRe artifact, so only its submission is checked).
A row without a submission is of the folder's only submission; with several, only its image's existence cannot
be checked here (the study's own tables refuse it). Without either folder only the prompt set is checked (by the
importers). Each unknown id is one line ``FILE:LINE: COLUMN ID: problem (fix: ...)``, the line being the first
row of the file that names it; all of them at once, and nothing is imported.

Scores given to correlate with the ratings (``--scores``) must score some rated image: :func:`require_shared`
refuses a scores file that shares none (another submission's, whose validity tables would hold n = 0 everywhere).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from cultureboard.atomic import output_folders
from cultureboard.errors import CultureboardError

from ..submission.format import METADATA, read_metadata
from .ratings_files import read_records


@dataclass
class _Images:
    """The images of one submission, by each of the keys a rating may use."""

    sha256: set = field(default_factory=set)
    file_name: set = field(default_factory=set)
    slot: set = field(default_factory=set)  # (prompt_id, sample_idx)


def _from_metadata(folder: Path) -> _Images:
    images = _Images()
    for meta in read_metadata(folder / METADATA):
        images.sha256.add(meta.get("sha256"))
        images.file_name.add(meta.get("file_name"))
        images.slot.add((meta.get("prompt_id"), meta.get("sample_idx")))
    return images


def _from_scores(folder: Path) -> _Images:
    path = folder / "scores.parquet"
    try:
        names = set(pq.read_schema(path).names)
        keys = [c for c in ("sha256", "file_name", "prompt_id", "sample_idx") if c in names]
        columns = pq.read_table(path, columns=keys).to_pydict()
    except (OSError, pa.ArrowException) as exc:
        raise CultureboardError(path, f"cannot be read as parquet ({exc.__class__.__name__})",
                                "evaluate the submission into this results folder again") from None
    slots = zip(columns.get("prompt_id", []), columns.get("sample_idx", []))
    return _Images(set(columns.get("sha256", [])), set(columns.get("file_name", [])), set(slots))


def _submissions(submissions: Path | None, results: Path | None
                 ) -> tuple[Path, dict[str, Path], Callable[[Path], _Images]]:
    """(the folder, submission id -> its folder, the reader of a folder's images)."""
    if submissions is not None and (submissions / METADATA).is_file():
        return submissions, {submissions.name: submissions}, _from_metadata
    folder, holds, read = ((submissions, METADATA, _from_metadata) if submissions is not None
                           else (results, "scores.parquet", _from_scores))
    found = {p.name: p for p in output_folders(folder) if (p / holds).is_file()} if folder.is_dir() else {}
    return folder, found, read


def check_rated(rows: pd.DataFrame, path: str | Path, *, submissions: str | Path | None = None,
                results: str | Path | None = None) -> None:
    """Raise one :class:`CultureboardError` listing every submission or image of ``rows`` (validated common-format
    rows read from the ratings file ``path``) that ``submissions`` or ``results`` lacks (module docstring)."""
    if submissions is None and results is None:
        return
    folder, known, read = _submissions(Path(submissions) if submissions is not None else None,
                                       Path(results) if results is not None else None)
    kind = "submission folder (with metadata.jsonl)" if submissions is not None else "results (scores.parquet)"
    only = next(iter(known)) if len(known) == 1 else None
    images: dict[str, _Images] = {}
    unknown: dict[tuple[str, tuple[str, ...]], tuple[str, str]] = {}  # (column, its cells) -> (problem, fix)
    for row in rows.drop_duplicates(["submission", "image_sha256", "file_name", "prompt_id", "sample_idx"]).itertuples():
        sid = row.submission if isinstance(row.submission, str) else only
        if sid is None:
            continue
        if sid not in known:
            unknown[("submission", (sid,))] = (f"has no {kind} in {folder}",
                                            f"correct the submission id, or pass the folder that holds {sid}")
            continue
        have = images.setdefault(sid, read(known[sid]))
        for column, key, pool in (("image_sha256", row.image_sha256, have.sha256),
                                  ("file_name", row.file_name, have.file_name),
                                  ("prompt_id", (row.prompt_id, row.sample_idx), have.slot)):
            if column == "prompt_id":
                given = (key[0], int(key[1])) if isinstance(key[0], str) and not pd.isna(key[1]) else None
            else:
                given = key if isinstance(key, str) else None
            if given is None:
                continue
            if given not in pool:
                cells = (given[0], str(given[1])) if column == "prompt_id" else (given,)
                what = f"sample {given[1]} of it " if column == "prompt_id" else ""
                unknown[(column, cells)] = (f"{what}is not an image of {sid} in {folder}",
                                           f"name an image of the submission {sid}, or correct the submission")
            break  # the first key the row gives names its image
    if unknown:
        lines = [f"{_first_line(path, cells)}: {column} {cells[0]!r}: {problem} (fix: {fix})"
                 for (column, cells), (problem, fix) in unknown.items()]
        raise CultureboardError(path, f"{len(lines)} problem(s) in the ratings:\n  " + "\n  ".join(lines),
                                "correct every row listed above; nothing was imported")


def _first_line(path: str | Path, cells: tuple[str, ...]) -> str:
    """``FILE:LINE`` of the first row of the ratings file holding each of ``cells`` as a cell, else of the first
    row with a cell containing the first of them (an id inside a composite cell); ``FILE`` when none does (an id
    a study derives, e.g. from a mapping)."""
    records, _ = read_records(Path(path), None, ())
    texts = [(line, [str(v).strip() for v in raw.values()]) for line, raw in records]
    line = next((line for line, row in texts if all(c in row for c in cells)), None)
    if line is None:
        line = next((line for line, row in texts if any(cells[0] in v for v in row)), None)
    return f"{path}:{line}" if line is not None else str(path)


def require_shared(shared: int, rated: int, scores: str | Path) -> None:
    """A :class:`CultureboardError` naming ``scores`` when none of the ``rated`` images (or items) has a score there
    (``shared`` of them do)."""
    if rated and not shared:
        raise CultureboardError(scores, f"scores none of the {rated:,} rated images (it shares no image with the "
                                "ratings: the scores of another submission?)",
                                "pass the scores.parquet of the rated submission (RESULTS/<submission id>/"
                                "scores.parquet), or name the rated images as those scores do")
