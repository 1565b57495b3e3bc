"""From per-image (or per-pool) scores to the summary: one entry per metric x slice.

Each entry: ``value`` = mean over units (prompts, or pools for pool metrics) of the mean of their
rows; ``ci_low``/``ci_high`` = 95% percentile bootstrap over units (``stats.bootstrap_ci``, seeded);
``n_images``; ``n_prompts`` (units scored); ``coverage`` = units scored / units of the prompt set in
that slice. A slice that lacks units is reported with its coverage, never silently averaged away:
``complete`` is false when coverage < 1. The summary depends only on the score rows (sorted first),
so shards merged give exactly the unsharded result.
"""

from __future__ import annotations

import json
from collections import defaultdict

import pandas as pd

from .stats import bootstrap_ci

SLICE_TYPES = ("overall", "country", "continent", "region_group", "category", "era")


def summarize(scores: pd.DataFrame, expected_units: dict[str, dict[str, dict]], seed: int = 0,
              n_boot: int = 1000) -> list[dict]:
    """``expected_units``: metric unit ("image" or "pool") -> {unit id: slice fields} of the whole prompt set."""
    scores = scores.sort_values(["metric", "unit_id", "sample_idx", "file_name"], na_position="first", kind="stable")
    out = []
    for metric, rows in scores.groupby("metric", sort=True):
        unit = "pool" if rows["prompt_id"].isna().all() else "image"
        expected = expected_units[unit]
        for slice_type in SLICE_TYPES:
            groups = {"all": rows} if slice_type == "overall" else dict(iter(rows.dropna(subset=[slice_type]).groupby(slice_type)))
            totals: dict[str, int] = defaultdict(int)
            for fields in expected.values():
                key = "all" if slice_type == "overall" else fields.get(slice_type)
                if key is not None:
                    totals[key] += 1
            for key in sorted(groups):
                part = groups[key]
                by_unit = {u: g["value"].to_numpy() for u, g in part.groupby("unit_id", sort=True)}
                ci = bootstrap_ci(by_unit, n_boot=n_boot, seed=seed)
                coverage = len(by_unit) / totals[key] if totals.get(key) else None
                out.append({
                    "metric": metric, "slice_type": slice_type, "slice": key,
                    "value": ci.value, "ci_low": ci.low, "ci_high": ci.high,
                    "n_images": _images(part, unit),
                    "n_prompts": len(by_unit), "coverage": coverage, "complete": coverage == 1.0,
                })
    return out


def _images(rows: pd.DataFrame, unit: str) -> int:
    """Images behind the rows: one per image row; a pool row records its pool size in ``detail``."""
    if unit == "image":
        return int(rows["file_name"].notna().sum())
    return int(sum(json.loads(d)["images"] for d in rows["detail"]))
