"""The registry of human-rating studies: name -> importer (path -> rows in the common ratings format).

A study registers itself in a module of this package (one per study; each is imported on the first lookup,
so adding a study adds a file and edits nothing)::

    @register_study("cure", title="CuRe user study (Rege et al. 2025)", url="https://arxiv.org/abs/2506.08071",
                    licence="MIT", writer="cultureboard.evaluators.results.studies.cure:import_cure_ratings")
    def import_cure(path, **options) -> pd.DataFrame | list[dict]:
        ...  # rows with the columns of ratings_format.COLUMNS, study = "cure"

:func:`import_study` runs the importer and validates its rows (``ratings_format.validate_rows``), so every
importer's output is checked the same way. ``writer`` ("module:function", imported when used) names the
study's own import into a ratings folder (its consensus, correlations or validity tables):
:func:`write_study` calls it, or :func:`write_ratings` for a study without one, so that ``cultureboard import
ratings --study NAME`` is one call for every study. ``licence`` is the licence of the study's released ratings (an
SPDX id); None where the study released none, so that a file in its layout is its collector's own data and
publishing it needs the collector's licence (``ratings_format.ratings_card``).
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pandas as pd

from cultureboard.errors import CultureboardError

from ..ratings_format import validate_rows

Importer = Callable[..., "pd.DataFrame | list[dict]"]


@dataclass(frozen=True)
class Study:
    name: str
    title: str
    url: str
    licence: str | None
    importer: Importer
    note: str = ""
    writer: str | None = None  # "module:function" importing a file into a ratings folder (see write_study)


_STUDIES: dict[str, Study] = {}
_loaded = False


def register_study(name: str, *, title: str, url: str, licence: str | None, note: str = "",
                   writer: str | None = None) -> Callable[[Importer], Importer]:
    """Decorator: register ``importer`` as study ``name``. A name registered twice is a programming error."""

    def register(importer: Importer) -> Importer:
        if name in _STUDIES and _STUDIES[name].importer is not importer:
            raise ValueError(f"study {name!r} is registered twice")
        _STUDIES[name] = Study(name, title, url, licence, importer, note, writer)
        return importer

    return register


def _load() -> None:
    global _loaded
    if not _loaded:
        for module in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{module.name}")
        _loaded = True


def studies() -> dict[str, Study]:
    """Every registered study, by name."""
    _load()
    return dict(sorted(_STUDIES.items()))


def get_study(name: str, required: bool = True) -> Study | None:
    _load()
    if name not in _STUDIES and required:
        raise CultureboardError(f"study {name!r}", "is not a registered ratings study",
                                f"use one of {', '.join(sorted(_STUDIES))}")
    return _STUDIES.get(name)


def import_study(name: str, path: str | Path, *, rated_in: dict[str, str | Path | None] | None = None,
                 **options) -> pd.DataFrame:
    """Import ``path`` with study ``name``'s importer (``options`` are the importer's own) and return its
    rows, validated, in the common format. Every row must name study ``name``, and every submission and image
    it rates must be in the folders ``rated_in`` gives ({"submissions": folder, "results": folder}, either None:
    ``rated_items.check_rated``)."""
    from ..rated_items import check_rated

    study = get_study(name)
    rows = validate_rows(study.importer(path, **options), f"{path} (imported as {name})")
    others = sorted(set(rows["study"]) - {name})
    if others:
        raise CultureboardError(path, f"the {name} importer produced rows of studies {others}",
                                f"set study = {name!r} on every row the importer returns")
    check_rated(rows, path, **(rated_in or {}))
    return rows


def write_ratings(path: str | Path, dataset: str | Path, out: str | Path, *, study: str, prompt_set: str,
                  reports: Callable[[pd.DataFrame], dict[str, dict]] | None = None, results: Path | None = None) -> dict:
    """The import of a study without a writer of its own: ``ratings.parquet`` (the common format) and
    ``agreement.json`` (Krippendorff's alpha and Fleiss' kappa per question and slice, with a provenance block),
    written to ``out`` atomically; ``reports`` (a study writer's) maps the rows to more JSON files {name: report},
    each given the same provenance block. ``results``: a results folder that must hold every rated submission and
    image."""
    import pyarrow.parquet as pq

    from cultureboard.atomic import atomic_dir, check_replaceable
    from cultureboard.dataset_folder import local_revision, read_prompt_set
    from cultureboard.provenance import code_provenance, file_sha256

    from ..agreement import agreement
    from ..ratings_format import to_table

    path, out = Path(path), Path(out)
    check_replaceable(out, kind="ratings")  # before the work
    rows = import_study(study, path, prompts=read_prompt_set(dataset, prompt_set), rated_in={"results": results})
    provenance = {"ratings": path.name, "ratings_sha256": file_sha256(path), "prompt_set": prompt_set,
                  "dataset_revision": local_revision(dataset), **code_provenance(("numpy", "pandas", "scipy"))}
    files = {"agreement.json": {"agreement": agreement(rows)}, **(reports(rows) if reports else {})}
    with atomic_dir(out, kind="ratings") as tmp:
        pq.write_table(to_table(rows), tmp / "ratings.parquet")
        for name, report in files.items():
            (tmp / name).write_text(json.dumps({**report, "provenance": provenance}, indent=2, ensure_ascii=False,
                                               allow_nan=False) + "\n", encoding="utf-8")
    return {"out": str(out), "rows": len(rows), "raters": int(rows["rater"].nunique()),
            "files": sorted(["ratings.parquet", *files])}


def write_study(name: str, path: str | Path, dataset: str | Path, out: str | Path, **options) -> dict:
    """Import the file ``path`` of study ``name`` against ``dataset`` into the ratings folder ``out``, with the
    study's writer (or :func:`write_ratings`); returns the writer's summary. ``options`` (``prompt_set``,
    ``scores``, ``results``, ``submissions``, ...; None means not given) go to the writer, which must take each
    given one with a value of that type; one it needs and is not given is an error too, naming its options."""
    study = get_study(name)
    if study.writer:
        module, _, function = study.writer.partition(":")
        writer = getattr(importlib.import_module(module), function)
    else:
        writer = partial(write_ratings, study=name)
    params = {k: p for k, p in inspect.signature(writer).parameters.items()
              if k not in ("path", "dataset", "out", "reports") and p.kind is not p.VAR_KEYWORD}
    hints = typing.get_type_hints(writer.func if isinstance(writer, partial) else writer)
    given = {k: v for k, v in options.items() if v is not None}
    takes = ", ".join(f"--{k.replace('_', '-')}" for k in params if k not in ("n_boot", "seed", "study")) or "none"
    for key, value in given.items():
        if key not in params or not _accepts(hints.get(key, typing.Any), value):
            option = f"--{key.replace('_', '-')}"
            what = f"takes no {option}" if key not in params else \
                f"takes {option} as {hints[key]}, not as {type(value).__name__} (call its writer from Python)"
            raise CultureboardError(f"study {name}", what, f"its options: {takes} (see {study.writer or 'write_ratings'})",
                                    exit_code=2)
    needed = [k for k, p in params.items() if p.default is p.empty and k not in given]
    if needed:
        raise CultureboardError(f"study {name}", f"needs {', '.join('--' + k.replace('_', '-') for k in needed)}",
                                f"its options: {takes}", exit_code=2)
    return writer(path=path, dataset=dataset, out=out, **given)


def _accepts(annotation, value) -> bool:
    """Whether ``value`` is of a type the annotation names (a union: any of its members; ``Path`` takes text)."""
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    kinds = typing.get_args(annotation) if union else (annotation,)
    for kind in kinds:
        if kind is typing.Any or (kind is Path and isinstance(value, str)):
            return True
        origin = typing.get_origin(kind) or kind
        if isinstance(origin, type) and isinstance(value, origin):
            return True
    return False
