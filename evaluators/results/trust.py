"""The trust map: where each automatic metric tracks the human judgement it stands for, and where it does not.

For a metric and a human question, each rated item contributes one pair (the metric's value, the mean of the
raters' answers). Per slice (overall, and each country, region group and category with rated items) the
slice's pairs give Spearman's rho with a 95% percentile bootstrap CI over items (``stats.spearman_ci``; rho
is sign-normalised: for a metric where lower is better the metric is negated first, so rho > 0 always means
"agrees with the humans").

The rule (:func:`trust_flag`): on a slice the metric is **diagnostic only** (shown greyed, never as the
headline) when fewer than :data:`MIN_ITEMS` rated items carry both values, when rho is undefined (the metric
or the ratings are constant there), or when the upper bound of rho's CI is below :data:`TRUST_RHO`, i.e. the
data rule out even a moderate agreement. A metric passes on a slice only when the data cannot rule that out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from cultureboard.atomic import output_folders
from cultureboard.countries import load_countries
from cultureboard.errors import CultureboardError

from .ratings_format import ITEM
from .stats import spearman_ci

#: The rho a metric's CI must be able to reach on a slice to be more than a diagnostic there.
TRUST_RHO = 0.3
#: The fewest rated items on a slice for a metric to be more than a diagnostic there.
MIN_ITEMS = 20
#: Slice columns of the trust map (beside the overall slice).
SLICES = ("country", "region_group", "category")


class TrustFlag(NamedTuple):
    diagnostic: bool
    reason: str


def trust_flag(n: int, rho_high: float | None, level: float = 0.95, min_items: int = MIN_ITEMS,
               threshold: float = TRUST_RHO) -> TrustFlag:
    """Whether a metric is only a diagnostic on a slice, and why (module docstring). ``n``: rated items on
    the slice; ``rho_high``: the upper bound of the ``level`` CI of the sign-normalised Spearman rho (None or
    NaN where undefined)."""
    if n < min_items:
        return TrustFlag(True, f"too few rated items ({n} < {min_items})")
    if rho_high is None or np.isnan(rho_high):
        return TrustFlag(True, f"Spearman's rho is undefined on {n} items (constant metric or ratings)")
    bound = f"upper {level:.0%} bound of Spearman's rho {rho_high:.2f}"
    if rho_high < threshold:
        return TrustFlag(True, f"{bound} < {threshold} ({n} items)")
    return TrustFlag(False, f"{bound} >= {threshold} ({n} items)")


def trust_map(pairs: pd.DataFrame, slices: tuple[str, ...] = SLICES, higher_is_better: bool = True,
              n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> list[dict]:
    """One row per slice: ``slice_type`` ("overall" or a column of ``slices``), ``slice`` ("all" or its
    value), ``n``, ``rho``, ``rho_low``, ``rho_high`` (null where undefined or n < 3), ``diagnostic`` and
    ``reason`` (:func:`trust_flag`). ``pairs``: one row per rated item with ``metric`` and ``human`` (NaN
    pairs are left out) and the slice columns; a slice column it lacks is skipped."""
    pairs = pairs.dropna(subset=["metric", "human"])
    sign = 1.0 if higher_is_better else -1.0
    groups = [("overall", "all", pairs)] + [(c, key, g) for c in slices if c in pairs
                                            for key, g in pairs.dropna(subset=[c]).groupby(c, sort=True)]
    out = []
    for slice_type, key, group in groups:
        rho = low = high = None
        if len(group) >= 3:
            ci = spearman_ci(sign * group["metric"].to_numpy(float), group["human"].to_numpy(float),
                             n_boot=n_boot, level=level, seed=seed)
            rho, low, high = (None if np.isnan(v) else v for v in (ci.value, ci.low, ci.high))
        flag = trust_flag(len(group), high, level)
        out.append({"slice_type": slice_type, "slice": key, "n": len(group), "rho": rho, "rho_low": low,
                    "rho_high": high, "diagnostic": flag.diagnostic, "reason": flag.reason})
    return out


def human_means(rows: pd.DataFrame, question: str) -> pd.DataFrame:
    """The human side of the pairs: one row per item rated on ``question`` (common-format ``rows``), with the
    item columns (``ratings_format.ITEM``), its ``country`` and ``category``, ``human`` (the mean answer)
    and ``n_raters``."""
    rows = rows[rows["question"] == question]
    if rows.empty:
        raise ValueError(f"no ratings of question {question!r}")
    return (rows.groupby(ITEM, dropna=False, sort=True)
            .agg(country=("country", "first"), category=("category", "first"), human=("value", "mean"),
                 n_raters=("rater", "nunique"))
            .reset_index())


def pair_with_scores(humans: pd.DataFrame, scores: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Join :func:`human_means` with an evaluator's per-image ``scores`` (columns ``metric``, ``value``, the
    image as ``sha256``, ``prompt_id`` + ``sample_idx`` and/or ``file_name``, and slice fields) for ``metric``.
    Items join on the first key that every rated item has and the scores have: the image sha256, else prompt_id
    and sample_idx (a missing sample_idx is 0), else the file_name; the last two name an image only within one
    submission, so the ratings must then be of one submission (filter them first). Slice fields come from the
    scores, else from the ratings (with ``region_group`` from the country table). Returns one row per rated
    item that has the metric.

    Raises:
        CultureboardError: no shared key, ratings of several submissions on a per-submission key, or more
            than one value of ``metric`` per image in the scores.
    """
    scores = scores[scores["metric"] == metric]
    if humans["image_sha256"].notna().all() and "sha256" in scores:
        left, right = ["image_sha256"], ["sha256"]
    elif humans["prompt_id"].notna().all() and {"prompt_id", "sample_idx"} <= set(scores):
        left = right = ["prompt_id", "sample_idx"]
        humans = humans.assign(sample_idx=humans["sample_idx"].fillna(0))
    elif humans["file_name"].notna().all() and "file_name" in scores:
        left = right = ["file_name"]
    else:
        named = [c for c in ("image_sha256", "prompt_id", "file_name") if humans[c].notna().any()]
        raise CultureboardError("ratings", f"name rated images by {' / '.join(named) or 'nothing'}, which the scores "
                                "of the rated submission do not have for every rated image",
                                "name every rated image by image_sha256, or by prompt_id and sample_idx, or by the "
                                "file_name of the submission's metadata.jsonl, the same way on every row")
    if right != ["sha256"] and humans["submission"].nunique() > 1:
        raise CultureboardError("ratings", f"of several submissions cannot be joined on {' + '.join(left)}",
                                "join one submission's ratings at a time")
    keep = [c for c in SLICES if c in scores]
    scores = scores[right + keep + ["value"]].rename(columns={"value": "metric"})
    if scores.duplicated(right).any():
        raise CultureboardError("scores", f"have more than one {metric} value per image",
                                "pass one submission's per-image scores.parquet")
    joined = humans.drop(columns=[c for c in keep if c in humans]).merge(
        scores.astype({"sample_idx": "Int64"}) if "sample_idx" in right else scores, left_on=left, right_on=right)
    return joined if "region_group" in joined else with_region_group(joined)


def with_region_group(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with ``region_group`` ("GN", "GS", or NaN) looked up from its ``country`` in the country table."""
    groups = {c.iso2: c.region_group for c in load_countries()}
    return frame.assign(region_group=frame["country"].map(groups))


def rated_results(rows: pd.DataFrame, results: str | Path) -> tuple[pd.DataFrame, dict[str, Path]]:
    """The ratings with every row's ``submission`` set, and submission id -> its folder in ``results`` (a results
    folder holding the rated submissions; its hidden work folders are skipped, ``atomic.output_folders``).
    Ratings that name no submission are those of the results' only submission; with several, that is an
    error, as is a rated submission the results lack."""
    results = Path(results)
    folders = ({p.name: p for p in output_folders(results) if (p / "scores.parquet").is_file()}
               if results.is_dir() else {})
    if rows["submission"].isna().any():
        if len(folders) != 1 or rows["submission"].notna().any():
            raise CultureboardError("ratings", f"name no submission, and the results hold {len(folders)} submissions",
                                    "give every rating its submission id, or map each rated model to its submission")
        rows = rows.assign(submission=next(iter(folders)))
    for sid in sorted(rows["submission"].unique()):
        if sid not in folders:
            raise CultureboardError(results, f"has no scores of the rated submission {sid}",
                                    "evaluate it into this results folder first")
    return rows, folders


def usable_scores(folder: Path) -> tuple[pd.DataFrame, dict[str, dict]]:
    """A result folder's score rows that count (not flagged, with a value) and its metric cards by name."""
    scores = pq.read_table(folder / "scores.parquet").to_pandas()
    cards = {m["name"]: m for m in json.loads((folder / "summary.json").read_text())["metrics_info"]}
    return scores[scores["flag"].isna() & scores["value"].notna()], cards
