"""The registry of human-rating studies: name -> importer (path -> rows in the common ratings format).

A study registers itself in a module of this package (one per study; each is imported on the first lookup,
so adding a study adds a file and edits nothing)::

    @register_study("cure", title="CuRe user study (Rege et al. 2025)", url="https://arxiv.org/abs/2506.08071",
                    licence="MIT")
    def import_cure(path, **options) -> pd.DataFrame | list[dict]:
        ...  # rows with the columns of ratings_format.COLUMNS, study = "cure"

:func:`import_study` runs the importer and validates its rows (``ratings_format.validate_rows``), so every
importer's output is checked the same way. ``licence`` is the licence of the study's released ratings (an
SPDX id); None where the study released none, so that a file in its layout is its collector's own data and
publishing it needs the collector's licence (``ratings_format.ratings_card``).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
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


_STUDIES: dict[str, Study] = {}
_loaded = False


def register_study(name: str, *, title: str, url: str, licence: str | None, note: str = "") -> Callable[[Importer], Importer]:
    """Decorator: register ``importer`` as study ``name``. A name registered twice is a programming error."""

    def register(importer: Importer) -> Importer:
        if name in _STUDIES and _STUDIES[name].importer is not importer:
            raise ValueError(f"study {name!r} is registered twice")
        _STUDIES[name] = Study(name, title, url, licence, importer, note)
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


def import_study(name: str, path: str | Path, **options) -> pd.DataFrame:
    """Import ``path`` with study ``name``'s importer (``options`` are the importer's own) and return its
    rows, validated, in the common format. Every row must name study ``name``."""
    study = get_study(name)
    rows = validate_rows(study.importer(path, **options), f"{path} (imported as {name})")
    others = sorted(set(rows["study"]) - {name})
    if others:
        raise CultureboardError(path, f"the {name} importer produced rows of studies {others}",
                                f"set study = {name!r} on every row the importer returns")
    return rows
