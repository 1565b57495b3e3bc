"""From score rows to the summary: one entry per metric x slice.

A metric's unit comes from its card: ``image`` rows are grouped by prompt (the bootstrap resamples
prompts), other units (a diversity pool, an edit chain, a ladder) are their own rows. Each entry:
``value`` = mean over units of the mean of their rows; ``ci_low``/``ci_high`` = 95% percentile bootstrap
over units (:func:`.stats.bootstrap_ci`, seeded); ``n_images``; ``n_prompts`` (units scored);
``coverage`` = units scored / units of the prompt set in that slice, ``complete`` when it is 1, and
``n_refused`` the prompts of the slice a model declared it refused (not scored, but not missing either); rows
flagged by the family (a pool too small to rank, a judge that never answered usably, a missing reference)
are never averaged in: ``n_flagged`` counts them and ``flags`` gives the count per reason. A slice that
lacks units is reported with its coverage, never silently averaged away. The summary depends only on the
rows (sorted first), so shards merged give exactly the unsharded result.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Mapping

import pandas as pd

from ..engine.registry import IMAGE_UNIT
from .stats import bootstrap_ci

#: Slice types every prompt set is summarised by; a prompt set adds its own (``PromptSetSpec.slice_fields``).
SLICE_TYPES = ("overall", "country", "continent", "region_group", "category", "era")
ROW_ORDER = ["metric", "unit_id", "sample_idx", "file_name"]


def summarize(scores: pd.DataFrame, units: Mapping[str, str], expected: Mapping[str, Mapping[str, dict]],
              slice_types: tuple[str, ...] = SLICE_TYPES, seed: int = 0, n_boot: int = 1000,
              refused: Mapping[str, set[str]] | None = None) -> list[dict]:
    """``units``: metric -> its unit kind (from the cards); ``expected``: unit kind -> {unit id: slice values} of
    the whole prompt set (a value may be a tuple: the unit then counts in each of those slices); ``refused``: unit
    kind -> units whose every image the model declared refused (``n_refused`` per slice: not scored, and not
    missing either)."""
    refused = refused or {}
    scores = scores.sort_values(ROW_ORDER, na_position="first", kind="stable")
    out = []
    for metric, rows in scores.groupby("metric", sort=True):
        unit = units[metric]
        for slice_type in slice_types:
            if slice_type != "overall" and slice_type not in rows:
                continue
            groups = {"all": rows} if slice_type == "overall" else dict(
                iter(rows.dropna(subset=[slice_type]).groupby(slice_type)))
            totals: dict[str, int] = defaultdict(int)
            refusals: dict[str, int] = defaultdict(int)
            for uid, fields in expected[unit].items():
                keys = ("all",) if slice_type == "overall" else fields.get(slice_type)
                for key in (keys if isinstance(keys, tuple) else (keys,)):
                    if key is not None:
                        totals[str(key)] += 1
                        refusals[str(key)] += uid in refused.get(unit, ())
            for key in sorted(groups, key=str):
                entry = _entry(metric, slice_type, str(key), groups[key], unit, totals.get(str(key)), seed, n_boot)
                out.append({**entry, "n_refused": refusals[str(key)]})
    return out


def _entry(metric: str, slice_type: str, key: str, part: pd.DataFrame, unit: str, total: int | None, seed: int,
           n_boot: int) -> dict:
    flagged = part[part["flag"].notna()]
    good = part[part["flag"].isna()]
    by_unit = {u: g["value"].to_numpy() for u, g in good.groupby("unit_id", sort=True)}
    entry = {"metric": metric, "slice_type": slice_type, "slice": key, "n_flagged": int(len(flagged)),
             "flags": dict(sorted(Counter(flagged["flag"]).items())), "n_prompts": len(by_unit)}
    coverage = len(by_unit) / total if total else None
    entry.update(coverage=coverage, complete=coverage == 1.0, n_images=_images(good, unit))
    if by_unit:
        ci = bootstrap_ci(by_unit, n_boot=n_boot, seed=seed)
        entry.update(value=ci.value, ci_low=ci.low, ci_high=ci.high)
    else:
        entry.update(value=None, ci_low=None, ci_high=None)
    return entry


def _images(rows: pd.DataFrame, unit: str) -> int:
    """Images behind the rows: one per image row; a unit row records how many it read in ``detail``."""
    if unit == IMAGE_UNIT:
        return int(rows["file_name"].notna().sum())
    return int(sum(json.loads(d).get("images", 0) for d in rows["detail"] if d))


def unit_slices(prompts: list[dict], fields: tuple[str, ...]) -> dict:
    """The slice fields of a unit made of ``prompts``: those on which all of them agree (others None)."""
    out = {}
    for f in fields:
        values = {p.get(f) for p in prompts}
        out[f] = values.pop() if len(values) == 1 else None
    return out


def unit_values(members: list[Mapping]) -> dict:
    """The slice values of a unit from its prompts' values: the one value they share, or the tuple of the values
    they take (None left out), so that the unit counts in each of those slices."""
    out = {}
    for f in members[0]:
        values = sorted({m.get(f) for m in members if m.get(f) is not None})
        out[f] = values[0] if len(values) == 1 else (tuple(values) if values else None)
    return out
