"""CULTIVate's human study (Malakouti et al. 2025, section 4.1): native annotators rated each image on 1-5 Likert
scales for GT-FAITH ("How well does this image show {activity} in your country?", the gold label), GT-HAL ("How
incorrect?"), GT-EXAG ("How exaggerated?") and GT-REALISM, two annotators per form.

The authors released no annotations, so this imports a file in the layout such a study exports: one row per rater
and image (.csv with a header, or .jsonl), with the columns of :data:`COLUMNS`:

* ``rater`` (required), ``rater_country`` (ISO alpha-2; the paper's raters share the image's country);
* the image: ``image_sha256``, ``file_name`` or ``prompt_id`` (+ ``sample_idx``), and optionally ``submission``
  and ``model``;
* ``gt_faith``, ``gt_hal``, ``gt_exag``, ``gt_realism``: integers 1-5, empty where not asked (at least one given);
* optionally ``country``, ``category`` (taken from the prompt when ``prompts`` are given) and ``comment``.

Each answer becomes one common-format row (study ``cultivate``, question ``GT-FAITH`` / ``GT-HAL`` / ``GT-EXAG`` /
``GT-REALISM``, scale ``likert:1..5``). Problems are reported all at once, one line each, as
``FILE:LINE: COLUMN VALUE: problem (fix: ...)``.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from cultureboard.errors import CultureboardError

from . import register_study

QUESTIONS = {"gt_faith": "GT-FAITH", "gt_hal": "GT-HAL", "gt_exag": "GT-EXAG", "gt_realism": "GT-REALISM"}
SCALE = "likert:1..5"
ITEM_COLUMNS = ("image_sha256", "file_name", "prompt_id")
COLUMNS = ("rater", "rater_country", "submission", "model", *ITEM_COLUMNS, "sample_idx", "country", "category",
           *QUESTIONS, "comment")
_FIX_SCORE = "rate 1 to 5, or leave the cell empty where the rater was not asked"


@register_study(
    "cultivate", title="CULTIVate human faithfulness, hallucination and exaggeration ratings (Malakouti et al. 2025, "
                       "section 4)",
    url="https://arxiv.org/abs/2511.05681", licence=None,
    note="CULTIVate released no ratings: a file in this layout is its collector's data, published under the "
         "collector's licence.",
)
def import_cultivate(path: str | Path, prompts: list[dict] | None = None) -> list[dict]:
    """Common-format rows of a ratings file in the layout above; ``prompts`` (the rated prompt set's rows) checks
    each ``prompt_id`` and fills ``country`` and ``category`` from its prompt."""
    path = Path(path)
    by_id = None if prompts is None else {p["prompt_id"]: p for p in prompts}
    out, problems = [], []
    for line, raw in _records(path, problems):
        def bad(column, problem, fix, line=line, raw=raw):
            problems.append(f"{path}:{line}: {column} {raw.get(column)!r}: {problem} (fix: {fix})")

        row = {k: _text(raw.get(k)) for k in COLUMNS if k not in QUESTIONS and k != "sample_idx"}
        if row["rater"] is None:
            bad("rater", "is missing", "give every row the rater's id")
        if not any(row[k] for k in ITEM_COLUMNS):
            bad("prompt_id", "is missing, and so are image_sha256 and file_name: the row names no image",
                "name the image by its sha256, its file_name, or its prompt_id and sample_idx")
        try:
            row["sample_idx"] = _integer(raw.get("sample_idx"), 0)
        except ValueError:
            bad("sample_idx", "is not a non-negative integer", "give the image's 0-based index among its prompt's")
        if by_id is not None and row["prompt_id"] is not None:
            prompt = by_id.get(row["prompt_id"])
            if prompt is None:
                bad("prompt_id", "is not in the prompt set", "use the prompt_id of the rated image's prompt")
            else:
                row["country"] = row["country"] or prompt.get("country")
                row["category"] = row["category"] or prompt.get("category")
        answers = {}
        for column, question in QUESTIONS.items():
            try:
                value = _integer(raw.get(column), 1, 5)
            except ValueError:
                bad(column, "is not an integer from 1 to 5", _FIX_SCORE)
                continue
            if value is not None:
                answers[question] = value
        if not answers and all(_text(raw.get(c)) is None for c in QUESTIONS):
            bad("gt_faith", "is missing, and so are gt_hal, gt_exag and gt_realism", "give at least one rating")
        comment = row.pop("comment")
        out += [{"study": "cultivate", **row, "question": question, "value": float(value), "scale": SCALE,
                 "comment": comment} for question, value in answers.items()]
    if problems:
        raise CultureboardError(path, f"{len(problems)} problem(s) in the ratings:\n  " + "\n  ".join(problems),
                                "correct every row listed above; nothing was imported")
    return out


def _records(path: Path, problems: list[str]) -> list[tuple[int, dict]]:
    """(line, raw row) of a .csv or .jsonl file; layout problems (unknown columns, bad JSON) go to ``problems``."""
    if not path.is_file():
        raise CultureboardError(path, "does not exist", "pass the path of a .csv or .jsonl ratings file")
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".jsonl"):
        raise CultureboardError(path, f"has the extension {suffix!r}", "save the ratings as .csv or .jsonl")
    records = []
    with open(path, newline="", encoding="utf-8-sig") as fh:
        if suffix == ".csv":
            reader = csv.DictReader(fh)
            unknown = [c for c in reader.fieldnames or [] if c not in COLUMNS]
            if unknown or "rater" not in (reader.fieldnames or []):
                raise CultureboardError(path, f"header: unknown columns {unknown}" + (
                    "" if "rater" in (reader.fieldnames or []) else ", no rater column"),
                    f"the columns are {', '.join(COLUMNS)}")
            for raw in reader:
                if None in raw:
                    problems.append(f"{path}:{reader.line_num}: has more cells than the header (fix: quote cells "
                                    "that contain commas)")
                else:
                    records.append((reader.line_num, raw))
        else:
            for line, text in enumerate(fh, 1):
                if not text.strip():
                    continue
                try:
                    raw = json.loads(text)
                except json.JSONDecodeError as exc:
                    problems.append(f"{path}:{line}: is not valid JSON ({exc.msg}) (fix: write one JSON object per line)")
                    continue
                unknown = [c for c in raw if c not in COLUMNS] if isinstance(raw, dict) else ["(not an object)"]
                if unknown:
                    problems.append(f"{path}:{line}: unknown keys {unknown} (fix: use only {', '.join(COLUMNS)})")
                    continue
                records.append((line, raw))
    if not records and not problems:
        problems.append(f"{path}: has no ratings (fix: add one row per rater and image)")
    return records


def _text(value) -> str | None:
    if value is None:
        return None
    value = str(value).strip()
    return value or None


def _integer(value, low: int, high: float = float("inf")) -> int | None:
    """An integer cell in [low, high]; None when empty; ValueError otherwise (``3.0`` is 3, ``3.5`` is not)."""
    text = _text(value)
    if text is None:
        return None
    number = float(text)  # ValueError for text that is no number
    if isinstance(value, bool) or not number.is_integer() or not low <= number <= high:
        raise ValueError(text)
    return int(number)
