"""CuRe's functional core on hand-computed values (notes 001-cure, section 8.3)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from cultureboard.evaluators.families.cure import core

R = 1 / math.sqrt(2)


def unit(*v):
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v)


def test_set_similarity_by_hand():
    x = np.array([[1.0, 0.0]])
    # e_n = (1, 0), G = {(1, 1)/sqrt 2} -> 0.7071 under either reduction (one-element set)
    for reduction in core.REDUCTIONS:
        assert core.set_similarity(x, [unit(1, 1)], reduction)[0] == pytest.approx(R)
    s = np.array([[1.0, 0.0], [0.0, 1.0]])
    # mean of the cosines: (1 + 0) / 2; cosine with the mean direction (1, 1)/sqrt 2
    assert core.set_similarity(x, s, "mean_pairwise")[0] == pytest.approx(0.5)
    assert core.set_similarity(x, s, "centroid")[0] == pytest.approx(R)
    # identical -> 1, orthogonal -> 0, opposite -> -1
    assert core.set_similarity(x, x)[0] == pytest.approx(1.0)
    assert core.set_similarity(x, [[0.0, 1.0]])[0] == pytest.approx(0.0)
    assert core.set_similarity(x, [[-1.0, 0.0]])[0] == pytest.approx(-1.0)
    # a set whose vectors cancel out has no direction
    assert np.isnan(core.set_similarity(x, [[0.0, 1.0], [0.0, -1.0]], "centroid")[0])
    with pytest.raises(ValueError):
        core.set_similarity(x, s, "max")
    with pytest.raises(ValueError):
        core.set_similarity(x, np.zeros((0, 2)))


def test_phi_set_is_the_mean_over_seeds_and_order_free():
    x = np.array([[1.0, 0.0], [0.0, 1.0]])
    g = np.array([unit(1, 1), [1.0, 0.0], [0.0, 1.0]])
    # seed 1: (R + 1 + 0)/3, seed 2: (R + 0 + 1)/3 -> mean (2R + 2)/6
    expected = (2 * R + 2) / 6
    assert core.phi_set(x, g) == pytest.approx(expected)
    assert core.phi_set(x[::-1], g[::-1]) == pytest.approx(expected)
    assert core.phi_set(x, g) == pytest.approx(np.mean([core.phi_set(x[i:i + 1], g) for i in range(2)]))
    # centroid: m = (R + 1, R + 1)/3, so each seed has cosine R with it
    assert core.phi_set(x, g, "centroid") == pytest.approx(R)
    with pytest.raises(ValueError):
        core.phi_set(np.zeros((0, 2)), g)


def test_scores_over_seeds_are_means_where_mean_median_max_and_min_differ():
    """Three seeds at cosine 1, R and 0 with e1 (mean (1 + R)/3 = 0.569, median R, max 1, min 0): phi_PS / phi_GT,
    their leave-one-out form and phi_ITA's two parts are each the mean over the seeds."""
    x = np.array([[1.0, 0.0], unit(1, 1), [0.0, 1.0]])
    e1 = np.array([[1.0, 0.0]])
    mean = (1 + R) / 3
    assert len({round(mean, 6), round(R, 6), 1.0, 0.0}) == 4
    assert core.phi_set(x, e1) == pytest.approx(mean)
    assert core.phi_sets(x, [e1] * 3) == pytest.approx(mean)
    value, sim_n, sim_a = core.phi_ita(x, unit(1, 0), unit(0, 1))
    assert (sim_n, sim_a) == pytest.approx((mean, mean)) and value == pytest.approx(mean)


def test_ps_delta_signed():
    c = np.array([[1.0, 0.0], [1.0, 0.0]])  # the category's images all point along e1
    n = np.array([[0.0, 1.0]])  # I(n): orthogonal to I(c) -> phi_PS(n) = 0

    def delta(a, n_):
        return core.ps_delta(np.asarray(a), [c] * len(a), np.asarray(n_), [c] * len(n_))

    # equal embeddings: exactly 0
    assert delta(n, n) == 0.0
    # moving I(n,c) towards the category -> positive: phi(I(a)) = R, phi(I(n)) = 0
    assert delta([unit(1, 1)], n) == pytest.approx(R)
    # and away from it -> negative, kept with its sign: phi = -R
    assert delta([unit(-1, 1)], n) == pytest.approx(-R)
    # argument order matters: Delta(a) = phi(a) - phi(n)
    assert delta(n, [unit(1, 1)]) == pytest.approx(-R)
    # each image reads its own set: I(a)'s image compared with e2 alone, I(n)'s with e1 alone -> 1 - 0
    assert core.ps_delta(n, [np.array([[0.0, 1.0]])], n, [c]) == pytest.approx(1.0)


def test_phi_ita_by_hand():
    x = np.array([[1.0, 0.0], [0.0, 1.0]])
    t_n, t_a = unit(1, 0), unit(0, 1)
    value, sim_n, sim_a = core.phi_ita(x, t_n, t_a)
    # seed 1: (1 + 0)/2, seed 2: (0 + 1)/2
    assert (value, sim_n, sim_a) == pytest.approx((0.5, 0.5, 0.5))
    # the notes' toy: sim(I, P(n)) = 0.2 and sim(I, P(c,r)) = 0.1 -> 0.15
    i = np.array([[1.0, 0.0, 0.0]])
    t2 = np.array([0.2, math.sqrt(1 - 0.04), 0.0])
    t1 = np.array([0.1, 0.0, math.sqrt(1 - 0.01)])
    value, sim_n, sim_a = core.phi_ita(i, t2, t1)
    assert (value, sim_n, sim_a) == pytest.approx((0.15, 0.2, 0.1))
    # with P(a) = P(n) it is sim(I(n), P(n)); swapping the texts swaps the parts, not the value
    assert core.phi_ita(i, t2, t2)[0] == pytest.approx(0.2)
    assert core.phi_ita(i, t1, t2)[1:] == pytest.approx((0.1, 0.2))


def test_phi_div_on_the_notes_toy():
    # 1-D toy with d = |x - y|: styles n = {0, 0}, nc = {1, 1}, nr = {0, 0}, ncr = {1, 1}
    points = [0, 0, 1, 1, 0, 0, 1, 1]
    pairs = core.pairs(len(points))
    assert len(pairs) == 28 and len(core.pairs(16)) == 120
    d = {(i, j): abs(points[i] - points[j]) for i, j in pairs}
    # 16 of the 28 pairs cross the two values at distance 1
    assert core.phi_div(d, 8) == pytest.approx(16 / 28)
    assert core.mean_pairwise_distance(d, [0, 1]) == 0.0  # LPIPS(n) = 0
    assert core.div_delta(d, 8, [0, 1]) == pytest.approx(16 / 28)
    # the within-set mean is over the given members only: {0, 2} -> one pair at 1
    assert core.mean_pairwise_distance(d, [2, 0]) == 1.0
    # all images identical -> 0; fewer than two images -> no value
    same = {p: 0.0 for p in core.pairs(5)}
    assert core.phi_div(same, 5) == 0.0
    assert core.phi_div({}, 1) is None and core.div_delta(d, 8, [3]) is None


def test_phi_div_on_a_toy_where_every_reduction_differs():
    """Four images on a line at 0, 1, 3 and 7 (one per prompt style), d = |x - y|: the six pairs are 1, 3, 7, 2, 6
    and 4, so phi_DIV, their mean, is 23/6 = 3.833, where the median (3.5), the maximum (7), the minimum (1) and a
    mean over all K^2 ordered pairs with the zero diagonal (46/16 = 2.875) all differ. Delta phi_DIV subtracts the
    mean within the name-only images, with its sign: {0, 1} -> 23/6 - 1, {3, 7} -> 23/6 - 4 < 0."""
    points = [0.0, 1.0, 3.0, 7.0]
    d = {(i, j): abs(points[i] - points[j]) for i, j in core.pairs(4)}
    assert sorted(d.values()) == [1, 2, 3, 4, 6, 7]
    assert core.phi_div(d, 4) == pytest.approx(23 / 6)
    assert len({23 / 6, 3.5, 7.0, 1.0, 46 / 16}) == 5  # the alternatives a swapped reduction would give
    assert core.div_delta(d, 4, [0, 1]) == pytest.approx(23 / 6 - 1)
    assert core.div_delta(d, 4, [3, 2]) == pytest.approx(23 / 6 - 4) and core.div_delta(d, 4, [2, 3]) < 0
    assert core.mean_pairwise_distance(d, [0, 2, 3]) == pytest.approx((3 + 7 + 4) / 3)  # its members' pairs only


def test_acceptance_and_table6_percentages():
    # DALL-E 3 People: 268 of 50 * 4 * 4 = 800
    assert core.acceptance(268, 800) == 0.335
    assert core.acceptance_percent(268, 800) == "33.50%"
    # 765 / 800 = 95.625 prints 95.63% (round() on the float gives 95.62)
    assert core.acceptance_percent(765, 800) == "95.63%"
    # SD 1.5: 3,808 of 50 * 4 * 20 = 4,000
    assert core.acceptance_percent(3808, 4000) == "95.20%"
    with pytest.raises(ValueError):
        core.acceptance(5, 4)
    with pytest.raises(ValueError):
        core.acceptance(0, 0)
