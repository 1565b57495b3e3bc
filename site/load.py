"""Loading what the site shows: each result with its submission, each checked on its own.

A result that cannot be shown (a name unfit for paths, a missing submission, an unreadable or malformed
summary, scores, submission.yaml or metadata.jsonl, a text the site may not show: :func:`spec_text_problem`) is
left out and named on every page, never a crash: the table :data:`SUMMARY_SHAPE` says what the pages read from an
evaluator summary. What names it (its path, the problem) is made printable first (:func:`cultureboard.text.printable`).
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from cultureboard.evaluators.engine.registry import DIRECTIONS as _DIRECTIONS
from cultureboard.evaluators.results.made import generated_by, scored_by
from cultureboard.evaluators.submission.format import (
    MAX_SUBMISSION_ID,
    METADATA,
    SUBMISSION_YAML,
    get,
    read_metadata,
    read_spec,
)

from cultureboard.atomic import output_folders
from cultureboard.errors import CultureboardError
from cultureboard.naming import MAX_SLUG
from cultureboard.text import FIELD, NAME as NAME_TEXT, printable, text_problem

from .names import NAME, display_name

_SHA256 = re.compile(r"[0-9a-f]{64}")
_FIX = "rerun `cultureboard evaluate` for this submission"


@dataclass
class Result:
    """One submission's results, its submission.yaml and metadata.jsonl. :attr:`scores` is never changed once
    loaded, so what :meth:`rows_of`, :meth:`column` and :meth:`image_values` derive from it is derived once per
    build (the object lives for one build)."""

    sid: str
    summary: dict
    scores: pd.DataFrame
    spec: dict
    folder: Path  # the submission folder
    images: list[dict]  # metadata.jsonl rows with a file, by prompt and sample
    entries: dict[tuple[str, str, str], dict]  # (metric, slice type, slice) -> summary entry
    display: str = ""  # "Organisation / Model name (tag)"
    label: str = ""  # the display name, made unique among the site's results (plots); set by the board
    control: str | None = None  # "reference-photos" or "text-only": shown marked, never ranked
    generated_by: str = ""  # who generated the images (:func:`made_by`)
    scored_by: str = ""  # who scored them (:func:`made_by`)
    superseded_by: str | None = None  # the submission that replaces this one (its supersedes:): shown, never ranked
    superseded_why: str = ""
    _metric_rows: dict | None = field(default=None, repr=False, compare=False)
    _columns: dict = field(default_factory=dict, repr=False, compare=False)
    _image_values: dict | None = field(default=None, repr=False, compare=False)

    def rows_of(self, metric: str) -> np.ndarray:
        """Positions of ``metric``'s rows in :attr:`scores` (the rows are grouped by metric once)."""
        if self._metric_rows is None:
            self._metric_rows = self.scores.groupby("metric", sort=False).indices
        return self._metric_rows.get(metric, np.array([], dtype=np.int64))

    def column(self, name: str) -> np.ndarray:
        """:attr:`scores`' column ``name`` as a numpy array (text as objects, a missing value NaN), converted once."""
        if name not in self._columns:
            self._columns[name] = self.scores[name].to_numpy()
        return self._columns[name]

    def image_values(self) -> dict[tuple[str, str], float]:
        """(file name, metric) -> the mean of that image's values of the metric (rows without a value left out;
        pandas' group mean), computed once."""
        if self._image_values is None:
            name, value = self.column("file_name"), self.column("value")
            keep = ~pd.isna(name) & ~pd.isna(value)
            by_image = pd.Series(value[keep]).groupby([name[keep], self.column("metric")[keep]])
            self._image_values = by_image.mean().to_dict()
        return self._image_values

    @property
    def prompt_set(self) -> str:
        return self.summary["provenance"]["prompt_set"]

    @property
    def standin(self) -> bool:
        """Whether any scorer of this result is a tiny random stand-in (its scores measure nothing)."""
        return any(s.get("standin") is True for s in self.summary["provenance"]["scorers"])

    def comparability(self) -> tuple[tuple[str, str], ...]:
        """What must be equal for two results to be ranked together, as (label, value) pairs."""
        p = self.summary["provenance"]
        key = [("prompt set", p["prompt_set"]), ("dataset revision", p["dataset"]["revision"]),
               ("reference images revision", str(p["dataset"].get("references_revision"))), ("dtype", p["dtype"])]
        for s in p["scorers"]:
            key += [(f"scorer {s['name']}", f"{s['model_id']} @ {s['revision']}"),
                    (f"scorer {s['name']} preprocessing", str(s.get("preprocessing"))),
                    (f"scorer {s['name']} forward passes", json.dumps(s.get("forward_passes"), sort_keys=True))]
        key += [(f"metric {m} version", str(v)) for m, v in sorted(p.get("metrics", {}).items())]
        key += [(f"option {k}", json.dumps(v)) for k, v in sorted(p.get("options", {}).items())]
        key += [(f"setting {k}", json.dumps(v)) for k, v in sorted(p["settings"].items()) if k not in ("seed", "n_boot")]
        return tuple(key)


def load_results(results: Path, submissions: Path) -> tuple[list[Result], list[dict]]:
    """Every result of ``results`` with its submission, each loaded in isolation: an entry that cannot be
    shown is left out and returned as {submission, file, source, problem, fix} (``file``: the last part of
    ``source``, for the pages); none usable is an error."""
    folders = ([p for p in output_folders(results) if (p / "summary.json").is_file()]
               if results.is_dir() else [])
    if not folders:
        raise CultureboardError(results, "holds no results (no <submission id>/summary.json)",
                                "pass the --out folder of `cultureboard evaluate`")
    loaded, skipped = [], []
    for folder in folders:
        try:
            loaded.append(_load_one(folder, submissions / folder.name))
        except CultureboardError as exc:
            source = _shown(exc.source)
            skipped.append({"submission": _shown(folder.name), "file": Path(source).name, "source": source,
                            "problem": _shown(exc.problem), "fix": exc.fix})
    by_sid = {r.sid: r for r in loaded}
    for r in loaded:  # supersedes: (validated: the same model version and prompt set) marks the old row
        old, why = get(r.spec, "supersedes.submission"), get(r.spec, "supersedes.reason")
        if isinstance(old, str) and old in by_sid and old != r.sid and r.control is None:
            by_sid[old].superseded_by, by_sid[old].superseded_why = r.sid, why if isinstance(why, str) else ""
    if not loaded:
        first = skipped[0]
        raise CultureboardError(results, f"holds no usable result: all {len(skipped)} were left out (first: "
                                f"{first['source']}: {first['problem']})", first["fix"])
    return loaded, skipped


def made_by(spec: dict, folder: Path) -> tuple[str, str]:
    """(who generated the images, who scored them) of the result in ``folder`` (:mod:`~cultureboard.evaluators.results.made`)."""
    return generated_by(get(spec, "control") is not None, folder), scored_by(folder)


def _shown(text: str) -> str:
    """A name or problem of a result left out, as the pages and messages show it: printable, one line, at most
    1,000 characters."""
    return text if text_problem(text, NAME_TEXT) is None else printable(text, 1000, quoted=False)


#: The submission.yaml fields that name the submission on every page: one line each.
_NAME_FIELDS = ("organization", "model.name", "tag")


def spec_text_problem(spec, path: str = "") -> str | None:
    """The first text of ``spec`` (a parsed submission.yaml, keys included) that the site may not show, as
    ``"<dotted path> <problem>"``, or None: the fields naming the submission are names
    (:data:`cultureboard.text.NAME`), every other string a text of one or more lines (:data:`cultureboard.text.FIELD`)."""
    if isinstance(spec, str):
        problem = text_problem(spec, NAME_TEXT if path in _NAME_FIELDS else FIELD)
        return None if problem is None else f"{printable(path, 60, quoted=False) or 'a value'} {problem}"
    items = spec.items() if isinstance(spec, dict) else enumerate(spec) if isinstance(spec, list) else ()
    for key, value in items:
        if isinstance(key, str) and (problem := text_problem(key, NAME_TEXT)) is not None:
            return f"the key {printable(key, 40)} of {path or 'the top level'} {problem}"
        found = spec_text_problem(value, f"{path}[{key}]" if isinstance(spec, list) else f"{path}.{key}".lstrip("."))
        if found is not None:
            return found
    return None


def _load_one(folder: Path, sub: Path) -> Result:
    sid = folder.name
    if not NAME.fullmatch(sid) or len(sid) > MAX_SUBMISSION_ID:
        raise CultureboardError(folder, "is not named like a submission id", "keep only evaluator outputs there")
    if not all(os.path.isfile(sub / name) and not os.path.islink(sub / name) for name in (SUBMISSION_YAML, METADATA)):
        raise CultureboardError(folder, f"was scored from a submission that the submissions folder lacks ({sid})",
                                "pass the --submissions folder that holds every scored submission")
    summary = read_summary(folder / "summary.json")
    spec, lines = read_spec(sub / SUBMISSION_YAML), read_metadata(sub / METADATA)
    validate = f"run `cultureboard validate {sub}` and fix what it reports"
    if problem := spec_text_problem(spec):
        raise CultureboardError(sub / SUBMISSION_YAML, f"holds a text the site may not show: {problem}", validate)
    images = []
    for n, im in enumerate(lines, 1):
        if im.get("refused") is True:  # a declared refusal: no file, counted in the summary
            continue
        if not (_SHA256.fullmatch(str(im.get("sha256"))) and isinstance(im.get("prompt_id"), str)
                and isinstance(im.get("file_name"), str) and type(im.get("sample_idx")) is int):
            raise CultureboardError(f"{sub / METADATA}:{n}", "lacks a well-formed file_name, prompt_id, sample_idx "
                                    "or sha256", validate)
        if problem := text_problem(im["file_name"], NAME_TEXT) or text_problem(im["prompt_id"], NAME_TEXT):
            raise CultureboardError(f"{sub / METADATA}:{n}", f"its file_name or prompt_id {problem}", validate)
        images.append(im)
    images.sort(key=lambda im: (im["prompt_id"], im["sample_idx"], im["file_name"]))
    try:
        scores = pq.read_table(folder / "scores.parquet").to_pandas()  # text as pandas' str (Result.column: numpy)
    except (OSError, ValueError) as exc:  # pyarrow's errors derive from these
        raise CultureboardError(folder / "scores.parquet", f"cannot be read ({exc.__class__.__name__})", _FIX) from None
    if missing := {"file_name", "metric", "value"} - set(scores.columns):
        raise CultureboardError(folder / "scores.parquet", f"lacks the columns {sorted(missing)}", _FIX)
    entries = {(e["metric"], e["slice_type"], e["slice"]): e for e in summary["metrics"]}
    control = get(spec, "control")
    result = Result(sid, summary, scores, spec, sub, images, entries, display=display_name(spec, sid),
                    control=control if isinstance(control, str) else None)
    result.generated_by, result.scored_by = made_by(spec, folder)
    versions = {c["name"]: c["version"] for c in summary["metrics_info"]} | summary["provenance"]["metrics"]
    standin = result.standin
    for e in summary["metrics"]:  # what the downloads carry with each score
        e["standin"], e["metric_version"] = standin, versions.get(e["metric"])
    return result


#: What the pages read from an evaluator summary: dotted path -> kind (a type, a tuple of types, None for
#: null, or ``object``: present, of any value). A summary that differs is left out; keep this in step with
#: the evaluator's summary and the templates (which fail on a missing key).
SUMMARY_SHAPE = {
    "provenance.prompt_set": str, "provenance.dtype": str, "provenance.device": str, "provenance.dataset.revision": str,
    "provenance.dataset.folder": str, "provenance.submission.sha256": str, "provenance.code.cultureboard": str,
    "provenance.code.python": str, "provenance.code.git.commit": (str, None), "provenance.code.git.dirty": object,
    "provenance.code.packages": dict, "provenance.settings": dict, "provenance.metrics": dict,
    "provenance.options": dict, "provenance.scorers": list, "metrics": list, "metrics_info": list,
}
#: ... of each scorer of the provenance, each metric entry and each metric card. A value and its CI are null
#: together (every row of the slice flagged), except that a value from one prompt has no CI (both ends null).
_SCORER_SHAPE = {"name": str, "model_id": str, "revision": str}
_ENTRY_SHAPE = {"metric": str, "slice_type": str, "slice": str, "value": (float, None), "ci_low": (float, None),
                "ci_high": (float, None), "n_images": int, "n_prompts": int, "coverage": (float, None)}
_CARD_SHAPE = {"name": str, "title": str, "direction": str, "family": str, "unit": str, "formula": str, "range": str,
               "source": str, "scorers": list, "version": int, "validity": list, "chance": object, "proxy_for": object}
_ABSENT = object()


def _bad(value, kind) -> bool:
    if value is _ABSENT or kind is object:
        return value is _ABSENT
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if value is None:
        return None not in kinds
    if isinstance(value, bool):
        return bool not in kinds
    if float in kinds and isinstance(value, (int, float)):
        return not math.isfinite(value)
    return not isinstance(value, tuple(k for k in kinds if k is not None))


def _plain_entry(e) -> bool:
    """The common well-formed metric entry, checked fast: names are text, counts integers, a finite value inside
    its ordered CI and a finite coverage (anything else goes through the full check and its message)."""
    try:
        v, lo, hi, cov = e["value"], e["ci_low"], e["ci_high"], e["coverage"]
        return (type(e["metric"]) is str and type(e["slice_type"]) is str and type(e["slice"]) is str
                and type(e["n_images"]) is int and type(e["n_prompts"]) is int
                and type(v) is float and type(lo) is float and type(hi) is float and type(cov) is float
                and math.isfinite(v) and math.isfinite(cov) and lo <= hi and math.isfinite(lo) and math.isfinite(hi))
    except (TypeError, KeyError):
        return False


def shape_problem(summary) -> str | None:
    """The first part of ``summary`` that is not of its kind in the tables above (float: a finite number), or None."""
    if not isinstance(summary, dict):
        return "it is not a JSON object"
    for path, kind in SUMMARY_SHAPE.items():
        if _bad(get(summary, path, _ABSENT), kind):
            return f"{path} is missing or not of the right kind"
    for key, shape in (("provenance.scorers", _SCORER_SHAPE), ("metrics", _ENTRY_SHAPE), ("metrics_info", _CARD_SHAPE)):
        for i, item in enumerate(get(summary, key)):
            if key == "metrics" and _plain_entry(item):
                continue
            wrong = [k for k, kind in shape.items() if not isinstance(item, dict) or _bad(item.get(k, _ABSENT), kind)]
            if wrong:
                return f"{key}[{i}] lacks a well-formed {', '.join(wrong)}"
            if key == "metrics":
                value, ends = item["value"], (item["ci_low"], item["ci_high"])
                if (None in ends) != (ends == (None, None)) or (value is None and ends != (None, None)):
                    return f"metrics[{i}] has a CI end without the other, or a CI without a value"
                if item["ci_low"] is not None and item["ci_low"] > item["ci_high"]:
                    return f"metrics[{i}] has a CI whose low end is above its high end"
            if key == "metrics_info" and (item["direction"] not in _DIRECTIONS or (item["direction"] == "target") != (
                    isinstance(item.get("target"), (int, float)) and math.isfinite(item["target"]))):
                return (f"metrics_info[{i}] has the direction {item['direction']!r} with the target "
                        f"{item.get('target')!r}: the direction is one of {', '.join(_DIRECTIONS)}, and a finite "
                        "target is given exactly with 'target'")
    return None


def read_summary(path: Path) -> dict:
    """summary.json (never through a link), checked for what the pages rely on: the shape above, names safe
    in paths, a card for every metric."""
    try:
        with open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), encoding="utf-8") as fh:
            summary = json.load(fh)
    except OSError as exc:
        raise CultureboardError(path, f"cannot be read ({exc.strerror})", _FIX) from None
    except (ValueError, RecursionError) as exc:
        raise CultureboardError(path, f"is not JSON ({exc.__class__.__name__}: {str(exc)[:80]})", _FIX) from None
    if problem := shape_problem(summary):
        raise CultureboardError(path, f"is not an evaluator summary: {problem}", _FIX)
    names = {card["name"] for card in summary["metrics_info"]} | {summary["provenance"]["prompt_set"]}
    uncarded = {e["metric"] for e in summary["metrics"]} - names
    unfit = sorted(printable(n, 40) for n in names if not (NAME.fullmatch(n) and len(n) <= MAX_SLUG))
    if uncarded or unfit:
        raise CultureboardError(path, f"has metrics without a card {sorted(printable(n, 40) for n in uncarded)[:5]} "
                                f"or names unfit for file names (at most {MAX_SLUG} characters of A-Z a-z 0-9 . _ -) "
                                f"{unfit[:5]}", _FIX)
    return summary
