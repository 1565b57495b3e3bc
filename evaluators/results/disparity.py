r"""Disparity: how unevenly a model serves countries, as numbers with confidence intervals and p-values.

For one model and metric, each prompt p with a country contributes its mean score :math:`\bar v_p` (the
prompt is the sampling unit, as in ``stats.bootstrap_ci``). With :math:`m_c` the mean over country c's
prompts, :math:`m` the mean over all of them, and :math:`m_{GN}`, :math:`m_{GS}` the means over the prompts of
Global North and Global South countries:

* **country gap** of c: :math:`m_c - m` (positive: the model does better than its average on c, for a
  metric where higher is better);
* **GN - GS gap**: :math:`m_{GN} - m_{GS}` (positive: the Global North gets the better scores).

Each gap gets a paired, stratified percentile bootstrap: every replicate redraws, within each country, as
many prompts as it has (``stats.resample_indices``), and computes all the means from those same draws, so the
country and the global mean (or the two region means) move together as they do in the data; the number of
prompts per country stays fixed, so every replicate has every country. The p-value of "gap = 0" is a two-sided
permutation p (:func:`permutation_p`): a country's gap against the gaps of the same number of prompts drawn at
random from all of them (its labels shuffled among the prompts); the GN - GS gap against the gaps of the region
labels shuffled among the countries (a country's prompts share its culture, so they move together). A bootstrap
p of a mean over the 5-10 prompts a country has is too small (percentile intervals undercover at such n: in 10
null worlds of 20 countries x 6 prompts, 4 badged a country); a permutation p is exact under the null whatever n.
``p_adjusted`` is Benjamini-Hochberg over the gaps returned together (one family per model and metric: the
country gaps and the GN - GS gap).

Untested gaps: a stratum of one prompt, or of prompts with equal means, is redrawn as itself in every replicate,
so the bootstrap sees no uncertainty in it and would give a zero-width interval and the smallest p. A country
gap is therefore untested when the country has fewer than ``MIN_PROMPTS`` prompts or its own replicate means do
not vary (zero within-country variance); the GN - GS gap when its replicates do not vary. An untested gap keeps
its value but has ``low``, ``high``, ``p`` and ``p_adjusted`` NaN (null in JSON), and BH runs over the tested
gaps only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from cultureboard.countries import load_countries

from .stats import benjamini_hochberg, resample_indices

REGION_GAP = "GN-GS"
#: Benjamini-Hochberg q below which a gap is called significant (the under-represented badge, "served worse").
SIGNIFICANT = 0.05
#: The fewest prompts a country needs for its gap to be tested (module docstring).
MIN_PROMPTS = 2


class Gap(NamedTuple):
    kind: str  # "country" or "region_group"
    name: str  # the country code, or "GN-GS"
    value: float
    low: float
    high: float
    p: float
    p_adjusted: float
    n_prompts: int


def gaps(prompt_means: Sequence[float], countries: Sequence[str], region_groups: Sequence[str | None] | None = None,
         n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> list[Gap]:
    """Country gaps (countries in sorted order) and, where both groups have prompts, the GN - GS gap (module
    docstring; untested gaps have NaN CI, p and q). ``prompt_means``, ``countries`` and ``region_groups`` ("GN", "GS" or None) are per prompt;
    without ``region_groups`` there is no GN - GS gap. ``n_prompts``: the country's prompts, or all prompts of
    the two groups.

    Raises:
        ValueError: lengths differ, no prompt, a non-finite mean or a missing country, a country in two
            region groups, n_boot < 1 or level not in (0, 1).
    """
    means = np.asarray(prompt_means, dtype=float)
    countries = np.asarray(countries, dtype=object)
    groups = np.asarray(region_groups if region_groups is not None else [None] * len(means), dtype=object)
    if means.ndim != 1 or not len(means) or countries.shape != means.shape or groups.shape != means.shape:
        raise ValueError(f"need one mean, country and region group per prompt, got {means.shape}, "
                         f"{countries.shape}, {groups.shape}")
    if not np.isfinite(means).all():
        raise ValueError("prompt means must be finite: leave out prompts without a score")
    if any(not isinstance(c, str) for c in countries):
        raise ValueError("every prompt needs a country (a code): leave out prompts without one")
    if not 0 < level < 1 or n_boot < 1:
        raise ValueError(f"need level in (0, 1) and n_boot >= 1, got {level}, {n_boot}")
    names, index = np.unique(countries, return_inverse=True)  # sorted; each prompt's country as its position
    order = np.argsort(index, kind="stable")
    counts = np.bincount(index)
    bounds = np.cumsum(counts)[:-1]
    by_country = np.split(means[order], bounds)  # each country's prompt means, in the given order
    group_of = {}
    for c, found in zip(names, np.split(groups[order], bounds)):
        if len(found := set(found)) > 1:
            raise ValueError(f"country {c} is in several region groups: {sorted(map(str, found))}")
        group_of[c] = found.pop()
    rng = np.random.default_rng(seed)
    point = np.array([m.mean() for m in by_country])
    reps = np.stack([m[resample_indices(len(m), n_boot, rng)].mean(axis=1) for m in by_country],
                    axis=1)  # (n_boot, countries)

    def pooled(select: np.ndarray):
        weights = counts * select
        return point @ weights / weights.sum(), reps @ weights / weights.sum()

    everything = pooled(np.ones(len(names)))
    found = [("country", c, point[i] - everything[0], reps[:, i] - everything[1], int(counts[i]),
              counts[i] >= MIN_PROMPTS and np.ptp(reps[:, i]) > 0) for i, c in enumerate(names)]
    north, south = (np.array([group_of[c] == g for c in names]) for g in ("GN", "GS"))
    if north.any() and south.any():
        (gn, gn_reps), (gs, gs_reps) = pooled(north), pooled(south)
        gap_reps = gn_reps - gs_reps
        found.append(("region_group", REGION_GAP, gn - gs, gap_reps, int(counts[north | south].sum()),
                      np.ptp(gap_reps) > 0))
    ends = np.quantile(np.stack([r for *_, r, _, _ in found], axis=1), [(1 - level) / 2, (1 + level) / 2], axis=0)
    intervals = [(float(low), float(high)) if tested else (np.nan, np.nan)
                 for low, high, (*_, tested) in zip(*ends, found)]  # stats.percentile_interval of each, in one call
    # permutation p-values (module docstring): prompts' countries shuffled; countries' region groups shuffled
    null = shuffled_means(means, index, len(names), n_boot, rng) - everything[0]
    p = list(permutation_p(null, [value for _, _, value, *_ in found[:len(names)]]))
    if len(found) > len(names):
        members = north | south
        null = shuffled_means(point[members], north[members].astype(int), 2, n_boot, rng, counts[members])
        p.append(float(permutation_p(null[:, 1] - null[:, 0], found[-1][2])))
    p = [p_i if tested else np.nan for p_i, (*_, tested) in zip(p, found)]
    adjusted = benjamini_hochberg(p)
    return [Gap(kind, name, float(value), low, high, p_i, float(q), n)
            for (kind, name, value, _, n, _), (low, high), p_i, q in zip(found, intervals, p, adjusted)]


def clears(low: float, high: float, smallest: float) -> bool:
    """Whether the interval [low, high] of a difference lies wholly beyond the smallest meaningful difference:
    ``low >= smallest`` or ``high <= -smallest`` (False for a NaN bound). With ``smallest`` 0 it only excludes 0."""
    return bool(low >= smallest or high <= -smallest) if low == low and high == high else False


def base_at_chance(base: dict | None, chance) -> bool:
    """Whether a language-parity gap's base metric leaves the model at its chance level, so that no gap may be
    claimed (a model that draws one picture whatever the prompt has no gap, and no skill either): the base entry's
    interval lower end (its value where it has no interval) is at or below ``chance``. The cards' chance levels
    are all floors of scores that rise with skill (a zero-shot country probability, a top-1 hit). False where
    no numeric chance level is known or the base has no value: nothing says the base is at chance."""
    if base is None or base.get("value") is None or isinstance(chance, bool) or not isinstance(chance, (int, float)):
        return False
    low = base["value"] if base.get("ci_low") is None else base["ci_low"]
    return bool(low <= chance)


def under_represented(kind: str, value: float, q: float, direction: str, low: float | None = None,
                      high: float | None = None, smallest: float = 0.0) -> bool:
    """Whether a gap marks a country the model serves worse than its own average: a country gap whose
    Benjamini-Hochberg q (over the model's gaps of the metric) is below :data:`SIGNIFICANT` and whose value lies
    on the worse side of zero (below it where higher is better, above it where lower is better). The q, not the
    gap's marginal CI: with 10 countries x 6 metrics, marginal 95% CIs off zero by chance alone would badge a
    few countries of any model. Never for an untested gap (NaN q), the GN - GS gap, a descriptive metric, or a
    metric ranked by its distance to a target: a country's signed gap to the model's mean says nothing about
    whether that country's values are nearer to the target or farther from it. With ``smallest`` (the card's
    smallest meaningful difference) the gap's interval [low, high] must also clear it (:func:`clears`): a
    significant gap of 0.01 on a metric whose smallest meaningful difference is 0.02 is not badged."""
    sign = {"higher": -1, "lower": 1}.get(direction)
    meaningful = smallest <= 0 or (low is not None and high is not None and clears(low, high, smallest))
    return bool(kind == "country" and sign is not None and q < SIGNIFICANT and sign * value > 0 and meaningful)


def disparity(scores: pd.DataFrame, n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> list[dict]:
    """:func:`gaps` of one model's per-image ``scores`` (columns ``metric``, ``prompt_id``, ``value``,
    ``country``, optionally ``region_group``; the group is looked up in the country table where missing),
    per metric: one row per gap with ``metric`` and the fields of :class:`Gap`, plus
    ``n_prompts_without_country`` (prompts left out because they have no country)."""
    out = []
    for metric, rows in scores.groupby("metric", sort=True):
        per_prompt = rows.groupby("prompt_id", sort=True).agg(value=("value", "mean"), country=("country", "first"))
        if "region_group" in rows:
            per_prompt["region_group"] = rows.groupby("prompt_id", sort=True)["region_group"].first()
        table = {c.iso2: c.region_group for c in load_countries()}
        fill = per_prompt["country"].map(table)
        per_prompt["region_group"] = per_prompt.get("region_group", fill).fillna(fill)
        known = per_prompt.dropna(subset=["country"])
        groups = [g if isinstance(g, str) else None for g in known["region_group"]]
        for gap in gaps(known["value"].to_numpy(), known["country"].to_numpy(), groups, n_boot, level, seed):
            out.append({"metric": metric, **gap._asdict(),
                        "n_prompts_without_country": len(per_prompt) - len(known)})
    return out



def shuffled_means(values: np.ndarray, labels: np.ndarray, n_labels: int, n_perm: int, rng: np.random.Generator,
                   weights: np.ndarray | None = None) -> np.ndarray:
    """(n_perm, n_labels): each label's weighted mean of ``values`` after each of ``n_perm`` random shuffles of
    ``labels`` (integers 0..n_labels-1, one per value; ``weights`` per value, default 1): the permutation null."""
    values = np.asarray(values, dtype=float)
    weights = np.ones(len(values)) if weights is None else np.asarray(weights, dtype=float)
    bins = (rng.permuted(np.tile(labels, (n_perm, 1)), axis=1) + n_labels * np.arange(n_perm)[:, None]).ravel()
    sums = np.bincount(bins, np.tile(values * weights, n_perm), n_labels * n_perm)
    totals = np.bincount(bins, np.tile(weights, n_perm), n_labels * n_perm)
    return (sums / totals).reshape(n_perm, n_labels)


def permutation_p(null: np.ndarray, observed: Sequence[float] | float) -> np.ndarray:
    r"""Two-sided permutation p of each statistic (a column of ``null``, B rows): :math:`(1 + \#\{b :
    |t^{(b)}| \ge |t|\}) / (B + 1)` for the observed value t; the smallest p is 1/(B + 1)."""
    extreme = np.abs(null) >= np.abs(np.asarray(observed, dtype=float)) - 1e-12
    return (1 + extreme.sum(axis=0)) / (len(null) + 1)
