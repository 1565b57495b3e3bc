"""Human ratings of generated images (CUBE section 4 and appendix E): import, consensus, tables, validity.

A ratings file (CSV with a header, or JSONL) has one row per rater and image, with the columns of
:data:`COLUMNS`: ``rater``, ``rater_country``, the image as ``image`` (its ``file_name`` or ``sha256`` in the
submission's ``metadata.jsonl``) or as ``prompt_id`` (+ ``sample_idx``), ``relevance`` (yes | maybe | no,
CUBE Q1), ``faithfulness`` and ``realism`` (integers 1-5, CUBE Q2 and Q3; empty where the rater was not asked:
CUBE's interface showed Q2 and Q3 only to raters who found the image relevant), and optionally ``submission``
and ``comment``.

Definitions (CUBE Tables 3, 10, 11 and 12):

* **relevance consensus** of an image: the answer given by more than half of its raters; ``"no consensus"``
  when no answer has a strict majority (with 3 raters: all three answers differ).
* **relevance score** of an image: the mean of its raters' answers coded yes = 1, maybe = 0.5, no = 0 (used
  for correlations; it is defined for "no consensus" images too).
* **faithfulness / realism consensus**: the mean over the raters who gave a score ("average consensus");
  NaN when nobody did.
* **majority agreement** of a rater country: among the images with at least two ratings from raters of that
  country, the percentage whose relevance consensus (among those raters) is not "no consensus". This is
  100 % minus Table 10's "no consensus" row, which is how CUBE's Table 11 relates to Table 10 (Japan:
  100 - mean(2.8, 4.6) = 96 %; Nigeria: 100 - mean(9.4, 0.0) = 95 %).
* **Krippendorff's alpha** of a rater country: ordinal, units = images, coders = rater ids of that country
  (:func:`evaluators.stats.krippendorff_alpha`); null where it is undefined (no image with two scores, or a
  single observed value).

An image is the item ``(submission, prompt_id, sample_idx, image)``; once resolved against the prompt set,
``image`` is the submission's ``file_name`` when its metadata is known, else empty.

The import goes through the common ratings format (``ratings_format``): the file is read here
(:func:`load_ratings`), turned into common rows by :func:`to_common` (study ``cube``, one row per rater,
image and question: ``relevance`` on :data:`RELEVANCE_SCALE`, ``faithfulness`` and ``realism`` on
:data:`LIKERT_SCALE`; registered as study ``cube`` in ``studies/cube.py``), validated, and the tables are
computed from those rows turned back into one row per rater and image (:func:`from_common`).
"""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from cultureboard.atomic import atomic_dir, check_replaceable
from cultureboard.countries import load_countries
from cultureboard.dataset_folder import local_revision, read_prompt_set
from cultureboard.errors import CultureboardError
from cultureboard.provenance import code_provenance, file_sha256

from ..engine.registry import metric_cards
from ..submission.format import METADATA, read_metadata
from .agreement import agreement
from .ratings_files import integer, read_records, text
from .ratings_format import parse_scale, to_table
from .rated_items import require_shared
from .stats import correlations, goodness, krippendorff_alpha
from .studies import import_study
from .trust import trust_map, with_region_group

RELEVANCE = ("yes", "maybe", "no")
NO_CONSENSUS = "no consensus"
RELEVANCE_SCORE = {"yes": 1.0, "maybe": 0.5, "no": 0.0}
LIKERT = ("faithfulness", "realism")
#: The columns a ratings file may have (any other is reported, to catch misspellings).
COLUMNS = ("rater", "rater_country", "submission", "image", "prompt_id", "sample_idx", "relevance",
           "faithfulness", "realism", "comment")
REQUIRED = ("rater", "rater_country", "relevance")
#: The columns that identify a rated image.
ITEM = ["submission", "prompt_id", "sample_idx", "image"]
#: The scales of CUBE's questions in the common format (relevance coded as in the relevance score).
RELEVANCE_SCALE = "ordinal:no=0,maybe=0.5,yes=1"
LIKERT_SCALE = "likert:1..5"
#: The human score each automatic metric is correlated with, and its consensus column.
TARGETS = {"faithfulness": "faithfulness", "realism": "realism", "relevance": "relevance_score"}
#: The metrics each CUBE question stands for: a metric is judged (trust map) only against its own question.
#: Q1 relevance: the cards of cube.cultural_relevance and cube.country_top1 name it as their proxy_for; Q2
#: faithfulness: cube.faithfulness; Q3 realism ("how realistic does the image look"): cube.quality, HPS v2.1,
#: CUBE's image-quality score s(x) (section 5.1.2), the only CUBE metric of the image's quality.
VALIDITY = {"relevance": ("cube.cultural_relevance", "cube.country_top1"), "faithfulness": ("cube.faithfulness",),
            "realism": ("cube.quality",)}

_LIKERT_FIX = "rate 1 to 5, or leave the cell empty where the rater was not asked"
_HEX64 = re.compile(r"[0-9a-f]{64}")


def load_ratings(path: str | Path, prompts: list[dict] | None = None,
                 submissions: str | Path | None = None) -> pd.DataFrame:
    """Read and validate a ratings file; one row per rating, columns ``line`` + :data:`COLUMNS`.

    Without ``prompts`` the rows are only checked in themselves. With ``prompts`` (rows of the prompt set)
    every image is resolved to its ``prompt_id`` and ``sample_idx`` and gets the prompt's ``country`` and
    ``category`` columns; an ``image`` given by file name or sha256 is looked up in the ``metadata.jsonl`` of
    ``submissions / <submission>`` (or of ``submissions`` itself when it is one submission folder).
    A missing ``sample_idx`` means 0 only for prompts with one image.

    Raises:
        CultureboardError: naming every problem at once, each as ``FILE:LINE: COLUMN VALUE: problem (fix)``:
            an unknown column or relevance answer, a score that is not an integer 1-5, a missing rater, rater
            country or image, an unknown prompt or image, the same rater rating an image twice.
    """
    path = Path(path)
    records, problems = read_records(path, COLUMNS, (*REQUIRED, ("image", "prompt_id")))
    by_id = None if prompts is None else {p["prompt_id"]: p for p in prompts}
    images = _Images(submissions)
    rows, first = [], {}
    for line, raw in records:
        def bad(column, value, problem, fix, line=line):
            problems.append(f"{path}:{line}: {column} {value!r}: {problem} (fix: {fix})")

        before = len(problems)
        row = _parse(raw, bad)
        if by_id is not None and len(problems) == before:
            _resolve(row, by_id, images, bad)
        if len(problems) > before:
            continue
        key = (row["rater"], *(row[k] for k in ITEM))
        if key in first:
            bad("rater", row["rater"], f"rated this image twice (first at line {first[key]})",
                "keep one rating per rater and image")
            continue
        first[key] = line
        rows.append({"line": line, **row})
    if not records and not problems:
        problems.append(f"{path}: has no ratings (fix: add one row per rater and image)")
    if problems:
        raise CultureboardError(path, f"{len(problems)} problem(s) in the ratings:\n  " + "\n  ".join(problems),
                                "correct every row listed above; nothing was imported")
    frame = pd.DataFrame(rows)
    return frame.astype({"sample_idx": "Int64", "faithfulness": float, "realism": float})


def consensus(ratings: pd.DataFrame) -> pd.DataFrame:
    """One row per image: ``n_raters``, ``relevance`` (majority label or "no consensus"), ``relevance_score``,
    ``faithfulness`` and ``realism`` (means over the raters who scored), ``n_faithfulness``, ``n_realism``;
    with the prompt's ``country`` and ``category`` when the ratings have them. Definitions: module docstring."""
    keys = ITEM + [c for c in ("country", "category") if c in ratings]
    coded = ratings.assign(relevance_score=ratings["relevance"].map(RELEVANCE_SCORE))
    return coded.groupby(keys, dropna=False, sort=True).agg(
        n_raters=("rater", "size"),
        relevance=("relevance", _majority),
        relevance_score=("relevance_score", "mean"),
        faithfulness=("faithfulness", "mean"),
        n_faithfulness=("faithfulness", "count"),
        realism=("realism", "mean"),
        n_realism=("realism", "count"),
    ).reset_index()


def tables(ratings: pd.DataFrame) -> dict:
    """CUBE's tables from ratings loaded with the prompt set (they carry ``country`` and ``category``).

    * ``consensus_scores`` (Table 3): per (submission, country, concept), mean and sample standard deviation
      (ddof = 1; null for one image) over images of the consensus faithfulness and realism, and the number of
      images with a score;
    * ``relevance_rates`` (Tables 10 and 12): per (submission, country), the percentage of images whose
      relevance consensus is yes, maybe, no and "no consensus" (Table 12 is the yes column);
    * ``agreement`` (Table 11): per rater country, the majority agreement on relevance (%) and the ordinal
      Krippendorff's alpha of faithfulness and realism, over every submission's images.
    """
    if "country" not in ratings or ratings["country"].isna().all():
        raise ValueError("tables need ratings loaded with the prompt set: load_ratings(path, prompts)")
    items = consensus(ratings)
    scores = []
    for (submission, country, concept), group in items.groupby(["submission", "country", "category"], dropna=False):
        row = {"submission": _value(submission), "country": _value(country), "concept": _value(concept),
               "n_items": len(group)}
        for name in LIKERT:
            values = group[name].dropna()
            row |= {f"{name}_mean": _value(values.mean()), f"{name}_std": _value(values.std()), f"{name}_n": len(values)}
        scores.append(row)
    rates = []
    for (submission, country), group in items.groupby(["submission", "country"], dropna=False):
        shares = group["relevance"].value_counts(normalize=True) * 100
        rates.append({"submission": _value(submission), "country": _value(country), "n_items": len(group),
                      **{label: float(shares.get(label, 0.0)) for label in (*RELEVANCE, NO_CONSENSUS)}})
    agreement = []
    for country, group in ratings.groupby("rater_country", sort=True):
        pairable = consensus(group).query("n_raters >= 2")
        agreement.append({
            "rater_country": country, "n_raters": group["rater"].nunique(), "n_items": len(pairable),
            "majority_agreement": _value(100 * (pairable["relevance"] != NO_CONSENSUS).mean()),
            **{f"{name}_alpha": _alpha(group, name) for name in LIKERT},
        })
    return {"consensus_scores": scores, "relevance_rates": rates, "agreement": agreement}


def validity(consensus: pd.DataFrame, scores: pd.DataFrame, n_boot: int = 1000, seed: int = 0) -> dict:
    """Pearson and Spearman correlation (n, two-sided p) of each automatic metric with the human scores.

    ``scores`` has one row per image and metric (``metric``, ``value``) and names the image by ``prompt_id``
    and ``sample_idx``, or by ``file_name``; it is joined on ``submission`` too when both it and every rating
    name one (they must, when the ratings cover several submissions). Each metric is correlated with the consensus faithfulness, realism and
    relevance score (yes = 1, maybe = 0.5, no = 0) over the rated images that have the metric, overall
    (``country`` null) and per prompt country. Coefficients are null with fewer than 3 pairs, and NaN-free:
    a constant input gives null too. ``trust`` holds trust-map rows of each metric against the one question it
    stands for (:func:`_trust`), with ``n_boot`` bootstrap replicates seeded by ``seed``.
    """
    if {"prompt_id", "sample_idx"} <= set(scores):
        keys = ["prompt_id", "sample_idx"]
    elif "file_name" in scores:
        keys, scores = ["image"], scores.rename(columns={"file_name": "image"})
    else:
        raise CultureboardError("scores", "names no image: it has neither prompt_id and sample_idx nor file_name",
                                "pass the evaluator's per-image scores.parquet")
    if "submission" in scores and consensus["submission"].notna().all():
        keys.append("submission")
    elif consensus["submission"].nunique(dropna=False) > 1:
        raise CultureboardError("scores", "cannot tell the ratings' submissions apart",
                                "name the submission on every rating and in the scores, or import one submission at a time")
    if scores.duplicated(keys + ["metric"]).any():
        raise CultureboardError("scores", "has more than one value for an image and metric",
                                "pass one submission's per-image scores (one row per image and metric), "
                                "or name the submission on every rating")
    wide = scores.pivot(index=keys, columns="metric", values="value").reset_index()
    metrics = [c for c in wide.columns if c not in keys]
    joined = consensus.merge(wide.astype({"sample_idx": "Int64"}) if "sample_idx" in keys else wide, on=keys)
    groups = [(None, joined)] + (list(joined.groupby("country")) if "country" in joined else [])
    rows = [{"metric": metric, "target": target, "country": country, **_correlate(group[metric], group[column])}
            for metric in metrics for target, column in TARGETS.items() for country, group in groups]
    return {"n_items": len(joined), "n_items_without_scores": len(consensus) - len(joined), "correlations": rows,
            "trust": _trust(joined, metrics, n_boot, seed), "trust_settings": {"n_boot": n_boot, "seed": seed}}


def _trust(joined: pd.DataFrame, metrics: list[str], n_boot: int, seed: int) -> list[dict]:
    """The trust map (``trust.trust_map``: sign-normalised Spearman with its bootstrap CI and the diagnostic flag,
    overall and per country, region group and category) of each metric of :data:`VALIDITY` (registered, with a
    direction) against the question it stands for; every other pair is in ``correlations`` only. A ranked metric's
    values enter as "higher is better" (:func:`.stats.goodness`): negated where lower is better, minus the distance
    to the target for a target metric, so rho > 0 always means "agrees with the humans"; a descriptive metric's
    (direction "none") enter as they are, so its rho says which way it tracks the question, the evidence a
    direction would need."""
    cards = metric_cards()
    if "country" in joined:
        joined = with_region_group(joined)
    out = []
    for target, names in VALIDITY.items():
        for metric in (m for m in names if m in metrics):
            card, column = cards[metric], TARGETS[target]
            values = goodness(joined[metric], card.direction, card.target) if card.ranked else joined[metric]
            pairs = joined.assign(metric=values, human=joined[column])
            for row in trust_map(pairs, n_boot=n_boot, seed=seed):
                out.append({"metric": metric, "human": target, **row})
    return out


def import_ratings(path: str | Path, dataset: str | Path, prompt_set: str, out: str | Path,
                   scores: str | Path | None = None, submissions: str | Path | None = None) -> dict:
    """Validate a ratings file against prompt set ``prompt_set`` of ``dataset`` and write, atomically, to ``out``:

    ``ratings.parquet`` (the ratings in the common format, one row per rater, image and question: see
    ``ratings_format``), ``consensus.parquet`` (one row per image), ``tables.json`` (:func:`tables`),
    ``agreement.json`` (``agreement.agreement``: Krippendorff's alpha and Fleiss' kappa per question, overall,
    per country and for in-country versus outside raters) and, when ``scores`` (a per-image
    ``scores.parquet``) is given, ``validity.json`` (:func:`validity`); the JSON files carry a provenance
    block. ``submissions`` resolves images named by file name or sha256 (see :func:`load_ratings`).
    Returns a summary (``ratings``: rater x image judgements; ``rows``: common-format rows).
    """
    path = Path(path)
    check_replaceable(Path(out), kind="ratings")  # before the work
    prompts = read_prompt_set(dataset, prompt_set)
    rows = import_study("cube", path, prompts=prompts, submissions=submissions, rated_in={"submissions": submissions})
    ratings = from_common(rows)
    if "country" not in ratings or ratings["country"].isna().all():
        raise CultureboardError(path, f"rates images of prompt set {prompt_set!r}, whose prompts name no country: "
                                "CUBE's tables are per country",
                                "import the ratings of a prompt set whose prompts have countries (cube-awareness)")
    items = consensus(ratings)
    provenance = {"ratings": path.name, "ratings_sha256": file_sha256(path), "prompt_set": prompt_set,
                  "dataset_revision": local_revision(dataset), **code_provenance(("numpy", "pandas", "scipy"))}
    reports = {"tables.json": {**tables(ratings), "provenance": provenance},
               "agreement.json": {"agreement": agreement(rows), "provenance": provenance}}
    if scores is not None:
        found = validity(items, _read_scores(scores))
        require_shared(found["n_items"], len(items), scores)
        reports["validity.json"] = {**found, "provenance": {**provenance, "scores_sha256": file_sha256(scores)}}
    with atomic_dir(out, kind="ratings") as tmp:
        pq.write_table(to_table(rows), tmp / "ratings.parquet")
        items.to_parquet(tmp / "consensus.parquet", index=False)
        for name, report in reports.items():
            (tmp / name).write_text(json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    return {"out": str(out), "ratings": len(ratings), "rows": len(rows), "raters": ratings["rater"].nunique(),
            "items": len(items), "rater_countries": sorted(ratings["rater_country"].unique()),
            "files": sorted(["ratings.parquet", "consensus.parquet", *reports])}


def to_common(ratings: pd.DataFrame) -> list[dict]:
    """:func:`load_ratings`' rows as common-format rows (study ``cube``): per rater and image, a ``relevance``
    row (yes = 1, maybe = 0.5, no = 0 on :data:`RELEVANCE_SCALE`, with the rater's comment) and a
    ``faithfulness`` and ``realism`` row where the rater gave them (:data:`LIKERT_SCALE`). The image is named
    by prompt_id and sample_idx, its file_name and sha256 where known (an unresolved ``image`` is a sha256
    when it is 64 hex digits, else a file_name); ``country`` and ``category`` are the prompt's."""
    out = []
    for r in ratings.to_dict("records"):
        image = None if pd.isna(r.get("image")) else str(r["image"])
        sha256 = r.get("sha256") if isinstance(r.get("sha256"), str) else None
        if sha256 is None and image and _HEX64.fullmatch(image.lower()):
            sha256, image = image.lower(), None
        base = {"study": "cube", "rater": r["rater"], "rater_country": r["rater_country"],
                "submission": r["submission"], "prompt_id": r["prompt_id"], "sample_idx": r["sample_idx"],
                "file_name": image, "image_sha256": sha256, "country": r.get("country"), "category": r.get("category")}
        out.append({**base, "question": "relevance", "value": RELEVANCE_SCORE[r["relevance"]],
                    "scale": RELEVANCE_SCALE, "comment": r["comment"]})
        out += [{**base, "question": name, "value": r[name], "scale": LIKERT_SCALE}
                for name in LIKERT if not pd.isna(r[name])]
    return out


def from_common(rows: pd.DataFrame) -> pd.DataFrame:
    """Validated common rows of CUBE's questions back in :func:`load_ratings`' shape: one row per rater and
    image with ``relevance`` as its label, ``faithfulness`` and ``realism`` (NaN where not given), ``image``
    (the file_name), ``sha256``, ``country`` and ``category``.

    Raises:
        CultureboardError: a question CUBE does not ask, or a rater and image without a relevance answer.
    """
    relevance = parse_scale(RELEVANCE_SCALE)
    keys = ["rater", "rater_country", "submission", "file_name", "image_sha256", "prompt_id", "sample_idx",
            "country", "category"]
    wide: dict[tuple, dict] = {}
    for r in rows.to_dict("records"):
        key = tuple(None if pd.isna(r[k]) else r[k] for k in keys)
        entry = wide.setdefault(key, {**dict(zip(keys, key)), "relevance": None, "faithfulness": math.nan,
                                      "realism": math.nan, "comment": None})
        if r["question"] == "relevance":
            entry["relevance"], entry["comment"] = relevance.label(r["value"]), r["comment"]
        elif r["question"] in LIKERT:
            entry[r["question"]] = r["value"]
        else:
            raise CultureboardError(f"question {r['question']!r}", "is not one of CUBE's questions",
                                    "import only relevance, faithfulness and realism ratings as CUBE ratings")
    unanswered = [k for k, e in wide.items() if e["relevance"] is None]
    if unanswered:
        raise CultureboardError(f"rater {unanswered[0][0]!r}", f"gave no relevance answer for {len(unanswered)} image(s)",
                                "CUBE asks relevance of every image: add the rater's relevance answer")
    frame = pd.DataFrame(list(wide.values())).rename(columns={"file_name": "image", "image_sha256": "sha256"})
    return frame.astype({"sample_idx": "Int64", "faithfulness": float, "realism": float})

def _parse(raw: dict, bad) -> dict:
    """The normalised row; each problem is passed to ``bad(column, value, problem, fix)``."""
    row = {name: text(raw.get(name)) for name in ("rater", "submission", "image", "prompt_id", "comment")}
    if row["rater"] is None:
        bad("rater", raw.get("rater"), "is missing", "give every row the rater's id")
    country = text(raw.get("rater_country"))
    found = load_countries().lookup(country) if country else None
    if found is None:
        bad("rater_country", raw.get("rater_country"), "is missing or not in the country table",
            "give the rater's ISO 3166-1 alpha-2 code, e.g. JP")
    row["rater_country"] = found and found.iso2
    relevance = text(raw.get("relevance"))
    row["relevance"] = relevance and relevance.casefold()
    if row["relevance"] not in RELEVANCE:
        bad("relevance", raw.get("relevance"), "is not yes, maybe or no", "answer yes, maybe or no")
    for name, low, high, fix in (("faithfulness", 1, 5, _LIKERT_FIX), ("realism", 1, 5, _LIKERT_FIX),
                                 ("sample_idx", 0, math.inf, "give the image's 0-based index among its prompt's images")):
        try:
            row[name] = integer(raw.get(name))
            ok = row[name] is None or low <= row[name] <= high
        except ValueError:
            ok = False
        if not ok:
            kind = f"an integer from {low} to {high}" if high < math.inf else "a non-negative integer"
            bad(name, raw.get(name), f"is not {kind}", fix)
    if row["image"] is None and row["prompt_id"] is None:
        bad("image", raw.get("image"), "is missing, and so is prompt_id: the row names no image",
            "give the image (file_name or sha256 in metadata.jsonl) or its prompt_id and sample_idx")
    return row


def _resolve(row: dict, by_id: dict[str, dict], images: _Images, bad) -> None:
    """Set the row's prompt_id, sample_idx, image (file_name when known), sha256 (when known), country and
    category."""
    if row["image"] is not None:
        found = images.by_image(row["submission"], row["image"], bad)
        if found is None:
            return
        if (row["prompt_id"], row["sample_idx"]) not in ((None, None), (found[0], None), found):
            bad("prompt_id", row["prompt_id"], f"disagrees with the image, which is {found[0]} sample {found[1]}",
                "correct prompt_id and sample_idx, or leave them empty")
            return
        row["prompt_id"], row["sample_idx"] = found
    prompt = by_id.get(row["prompt_id"])
    if prompt is None:
        bad("prompt_id", row["prompt_id"], "is not in the prompt set", "use the prompt_id of the rated image's prompt")
        return
    n = prompt.get("images_per_prompt") or 1
    if row["sample_idx"] is None and n == 1:
        row["sample_idx"] = 0
    elif row["sample_idx"] is None or row["sample_idx"] >= n:
        bad("sample_idx", row["sample_idx"], f"does not pick one of the prompt's {n} images",
            f"give sample_idx 0..{n - 1}, or name the image")
        return
    row["image"], row["sha256"] = images.file(row["submission"], row["prompt_id"], row["sample_idx"])
    row["country"], row["category"] = prompt.get("country"), prompt.get("category")


class _Images:
    """Looks images up in submissions' ``metadata.jsonl`` (by file_name or sha256, and by prompt and sample)."""

    def __init__(self, root: str | Path | None):
        self.root = None if root is None else Path(root)
        self._cache: dict[Path, tuple[dict, dict] | None] = {}

    def _folder(self, submission: str | None) -> Path | None:
        if self.root is None or (self.root / METADATA).is_file():
            return self.root
        return None if submission is None else self.root / submission

    def _index(self, folder: Path) -> tuple[dict, dict] | None:
        """(file_name or sha256 -> (prompt_id, sample_idx), (prompt_id, sample_idx) -> (file_name, sha256)),
        or None."""
        if folder not in self._cache:
            path = folder / METADATA
            if not path.is_file():
                self._cache[folder] = None
                return None
            by_image, by_slot = {}, {}
            for meta in read_metadata(path):  # the format's one line reader
                if "prompt_id" not in meta or "sample_idx" not in meta:
                    raise CultureboardError(path, "holds a metadata row without prompt_id and sample_idx",
                                            "run `cultureboard validate` on the submission and fix it")
                slot = (meta["prompt_id"], meta["sample_idx"])
                by_image[meta.get("file_name")] = by_image[meta.get("sha256")] = slot
                by_slot[slot] = meta.get("file_name"), meta.get("sha256")
            self._cache[folder] = by_image, by_slot
        return self._cache[folder]

    def by_image(self, submission: str | None, image: str, bad) -> tuple[str, int] | None:
        folder = self._folder(submission)
        index = None if folder is None else self._index(folder)
        if self.root is None:
            bad("image", image, "cannot be looked up without the submissions' metadata",
                "pass the submissions folder, or name the image by prompt_id and sample_idx")
        elif folder is None:
            bad("submission", submission, "is missing, so the image cannot be looked up",
                "name the image's submission folder in the submission column")
        elif index is None:
            bad("submission", submission, f"has no {folder / METADATA}", "name a submission folder of the submissions")
        elif image not in index[0]:
            bad("image", image, f"is not a file_name or sha256 of {folder / METADATA}", "name an image of the submission")
        else:
            return index[0][image]
        return None

    def file(self, submission: str | None, prompt_id: str, sample_idx: int) -> tuple[str | None, str | None]:
        """The image's (file_name, sha256); (None, None) when the submission's metadata is unknown."""
        folder = self._folder(submission)
        index = None if folder is None else self._index(folder)
        return (None, None) if index is None else index[1].get((prompt_id, sample_idx), (None, None))


def _read_scores(path: str | Path) -> pd.DataFrame:
    try:
        scores = pd.read_parquet(path)
    except (OSError, ValueError) as exc:
        raise CultureboardError(path, f"cannot be read as parquet ({exc})", "pass the evaluator's scores.parquet") from None
    if not {"metric", "value"} <= set(scores):
        raise CultureboardError(path, "has no metric and value columns", "pass the evaluator's per-image scores.parquet")
    return scores

def _majority(labels: pd.Series) -> str:
    counts = labels.value_counts()
    return counts.index[0] if 2 * counts.iloc[0] > len(labels) else NO_CONSENSUS


def _alpha(ratings: pd.DataFrame, name: str) -> float | None:
    """Ordinal Krippendorff's alpha of an images x raters matrix of ``name``; None where undefined."""
    units = ratings.groupby(ITEM, dropna=False).ngroup().to_numpy()
    raters = pd.factorize(ratings["rater"])[0]
    matrix = np.full((units.max() + 1, raters.max() + 1), np.nan)
    matrix[units, raters] = ratings[name].to_numpy(float)
    try:
        return krippendorff_alpha(matrix, "ordinal")
    except ValueError:
        return None


def _correlate(x: pd.Series, y: pd.Series) -> dict:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a constant input: scipy warns and returns NaN, reported as null
            c = correlations(x.to_numpy(float), y.to_numpy(float))
    except ValueError:  # fewer than 3 pairs
        return {"n": int((x.notna() & y.notna()).sum()), "pearson": None, "pearson_p": None,
                "spearman": None, "spearman_p": None}
    return {"n": c.n, "pearson": _value(c.pearson), "pearson_p": _value(c.pearson_p),
            "spearman": _value(c.spearman), "spearman_p": _value(c.spearman_p)}


def _value(x):
    """A JSON-ready scalar: None for NaN / missing, Python numbers for numpy ones."""
    if x is None or (not isinstance(x, str) and pd.isna(x)):
        return None
    return x.item() if isinstance(x, np.generic) else x
