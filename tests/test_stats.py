"""Leaderboard statistics (evaluators/stats.py): bootstrap CIs, rank ties, Krippendorff's alpha, Fleiss' kappa,
Spearman with a bootstrap CI, bootstrap p-values, Benjamini-Hochberg, correlations."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from cultureboard.evaluators.results.stats import (
    benjamini_hochberg,
    bootstrap_ci,
    bounded_ci,
    cluster_bootstrap_ci,
    correlations,
    fleiss_kappa,
    krippendorff_alpha,
    oriented,
    percentile_interval,
    rank_ties,
    resample_indices,
    spearman_ci,
    unit_ci,
    wilson_interval,
)


# --- bootstrap over prompts -------------------------------------------------------------------------


def _prompts(n, seed=0):
    rng = np.random.default_rng(seed)
    return {f"p{i}": rng.normal(loc=rng.normal(), size=rng.integers(1, 6)) for i in range(n)}


def test_bootstrap_deterministic_and_contains_value():
    prompts = _prompts(50)
    ci = bootstrap_ci(prompts, seed=3)
    assert ci == bootstrap_ci(prompts, seed=3)
    assert ci != bootstrap_ci(prompts, seed=4)
    assert ci.low < ci.value < ci.high
    assert ci.value == pytest.approx(np.mean([np.mean(v) for v in prompts.values()]))


def test_bootstrap_accepts_sequences_and_other_statistics():
    prompts = _prompts(30)
    assert bootstrap_ci(list(prompts.values())) == bootstrap_ci(prompts)
    median = bootstrap_ci(prompts, statistic=np.median)
    assert median.value == pytest.approx(np.median([np.mean(v) for v in prompts.values()]))
    assert median.low <= median.value <= median.high


def test_bootstrap_narrows_with_more_prompts():
    small, large = bootstrap_ci(_prompts(20, seed=1)), bootstrap_ci(_prompts(500, seed=1))
    assert large.high - large.low < (small.high - small.low) / 2
    narrow, wide = bootstrap_ci(_prompts(50), level=0.5), bootstrap_ci(_prompts(50), level=0.99)
    assert narrow.high - narrow.low < wide.high - wide.low


def test_bootstrap_resamples_prompts_not_images():
    prompts = {"many": [1.0] * 100, "one": [0.0]}
    ci = bootstrap_ci(prompts, n_boot=2000)
    assert ci.value == 0.5  # per-prompt means weigh equally; the image mean would be 100/101
    # Replicates are the mean of two drawn prompts: 0, 0.5 or 1 with probability 1/4, 1/2, 1/4.
    assert (ci.low, ci.high) == (0.0, 1.0)


def test_bootstrap_single_prompt_is_degenerate():
    assert tuple(bootstrap_ci({"p": [0.2, 0.4]})) == pytest.approx((0.3, 0.3, 0.3))


@pytest.mark.parametrize(
    ("values", "kwargs", "message"),
    [
        ({}, {}, "no prompts"),
        ({"p1": [1.0], "p2": []}, {}, "'p2' has no values"),
        ({"p1": [1.0, np.nan]}, {}, "'p1' has NaN"),
        ({"p1": [1.0]}, {"level": 1.0}, "level"),
        ({"p1": [1.0]}, {"n_boot": 0}, "n_boot"),
    ],
)
def test_bootstrap_rejects_bad_input(values, kwargs, message):
    with pytest.raises(ValueError, match=message):
        bootstrap_ci(values, **kwargs)


# --- rank ties --------------------------------------------------------------------------------------


def test_separated_cis_give_distinct_ranks():
    r = rank_ties([0.5, 0.9, 0.1], lows=[0.4, 0.8, 0.0], highs=[0.6, 1.0, 0.2])
    assert r.rank.tolist() == r.best.tolist() == r.worst.tolist() == [2, 1, 3]


def test_overlapping_cis_share_rank_ranges():
    # A and B overlap; C overlaps B only; D is clearly last.
    values, lows, highs = [0.85, 0.80, 0.70, 0.10], [0.80, 0.72, 0.60, 0.05], [0.90, 0.88, 0.75, 0.15]
    r = rank_ties(values, lows, highs)
    assert r.rank.tolist() == [1, 2, 3, 4]
    assert list(zip(r.best.tolist(), r.worst.tolist())) == [(1, 2), (1, 3), (2, 3), (4, 4)]
    assert (r.best <= r.rank).all() and (r.rank <= r.worst).all()


def test_touching_cis_are_ties_and_equal_values_share_a_rank():
    r = rank_ties([0.5, 0.3], lows=[0.4, 0.2], highs=[0.6, 0.4])
    assert list(zip(r.best.tolist(), r.worst.tolist())) == [(1, 2), (1, 2)]
    assert rank_ties([1.0, 1.0], [1.0, 1.0], [1.0, 1.0]).rank.tolist() == [1, 1]


def test_lower_is_better_mirrors():
    values, lows, highs = [0.85, 0.80, 0.70, 0.10], [0.80, 0.72, 0.60, 0.05], [0.90, 0.88, 0.75, 0.15]
    r = rank_ties(values, lows, highs, higher_is_better=False)
    assert r.rank.tolist() == [4, 3, 2, 1]
    assert list(zip(r.best.tolist(), r.worst.tolist())) == [(3, 4), (2, 4), (2, 3), (1, 1)]


def test_rank_ties_rejects_bad_input():
    with pytest.raises(ValueError, match="equal length"):
        rank_ties([1.0], [0.0, 0.0], [2.0])
    with pytest.raises(ValueError, match="NaN"):
        rank_ties([np.nan], [0.0], [1.0])
    with pytest.raises(ValueError, match=r"low > high for entries \[1\]"):
        rank_ties([0.5, 0.5], [0.0, 0.9], [1.0, 0.1])


# --- Krippendorff's alpha ---------------------------------------------------------------------------

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 observers x 12 units,
# values 1-5, NaN missing. Published: nominal 0.743, ordinal 0.815, interval 0.849. Stored here
# observers x units as in the paper; the function takes units x raters.
NAN = np.nan
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
).T
# 3 coders x 15 units with many gaps; reference values from the `krippendorff` PyPI package's tests.
SPARSE = np.array(
    [
        [NAN, NAN, NAN, NAN, NAN, 3, 4, 1, 2, 1, 1, 3, 3, NAN, 3],
        [1, NAN, 2, 1, 3, 3, 4, 3, NAN, NAN, NAN, NAN, NAN, NAN, NAN],
        [NAN, NAN, 2, 1, 3, 4, 4, NAN, 2, 1, 1, 3, 3, NAN, 4],
    ]
).T


@pytest.mark.parametrize(("level", "expected"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)])
def test_krippendorff_2011_example(level, expected):
    assert krippendorff_alpha(KRIPPENDORFF_2011, level) == pytest.approx(expected, abs=5e-4)


def test_krippendorff_sparse_example():
    assert krippendorff_alpha(SPARSE, "nominal") == pytest.approx(0.691358, abs=1e-6)
    assert krippendorff_alpha(SPARSE, "interval") == pytest.approx(0.810845, abs=1e-6)


def test_krippendorff_hand_computed():
    # Units (1,3), (2,2), (3,3): o13 = o31 = 1, o22 = 2, o33 = 2; n = (1, 2, 3), n = 6.
    ratings = [[1, 3], [2, 2], [3, 3]]
    assert krippendorff_alpha(ratings, "nominal") == pytest.approx(1 - 5 * 2 / 22)  # 6/11
    assert krippendorff_alpha(ratings, "interval") == pytest.approx(1 - 5 * 8 / 40)  # 0
    # ordinal: d13 = (6 - 4/2)^2 = 16, d12 = (3/2)^2, d23 = (5/2)^2 -> expected 2(2*2.25 + 3*16 + 6*6.25) = 180
    assert krippendorff_alpha(ratings, "ordinal") == pytest.approx(1 - 5 * 32 / 180)  # 1/9
    # Two values only: every level gives 1 - 5 * 2 / 18 = 4/9.
    for level in ("nominal", "ordinal", "interval"):
        assert krippendorff_alpha([[1, 1], [1, 2], [2, 2]], level) == pytest.approx(4 / 9)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_krippendorff_properties(level):
    assert krippendorff_alpha([[1, 1, 1], [3, 3, NAN], [5, 5, 5], [2, 2, 2]], level) == 1.0
    rng = np.random.default_rng(0)
    ratings = rng.integers(1, 6, size=(40, 3)).astype(float)
    ratings[rng.uniform(size=ratings.shape) < 0.2] = NAN
    alpha = krippendorff_alpha(ratings, level)
    assert alpha == pytest.approx(krippendorff_alpha(ratings[::-1, ::-1], level))  # unit and rater order
    assert krippendorff_alpha(np.vstack([ratings, [[4, NAN, NAN]]]), level) == pytest.approx(alpha)  # unpairable unit
    assert alpha < 0.2  # independent random raters: near chance


def test_krippendorff_scale_invariances():
    interval = krippendorff_alpha(KRIPPENDORFF_2011, "interval")
    assert krippendorff_alpha(3 * KRIPPENDORFF_2011 + 7, "interval") == pytest.approx(interval)
    ordinal = krippendorff_alpha(KRIPPENDORFF_2011, "ordinal")
    assert krippendorff_alpha(np.exp(KRIPPENDORFF_2011), "ordinal") == pytest.approx(ordinal)


@pytest.mark.parametrize(
    ("ratings", "level", "message"),
    [
        ([[1, 1], [1, 1]], "ordinal", "no variation"),
        ([[1, NAN], [NAN, 2]], "ordinal", "two raters"),
        ([[1, 2], [2, 1]], "ratio", "level"),
        ([1, 2, 3], "nominal", "units x raters"),
    ],
)
def test_krippendorff_rejects_bad_input(ratings, level, message):
    with pytest.raises(ValueError, match=message):
        krippendorff_alpha(ratings, level)


# --- correlations ----------------------------------------------------------------------------------


def test_correlations_match_scipy_and_drop_nan_pairs():
    rng = np.random.default_rng(0)
    x = rng.normal(size=30)
    y = x + rng.normal(size=30)
    x_nan, y_nan = np.append(x, [np.nan, 1.0]), np.append(y, [2.0, np.nan])
    c = correlations(x_nan, y_nan)
    assert c.n == 30
    assert (c.pearson, c.pearson_p) == pytest.approx(tuple(stats.pearsonr(x, y)))
    assert (c.spearman, c.spearman_p) == pytest.approx(tuple(stats.spearmanr(x, y)))
    assert (c.kendall, c.kendall_p) == pytest.approx(tuple(stats.kendalltau(x, y)))


def test_correlations_monotone_and_tau_b_with_ties():
    x = np.arange(10.0)
    c = correlations(x, np.exp(x))
    assert c.spearman == pytest.approx(1.0) and c.kendall == pytest.approx(1.0)
    assert c.pearson < 1.0
    assert correlations(x, -x).spearman == pytest.approx(-1.0)
    # tau-b with ties: x = [1, 1, 2], y = [1, 2, 3]: concordant 2, discordant 0, ties in x 1 -> 2 / sqrt(2 * 3)
    assert correlations([1, 1, 2], [1, 2, 3]).kendall == pytest.approx(2 / np.sqrt(6))


def test_correlations_rejects_bad_input():
    with pytest.raises(ValueError, match="equal length"):
        correlations([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="at least 3"):
        correlations([1, 2, np.nan], [1, 2, 3])


def test_krippendorff_matches_the_krippendorff_package():
    krippendorff = pytest.importorskip("krippendorff")  # the oracle (test extra)
    rng = np.random.default_rng(7)
    for trial in range(12):
        ratings = rng.integers(1, 6, size=(30, 4)).astype(float)
        ratings[rng.uniform(size=ratings.shape) < 0.3] = NAN
        for level in ("nominal", "ordinal", "interval"):
            # the package takes raters x units
            oracle = krippendorff.alpha(reliability_data=ratings.T, level_of_measurement=level)
            assert krippendorff_alpha(ratings, level) == pytest.approx(oracle, abs=1e-9), (trial, level)
    for level in ("nominal", "ordinal", "interval"):
        oracle = krippendorff.alpha(reliability_data=KRIPPENDORFF_2011.T, level_of_measurement=level)
        assert krippendorff_alpha(KRIPPENDORFF_2011, level) == pytest.approx(oracle, abs=1e-9)


# --- Fleiss' kappa ----------------------------------------------------------------------------------

# Wikipedia's worked example ("Fleiss' kappa"): 10 subjects, 14 raters each, 5 categories; kappa = 0.210.
WIKIPEDIA = np.array([
    [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
])


def test_fleiss_wikipedia_example():
    # By hand: sum_i (sum_j n_ij^2 - 14) = 182+46+56+80+60+84+44+32+52+52 = 688, so P-bar = 688 / (10 * 14 * 13);
    # column totals 20, 28, 39, 21, 32 of 140, so P-bar_e = (20^2 + 28^2 + 39^2 + 21^2 + 32^2) / 140^2 = 4170 / 19600.
    p_bar, p_e = Fraction(688, 1820), Fraction(4170, 19600)
    expected = (p_bar - p_e) / (1 - p_e)
    assert fleiss_kappa(WIKIPEDIA) == pytest.approx(float(expected), abs=1e-12)
    assert fleiss_kappa(WIKIPEDIA) == pytest.approx(0.210, abs=5e-4)  # as published
    assert fleiss_kappa(WIKIPEDIA[::-1, ::-1]) == pytest.approx(float(expected))  # unit and category order


def test_fleiss_hand_computed_with_varying_raters():
    # unit 1: (2, 0) -> P = 1; unit 2: (1, 1) -> P = 0; unit 3: (2, 1) -> P = (5 - 3) / 6 = 1/3; unit 4: one rating, left out.
    # P-bar = 4/9; category rates over the 7 pairable ratings: 5/7, 2/7 -> P-bar_e = 29/49.
    counts = [[2, 0], [1, 1], [2, 1], [0, 1]]
    p_bar, p_e = Fraction(4, 9), Fraction(29, 49)
    assert fleiss_kappa(counts) == pytest.approx(float((p_bar - p_e) / (1 - p_e)), abs=1e-12)


def test_fleiss_agreement_and_disagreement():
    assert fleiss_kappa([[3, 0], [0, 3], [3, 0]]) == 1.0
    # every unit split 1-1 between two categories used equally: P-bar = 0, P-bar_e = 1/2 -> kappa = -1
    assert fleiss_kappa([[1, 1], [1, 1]]) == -1.0


@pytest.mark.parametrize(
    ("counts", "message"),
    [([[3, 0], [2, 0]], "one category"), ([[1, 0], [0, 1]], "two ratings"), ([[1, -1]], "non-negative"),
     ([[1.5, 1]], "integers"), ([1, 2], "units x categories")],
)
def test_fleiss_rejects_bad_input(counts, message):
    with pytest.raises(ValueError, match=message):
        fleiss_kappa(counts)


# --- the bootstrap machinery ------------------------------------------------------------------------


def test_resample_indices_and_percentile_interval():
    draws = resample_indices(5, 200, np.random.default_rng(1))
    assert draws.shape == (200, 5) and draws.min() >= 0 and draws.max() <= 4
    assert (draws == resample_indices(5, 200, np.random.default_rng(1))).all()
    # quantiles 0.025 and 0.975 of 0..100 with linear interpolation
    assert percentile_interval(np.arange(101.0), 0.95) == pytest.approx((2.5, 97.5))


def test_bootstrap_ci_draws_through_resample_indices():
    means = np.array([0.1, 0.5, 0.2, 0.9])
    idx = resample_indices(4, 300, np.random.default_rng(5))
    expected = percentile_interval(means[idx].mean(axis=1), 0.9)
    assert bootstrap_ci([[m] for m in means], n_boot=300, level=0.9, seed=5)[1:] == pytest.approx(expected)


def test_spearman_ci_value_is_scipy_and_replicates_resample_pairs():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 5, size=25).astype(float)  # ties on both sides
    y = np.round(x + rng.normal(size=25))
    ci = spearman_ci(x, y, n_boot=400, level=0.9, seed=11)
    assert ci.n == 25 and ci.value == pytest.approx(stats.spearmanr(x, y).statistic)
    # the same draws, one scipy call per replicate: the vectorised ranks agree (pairs stay together)
    idx = resample_indices(25, 400, np.random.default_rng(11))
    oracle = np.array([stats.spearmanr(x[i], y[i]).statistic for i in idx])
    oracle = oracle[np.isfinite(oracle)]
    assert (ci.low, ci.high) == pytest.approx(percentile_interval(oracle, 0.9))
    assert ci.low < ci.value < ci.high


def test_spearman_ci_monotone_independent_and_direction():
    x = np.arange(40.0)
    assert tuple(spearman_ci(x, np.exp(x / 10))[1:]) == (1.0, 1.0, 1.0)  # every replicate is monotone too
    assert tuple(spearman_ci(x, -x)[1:]) == (-1.0, -1.0, -1.0)
    rng = np.random.default_rng(0)
    independent = spearman_ci(rng.normal(size=300), rng.normal(size=300))
    assert independent.low < 0 < independent.high
    assert independent.high - independent.low < 0.3


def test_spearman_ci_drops_nan_pairs_and_constant_is_undefined():
    ci = spearman_ci([1, 2, 3, np.nan, 5], [2, 1, 4, 3, np.nan])
    assert ci.n == 3 and ci.value == pytest.approx(0.5)
    assert all(np.isnan(v) for v in spearman_ci([1, 1, 1, 1], [1, 2, 3, 4])[1:])
    with pytest.raises(ValueError, match="at least 3"):
        spearman_ci([1, 2, np.nan], [1, 2, 3])
    with pytest.raises(ValueError, match="equal length"):
        spearman_ci([1, 2, 3], [1, 2])


# --- Benjamini-Hochberg -------------------------------------------------------------------------------


def test_benjamini_hochberg_hand_computed():
    # sorted 0.005, 0.01, 0.03, 0.04, 0.2 (m = 5): m p / i = 0.025, 0.025, 0.05, 0.05, 0.2; running minimum from the top
    q = benjamini_hochberg([0.01, 0.04, 0.03, 0.005, 0.2])
    assert q == pytest.approx([0.025, 0.05, 0.05, 0.025, 0.2])


def test_benjamini_hochberg_1995_example():
    # Benjamini & Hochberg (1995), section 4: 15 p-values; at q = 0.05 the procedure rejects the four smallest.
    p = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.3240, 0.4262, 0.5719, 0.6528,
         0.7590, 1.000]
    q = benjamini_hochberg(p)
    assert (q <= 0.05).sum() == 4 and (q[:4] <= 0.05).all()
    assert q[3] == pytest.approx(0.0095 * 15 / 4)


def test_benjamini_hochberg_matches_scipy_and_keeps_nan():
    rng = np.random.default_rng(2)
    p = np.concatenate([rng.uniform(size=40), rng.uniform(0, 0.01, size=10), [0.3, 0.3, 1.0, 0.0]])
    assert benjamini_hochberg(p) == pytest.approx(stats.false_discovery_control(p, method="bh"))
    with_nan = benjamini_hochberg([0.01, np.nan, 0.04])
    assert np.isnan(with_nan[1]) and with_nan[[0, 2]] == pytest.approx([0.02, 0.04])  # m = 2, not 3
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        benjamini_hochberg([0.5, 1.2])


def test_cluster_bootstrap_with_singleton_clusters_is_the_unit_bootstrap():
    units = [[1.0, 2.0], [3.0], [10.0], [4.0, 6.0], [7.0]]
    assert cluster_bootstrap_ci(units, list("abcde"), n_boot=300, seed=4) == bootstrap_ci(units, n_boot=300, seed=4)


def test_cluster_bootstrap_hand_checkable_properties():
    units = [[0.0], [0.0], [1.0], [1.0]]
    one = cluster_bootstrap_ci(units, ["x", "x", "y", "y"], n_boot=2000, seed=0)
    assert one.value == 0.5  # the plain mean over units
    # constant within each cluster, so a replicate is 0, 1/2 or 1 with probabilities 1/4, 1/2, 1/4
    assert (one.low, one.high) == (0.0, 1.0)
    same = cluster_bootstrap_ci([[2.0], [2.0], [2.0]], ["x", "y", "y"], n_boot=50, seed=0)
    assert same == (2.0, 2.0, 2.0)
    nested = cluster_bootstrap_ci([[0.0], [1.0], [0.0], [1.0]], ["x", "x", "y", "y"], n_boot=2000, seed=0)
    assert nested.low < 0.5 < nested.high  # within-cluster spread is resampled too
    with pytest.raises(ValueError, match="one cluster per unit"):
        cluster_bootstrap_ci(units, ["x"], n_boot=10)
    with pytest.raises(ValueError, match="no values"):
        cluster_bootstrap_ci([[]], ["x"], n_boot=10)


def test_oriented_values_for_each_direction():
    v, lo, hi = [0.5, -0.2], [0.4, -0.5], [0.7, 0.1]
    assert [a.tolist() for a in oriented(v, lo, hi, "higher")] == [v, lo, hi]
    assert [a.tolist() for a in oriented(v, lo, hi, "lower")] == [[-0.5, 0.2], [-0.7, -0.1], [-0.4, 0.5]]
    value, low, high = oriented(v, lo, hi, "target", 0.0)
    assert value.tolist() == [-0.5, -0.2]
    assert low.tolist() == pytest.approx([-0.7, -0.5]) and high.tolist() == pytest.approx([-0.4, 0.0])
    value, low, high = oriented([3.0], [2.0], [5.0], "target", 1.0)
    assert (value[0], low[0], high[0]) == (-2.0, -4.0, -1.0)
    for direction, target in (("none", None), ("target", None), ("sideways", None)):
        with pytest.raises(ValueError, match="cannot order"):
            oriented(v, lo, hi, direction, target)


def test_target_ranking_prefers_the_value_nearest_the_target():
    # signed values around 0: "lower is better" would crown the most negative; the target rule the nearest to 0
    values, lows, highs = [-0.9, 0.05, 0.4], [-1.0, -0.02, 0.3], [-0.8, 0.1, 0.5]
    r = rank_ties(*oriented(values, lows, highs, "target", 0.0))
    assert r.rank.tolist() == [3, 1, 2] and r.best.tolist() == [3, 1, 2]
    assert rank_ties(values, lows, highs, higher_is_better=False).rank.tolist() == [1, 2, 3]


def test_rank_by_bound_orders_by_the_pessimistic_end():
    # entry 0 has the better value but a wide CI; entry 1 is surely good: by bound 1 comes first
    values, lows, highs = [0.9, 0.8, 0.2], [0.3, 0.7, 0.1], [1.0, 0.85, 0.25]
    by_value, by_bound = rank_ties(values, lows, highs), rank_ties(values, lows, highs, by="bound")
    assert by_value.rank.tolist() == [1, 2, 3] and by_bound.rank.tolist() == [2, 1, 3]
    assert by_bound.best.tolist() == by_value.best.tolist() and by_bound.worst.tolist() == by_value.worst.tolist()
    lower = rank_ties(*oriented(values, lows, highs, "lower"), by="bound")  # lower is better: by the upper end
    assert lower.rank.tolist() == [3, 2, 1]
    with pytest.raises(ValueError, match="by must be"):
        rank_ties(values, lows, highs, by="median")


# --- Wilson intervals of bounded and discrete metrics ------------------------------------------------------------

Z2 = 1.959963984540054**2


@pytest.mark.parametrize("hits, n, low, high", [
    (4, 4, 4 / (4 + Z2), 1.0),  # every unit right: the lower end is n / (n + z^2) = 0.5101, never [1, 1]
    (0, 4, 0.0, Z2 / (4 + Z2)),  # every unit wrong: [0, 0.4899]
    (2, 4, 0.5 - 1.959963984540054 / (4 + Z2) * np.sqrt(1 + Z2 / 4),  # centre 1/2, half-width
     0.5 + 1.959963984540054 / (4 + Z2) * np.sqrt(1 + Z2 / 4)),  # z / (n + z^2) sqrt(n p q + z^2 / 4) = 0.3500
])
def test_the_wilson_interval_by_hand(hits, n, low, high):
    assert wilson_interval(hits / n, n) == pytest.approx((low, high), abs=1e-12)
    assert wilson_interval(2 / 4, 4) == pytest.approx((0.1500, 0.8500), abs=5e-5)


def test_a_bounded_metric_gets_the_wilson_interval_of_its_rescaled_mean_over_units():
    """Four units of a 4-question accuracy all 1 (each unit the mean of its images): [0.510, 1], not [1, 1]. On a
    [-1, 1] scale the same share maps back: mean 0 of four gaps is share 1/2, its interval 2 x [0.150, 0.850] - 1.
    n is the number of units (image counts do not matter), or of clusters where the units are clustered."""
    ci = bounded_ci([[1, 1], [1], [1, 1, 1], [1]], (0.0, 1.0))
    assert ci == pytest.approx((1.0, 4 / (4 + Z2), 1.0))
    low, high = wilson_interval(0.5, 4)
    assert bounded_ci([[0.5], [-0.5], [0.0], [0.0]], (-1.0, 1.0)) == pytest.approx((0.0, 2 * low - 1, 2 * high - 1))
    assert bounded_ci([[0.75], [0.25]], (0.0, 1.0)) == pytest.approx((0.5, *wilson_interval(0.5, 2)))
    assert bounded_ci([[1]] * 4, (0, 1), clusters=["a", "a", "b", "b"]) == pytest.approx((1.0, 2 / (2 + Z2), 1.0))
    assert unit_ci([[1]] * 4, bounds=(0, 1)) == bounded_ci([[1]] * 4, (0, 1))
    assert unit_ci([[1], [2]], n_boot=50, seed=3) == bootstrap_ci([[1], [2]], n_boot=50, seed=3)
    with pytest.raises(ValueError, match="outside the card's bounds"):
        bounded_ci([[1.5], [0.5]], (0.0, 1.0))
    with pytest.raises(ValueError, match="low < high"):
        bounded_ci([[0.5]], (1.0, 0.0))


def test_no_wilson_interval_from_two_or_more_units_is_a_point():
    """200 random slices of 2-12 units of 1-4 quarter-valued images (many all 0 or all 1): every interval holds
    the value, stays in the bounds and is at least as wide as 4 of 4's at n = 12 (12 / (12 + z^2) to 1)."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        n, p = int(rng.integers(2, 13)), rng.choice([0.0, 0.5, 1.0, rng.random()])
        units = [rng.binomial(4, p, size=int(rng.integers(1, 5))) / 4 for _ in range(n)]
        ci = bounded_ci(units, (0.0, 1.0))
        assert 0.0 <= ci.low <= ci.value <= ci.high <= 1.0 and ci.high - ci.low >= 1 - 12 / (12 + Z2) - 1e-12
