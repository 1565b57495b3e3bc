"""Statistics for the leaderboard: prompt-level bootstrap CIs, rank ties, rater agreement, correlations.

* :func:`bootstrap_ci` -- percentile bootstrap over prompts of the mean of per-prompt means;
* :func:`rank_ties` -- rank ranges in which entries whose CIs overlap are tied (DESIGN principle 4);
* :func:`krippendorff_alpha` -- inter-rater agreement (nominal, ordinal, interval);
* :func:`correlations` -- Pearson, Spearman and Kendall tau-b of a metric against human ratings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import numpy as np
from scipy import stats


class ConfidenceInterval(NamedTuple):
    value: float
    low: float
    high: float


def bootstrap_ci(
    values_by_prompt: Mapping[str, Sequence[float]] | Sequence[Sequence[float]],
    statistic: Callable[..., np.ndarray] = np.mean,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> ConfidenceInterval:
    r"""Point value and percentile bootstrap CI, resampling prompts (clusters), not images.

    Each prompt p contributes one number, the mean :math:`\bar v_p` of its images' values. The point
    value is ``statistic`` over those P per-prompt means (by default :math:`\frac1P\sum_p \bar v_p`,
    the mean over prompts of per-prompt means: a prompt with 100 images weighs as much as one with
    1). Each of ``n_boot`` replicates draws P prompts with replacement and recomputes the statistic;
    the CI is the (1-level)/2 and (1+level)/2 quantiles of the replicates (numpy's linear
    interpolation).

    Why prompts: images of one prompt share its text and artifact, so their scores are correlated;
    resampling images as if independent would understate the variance. The prompt is the sampling
    unit a benchmark generalises over.

    One prompt gives the degenerate interval low = high = value (every replicate is that prompt; no
    between-prompt variation can be estimated). Deterministic for a given seed. ``statistic`` must accept an ``axis`` keyword (numpy
    reductions such as ``np.mean`` and ``np.median`` do).

    Raises:
        ValueError: no prompts, a prompt without values, a non-finite value, n_boot < 1, level not in (0, 1).
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    items = values_by_prompt.items() if isinstance(values_by_prompt, Mapping) else enumerate(values_by_prompt)
    means = []
    for prompt, values in items:
        values = np.asarray(values, dtype=float)
        if values.size == 0:
            raise ValueError(f"prompt {prompt!r} has no values: drop it and report the coverage instead")
        if not np.isfinite(values).all():
            raise ValueError(f"prompt {prompt!r} has NaN or infinite values: drop them and report the coverage")
        means.append(values.mean())
    if not means:
        raise ValueError("no prompts: a confidence interval needs at least one prompt")
    means = np.asarray(means)
    value = float(statistic(means))
    rng = np.random.default_rng(seed)
    replicates = statistic(means[rng.integers(0, len(means), size=(n_boot, len(means)))], axis=1)
    low, high = np.quantile(replicates, [(1 - level) / 2, (1 + level) / 2])
    return ConfidenceInterval(value, float(low), float(high))


class RankRange(NamedTuple):
    rank: np.ndarray
    best: np.ndarray
    worst: np.ndarray


def rank_ties(
    values: Sequence[float], lows: Sequence[float], highs: Sequence[float], higher_is_better: bool = True
) -> RankRange:
    r"""Ranks (1 = best) where entries whose confidence intervals overlap are ties.

    With higher is better, entry j is *surely above* entry i when :math:`low_j > high_i` (disjoint
    CIs); intervals that overlap or touch are ties. For each entry i:

    * ``best[i]  = 1 + #{j : low_j > high_i}`` -- only the entries surely above it precede it;
    * ``worst[i] = #{j : high_j >= low_i}`` -- every entry not surely below it (i included) may precede it;
    * ``rank[i]  = 1 + #{j : value_j > value_i}`` -- competition rank of the point value.

    With ``higher_is_better=False`` the comparisons are mirrored (j surely above i when
    :math:`high_j < low_i`). Entries with disjoint CIs get disjoint ranges; an entry whose CI
    overlaps no other has best = worst. When each CI contains its value, best <= rank <= worst.
    Show ``best``-``worst`` (e.g. "1-3") on the leaderboard rather than ``rank``.

    Raises:
        ValueError: lengths differ, a NaN, or low > high.
    """
    values, lows, highs = (np.asarray(a, dtype=float) for a in (values, lows, highs))
    if not values.ndim == 1 or values.shape != lows.shape or values.shape != highs.shape:
        raise ValueError(f"values, lows and highs must be 1-D of equal length, got {values.shape}, {lows.shape}, {highs.shape}")
    if np.isnan(values).any() or np.isnan(lows).any() or np.isnan(highs).any():
        raise ValueError("values and CI bounds must not be NaN: leave out entries without a score")
    if (lows > highs).any():
        raise ValueError(f"CI low > high for entries {np.flatnonzero(lows > highs).tolist()}")
    if not higher_is_better:
        values, lows, highs = -values, -highs, -lows
    rank = 1 + (values[None, :] > values[:, None]).sum(axis=1)
    best = 1 + (lows[None, :] > highs[:, None]).sum(axis=1)
    worst = (highs[None, :] >= lows[:, None]).sum(axis=1)
    return RankRange(rank, best, worst)


def _ordinal_distance(counts: np.ndarray) -> np.ndarray:
    r""":math:`\delta^2_{ck} = (\sum_{g=c}^{k} n_g - (n_c + n_k)/2)^2` for values in sorted order."""
    cum, idx = np.cumsum(counts), np.arange(len(counts))
    lo, hi = np.minimum.outer(idx, idx), np.maximum.outer(idx, idx)
    between = cum[hi] - cum[lo] + counts[lo]  # sum of n_g for g from min(c, k) to max(c, k)
    return (between - (counts[:, None] + counts[None, :]) / 2) ** 2


def krippendorff_alpha(ratings: np.ndarray, level: str = "ordinal") -> float:
    r"""Krippendorff's alpha of a units x raters matrix (NaN = missing), coincidence-matrix form.

    For every unit u with :math:`m_u \ge 2` ratings, each ordered pair of its ratings from different
    raters adds :math:`1/(m_u - 1)` to the coincidence :math:`o_{ck}`; :math:`n_c = \sum_k o_{ck}`,
    :math:`n = \sum_c n_c`. Then

    .. math:: \alpha = 1 - (n - 1)\,\frac{\sum_{c,k} o_{ck}\,\delta^2_{ck}}{\sum_{c,k} n_c n_k\,\delta^2_{ck}}

    with :math:`\delta^2_{ck}` = [c != k] (nominal), :math:`(c-k)^2` (interval), or
    :math:`(\sum_{g=c}^{k} n_g - \frac{n_c+n_k}{2})^2` over the sorted observed values (ordinal).
    Range: 1 is perfect agreement, 0 agreement at chance level, below 0 systematic disagreement.
    Units with fewer than two ratings are not pairable and are ignored (Krippendorff 2011).

    Raises:
        ValueError: not 2-D, unknown level, no unit with two ratings, or a single observed value
            (no variation: alpha is 0/0, undefined).
    """
    ratings = np.asarray(ratings, dtype=float)
    if ratings.ndim != 2:
        raise ValueError(f"ratings must be a units x raters matrix, got shape {ratings.shape}")
    if level not in ("nominal", "ordinal", "interval"):
        raise ValueError(f"level must be 'nominal', 'ordinal' or 'interval', got {level!r}")
    if np.isinf(ratings).any():
        raise ValueError("ratings must be finite (NaN marks a missing rating)")
    pairable = ratings[(~np.isnan(ratings)).sum(axis=1) >= 2]
    if len(pairable) == 0:
        raise ValueError("no unit has ratings from two raters: alpha is undefined")
    observed = pairable[~np.isnan(pairable)]
    domain = np.unique(observed)
    if len(domain) < 2:
        raise ValueError(f"every rating is {domain[0]:g}: with no variation alpha is undefined (0/0)")
    # counts[u, c]: ratings of value domain[c] in unit u
    counts = np.stack([(pairable == v).sum(axis=1) for v in domain], axis=1).astype(float)
    weights = 1 / (counts.sum(axis=1) - 1)
    coincidences = (counts * weights[:, None]).T @ counts - np.diag(weights @ counts)
    n_c = coincidences.sum(axis=1)
    if level == "nominal":
        delta2 = 1.0 - np.eye(len(domain))
    elif level == "interval":
        delta2 = np.subtract.outer(domain, domain) ** 2
    else:
        delta2 = _ordinal_distance(n_c)
    n = n_c.sum()
    return float(1 - (n - 1) * (coincidences * delta2).sum() / (np.outer(n_c, n_c) * delta2).sum())


class Correlations(NamedTuple):
    n: int
    pearson: float
    pearson_p: float
    spearman: float
    spearman_p: float
    kendall: float
    kendall_p: float


def correlations(x: Sequence[float], y: Sequence[float]) -> Correlations:
    """Pearson r, Spearman rho and Kendall tau-b (``scipy.stats``, two-sided p-values) of paired values.

    Pairs where x or y is NaN are dropped; ``n`` is the number of pairs used. Each coefficient lies
    in [-1, 1] (1: perfectly increasing relation). Ties are handled by average ranks (Spearman) and
    the tau-b correction (Kendall). A constant input gives NaN coefficients (scipy warns).

    Raises:
        ValueError: x and y differ in length, or fewer than 3 complete pairs remain.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"x and y must be 1-D of equal length, got {x.shape} and {y.shape}")
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    if len(x) < 3:
        raise ValueError(f"correlations need at least 3 complete pairs, got {len(x)}")
    pearson, spearman, kendall = stats.pearsonr(x, y), stats.spearmanr(x, y), stats.kendalltau(x, y)
    return Correlations(
        n=len(x),
        pearson=float(pearson.statistic),
        pearson_p=float(pearson.pvalue),
        spearman=float(spearman.statistic),
        spearman_p=float(spearman.pvalue),
        kendall=float(kendall.statistic),
        kendall_p=float(kendall.pvalue),
    )
