"""One format for human ratings from every study (CUBE, CuRe, CultDiff, CULTIVate, ECB, and our own).

A ratings table has one row per rater x item x question. Its columns (:data:`COLUMNS`):

==============  =======  ========  ==============================================================================
column          type     required  meaning
==============  =======  ========  ==============================================================================
study           string   yes       the study the rating comes from: a registered study name (``cube``, ...)
rater           string   yes       the rater's id, unique within the study (pseudonymous)
rater_country   string   no        ISO 3166-1 alpha-2 code of the rater's country, where the study records it
rater_region    string   no        the rater's region where only that is recorded (e.g. ``GS``, ``Africa``)
in_country      bool     no        the rater belongs to the item's country; filled from rater_country = country
                                   when both are known and the study gives no flag
image_sha256    string   one of    sha256 (64 lower-case hex) of the rated image's bytes
prompt_id       string   one of    the prompt the rated image was generated from
item_id         string   one of    a study's own id for an item that is none of these (e.g. an image pair)
file_name       string   one of    the image's ``file_name`` in its submission's ``metadata.jsonl``
sample_idx      int64    no        which image of the prompt (0-based), when the prompt has several
country         string   no        the item's country (ISO alpha-2), for slicing and ``in_country``
category        string   no        the item's category, for slicing
question        string   yes       the study's question id (``relevance``, ``faithfulness``, ...)
value           float64  yes       the answer as a number on ``scale``
scale           string   yes       the answer's scale (below); one scale per study and question
model           string   no        the generator of the rated image
submission      string   no        the cultureboard submission id of the rated image
comment         string   no        the rater's free-text remark
==============  =======  ========  ==============================================================================

"one of": every row names its item by at least one of them. An item is identified by :data:`ITEM` (study,
submission, model, image_sha256, prompt_id, sample_idx, item_id, file_name) together, so an importer names
each item the same way in every row. Scales (:func:`parse_scale`):

* ``likert:LOW..HIGH`` -- integers LOW to HIGH, ordinal (``likert:1..5``);
* ``ordinal:LABEL=CODE,...`` -- ordered answers coded as numbers (``ordinal:no=0,maybe=0.5,yes=1``); ``value``
  is the code;
* ``nominal:LABEL=CODE,...`` -- unordered answers (``nominal:left=0,right=1``);
* ``interval:LOW..HIGH`` -- any real number in [LOW, HIGH] (``interval:0..1``).

Files are read and written as parquet, CSV (header row; empty cell = null; ``in_country`` as true/false) or
JSONL (one object per line, null or absent = null). :func:`read_ratings` / :func:`validate_rows` report every
problem at once, one line each, as ``FILE:LINE: COLUMN VALUE: problem (fix: ...)`` (``FILE:row N`` for parquet
and in-memory rows), and return nothing when there is one.

Published as the ``ratings`` config of a dataset folder (:func:`write_ratings_config`, :func:`ratings_card`),
with each study's licence.
"""

from __future__ import annotations

import csv
import io
import json
import math
import numbers
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from cultureboard.atomic import atomic_write_bytes
from cultureboard.countries import load_countries
from cultureboard.errors import CultureboardError

from .ratings_files import integer, missing, read_records, text

#: The columns in order, with their arrow types.
SCHEMA = pa.schema([
    ("study", pa.string()), ("rater", pa.string()), ("rater_country", pa.string()), ("rater_region", pa.string()),
    ("in_country", pa.bool_()), ("image_sha256", pa.string()), ("prompt_id", pa.string()), ("item_id", pa.string()),
    ("sample_idx", pa.int64()), ("file_name", pa.string()), ("country", pa.string()), ("category", pa.string()),
    ("question", pa.string()), ("value", pa.float64()), ("scale", pa.string()), ("model", pa.string()),
    ("submission", pa.string()), ("comment", pa.string()),
])
COLUMNS = tuple(SCHEMA.names)
REQUIRED = ("study", "rater", "question", "value", "scale")
#: The columns that name an item; at least one of :data:`ITEM_NAMES` must be given.
ITEM = ["study", "submission", "model", "image_sha256", "prompt_id", "sample_idx", "item_id", "file_name"]
ITEM_NAMES = ("image_sha256", "prompt_id", "item_id", "file_name")
#: The config name and shard of the published ratings (Hub layout of ``builder.dataset``: split ``test``).
CONFIG = "ratings"
SHARD = f"data/{CONFIG}/test-00000-of-00001.parquet"
SUFFIXES = (".parquet", ".csv", ".jsonl")

_STUDY = re.compile(r"[a-z0-9][a-z0-9-]*")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_TEXT = ("study", "rater", "rater_country", "rater_region", "image_sha256", "prompt_id", "item_id", "file_name",
         "country", "category", "question", "scale", "model", "submission", "comment")


@dataclass(frozen=True)
class Scale:
    """A parsed scale: ``level`` (nominal | ordinal | interval, for Krippendorff's alpha), the bounds, and
    for labelled and Likert scales the ``codes`` (label -> value, in scale order)."""

    spec: str
    level: str
    low: float
    high: float
    codes: tuple[tuple[str, float], ...] | None

    @property
    def categories(self) -> tuple[float, ...] | None:
        """The allowed values of a discrete scale in order (for Fleiss' kappa); None for an interval scale."""
        return None if self.codes is None else tuple(code for _, code in self.codes)

    def label(self, value: float) -> str:
        return next(label for label, code in self.codes or () if code == value)

    def accepts(self, value: float) -> bool:
        if self.codes is not None:
            return value in self.categories
        return self.low <= value <= self.high


def parse_scale(spec: str) -> Scale:
    """Parse a scale spec (module docstring). Raises ValueError with the reason for a bad spec."""
    kind, _, body = str(spec).partition(":")
    if kind in ("likert", "interval"):
        low, sep, high = body.partition("..")
        try:
            low, high = float(low), float(high)
        except ValueError:
            raise ValueError(f"{kind} needs LOW..HIGH, e.g. {kind}:1..5") from None
        if not sep or not low < high:
            raise ValueError(f"{kind} needs LOW..HIGH with LOW < HIGH")
        if kind == "interval":
            return Scale(spec, "interval", low, high, None)
        if not (low.is_integer() and high.is_integer()):
            raise ValueError("likert bounds must be integers")
        values = range(int(low), int(high) + 1)
        return Scale(spec, "ordinal", low, high, tuple((str(v), float(v)) for v in values))
    if kind in ("ordinal", "nominal"):
        codes = []
        for part in body.split(","):
            label, sep, code = part.partition("=")
            try:
                codes.append((label.strip(), float(code)))
            except ValueError:
                raise ValueError(f"{kind} needs LABEL=CODE pairs, e.g. {kind}:no=0,yes=1") from None
            if not sep or not label.strip():
                raise ValueError(f"{kind} needs LABEL=CODE pairs, e.g. {kind}:no=0,yes=1")
        values = [c for _, c in codes]
        if len(codes) < 2 or len(set(values)) != len(values) or len({lab for lab, _ in codes}) != len(codes):
            raise ValueError(f"{kind} needs at least two distinct labels with distinct codes")
        if kind == "ordinal" and values != sorted(values):
            raise ValueError("ordinal codes must increase from the first label to the last")
        return Scale(spec, kind, min(values), max(values), tuple(codes))
    raise ValueError("the kinds are likert:LOW..HIGH, ordinal:LABEL=CODE,..., nominal:LABEL=CODE,..., interval:LOW..HIGH")


def read_ratings(path: str | Path) -> pd.DataFrame:
    """Read and validate a ratings file (.parquet, .csv or .jsonl); see :func:`validate_rows`."""
    path = Path(path)
    if not path.is_file():
        raise CultureboardError(path, "does not exist", "pass the path of a .parquet, .csv or .jsonl ratings file")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        try:
            table = pq.read_table(path)
        except (OSError, pa.ArrowException) as exc:
            raise CultureboardError(path, f"cannot be read as parquet ({exc})", "write it with write_ratings") from None
        records = [(f"{path}:row {i}", row) for i, row in enumerate(table.to_pylist(), 1)]
        return _validate(records, path, list(table.column_names))
    if suffix in (".csv", ".jsonl"):  # columns are checked by _validate, with every row's problems
        lines, problems = read_records(path, None, ())
        records = [(f"{path}:{line}", {k: (None if v == "" else v) for k, v in raw.items()}) for line, raw in lines]
        header = list(dict.fromkeys(k for _, raw in lines for k in raw))
        return _validate(records, path, header, problems, tabular=suffix == ".csv")
    raise CultureboardError(path, f"has the extension {suffix!r}", "save the ratings as .parquet, .csv or .jsonl")


def validate_rows(rows: pd.DataFrame | list[dict], source: str = "ratings") -> pd.DataFrame:
    """Check and normalise ratings rows (a DataFrame or a list of dicts, e.g. an importer's output).

    Returns a DataFrame with exactly :data:`COLUMNS` in order (absent optional columns are null; strings
    stripped, empty = null; ISO codes upper-cased; ``in_country`` filled from ``rater_country == country``
    where it is null and both are known).

    Raises:
        CultureboardError: naming every problem, one line each with its row and fix: an unknown or missing
            column, a missing required value, an unknown country code, a row that names no item, a bad
            sha256, sample_idx or scale, a value the scale does not allow, an in_country flag that
            contradicts the two countries, a question asked on two scales, the same rater answering the
            same question about the same item twice.
    """
    if isinstance(rows, pd.DataFrame):
        header = list(rows.columns)
        rows = rows.astype(object).where(rows.notna(), None).to_dict("records")
    else:
        header = list(dict.fromkeys(k for row in rows for k in row))
    return _validate([(f"{source}:row {i}", row) for i, row in enumerate(rows, 1)], source, header, tabular=False)


def write_ratings(rows: pd.DataFrame | list[dict], path: str | Path) -> Path:
    """Validate ``rows`` and write them to ``path`` (.parquet, .csv or .jsonl by its suffix) atomically."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise CultureboardError(path, f"has the extension {suffix!r}", "write the ratings as .parquet, .csv or .jsonl")
    frame = validate_rows(rows, str(path))
    atomic_write_bytes(path, _encode(frame, suffix))
    return path


def _encode(frame: pd.DataFrame, suffix: str) -> bytes:
    if suffix == ".parquet":
        sink = io.BytesIO()
        pq.write_table(to_table(frame), sink, compression="zstd")
        return sink.getvalue()
    records = to_table(frame).to_pylist()
    if suffix == ".jsonl":
        return "".join(json.dumps({k: v for k, v in r.items() if v is not None}, ensure_ascii=False) + "\n"
                       for r in records).encode("utf-8")
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in records:
        writer.writerow({k: ("" if v is None else str(v).lower() if isinstance(v, bool) else v) for k, v in r.items()})
    return text.getvalue().encode("utf-8")


def to_table(frame: pd.DataFrame) -> pa.Table:
    """Validated rows as an arrow table with :data:`SCHEMA`."""
    return pa.Table.from_pandas(frame[list(COLUMNS)], schema=SCHEMA, preserve_index=False)


def write_ratings_config(rows: pd.DataFrame | list[dict], dataset: str | Path) -> Path:
    """Write validated ``rows`` as the ``ratings`` config of dataset folder ``dataset``: the parquet shard
    :data:`SHARD` (replaced atomically). Add :func:`ratings_card`'s snippet to the folder's card."""
    dataset = Path(dataset)
    if not (dataset / "data").is_dir():
        raise CultureboardError(dataset, "is not a dataset folder (no data/ folder)",
                                "pass the --out folder of `cultureboard build`, or a download of the Hub dataset")
    frame = validate_rows(rows, "ratings")
    path = dataset / SHARD
    atomic_write_bytes(path, _encode(frame, ".parquet"))
    return path


def ratings_card(rows: pd.DataFrame, licences: dict[str, str] | None = None) -> dict:
    """The dataset-card pieces of the ``ratings`` config: ``config`` (the YAML ``configs`` entry), ``licences``
    (study -> licence) and ``markdown`` (a section with one line per study: rows, raters, questions, licence,
    source). A study's licence is ``licences[study]``, else the one its registration declares.

    Raises:
        CultureboardError: a study with no known licence (its ratings cannot be published without one).
    """
    from .studies import get_study

    licences = dict(licences or {})
    lines = ["## Human ratings (config `ratings`)\n",
             "One row per rater x item x question, in cultureboard's ratings format (columns: "
             + ", ".join(f"`{c}`" for c in COLUMNS) + "). Each study's rows carry that study's licence:\n",
             "| study | rows | raters | questions | licence | source |", "|---|---|---|---|---|---|"]
    for name, part in rows.groupby("study", sort=True):
        known = get_study(name, required=False)
        licence = licences.get(name) or (known.licence if known else None)
        if not licence:
            raise CultureboardError(f"study {name!r}", "has no licence, so its ratings cannot be published",
                                    f"pass licences={{'{name}': '<SPDX id>'}} with the licence of the ratings file")
        licences[name] = licence
        questions = ", ".join(f"{q} ({s})" for q, s in part.groupby("question")["scale"].first().items())
        lines.append(f"| {name} | {len(part)} | {part['rater'].nunique()} | {questions} | {licence} | "
                     f"{known.url if known else '-'} |")
    config = {"config_name": CONFIG, "data_files": [{"split": "test", "path": f"data/{CONFIG}/*.parquet"}]}
    return {"config": config, "licences": {k: licences[k] for k in sorted(rows["study"].unique())},
            "markdown": "\n".join(lines) + "\n"}


# --- validation


def _validate(records: list[tuple[str, dict]], source, header: list[str], problems: list[str] | None = None,
              tabular: bool = True) -> pd.DataFrame:
    """``header``: the file's columns (tabular files: a required one missing is a file error) or the keys seen
    in any record (JSONL and dicts: a missing key is a null, reported per row where it is required)."""
    problems = list(problems or [])
    unknown = [c for c in header if c not in COLUMNS]
    missing = [c for c in REQUIRED if c not in header] if tabular else []
    if records and (unknown or missing):
        raise CultureboardError(source, f"columns: missing {missing}, unknown {unknown}",
                                f"the columns are {', '.join(COLUMNS)}; {', '.join(REQUIRED)} are required")
    countries = load_countries()
    scales: dict[str, Scale | str] = {}  # spec -> parsed scale, or why it is not one
    first_scale: dict[tuple[str, str], tuple[str, str]] = {}
    seen: dict[tuple, str] = {}
    out = []
    for where, raw in records:
        def bad(column, value, problem, fix, where=where):
            problems.append(f"{where}: {column} {value!r}: {problem} (fix: {fix})")

        before = len(problems)
        row = {c: text(raw.get(c)) for c in _TEXT}
        for column in ("study", "rater", "question", "scale"):
            if row[column] is None:
                bad(column, raw.get(column), "is missing", f"give every row its {column}")
        if row["study"] is not None and not _STUDY.fullmatch(row["study"]):
            bad("study", row["study"], "is not a study name", "use lower-case letters, digits and '-', e.g. cube")
        for column in ("rater_country", "country"):
            code = row[column] and row[column].upper()
            if code is not None and (len(code) != 2 or countries.lookup(code) is None):
                bad(column, raw.get(column), "is not an ISO 3166-1 alpha-2 code in the country table",
                    "give the two-letter code, e.g. JP")
            row[column] = code
        if all(row[c] is None for c in ITEM_NAMES):
            bad("image_sha256", raw.get("image_sha256"), "is missing, and so are prompt_id, item_id and file_name: "
                "the row names no item", "name the item by image_sha256, prompt_id (+ sample_idx), item_id or file_name")
        if row["image_sha256"] is not None:
            row["image_sha256"] = row["image_sha256"].lower()
            if not _SHA256.fullmatch(row["image_sha256"]):
                bad("image_sha256", raw.get("image_sha256"), "is not 64 hexadecimal digits", "give the sha256 of the image file")
        try:
            row["sample_idx"] = integer(raw.get("sample_idx"))
            if row["sample_idx"] is not None and row["sample_idx"] < 0:
                raise ValueError
        except ValueError:
            bad("sample_idx", raw.get("sample_idx"), "is not a non-negative integer", "give the image's 0-based index")
        try:
            row["in_country"] = _flag(raw.get("in_country"))
        except ValueError:
            bad("in_country", raw.get("in_country"), "is not true or false", "write true, false or leave it empty")
            row["in_country"] = None
        if row["rater_country"] and row["country"] and len(problems) == before:
            derived = row["rater_country"] == row["country"]
            if row["in_country"] is None:
                row["in_country"] = derived
            elif row["in_country"] != derived:
                bad("in_country", raw.get("in_country"), f"contradicts rater_country {row['rater_country']} "
                    f"and country {row['country']}", "correct the flag or the countries")
        scale = None
        if row["scale"] is not None:
            if row["scale"] not in scales:
                try:
                    scales[row["scale"]] = parse_scale(row["scale"])
                except ValueError as exc:
                    scales[row["scale"]] = str(exc)
            scale = scales[row["scale"]]
            if isinstance(scale, str):
                bad("scale", row["scale"], f"is not a scale: {scale}", "use e.g. likert:1..5 or ordinal:no=0,yes=1")
                scale = None
        try:
            row["value"] = _number(raw.get("value"))
        except ValueError:
            row["value"] = None
        if row["value"] is None:
            bad("value", raw.get("value"), "is not a finite number", "give the answer as a number on the row's scale")
        elif scale is not None and not scale.accepts(row["value"]):
            allowed = (", ".join(f"{v:g}" for v in scale.categories) if scale.categories
                       else f"{scale.low:g} to {scale.high:g}")
            bad("value", raw.get("value"), f"is not allowed on {scale.spec}", f"give one of {allowed}")
        if row["study"] and row["question"] and row["scale"]:
            key = (row["study"], row["question"])
            first = first_scale.setdefault(key, (row["scale"], where))
            if first[0] != row["scale"]:
                bad("scale", row["scale"], f"differs from {first[0]!r} of the same question at {first[1]}",
                    "use one scale per study and question")
        if len(problems) > before:
            continue
        key = tuple(row[c] for c in ("rater", *ITEM, "question"))
        if key in seen:
            bad("rater", row["rater"], f"answered this question about this item twice (first at {seen[key]})",
                "keep one answer per rater, item and question")
            continue
        seen[key] = where
        out.append(row)
    if not records and not problems:
        problems.append(f"{source}: has no ratings (fix: add one row per rater, item and question)")
    if problems:
        raise CultureboardError(source, f"{len(problems)} problem(s) in the ratings:\n  " + "\n  ".join(problems),
                                "correct every row listed above; nothing was read")
    frame = pd.DataFrame(out, columns=list(COLUMNS))
    return frame.astype({"sample_idx": "Int64", "value": float, "in_country": "boolean"})



def _number(value) -> float | None:
    """A finite number (``"4"``, ``4``, ``0.5``); None when empty; ValueError otherwise (``true``, ``"x"``, inf)."""
    if isinstance(value, str):
        value = float(value) if value.strip() else None
    if value is None or value is pd.NA:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(value)
    return float(value)


def _flag(value) -> bool | None:
    if missing(value):
        return None
    if isinstance(value, bool):
        return value
    text = str(value).strip().casefold()
    if text in ("", "none", "null"):
        return None
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise ValueError(value)
