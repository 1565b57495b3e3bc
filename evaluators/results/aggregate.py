"""From score rows to the summary: one entry per metric x slice.

A metric's unit comes from its card: ``image`` rows are grouped by prompt (the bootstrap resamples prompts),
other units (a diversity pool, an edit chain, a ladder) are their own rows. Each entry: ``value`` = mean over
units of the mean of their rows; ``ci_low``/``ci_high`` = the 95% interval of :func:`.stats.unit_ci`: for a bounded
and discrete metric (its card's ``bounded``: accuracies, top-1 hits, shares) the Wilson score interval at the
unit level (:func:`.stats.bounded_ci`, never a point, right at the bounds); otherwise the percentile bootstrap over
units (:func:`.stats.bootstrap_ci`, seeded), or, for a metric whose card names a ``cluster`` (a prompt field whose
value groups units that share randomness), the two-stage bootstrap over those clusters and then the units
within each drawn cluster (:func:`.stats.cluster_bootstrap_ci`). No interval is a point: a slice of one unit has
no CI (``ci_low``/``ci_high`` null, ``ci_note`` :data:`NO_CI`), nor has a slice of several units whose bootstrap
collapsed because they all scored the same (``ci_note`` :data:`NO_SPREAD`: the data show no spread, which is not
certainty); otherwise ``ci_note`` is null. ``n_images``;
``n_prompts`` (units scored); ``coverage`` = units scored / units of the prompt set in that slice,
``complete`` when it is 1, and ``n_refused`` the prompts of the slice a model declared it refused (not scored,
but not missing either); rows flagged by the family (a pool too small to rank, a judge that never answered
usably, a missing reference) are never averaged in: ``n_flagged`` counts them and ``flags`` gives the count
per reason. A slice that lacks units is reported with its coverage, never silently averaged away. A metric
tested against a null value (``tested``: a language-parity gap against 0) also gets ``p``, the two-sided sign-flip
permutation p-value of "value = null" over its units, or over its clusters where it has them
(:func:`.stats.paired_test`; null when untested: one unit, or every unit at the null value), and ``p_adjusted``,
Benjamini-Hochberg over the slices of one slice type (across countries for the country slices;
:func:`.stats.benjamini_hochberg`). The summary depends only on the rows (sorted first), so shards merged give
exactly the unsharded result.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..engine.registry import IMAGE_UNIT
from .stats import benjamini_hochberg, paired_test, unit_ci

#: Slice types every prompt set is summarised by; a prompt set adds its own (``PromptSetSpec.slice_fields``).
SLICE_TYPES = ("overall", "country", "continent", "region_group", "category", "era")
ROW_ORDER = ["metric", "unit_id", "sample_idx", "file_name"]
#: The version of how intervals are computed, recorded in provenance settings (part of the comparability key, so
#: results whose CIs were computed otherwise are never ranked together). 2: no CI for one unit; clusters.
#: 3: Wilson intervals for bounded and discrete cards; no CI where units all scored the same; clustered tests.
CI_METHOD = 3
#: The ``ci_note`` of a slice with one unit: one prompt shows no spread, so it has no interval (never [v, v]).
NO_CI = "no CI: 1 prompt"
#: The ``ci_note`` of a slice of several units whose bootstrap collapsed to a point (every unit scored the same).
NO_SPREAD = "no CI: every unit scored the same"


def summarize(scores: pd.DataFrame, units: Mapping[str, str], expected: Mapping[str, Mapping[str, dict]],
              slice_types: tuple[str, ...] = SLICE_TYPES, seed: int = 0, n_boot: int = 1000,
              refused: Mapping[str, set[str]] | None = None,
              clusters: Mapping[str, Mapping[str, object]] | None = None,
              tested: Mapping[str, float] | None = None,
              bounded: Mapping[str, tuple[float, float]] | None = None) -> list[dict]:
    """``units``: metric -> its unit kind (from the cards); ``expected``: unit kind -> {unit id: slice values} of
    the whole prompt set (a value may be a tuple: the unit then counts in each of those slices); ``refused``: unit
    kind -> units whose every image the model declared refused (``n_refused`` per slice: not scored, and not
    missing either); ``clusters``: metric -> {unit id: its cluster} for the metrics bootstrapped in two stages
    (a unit without an entry, or with None, is a cluster of its own); ``tested``: metric -> the null value its
    entries are tested against (``p``, ``p_adjusted``; signs flipped per cluster for a clustered metric);
    ``bounded``: metric -> the (low, high) of a bounded and discrete metric (Wilson intervals).

    Each metric's rows become numpy arrays once (unit codes in sorted unit order, values, flags, images per row)
    and each slice type is factorised once; an entry then only indexes those arrays."""
    refused, clusters, tested, bounded = refused or {}, clusters or {}, tested or {}, bounded or {}
    scores = scores.sort_values(ROW_ORDER, na_position="first", kind="stable")
    counts: dict[tuple[str, str], tuple[dict, dict]] = {}
    out = []
    for metric, rows in scores.groupby("metric", sort=True):
        unit = units[metric]
        arrays = _Rows(rows, unit, clusters.get(metric), bounded.get(metric))
        for slice_type in slice_types:
            if slice_type != "overall" and slice_type not in rows:
                continue
            if (unit, slice_type) not in counts:
                counts[unit, slice_type] = _expected_counts(expected[unit], slice_type, refused.get(unit, ()))
            totals, refusals = counts[unit, slice_type]
            entries = [{"metric": metric, "slice_type": slice_type, "slice": key,
                        **arrays.entry(idx, totals.get(key), seed, n_boot, tested.get(metric)),
                        "n_refused": refusals.get(key, 0)} for key, idx in _slices(rows, slice_type)]
            if metric in tested:
                adjusted = benjamini_hochberg([np.nan if e["p"] is None else e["p"] for e in entries])
                for e, q in zip(entries, adjusted):
                    e["p_adjusted"] = None if np.isnan(q) else float(q)
            out += entries
    return out


def _expected_counts(expected: Mapping[str, dict], slice_type: str, refused) -> tuple[dict, dict]:
    """Per slice key: the units of the prompt set in it, and those of them the model refused."""
    totals: dict[str, int] = defaultdict(int)
    refusals: dict[str, int] = defaultdict(int)
    for uid, fields in expected.items():
        keys = ("all",) if slice_type == "overall" else fields.get(slice_type)
        for key in (keys if isinstance(keys, tuple) else (keys,)):
            if key is not None:
                totals[str(key)] += 1
                refusals[str(key)] += uid in refused
    return totals, refusals


def _slices(rows: pd.DataFrame, slice_type: str):
    """(slice key, row positions in ascending order) of each slice of ``rows``, keys sorted as text; rows without
    a value for the slice type are in none."""
    if slice_type == "overall":
        return [("all", np.arange(len(rows)))]
    codes, uniques = pd.factorize(rows[slice_type], use_na_sentinel=True)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
    parts = [(str(value), order[bounds[k]:bounds[k + 1]]) for k, value in enumerate(uniques)]
    return sorted(parts, key=lambda part: part[0])


class _Rows:
    """One metric's rows as arrays: ``unit`` codes (0.. in sorted unit-id order), ``value``, ``flag`` (None when
    the row counts), the images each row stands for, for a clustered metric each unit code's cluster, and the
    bounds of a bounded and discrete metric."""

    def __init__(self, rows: pd.DataFrame, unit: str, clusters: Mapping[str, object] | None = None,
                 bounds: tuple[float, float] | None = None):
        self.unit, ids = pd.factorize(rows["unit_id"], sort=True)
        self.cluster = None if clusters is None else [
            ("cluster", str(c)) if (c := clusters.get(u)) is not None else ("unit", u) for u in ids]
        self.bounds = bounds
        self.value = rows["value"].to_numpy(dtype=float, na_value=np.nan)
        self.flag = rows["flag"].to_numpy(dtype=object)
        self.flagged = rows["flag"].notna().to_numpy()
        self.images = _images(rows, unit)

    def entry(self, idx: np.ndarray, total: int | None, seed: int, n_boot: int, null: float | None = None) -> dict:
        flagged = self.flagged[idx]
        good = idx[~flagged]
        entry = {"n_flagged": int(flagged.sum()),
                 "flags": dict(sorted(Counter(self.flag[idx[flagged]].tolist()).items())) if flagged.any() else {}}
        order = good[np.argsort(self.unit[good], kind="stable")]  # by unit, rows in their order within a unit
        units = self.unit[order]
        starts = np.flatnonzero(np.diff(units)) + 1
        by_unit = np.split(self.value[order], starts) if len(order) else []
        coverage = len(by_unit) / total if total else None
        entry.update(n_prompts=len(by_unit), coverage=coverage, complete=coverage == 1.0,
                     n_images=int(self.images[good].sum()))
        if null is not None:
            entry["p"] = None
        if not by_unit:
            return entry | {"value": None, "ci_low": None, "ci_high": None, "ci_note": None}
        clusters = None if self.cluster is None else [self.cluster[u] for u in units[np.r_[0, starts]]]
        if null is not None:
            ci, entry["p"] = paired_test(by_unit, null, n_boot=n_boot, seed=seed, clusters=clusters, bounds=self.bounds)
        else:
            ci = unit_ci(by_unit, clusters=clusters, bounds=self.bounds, n_boot=n_boot, seed=seed)
        if len(by_unit) == 1:  # one unit: no spread to estimate, so no CI rather than [v, v]
            return entry | {"value": ci.value, "ci_low": None, "ci_high": None, "ci_note": NO_CI}
        if ci.low == ci.high:  # several units, one value: a bootstrap shows no spread, which is not certainty
            return entry | {"value": ci.value, "ci_low": None, "ci_high": None, "ci_note": NO_SPREAD}
        return entry | {"value": ci.value, "ci_low": ci.low, "ci_high": ci.high, "ci_note": None}


def _images(rows: pd.DataFrame, unit: str) -> np.ndarray:
    """Images behind each row: one per image row with a file; a unit row records how many it read in ``detail``."""
    if unit == IMAGE_UNIT:
        return rows["file_name"].notna().to_numpy(dtype=np.int64)
    return np.array([json.loads(d).get("images", 0) if isinstance(d, str) and d else 0 for d in rows["detail"]],
                    dtype=np.int64)


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
