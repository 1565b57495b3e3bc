"""The papers' own numbers as data: their tables (``data/reported/<family>.yaml``) and their metric-human
correlations (``data/reported/validity.yaml``), each with its source. The site shows them as *reported*,
beside cultureboard's numbers and never ranked with them.

A table file holds ``paper``, ``family``, ``url`` (optional ``authors``, ``venue``) and ``tables``; each table
has ``table`` ("Table 3"), ``caption`` (as printed), ``labels`` (the columns that say what a row is),
``numbers`` (the columns that hold numbers), optional ``notes``, and ``rows`` (one mapping per printed cell
group, with every label and number column). Numbers are transcribed as printed: the loader keeps each one's
printed text (``"0.10"``, ``"+0.4"``, ``"0.019*"``: a trailing ``*`` is a mark the paper prints) in
``printed`` and its value as a float in ``rows``; null is a cell the paper leaves empty or prints as "-".
``validity.yaml`` holds ``sources`` (family -> paper, url), ``labels``, ``numbers``, ``notes`` (family ->
text) and ``rows`` in the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from cultureboard.errors import CultureboardError

DATA = Path(__file__).parent / "data" / "reported"
VALIDITY = DATA / "validity.yaml"
#: Not paper tables: the correlations (load_validity) and the cards' evidence records (tiers.py).
NOT_TABLES = (VALIDITY.name, "evidence.yaml")
_PRINTED = re.compile(r"[+-]?\d+(?:\.\d+)?\*?")
_FIX = "write every label as text and every number as printed in the paper (or null where it prints none)"


class _AsPrinted(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """SafeLoader (libyaml's where PyYAML has it: 5-7x faster, the same documents) that leaves numbers as their
    text, so that ``0.10`` stays "0.10"."""


_AsPrinted.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclass(frozen=True)
class ReportedTable:
    family: str
    paper: str
    url: str
    table: str
    caption: str
    labels: tuple[str, ...]
    numbers: tuple[str, ...]
    notes: tuple[str, ...]
    rows: tuple[dict, ...]  # label -> text, number -> float or None
    printed: tuple[dict, ...]  # number -> its printed text or None, parallel to rows

    def frame(self) -> pd.DataFrame:
        """The rows as a DataFrame: label columns, then number columns (floats, NaN where not printed)."""
        return pd.DataFrame(list(self.rows), columns=[*self.labels, *self.numbers])


def load_reported(family: str | None = None, folder: str | Path = DATA) -> list[ReportedTable]:
    """Every table of every paper file in ``folder`` (all but :data:`NOT_TABLES`), or of ``family`` only,
    validated (:func:`_rows`), in file and table order."""
    out = []
    for path in sorted(Path(folder).glob("*.yaml")):
        if path.name in NOT_TABLES:
            continue
        doc = _read(path, {"paper", "family", "url", "tables"}, {"authors", "venue"})
        if family is not None and doc["family"] != family:
            continue
        if not isinstance(doc["tables"], list) or not doc["tables"]:
            raise CultureboardError(path, "has no tables", "list the paper's tables under tables:")
        for entry in doc["tables"]:
            name = entry.get("table", "?") if isinstance(entry, dict) else repr(entry)
            where = f"{path}: {name}"
            _keys(where, entry, {"table", "caption", "labels", "numbers", "rows"}, {"notes"})
            rows, printed = _rows(where, entry)
            out.append(ReportedTable(doc["family"], doc["paper"], doc["url"], entry["table"], entry["caption"],
                                     tuple(entry["labels"]), tuple(entry["numbers"]), tuple(entry.get("notes") or ()),
                                     rows, printed))
    if family is not None and not out:
        raise CultureboardError(f"family {family!r}", f"has no reported tables in {folder}",
                                "use a family with a data/reported/<family>.yaml file")
    return out


def load_validity(path: str | Path = VALIDITY) -> list[dict]:
    """The reported metric-human correlations: one dict per row with its labels (``family, source, metric,
    human, statistic, slice``), ``value`` (float), ``printed`` (its text), and the family's ``paper``,
    ``url`` and ``note``."""
    path = Path(path)
    doc = _read(path, {"sources", "labels", "numbers", "rows"}, {"notes"})
    if doc["numbers"] != ["value"] or "family" not in doc["labels"]:
        raise CultureboardError(path, "must have numbers: [value] and a family label",
                                "give each correlation as one value, with the family whose paper reports it")
    rows, printed = _rows(str(path), doc)
    out = []
    for i, (row, text) in enumerate(zip(rows, printed), 1):
        source = doc["sources"].get(row.get("family"))
        if not isinstance(source, dict) or not {"paper", "url"} <= set(source):
            raise CultureboardError(f"{path}: row {i}", f"names family {row.get('family')!r}, which has no source",
                                    "add it under sources: with its paper and url")
        out.append({**row, "printed": text["value"], "paper": source["paper"], "url": source["url"],
                    "note": (doc.get("notes") or {}).get(row["family"], "")})
    return out


def _read(path: Path, required: set[str], optional: set[str]) -> dict:
    try:
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=_AsPrinted)  # a SafeLoader
    except (OSError, yaml.YAMLError) as exc:
        raise CultureboardError(path, f"cannot be read as YAML ({exc})", "fix the file's YAML syntax") from None
    _keys(str(path), doc, required, optional)
    return doc


def _keys(where: str, doc, required: set[str], optional: set[str]) -> None:
    if not isinstance(doc, dict):
        raise CultureboardError(where, "is not a mapping", f"give it the keys {', '.join(sorted(required))}")
    missing, unknown = sorted(required - set(doc)), sorted(set(doc) - required - optional)
    if missing or unknown:
        raise CultureboardError(where, f"keys: missing {missing}, unknown {unknown}",
                                f"the keys are {', '.join(sorted(required | optional))}")


def _rows(where: str, entry: dict) -> tuple[tuple[dict, ...], tuple[dict, ...]]:
    """The rows with numbers as floats, and their printed texts; every row must have exactly the label and
    number columns, labels must be text, numbers printed numbers or null, and no two rows the same labels."""
    labels, numbers = entry["labels"], entry["numbers"]
    if (not isinstance(labels, list) or not isinstance(numbers, list) or not numbers
            or not all(isinstance(c, str) for c in labels + numbers) or len(set(labels + numbers)) != len(labels + numbers)):
        raise CultureboardError(where, "labels and numbers must be lists of distinct column names",
                                "list the label columns under labels: and the number columns under numbers:")
    if not isinstance(entry["rows"], list) or not entry["rows"]:
        raise CultureboardError(where, "has no rows", "transcribe the table's rows under rows:")
    rows, printed, seen = [], [], {}
    for i, raw in enumerate(entry["rows"], 1):
        at = f"{where} row {i}"
        if not isinstance(raw, dict) or set(raw) != set(labels + numbers):
            got = sorted(raw) if isinstance(raw, dict) else raw
            raise CultureboardError(at, f"has the columns {got}, not {labels + numbers}", _FIX)
        bad = [c for c in labels if not isinstance(raw[c], str) or not raw[c]]
        bad += [c for c in numbers if raw[c] is not None and not (isinstance(raw[c], str) and _PRINTED.fullmatch(raw[c]))]
        if bad:
            raise CultureboardError(at, f"columns {bad} are not " + ("text" if bad[0] in labels else "printed numbers")
                                    + f": {[raw[c] for c in bad]}", _FIX)
        key = tuple(raw[c] for c in labels)
        if key in seen:
            raise CultureboardError(at, f"repeats the labels of row {seen[key]}: {dict(zip(labels, key))}",
                                    "give each row its own labels")
        seen[key] = i
        rows.append({**{c: raw[c] for c in labels},
                     **{c: None if raw[c] is None else float(raw[c].rstrip("*")) for c in numbers}})
        printed.append({c: raw[c] for c in numbers})
    return tuple(rows), tuple(printed)
