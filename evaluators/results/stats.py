"""Statistics for the leaderboard: prompt-level bootstrap CIs, rank ties, rater agreement, correlations.

* :func:`bootstrap_ci` -- percentile bootstrap over prompts of the mean of per-prompt means;
* :func:`paired_test` -- that CI and the sign-flip permutation p-value of "the mean equals a null value";
* :func:`cluster_bootstrap_ci` -- the same mean with a two-stage bootstrap (clusters of prompts, then prompts);
* :func:`wilson_interval`, :func:`bounded_ci` -- the Wilson score interval of a bounded and discrete metric's mean
  over units (accuracies, top-1 hits, shares), which never collapses to a point and keeps its coverage at 0 and 1;
* :func:`unit_ci` -- the interval a summary entry gets: one of the three above, by what the card declares;
* :func:`resample_indices`, :func:`percentile_interval` -- the one bootstrap machinery (draws, interval) of the
  bootstraps here and in ``disparity`` and ``trust``;
* :func:`spearman_ci` -- Spearman's rho with a percentile bootstrap CI over items (pairs resampled together);
* :func:`benjamini_hochberg` -- false-discovery-rate adjusted p-values;
* :func:`rank_ties` -- rank ranges in which entries whose CIs overlap are tied (DESIGN principle 4);
* :func:`oriented`, :func:`goodness` -- values (and CIs) as "higher is better" for a card's direction and target;
* :func:`krippendorff_alpha` -- inter-rater agreement (nominal, ordinal, interval);
* :func:`fleiss_kappa` -- inter-rater agreement on categories, from a units x categories count table;
* :func:`correlations` -- Pearson, Spearman and Kendall tau-b of a metric against human ratings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import numpy as np


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
    between-prompt variation can be estimated): the summary reports such a slice without a CI. Deterministic for a given seed. ``statistic`` must accept an ``axis`` keyword (numpy
    reductions such as ``np.mean`` and ``np.median`` do).

    Raises:
        ValueError: no prompts, a prompt without values, a non-finite value, n_boot < 1, level not in (0, 1).
    """
    value, replicates = _prompt_replicates(values_by_prompt, statistic, n_boot, level, seed)
    return ConfidenceInterval(value, *percentile_interval(replicates, level))


def paired_test(values_by_prompt: Mapping[str, Sequence[float]] | Sequence[Sequence[float]], null: float = 0.0,
                n_boot: int = 1000, level: float = 0.95, seed: int = 0, clusters: Sequence | None = None,
                bounds: tuple[float, float] | None = None) -> tuple[ConfidenceInterval, float | None]:
    r""":func:`unit_ci` of the mean of per-prompt means :math:`d_i` (one per pair: paired differences) and the
    two-sided sign-flip permutation p-value of "the mean equals ``null``" (:func:`sign_flip_p`), exact under a
    null symmetric about ``null`` whatever the number of pairs (a bootstrap p of a mean over 5-10 pairs is too
    small). With ``clusters`` (one label per pair: pairs that share a side, such as the native rows of one
    English row) the signs flip per cluster, on each cluster's sum of :math:`d_i - null`: pairs that share
    randomness keep it together under the null, as they do in the two-stage bootstrap of the CI. p is None
    (untested) when every :math:`d_i` equals ``null`` or there is a single pair (a single cluster)."""
    means = _unit_means(values_by_prompt)
    ci = unit_ci(values_by_prompt, clusters=clusters, bounds=bounds, n_boot=n_boot, level=level, seed=seed)
    centred = means - null
    if clusters is not None:
        centred = np.bincount(_codes(clusters, len(means)), weights=centred)
    tested = len(centred) > 1 and np.abs(centred).max() > 0
    p = sign_flip_p(centred, n_boot, np.random.default_rng([seed, 1])) if tested else None
    return ci, p


def unit_ci(values_by_unit, clusters: Sequence | None = None, bounds: tuple[float, float] | None = None,
            n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> ConfidenceInterval:
    """The interval of the mean of per-unit means that a summary entry gets: :func:`bounded_ci` for a metric whose
    card declares ``bounds`` (bounded and discrete), else :func:`cluster_bootstrap_ci` when ``clusters`` are
    given, else :func:`bootstrap_ci`."""
    if bounds is not None:
        return bounded_ci(values_by_unit, bounds, clusters=clusters, level=level)
    if clusters is not None:
        return cluster_bootstrap_ci(values_by_unit, clusters, n_boot=n_boot, level=level, seed=seed)
    return bootstrap_ci(values_by_unit, n_boot=n_boot, level=level, seed=seed)


def wilson_interval(p_hat: float, n: int, level: float = 0.95) -> tuple[float, float]:
    r"""The Wilson score interval of a proportion :math:`\hat p` from n trials, with z the
    :math:`(1+level)/2` normal quantile:

    .. math:: \frac{\hat p + z^2/2n}{1 + z^2/n} \pm \frac{z}{1 + z^2/n}
              \sqrt{\frac{\hat p(1-\hat p)}{n} + \frac{z^2}{4n^2}}

    It always contains :math:`\hat p`, lies in [0, 1] and has positive width for every n >= 1 (4 of 4 gives
    [0.510, 1]), where the normal (Wald) interval and a bootstrap collapse to [1, 1]: its coverage holds at the
    boundary (Brown, Cai and DasGupta 2001). :math:`\hat p` may be a fraction of the n trials' mean (a mean of
    shares).

    Raises:
        ValueError: n < 1, :math:`\hat p` outside [0, 1], level not in (0, 1).
    """
    from statistics import NormalDist

    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if n < 1:
        raise ValueError(f"the Wilson interval needs at least one trial, got {n}")
    if not 0 <= p_hat <= 1:
        raise ValueError(f"a proportion lies in [0, 1], got {p_hat}")
    z2 = NormalDist().inv_cdf((1 + level) / 2) ** 2
    centre = (p_hat + z2 / (2 * n)) / (1 + z2 / n)
    half = np.sqrt(z2) / (1 + z2 / n) * np.sqrt(p_hat * (1 - p_hat) / n + z2 / (4 * n * n))
    # it holds p_hat exactly (rounding would leave 0 or 1 just outside at the bounds)
    return float(min(p_hat, max(0.0, centre - half))), float(max(p_hat, min(1.0, centre + half)))


def bounded_ci(values_by_unit, bounds: tuple[float, float], clusters: Sequence | None = None,
               level: float = 0.95) -> ConfidenceInterval:
    r"""The mean of per-unit means of a metric bounded in ``bounds`` = [a, b] and discrete (an accuracy, a top-1 hit,
    a share of yes answers: values piled at the ends), with the Wilson score interval at the unit level.

    The value is :math:`\bar v = \frac1U\sum_u \bar v_u`, as :func:`bootstrap_ci` gives. Rescaled to
    :math:`\hat p = (\bar v - a)/(b - a)`, it is taken as a proportion of n trials, n the number of independent
    units (the distinct ``clusters`` where given, else the units), and the interval is
    :func:`wilson_interval` mapped back to [a, b]. Every variable in [0, 1] with mean p has a variance of at most
    p(1 - p) (a 0/1 variable's), so this is the widest spread the units could have: it cannot collapse to a
    point, even when every unit scored 1 (4 of 4 correct: [0.510, 1]) or when all share one inner value.

    Raises:
        ValueError: as :func:`bootstrap_ci`, b <= a, or a unit mean outside the bounds.
    """
    low, high = (float(x) for x in bounds)
    if not high > low:
        raise ValueError(f"bounds must be (low, high) with low < high, got {bounds}")
    means = _unit_means(values_by_unit)
    if means.min() < low - 1e-12 or means.max() > high + 1e-12:
        raise ValueError(f"a unit mean lies outside the card's bounds [{low:g}, {high:g}]: "
                         f"{means[(means < low) | (means > high)][:3].tolist()}")
    n = len(means) if clusters is None else len(np.unique(_codes(clusters, len(means))))
    value = float(means.mean())
    share = min(1.0, max(0.0, (value - low) / (high - low)))
    lo, hi = wilson_interval(share, n, level)
    return ConfidenceInterval(value, min(value, low + lo * (high - low)), max(value, low + hi * (high - low)))


def _unit_means(values_by_unit) -> np.ndarray:
    items = values_by_unit.items() if isinstance(values_by_unit, Mapping) else enumerate(values_by_unit)
    means = np.asarray([_unit_mean(unit, values) for unit, values in items], dtype=float)
    if not len(means):
        raise ValueError("no prompts: a confidence interval needs at least one prompt")
    return means


def _codes(clusters: Sequence, n_units: int) -> np.ndarray:
    """0.. codes of the distinct cluster labels (compared as text), one per unit."""
    if len(clusters) != n_units:
        raise ValueError(f"need one cluster per unit, got {len(clusters)} for {n_units} units")
    return np.unique(np.asarray([str(c) for c in clusters], dtype=object), return_inverse=True)[1].ravel()


def sign_flip_p(centred: np.ndarray, n_perm: int, rng: np.random.Generator) -> float:
    r"""Two-sided sign-flip p of "the mean of ``centred`` is 0": with :math:`t = |\bar d|` and B random sign
    vectors :math:`s^{(b)}` (each :math:`\pm 1` with probability 1/2), :math:`p = (1 + \#\{b : |\overline{s^{(b)}
    d}| \ge t\}) / (B + 1)`. Under the null each difference is as likely to have either sign, so every flip is as
    likely as the data; the smallest p is 1/(B + 1), and about 2 / 2^n for n differences."""
    centred = np.asarray(centred, dtype=float)
    signs = rng.integers(0, 2, (n_perm, len(centred))) * 2 - 1
    null = np.abs(signs @ centred) / len(centred)
    return float((1 + (null >= abs(centred.mean()) - 1e-12).sum()) / (n_perm + 1))


def _prompt_replicates(values_by_prompt, statistic, n_boot: int, level: float, seed: int) -> tuple[float, np.ndarray]:
    """(statistic over the per-prompt means, its ``n_boot`` bootstrap replicates over prompts)."""
    _check_bootstrap(n_boot, level)
    means = _unit_means(values_by_prompt)
    replicates = statistic(means[resample_indices(len(means), n_boot, np.random.default_rng(seed))], axis=1)
    return float(statistic(means)), replicates


def cluster_bootstrap_ci(values_by_unit: Sequence[Sequence[float]], clusters: Sequence, n_boot: int = 1000,
                         level: float = 0.95, seed: int = 0) -> ConfidenceInterval:
    r"""The mean of per-unit means with a two-stage (cluster) percentile bootstrap.

    Units that share randomness (CuRe: every ladder of a category compares with the same P(c) images) are not
    independent draws, so resampling units alone understates the variance. With the K distinct values of
    ``clusters`` (one per unit) and :math:`n_k` units in cluster k, each replicate draws K clusters with
    replacement, then, within each drawn cluster (each draw separately), :math:`n_k` of its units with
    replacement, and takes the mean over every drawn unit's mean. The point value is the plain mean over units
    :math:`\frac1U\sum_u \bar v_u`, exactly as :func:`bootstrap_ci` gives. When every unit is its own cluster
    this is the one-stage bootstrap over units (other draws, same distribution).

    Raises:
        ValueError: as :func:`bootstrap_ci`, or a cluster count that differs from the unit count.
    """
    _check_bootstrap(n_boot, level)
    means = _unit_means(list(values_by_unit.values()) if isinstance(values_by_unit, Mapping) else values_by_unit)
    codes = _codes(clusters, len(means))
    order = np.argsort(codes, kind="stable")
    sizes = np.bincount(codes)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    rng = np.random.default_rng(seed)
    drawn = resample_indices(len(sizes), n_boot, rng)  # stage 1: (n_boot, K) cluster indices
    per_draw = sizes[drawn].ravel()  # stage 2: each drawn cluster redraws as many units as it has
    first = np.repeat(starts[drawn].ravel(), per_draw)
    size = np.repeat(per_draw, per_draw)
    picks = order[first + rng.integers(0, size)]  # a uniform unit of the drawn cluster, per draw
    replicate = np.repeat(np.arange(n_boot), sizes[drawn].sum(axis=1))
    totals = np.bincount(replicate, weights=means[picks], minlength=n_boot)
    replicates = totals / sizes[drawn].sum(axis=1)
    return ConfidenceInterval(float(means.mean()), *percentile_interval(replicates, level))


def _unit_mean(unit, values) -> float:
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        raise ValueError(f"prompt {unit!r} has no values: drop it and report the coverage instead")
    if not np.isfinite(values).all():
        raise ValueError(f"prompt {unit!r} has NaN or infinite values: drop them and report the coverage")
    return float(values.mean())


def _check_bootstrap(n_boot: int, level: float) -> None:
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")


def resample_indices(n_units: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap draws: an ``(n_boot, n_units)`` array whose row b holds the indices (0..n_units-1, drawn
    uniformly with replacement) of the units in replicate b. Every bootstrap in cultureboard draws here, so
    one seed gives the same replicates whichever statistic is computed from them."""
    return rng.integers(0, n_units, size=(n_boot, n_units))


def percentile_interval(replicates: np.ndarray, level: float) -> tuple[float, float]:
    """The percentile interval of bootstrap replicates: their (1-level)/2 and (1+level)/2 quantiles
    (numpy's linear interpolation)."""
    low, high = np.quantile(np.asarray(replicates, dtype=float), [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


class SpearmanCI(NamedTuple):
    n: int
    value: float
    low: float
    high: float


def spearman_ci(x: Sequence[float], y: Sequence[float], n_boot: int = 1000, level: float = 0.95,
                seed: int = 0) -> SpearmanCI:
    r"""Spearman's rho of paired values with a percentile bootstrap CI that resamples items (pairs).

    Pairs where x or y is NaN are dropped (``n`` counts the rest). rho is Pearson's r of the average
    ranks (ties share their mean rank), as ``scipy.stats.spearmanr``; 1 means y increases with x. Each
    replicate draws n pairs with replacement (:func:`resample_indices`) and recomputes rho; a replicate
    whose x or y is constant has no rho and is left out of the interval. Constant x or y gives NaN for
    the value and both bounds; so does a bootstrap in which no replicate has a rho.

    Raises:
        ValueError: x and y differ in length, fewer than 3 complete pairs, n_boot < 1, level not in (0, 1).
    """
    _check_bootstrap(n_boot, level)
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"x and y must be 1-D of equal length, got {x.shape} and {y.shape}")
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    if len(x) < 3:
        raise ValueError(f"Spearman's rho needs at least 3 complete pairs, got {len(x)}")
    nan = float("nan")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return SpearmanCI(len(x), nan, nan, nan)
    value = _rank_correlation(x[None, :], y[None, :])[0]
    idx = resample_indices(len(x), n_boot, np.random.default_rng(seed))
    replicates = _rank_correlation(x[idx], y[idx])
    replicates = replicates[np.isfinite(replicates)]
    low, high = percentile_interval(replicates, level) if replicates.size else (nan, nan)
    return SpearmanCI(len(x), float(value), low, high)


def _rank_correlation(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Row-wise Spearman rho of two (rows, n) arrays; NaN for a row where x or y is constant."""
    from scipy import stats  # imported where used: a cached rerun of ``evaluate`` needs no scipy.stats (0.8 s)

    rx, ry = stats.rankdata(x, axis=1), stats.rankdata(y, axis=1)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    denominator = np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, (rx * ry).sum(axis=1) / denominator, np.nan)


def benjamini_hochberg(p_values: Sequence[float]) -> np.ndarray:
    r"""Benjamini-Hochberg (1995) adjusted p-values ("q-values"), in the input order.

    With the m non-NaN p-values sorted, :math:`p_{(1)} \le \dots \le p_{(m)}`:
    :math:`q_{(i)} = \min_{j \ge i} \min(1, \frac{m}{j} p_{(j)})`. Rejecting every hypothesis with
    :math:`q \le \alpha` is the BH step-up procedure, which keeps the false discovery rate at most
    :math:`\alpha` for independent (or positively dependent) tests. NaN p-values (untested hypotheses)
    stay NaN and do not count in m.

    Raises:
        ValueError: not 1-D, or a p-value outside [0, 1].
    """
    p = np.asarray(p_values, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"p-values must be 1-D, got shape {p.shape}")
    tested = ~np.isnan(p)
    if ((p[tested] < 0) | (p[tested] > 1)).any():
        raise ValueError(f"p-values must lie in [0, 1], got {p[tested][(p[tested] < 0) | (p[tested] > 1)].tolist()}")
    m = int(tested.sum())
    order = np.argsort(p[tested], kind="stable")
    scaled = p[tested][order] * m / np.arange(1, m + 1)
    adjusted = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    out = np.full(p.shape, np.nan)
    positions = np.flatnonzero(tested)[order]
    out[positions] = adjusted
    return out


class RankRange(NamedTuple):
    rank: np.ndarray
    best: np.ndarray
    worst: np.ndarray


def oriented(values: Sequence[float], lows: Sequence[float], highs: Sequence[float], direction: str,
             target: float | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Values and CIs turned into "goodness" (higher is better) for a card's ``direction``, as (values, lows,
    highs) arrays with lows <= highs:

    * ``higher``: unchanged; ``lower``: negated, :math:`(-v, -high, -low)`;
    * ``target`` (closer to ``target`` t is better): the negated distance :math:`-|v - t|`, whose interval is
      the negated image of [low, high] under :math:`x \mapsto |x - t|`: from 0 when the CI contains t (else the
      nearer end's distance) to the farther end's distance.

    Raises:
        ValueError: direction "none" (a descriptive metric is never ordered) or unknown, or a target missing.
    """
    v, lo, hi = (np.asarray(a, dtype=float) for a in (values, lows, highs))
    if direction == "higher":
        return v, lo, hi
    if direction == "lower":
        return -v, -hi, -lo
    if direction == "target" and target is not None:
        ends = np.abs(lo - target), np.abs(hi - target)
        near = np.where((lo <= target) & (target <= hi), 0.0, np.minimum(*ends))
        return -np.abs(v - target), -np.maximum(*ends), -near
    raise ValueError(f"cannot order by the direction {direction!r} (target {target!r}): only higher, lower, or "
                     "target with a target value")


def goodness(values: Sequence[float], direction: str, target: float | None = None) -> np.ndarray:
    """Values as "higher is better" (:func:`oriented` without a CI): themselves, negated where lower is better,
    minus their distance to the target."""
    return oriented(values, values, values, direction, target)[0]


def rank_ties(
    values: Sequence[float], lows: Sequence[float], highs: Sequence[float], higher_is_better: bool = True,
    by: str = "value",
) -> RankRange:
    r"""Ranks (1 = best) where entries whose confidence intervals overlap are ties.

    With higher is better, entry j is *surely above* entry i when :math:`low_j > high_i` (disjoint
    CIs); intervals that overlap or touch are ties. For each entry i:

    * ``best[i]  = 1 + #{j : low_j > high_i}`` -- only the entries surely above it precede it;
    * ``worst[i] = #{j : high_j >= low_i}`` -- every entry not surely below it (i included) may precede it;
    * ``rank[i]  = 1 + #{j : value_j > value_i}`` -- competition rank of the point value; with
      ``by="bound"``, of the pessimistic bound instead: :math:`1 + \#\{j : low_j > low_i\}` (the upper bound
      where lower is better), which puts an entry whose CI is wide (few prompts) behind one that is surely good.

    With ``higher_is_better=False`` the comparisons are mirrored (j surely above i when
    :math:`high_j < low_i`). Entries with disjoint CIs get disjoint ranges; an entry whose CI
    overlaps no other has best = worst. When each CI contains its value, best <= rank <= worst (by either order).
    Show ``best``-``worst`` (e.g. "1-3") on the leaderboard rather than ``rank``.

    Raises:
        ValueError: lengths differ, a NaN, low > high, or ``by`` not "value" or "bound".
    """
    if by not in ("value", "bound"):
        raise ValueError(f"by must be 'value' or 'bound', got {by!r}")
    values, lows, highs = (np.asarray(a, dtype=float) for a in (values, lows, highs))
    if not values.ndim == 1 or values.shape != lows.shape or values.shape != highs.shape:
        raise ValueError(f"values, lows and highs must be 1-D of equal length, got {values.shape}, {lows.shape}, {highs.shape}")
    if np.isnan(values).any() or np.isnan(lows).any() or np.isnan(highs).any():
        raise ValueError("values and CI bounds must not be NaN: leave out entries without a score")
    if (lows > highs).any():
        raise ValueError(f"CI low > high for entries {np.flatnonzero(lows > highs).tolist()}")
    if not higher_is_better:
        values, lows, highs = -values, -highs, -lows
    key = values if by == "value" else lows
    rank = 1 + (key[None, :] > key[:, None]).sum(axis=1)
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


def fleiss_kappa(counts: np.ndarray) -> float:
    r"""Fleiss' kappa of a units x categories count table (``counts[i, j]`` raters put unit i in category j).

    With :math:`n_i = \sum_j n_{ij}` ratings of unit i, :math:`N` units and :math:`T = \sum_i n_i`:

    .. math::
        P_i = \frac{\sum_j n_{ij}^2 - n_i}{n_i (n_i - 1)}, \quad \bar P = \frac1N \sum_i P_i, \quad
        p_j = \frac{\sum_i n_{ij}}{T}, \quad \bar P_e = \sum_j p_j^2, \quad
        \kappa = \frac{\bar P - \bar P_e}{1 - \bar P_e}

    :math:`P_i` is the share of agreeing ordered rater pairs on unit i; :math:`\bar P_e` the agreement
    expected if raters picked categories at their overall rates. With the same number of raters per unit
    this is Fleiss (1971); with varying :math:`n_i` it is the usual generalisation (the mean of the
    per-unit agreements, category rates over all ratings). Units with fewer than two ratings carry no
    pair and are left out. 1 is perfect agreement, 0 chance level, below 0 worse than chance. Categories
    are nominal: a 4 against a 5 counts as much disagreement as a 1 against a 5.

    Raises:
        ValueError: not 2-D, negative or non-integer counts, no unit with two ratings, or every rating
            in one category (expected agreement 1: kappa is 0/0, undefined).
    """
    counts = np.asarray(counts, dtype=float)
    if counts.ndim != 2:
        raise ValueError(f"counts must be a units x categories table, got shape {counts.shape}")
    if not np.isfinite(counts).all() or (counts < 0).any() or (counts != np.round(counts)).any():
        raise ValueError("counts must be non-negative integers")
    counts = counts[counts.sum(axis=1) >= 2]
    if len(counts) == 0:
        raise ValueError("no unit has two ratings: kappa is undefined")
    n_i = counts.sum(axis=1)
    agreement = ((counts**2).sum(axis=1) - n_i) / (n_i * (n_i - 1))
    shares = counts.sum(axis=0) / n_i.sum()
    expected = float((shares**2).sum())
    if expected >= 1:
        raise ValueError("every rating is in one category: with no variation kappa is undefined (0/0)")
    return float((agreement.mean() - expected) / (1 - expected))


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
    from scipy import stats

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
