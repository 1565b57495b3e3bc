"""Disparity gaps (evaluators/results/disparity.py): country minus global mean and Global North minus Global South,
with a paired, stratified bootstrap over prompts, permutation p-values and Benjamini-Hochberg."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cultureboard.evaluators.results.disparity import REGION_GAP, disparity, gaps
from cultureboard.evaluators.results.stats import benjamini_hochberg


def by_name(found):
    return {g.name: g for g in found}


def test_hand_computed_gaps_and_intervals():
    # A (GN): prompts 2 and 4; B (GS): four prompts of 1. Means 3 and 1, global (6 + 4) / 6 = 5/3.
    found = by_name(gaps([2, 4, 1, 1, 1, 1], ["A", "A", "B", "B", "B", "B"], ["GN", "GN", "GS", "GS", "GS", "GS"],
                         n_boot=2000))
    assert [g.kind for g in found.values()] == ["country", "country", "region_group"]
    assert found["A"].value == pytest.approx(3 - 5 / 3) and found["B"].value == pytest.approx(1 - 5 / 3)
    assert found[REGION_GAP].value == pytest.approx(2.0)
    assert (found["A"].n_prompts, found["B"].n_prompts, found[REGION_GAP].n_prompts) == (2, 4, 6)
    # B's replicates are always 1; A's mean is 2, 3 or 4 (prob. 1/4, 1/2, 1/4) with A's two prompts redrawn.
    # Gap A = M_A - (2 M_A + 4) / 6 in {2/3, 4/3, 2}; GN - GS = M_A - 1 in {1, 2, 3}.
    assert (found["A"].low, found["A"].high) == pytest.approx((2 / 3, 2))
    assert (found[REGION_GAP].low, found[REGION_GAP].high) == pytest.approx((1, 3))
    # permutation p: A's gap is as large as observed only when the shuffle gives A the prompts 2 and 4, 1 of the
    # C(6, 2) = 15 equally likely pairs, so p -> 1/15 (binomial sd of the estimate at B = 2000: 0.0056); the
    # regions' labels have two arrangements among two countries, each as extreme: p = 1 exactly
    assert found["A"].p == pytest.approx(1 / 15, abs=0.02) and found[REGION_GAP].p == 1.0
    # BH over the two tested gaps: q_A = 2 p_A / 1 (rank 1), q_region = 1
    assert found["A"].p_adjusted == pytest.approx(2 * found["A"].p) and found[REGION_GAP].p_adjusted == 1.0
    # B's four prompts are equal: no within-country spread, so its gap is untested (value kept, no CI, no p)
    assert np.isnan([found["B"].low, found["B"].high, found["B"].p, found["B"].p_adjusted]).all()


def test_single_prompt_countries_are_never_significant():
    # one prompt per country: every replicate redraws the same prompts, nothing varies, nothing is tested
    found = by_name(gaps([0.50, 0.52, 0.49], ["ES", "MX", "NG"], ["GN", "GS", "GS"]))
    assert set(found) == {"ES", "MX", "NG", REGION_GAP}
    assert found["ES"].value == pytest.approx(0.50 - 1.51 / 3)
    assert found[REGION_GAP].value == pytest.approx(0.50 - 0.505)
    for g in found.values():
        assert np.isnan([g.low, g.high, g.p, g.p_adjusted]).all()


def test_untested_countries_leave_bh_to_the_others():
    # A and B: 20 prompts each with noise; C: one prompt; D: three equal prompts. BH runs over A and B only.
    rng = np.random.default_rng(2)
    means = [*rng.normal(0.0, 1.0, 20), *rng.normal(0.5, 1.0, 20), 0.2, 0.7, 0.7, 0.7]
    found = by_name(gaps(means, ["A"] * 20 + ["B"] * 20 + ["C"] + ["D"] * 3, n_boot=400))
    assert np.isnan([found["C"].p, found["D"].p, found["C"].p_adjusted, found["D"].p_adjusted]).all()
    tested = [found["A"].p, found["B"].p]
    assert all(np.isfinite(tested))
    assert [found["A"].p_adjusted, found["B"].p_adjusted] == pytest.approx(benjamini_hochberg(tested).tolist())
    assert found["A"].low < found["A"].value < found["A"].high


def test_a_constructed_gap_excludes_zero_and_a_null_gap_includes_it():
    # JP 0.6 above, NG 0.6 below, IT at the global mean (all with noise, 40 prompts each)
    rng = np.random.default_rng(0)
    means = np.concatenate([rng.normal(0.6, 0.5, 40), rng.normal(0.0, 0.5, 40), rng.normal(-0.6, 0.5, 40)])
    countries = ["JP"] * 40 + ["IT"] * 40 + ["NG"] * 40
    found = by_name(gaps(means, countries, ["GN"] * 80 + ["GS"] * 40, seed=1))
    jp, it, ng = found["JP"], found["IT"], found["NG"]
    assert jp.value == pytest.approx(means[:40].mean() - means.mean())
    assert jp.low > 0 and jp.p < 0.01 and jp.p_adjusted < 0.05
    assert ng.high < 0 and ng.p_adjusted < 0.05
    assert it.low < 0 < it.high and it.p > 0.05 and it.p_adjusted > 0.05
    gn_gs = found[REGION_GAP]
    assert gn_gs.value == pytest.approx(means[:80].mean() - means[80:].mean()) and gn_gs.low > 0
    # a model without any gap: every CI includes 0
    flat = gaps(rng.normal(0.0, 0.5, 120), countries, seed=1)
    assert all(g.low < 0 < g.high and g.p > 0.05 for g in flat)


def test_p_values_are_adjusted_together():
    rng = np.random.default_rng(4)
    means = np.concatenate([rng.normal(m, 1.0, 15) for m in (0.0, 0.3, 0.6, 1.5)])
    found = gaps(means, [c for c in "ABCD" for _ in range(15)], ["GN"] * 30 + ["GS"] * 30, n_boot=500)
    p = [g.p for g in found]
    assert [g.p_adjusted for g in found] == pytest.approx(benjamini_hochberg(p).tolist())
    assert all(g.p_adjusted >= g.p for g in found)


def test_same_seed_same_gaps_and_pairing():
    rng = np.random.default_rng(8)
    means, countries = rng.normal(size=30), ["A"] * 10 + ["B"] * 20
    assert gaps(means, countries, seed=3) == gaps(means, countries, seed=3)
    # two countries: the gaps are exact mirror images weighted by size, replicate by replicate (paired draws)
    a, b = gaps(means, countries, seed=3)
    assert (a.value, a.low, a.high) == pytest.approx((-2 * b.value, -2 * b.high, -2 * b.low))



def test_a_countrys_draws_follow_its_prompts_in_the_given_order_wherever_they_stand():
    # the bootstrap redraws each country from its own prompts in their given order: interleaving two countries'
    # prompts (each keeping its order) leaves every gap and interval as it is (bit for bit)
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=40), rng.normal(1, size=40)
    grouped = gaps(np.concatenate([a, b]), ["A"] * 40 + ["B"] * 40, ["GN"] * 40 + ["GS"] * 40, n_boot=200, seed=1)
    mixed = gaps(np.ravel([a, b], order="F"), ["A", "B"] * 40, ["GN", "GS"] * 40, n_boot=200, seed=1)
    assert [(g.name, g.value, g.low, g.high) for g in mixed] == [(g.name, g.value, g.low, g.high) for g in grouped]

@pytest.mark.parametrize(
    ("args", "message"),
    [(([1.0], ["A", "B"]), "one mean, country"), (([], []), "one mean, country"), (([np.nan], ["A"]), "finite"),
     (([1.0], [None]), "needs a country"), (([1.0, 2.0], ["A", "A"], ["GN", "GS"]), "several region groups")],
)
def test_gaps_reject_bad_input(args, message):
    with pytest.raises(ValueError, match=message):
        gaps(*args)


def test_disparity_from_per_image_scores():
    rows = []
    for prompt, country, values in [("p1", "JP", [4, 2]), ("p2", "JP", [3]), ("p3", "NG", [1, 1]), ("p4", None, [9])]:
        rows += [{"metric": "m", "prompt_id": prompt, "country": country, "value": v} for v in values]
    found = {r["name"]: r for r in disparity(pd.DataFrame(rows), n_boot=200)}
    # per-prompt means JP 3, 3; NG 1; p4 has no country and is left out; the country table says JP GN, NG GS
    assert found["JP"]["value"] == pytest.approx(3 - 7 / 3) and found["NG"]["value"] == pytest.approx(1 - 7 / 3)
    assert found[REGION_GAP]["value"] == pytest.approx(2.0) and found[REGION_GAP]["n_prompts"] == 3
    assert {r["n_prompts_without_country"] for r in found.values()} == {1}
    assert {r["metric"] for r in found.values()} == {"m"}


def test_badges_use_the_bh_q_not_the_marginal_ci():
    """20 countries x 6 prompts, all drawn from one distribution (no country is served worse): the marginal 95% CIs
    of two gaps lie below zero by chance, so CI-based badges would mark them; the Benjamini-Hochberg q over the
    model's gaps marks none. A country made truly worse is marked either way; target and descriptive metrics never
    are, and the better side never is."""
    from cultureboard.evaluators.results.disparity import SIGNIFICANT, under_represented

    rng = np.random.default_rng(7)
    countries = [f"C{i:02d}" for i in range(20) for _ in range(6)]
    means = rng.normal(0.5, 0.1, len(countries))
    found = gaps(means, countries, n_boot=1000, seed=0)
    marginal = [g.name for g in found if g.kind == "country" and g.high < 0]  # CIs wholly below zero
    assert marginal == ["C03", "C16"]
    assert not [g.name for g in found if under_represented(g.kind, g.value, g.p_adjusted, "higher")]
    worse = np.where(np.array(countries) == "C05", means - 0.3, means)
    found = by_name(gaps(worse, countries, n_boot=1000, seed=0))
    c05 = found["C05"]
    assert c05.p_adjusted < SIGNIFICANT and under_represented(c05.kind, c05.value, c05.p_adjusted, "higher")
    assert under_represented(c05.kind, -c05.value, c05.p_adjusted, "lower")  # a distance pushed up: worse too
    assert not under_represented(c05.kind, c05.value, c05.p_adjusted, "lower")  # below the mean of a distance
    for direction in ("target", "none"):  # neither side of zero is "worse"
        assert not any(under_represented(c05.kind, s * c05.value, c05.p_adjusted, direction) for s in (1, -1))
    assert not under_represented("region_group", c05.value, c05.p_adjusted, "higher")
    assert not under_represented("country", -1.0, float("nan"), "higher")  # untested


def test_permutation_p_values_hold_the_false_discovery_rate_at_six_prompts_a_country():
    """The bootstrap p of a mean over 6 prompts was too small (4 of 10 null worlds of 20 countries badged one); the
    permutation p is exact: across 40 null worlds (every country drawn from one distribution) BH at 0.05 finds a
    country in at most 2 (the expected number under the null is at most 40 x 0.05 = 2)."""
    from cultureboard.evaluators.results.disparity import SIGNIFICANT

    worlds_with_a_finding = 0
    countries = [f"C{i:02d}" for i in range(20) for _ in range(6)]
    for seed in range(40):
        means = np.random.default_rng(100 + seed).normal(0.5, 0.1, len(countries))
        found = gaps(means, countries, n_boot=400, seed=seed)
        worlds_with_a_finding += any(g.p_adjusted < SIGNIFICANT for g in found)
    assert worlds_with_a_finding <= 2


def test_permutation_p_hand_computed():
    from cultureboard.evaluators.results.disparity import permutation_p, shuffled_means

    null = np.array([[0.5, -1.0], [-2.0, 0.1], [0.2, 3.0]])
    # column 0, observed 1: |-2| >= 1 once -> (1 + 1) / 4; column 1, observed -1: |-1| and |3| -> (1 + 2) / 4
    assert permutation_p(null, [1.0, -1.0]).tolist() == [0.5, 0.75]
    # shuffling keeps each label's count: label means of a permutation of [1, 2, 3, 4] with labels [0, 0, 1, 1]
    means = shuffled_means(np.array([1.0, 2.0, 3.0, 4.0]), np.array([0, 0, 1, 1]), 2, 50, np.random.default_rng(0))
    assert means.shape == (50, 2) and np.allclose(means.sum(axis=1), 5.0)  # the two halves' means add to 10 / 2
    assert {tuple(r) for r in means} <= {(1.5, 3.5), (2.0, 3.0), (2.5, 2.5), (3.0, 2.0), (3.5, 1.5)}
    weighted = shuffled_means(np.array([1.0, 3.0]), np.array([0, 1]), 2, 20, np.random.default_rng(0), np.array([1.0, 3.0]))
    assert {tuple(r) for r in weighted} == {(1.0, 3.0), (3.0, 1.0)}
