"""The rows of a study's ratings file (.csv with a header row, or .jsonl, one object a line) and its cells, read
the same way by every study importer.

:func:`read_records` gives each row with its line number, its cells as the file has them; a row that is not a row (more
cells than the header, invalid JSON, not an object, unknown keys) becomes one problem line
``FILE:LINE: problem (fix: ...)`` so that an importer reports every problem of a file at once. So does a row
with a pathological cell (:func:`cell_problem`: NaN or infinity written as a JSON constant or as text such as
``nan``, an integer beyond 64 bits, containers nested deeper than :data:`MAX_DEPTH`, JSON nested too deep to
parse, a text that is not an id (:data:`cultureboard.text.IDENTIFIER`: a control, bidirectional or zero-width
character, which would make ``j<ZWSP>1`` a rater apart from ``j1``) in a cell that is not a comment, a comment
that is not text (:data:`cultureboard.text.FIELD`)). A file that cannot be
read at all (missing, another format, not UTF-8, a CSV header with unknown or without required columns) is a
:class:`~cultureboard.errors.CultureboardError`.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import numbers
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from cultureboard.errors import CultureboardError
from cultureboard.text import FIELD, IDENTIFIER, printable, text_problem

_FIX_FILE = "pass the path of a .csv or .jsonl ratings file"
#: How deep containers may nest in a JSONL row (a study's export holds at most a list of labels in a cell).
MAX_DEPTH = 4
_NOT_FINITE = frozenset({"nan", "+nan", "-nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"})
_ROW_FIX = ("write each cell as text or a finite number, an id without control, bidirectional or invisible "
            "characters; leave a cell empty for no answer")
#: A cell that is not a comment: an id or a label, blank when empty.
_CELL = dataclasses.replace(IDENTIFIER, empty=True, max_chars=10_000)


def cell_problem(column: str, value, depth: int = 0) -> str | None:
    """Why ``value`` cannot be the cell ``column`` of a ratings row, or None: a text reading NaN or infinity (an
    empty cell is how a file says "no answer"), an integer beyond 64 bits, a non-finite float, containers nested
    deeper than :data:`MAX_DEPTH`, or a text that is not an id (a comment: not a text; the module docstring)."""
    if isinstance(value, str):
        if value.strip().casefold() in _NOT_FINITE:
            return f"{column} {printable(value, 40)} reads as NaN or infinity, which is not an answer"
        comment = "comment" in column.casefold()
        problem = text_problem(value if comment else value.strip(), FIELD if comment else _CELL)
        return None if problem is None else f"{column} {printable(value, 40)} {problem}"
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return None if -2**63 <= value < 2**64 else f"{column} holds an integer beyond 64 bits"
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{column} holds NaN or infinity, which is not an answer"
    if depth >= MAX_DEPTH:
        return f"{column} nests containers more than {MAX_DEPTH} deep"
    items = value.items() if isinstance(value, dict) else enumerate(value)
    return next((found for _, v in items if (found := cell_problem(column, v, depth + 1))), None)


def _row_problem(row: dict) -> str | None:
    return next((found for k, v in row.items() if (found := cell_problem(str(k), v))), None)


def read_records(path: Path, columns: Sequence[str] | None, required: Sequence[str | tuple[str, ...]] = ("rater",)
                 ) -> tuple[list[tuple[int, dict]], list[str]]:
    """(line, row) of every row of ``path``, and the problems of rows that are not rows (module docstring).

    ``columns``: the names a row may use (None: any, left to the caller to check); ``required``: the columns a CSV header must have (a tuple: any one of
    its names), each JSONL row's own content being the importer's to check."""
    path = Path(path)
    if not path.is_file():
        raise CultureboardError(path, "does not exist", _FIX_FILE)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".jsonl"):
        raise CultureboardError(path, f"has the extension {suffix!r}", "save the ratings as .csv or .jsonl")
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            return _csv(path, fh, columns, required) if suffix == ".csv" else _jsonl(path, fh, columns)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise CultureboardError(path, f"cannot be read ({exc.__class__.__name__})", "save it as UTF-8 text") from None


def _csv(path: Path, fh, columns, required) -> tuple[list[tuple[int, dict]], list[str]]:
    reader = csv.DictReader(fh)
    header = reader.fieldnames or []
    missing = [" or ".join(r) if isinstance(r, tuple) else r for r in required
               if not set(r if isinstance(r, tuple) else (r,)) & set(header)]
    unknown = [c for c in header if columns is not None and c not in columns]
    if missing or unknown:
        needed = ", ".join(" or ".join(r) if isinstance(r, tuple) else r for r in required)
        raise CultureboardError(path, f"header: missing columns {missing}, unknown columns {unknown}",
                                f"the columns are {', '.join(columns or header)}; {needed} required")
    records, problems = [], []
    for raw in reader:
        if None in raw:
            problems.append(f"{path}:{reader.line_num}: has more cells than the header (fix: quote cells that "
                            "contain commas)")
        elif found := _row_problem(raw):
            problems.append(f"{path}:{reader.line_num}: {found} (fix: {_ROW_FIX})")
        else:
            records.append((reader.line_num, raw))
    return records, problems


def _jsonl(path: Path, fh, columns) -> tuple[list[tuple[int, dict]], list[str]]:
    records, problems = [], []
    for line, text in enumerate(fh, 1):
        if not text.strip():
            continue
        try:
            raw = json.loads(text, parse_constant=_refuse_constant)
        except json.JSONDecodeError as exc:
            problems.append(f"{path}:{line}: is not valid JSON ({exc.msg}) (fix: write one JSON object per line)")
            continue
        except (ValueError, RecursionError) as exc:  # NaN / Infinity, an integer of thousands of digits, deep nesting
            reason = str(exc) if isinstance(exc, ValueError) else "nested too deep to read"
            problems.append(f"{path}:{line}: is not a ratings row ({reason[:80]}) (fix: {_ROW_FIX})")
            continue
        if not isinstance(raw, dict):
            problems.append(f"{path}:{line}: is not a JSON object (fix: write one JSON object per line)")
            continue
        unknown = [c for c in raw if columns is not None and c not in columns]
        if unknown:
            problems.append(f"{path}:{line}: unknown keys {unknown} (fix: use only {', '.join(columns)})")
            continue
        if found := _row_problem(raw):
            problems.append(f"{path}:{line}: {found} (fix: {_ROW_FIX})")
            continue
        records.append((line, raw))
    return records, problems


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def missing(value) -> bool:
    """None, NaN or pandas' NA: an empty cell."""
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def text(value) -> str | None:
    """A cell as stripped text; None when empty."""
    if missing(value):
        return None
    value = str(value).strip()
    return value or None


def integer(value, low: float = -math.inf, high: float = math.inf) -> int | None:
    """A cell as an integer in [low, high] (``3``, ``"3"``, ``3.0``); None when empty; ValueError otherwise
    (``3.5``, ``"x"``, ``true``, out of range)."""
    if isinstance(value, str):
        value = float(value) if value.strip() else None  # ValueError for text that is no number
        if value is not None and not math.isfinite(value):  # "nan" is not an empty cell
            raise ValueError(value)
    if missing(value):
        return None
    if (isinstance(value, bool) or not isinstance(value, numbers.Real) or not low <= value <= high
            or not (isinstance(value, int) or float(value).is_integer())):
        raise ValueError(value)
    return int(value)
