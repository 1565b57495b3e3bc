"""Leaderboard statistics (evaluators/stats.py): bootstrap CIs, rank ties, Krippendorff's alpha, correlations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from cultureboard.evaluators.results.stats import bootstrap_ci, correlations, krippendorff_alpha, rank_ties

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
