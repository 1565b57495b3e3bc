"""ECB's maths on hand-computed values: CLIPScore, QA scores, best / worst picks, cluster proportions, JSD,
proximity, separability, leaning, permutation p-values; the aesthetic head on fixed embeddings."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from cultureboard.evaluators.engine.registry import load_families
from cultureboard.evaluators.engine.scorers import load_scorer
from cultureboard.evaluators.families.ecb import core, final
from cultureboard.evaluators.families.ecb.aesthetic import head_module, save_tiny_aesthetic

load_families()  # every family's scorer backends, which the registry's entries name

# ---------------------------------------------------------------------------------------- edit chains


def test_clipscore_is_100_cosine_clipped_at_zero():
    assert core.clipscore(np.array([1.0, 0.0]), np.array([0.6, 0.8])) == pytest.approx(60.0)
    assert core.clipscore(np.array([0.0, 1.0]), np.array([0.6, 0.8])) == pytest.approx(80.0)
    assert core.clipscore(np.array([1.0, 0.0]), np.array([-0.6, 0.8])) == 0.0


def test_chain_pairs_compare_to_the_base_and_to_the_previous_step():
    assert core.chain_pairs(4) == ([(0, 1), (0, 2), (0, 3)], [(0, 1), (1, 2), (2, 3)])
    assert core.chain_pairs(1) == ([], [])


# ------------------------------------------------------------------------------------- culture metric


def test_answers_from_yes_and_no_probabilities():
    assert core.classify_answers([0.6, 0.2, 0.1, 0.4, 0.3], [0.3, 0.7, 0.1, 0.4, 0.1], 0.5) == \
        ["yes", "no", "ambiguous", "ambiguous", "ambiguous"]  # mass 0.2 < 0.5; a tie; mass 0.4 < 0.5
    assert core.classify_answers([0.3], [0.1], 0.0) == ["yes"]


def test_answer_mass_exactly_at_the_threshold_is_an_answer():
    """The rule is P(yes) + P(no) < min_mass (strict): mass equal to the threshold answers (0.375 + 0.125 = 0.5
    exactly in binary floating point)."""
    assert core.classify_answers([0.375, 0.125], [0.125, 0.375], 0.5) == ["yes", "no"]
    assert core.classify_answers([0.375, 0.125], [0.125, 0.375], 0.5 + 1e-9) == ["ambiguous", "ambiguous"]
    assert core.classify_answers([0.25], [0.25], 0.5) == ["ambiguous"]  # at the threshold but a tie


# ------------------------------------------------------------------------------- chain scores (final.py)


def test_last_step_accuracy_and_its_change_from_the_base():
    assert final.last_and_change({0: 0.75, 1: 0.5, 2: 0.25}) == (0.25, -0.5)
    assert final.last_and_change({2: 1.0, 0: 0.25, 1: 0.0}) == (1.0, 0.75), "the last step by number, not order"
    assert final.last_and_change({0: 0.5}) == (0.5, 0.0)
    with pytest.raises(ValueError, match="base"):
        final.last_and_change({1: 0.5, 2: 0.5})


def _accuracy_row(chain, sample, step, value, country="KR", flag=None, metric="ecb.culture.accuracy"):
    return {"metric": metric, "unit_id": chain, "sample_idx": sample, "value": value, "flag": flag,
            "slices": {"country": country, "continent": "Asia", "region_group": "GN", "category": "food",
                       "subcategory": "snack", "era": None, "edit_step": step, "text": "ignored"}}


def test_chain_rows_from_the_per_step_accuracy_rows():
    rows = [_accuracy_row("a", 0, step, v) for step, v in enumerate((0.75, 1.0, 0.5, 0.25))]
    rows += [_accuracy_row("a", 1, step, v) for step, v in enumerate((0.25, 0.5))]  # a second sample, 2 steps
    rows += [_accuracy_row("b", 0, step, v, country="NG") for step, v in enumerate((0.5, 0.75))]
    rows += [_accuracy_row("a", 0, step, 0.0, metric=f"ecb.culture.{name}")  # other metrics are not read
             for name in ("precision", "recall", "f1", "ambiguous") for step in range(4)]
    rows += [{**_accuracy_row("c", None, None, None, country="US", flag="no questions"), "sample_idx": None}]
    out = final.score_final(rows)
    last, change = "ecb.culture.accuracy_last", "ecb.culture.accuracy_change"
    assert [(r["metric"], r["unit_id"]) for r in out] == [(last, "c"), (change, "c"), (last, "a"), (change, "a"),
                                                         (last, "a"), (change, "a"), (last, "b"), (change, "b")]
    values = [r["value"] for r in out[2:]]
    assert values == [0.25, -0.5, 0.5, 0.25, 0.75, 0.25]  # a/0: 0.75 -> 0.25; a/1: 0.25 -> 0.5; b: 0.5 -> 0.75
    assert json.loads(out[2]["detail"]) == {"images": 4, "sample_idx": 0, "last_step": 3, "accuracy_base": 0.75,
                                            "accuracy_last": 0.25}
    assert json.loads(out[4]["detail"])["sample_idx"] == 1
    assert out[2]["slices"] == {"country": "KR", "continent": "Asia", "region_group": "GN", "category": "food",
                                "subcategory": "snack", "era": None}
    assert out[6]["slices"]["country"] == "NG"
    flagged = [r for r in out if r["unit_id"] == "c"]
    assert all(r["value"] is None and r["flag"] == "no questions" for r in flagged)
    assert flagged[0]["slices"]["country"] == "US"


def test_qa_scores_by_hand():
    s = core.qa_scores(["yes", "yes", "no", "no", "yes"], ["yes", "no", "yes", "no", "ambiguous"])
    assert (s.tp, s.fn, s.fp, s.tn, s.ambiguous) == (1, 1, 1, 1, 1)
    assert s.accuracy == pytest.approx(2 / 5)  # the ambiguous answer counts in N only
    assert (s.precision, s.recall, s.f1) == pytest.approx((1 / 2, 1 / 2, 1 / 2))
    s = core.qa_scores(["yes", "yes", "no"], ["yes", "no", "no"])  # P = 1, R = 1/2
    assert (s.accuracy, s.precision, s.recall, s.f1) == pytest.approx((2 / 3, 1.0, 0.5, 2 * 0.5 / 1.5))
    perfect = core.qa_scores(["yes", "no"], ["yes", "no"])
    assert perfect[:4] == (1.0, 1.0, 1.0, 1.0)
    no_yes = core.qa_scores(["no", "no"], ["no", "no"])  # ECB's convention: undefined P, R, F1 are 0
    assert no_yes[:4] == (1.0, 0.0, 0.0, 0.0)
    with pytest.raises(ValueError):
        core.qa_scores(["yes"], ["maybe"])


def test_best_and_worst_steps_keep_ties():
    assert core.extreme_steps({0: 0.5, 1: 0.5, 2: 0.2, 3: 0.9}) == ([3], [2])
    assert core.extreme_steps({0: 1.0, 1: 1.0, 2: 0.0}) == ([0, 1], [2])
    assert core.pick_agreement([0, 1], 1) == 0.5
    assert core.pick_agreement([3], 0) == 0.0


# ---------------------------------------------------------------------------------------- separability


def test_cluster_proportions_by_hand():
    names, p = core.cluster_proportions([0, 0, 1, 1, 1, 2], ["b", "b", "b", "a", "a", "a"], 3)
    assert names == ["a", "b"]
    np.testing.assert_allclose(p, [[0, 2 / 3, 1 / 3], [2 / 3, 1 / 3, 0]])


def test_jsd_base_2_by_hand():
    assert core.jsd([1, 0], [0, 1]) == pytest.approx(1.0)
    assert core.jsd([0.2, 0.8], [0.2, 0.8]) == pytest.approx(0.0)
    # p = (1, 0), q = (1/2, 1/2), m = (3/4, 1/4): KL(p|m) = log2(4/3), KL(q|m) = 1/2 log2(2/3) + 1/2 log2(2)
    by_hand = 0.5 * math.log2(4 / 3) + 0.5 * (0.5 * math.log2(2 / 3) + 0.5)
    assert core.jsd([1, 0], [0.5, 0.5]) == pytest.approx(by_hand) == pytest.approx(core.jsd([0.5, 0.5], [1, 0]))
    assert by_hand == pytest.approx(0.311278, abs=1e-6)


def test_proximity_is_the_harmonic_mean_of_cosine_and_overlap():
    cos = 0.5 / math.sqrt(0.5)  # (1, 0) . (1/2, 1/2) / (1 * sqrt(1/2))
    overlap = 1 - 0.311278124
    assert core.proximity([1, 0], [0.5, 0.5]) == pytest.approx(2 * cos * overlap / (cos + overlap), abs=1e-6)
    assert core.proximity([0.3, 0.7], [0.3, 0.7]) == pytest.approx(1.0)
    assert core.proximity([1, 0], [0, 1]) == 0.0  # disjoint supports: both terms 0, no NaN
    h = core.proximity_matrix(np.array([[1, 0], [0.5, 0.5], [0, 1]]))
    np.testing.assert_allclose(h, h.T)
    np.testing.assert_allclose(np.diag(h), 1.0)
    assert h[0, 1] == pytest.approx(core.proximity([1, 0], [0.5, 0.5]))


def test_separability_is_one_minus_the_nearest_proximity():
    h = np.array([[1, 0.9, 0.2], [0.9, 1, 0.5], [0.2, 0.5, 1]])
    sep, nearest = core.separability(h)
    np.testing.assert_allclose(sep, [0.1, 0.1, 0.5])
    assert nearest.tolist() == [1, 0, 1]


def test_bootstrap_proximity_is_seeded_and_brackets_the_value():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 4, 300)
    groups = np.repeat(["a", "b", "c"], 100)
    first = core.bootstrap_proximity(labels, groups, 4, n_boot=300, seed=7)
    again = core.bootstrap_proximity(labels, groups, 4, n_boot=300, seed=7)
    np.testing.assert_array_equal(first.low, again.low)
    assert (first.low <= first.h + 1e-12).all() and (first.h <= first.high + 1e-12).all()
    assert (first.high[0, 1] - first.low[0, 1]) > 0
    sep, _ = core.separability(first.h)
    assert (first.separability_low <= sep + 1e-12).all() and (sep <= first.separability_high + 1e-12).all()
    same = core.bootstrap_proximity([1, 1, 1, 1], ["a", "a", "b", "b"], 2, n_boot=50, seed=0)
    assert same.h[0, 1] == same.low[0, 1] == same.high[0, 1] == pytest.approx(1.0), "no variation, no width"


def test_identical_proportions_keep_their_value_in_the_range_and_are_not_significant():
    # both groups: clusters 0..7 twice each: h = 1, separability 0; every bootstrap replicate has h < 1
    labels = np.tile(np.repeat(np.arange(8), 2), 2)
    groups = np.repeat(["a", "b"], 16)
    ci = core.bootstrap_proximity(labels, groups, 8, n_boot=300, seed=0)
    assert ci.h[0, 1] == pytest.approx(1.0) and ci.high[0, 1] == pytest.approx(1.0) and ci.low[0, 1] < 0.95
    assert ci.separability_low.tolist() == pytest.approx([0, 0], abs=1e-12) and (ci.separability_high > 0.05).all()
    null = core.separability_null(labels, groups, 8, n_perm=199, seed=0)
    assert null.p.tolist() == [1.0, 1.0], "no shuffle is less distinct than identical proportions"
    assert (null.mean > 0.05).all(), "shuffling alone gives groups of 16 images a positive separability"


def test_separability_null_by_hand():
    # a = two images of cluster 0, b = two of cluster 1: separability 1 each. A shuffle of the labels gives a the
    # same cluster twice (separability 1) in 2 of the 6 equally likely splits, else (1/2, 1/2) each (separability
    # 0): null mean 1/3, p = (1 + #{S* >= 1}) / (B + 1) about 1/3
    null = core.separability_null([0, 0, 1, 1], ["a", "a", "b", "b"], 2, n_perm=3000, seed=1)
    np.testing.assert_allclose(null.mean, [1 / 3, 1 / 3], atol=0.03)
    np.testing.assert_allclose(null.p, [1 / 3, 1 / 3], atol=0.03)
    # 30 images each in disjoint clusters: only a shuffle that keeps every label (never, in practice) is as extreme
    far = core.separability_null([0] * 30 + [1] * 30, ["a"] * 30 + ["b"] * 30, 2, n_perm=99, seed=2)
    assert far.p.tolist() == [1 / 100, 1 / 100] and (far.mean < 0.2).all()
    assert core.separability_null([0, 0, 1, 1], ["a", "a", "b", "b"], 2, 50, 4).p.tolist() == \
        core.separability_null([0, 0, 1, 1], ["a", "a", "b", "b"], 2, 50, 4).p.tolist()


def test_clusters_are_seeded_and_follow_the_data():
    x = np.concatenate([np.random.default_rng(0).normal(0, 0.01, (10, 5)) + c for c in (0.0, 5.0)])
    labels, info = core.cluster_labels(x, 2, 3, seed=0)
    assert len(set(labels[:10])) == 1 and len(set(labels[10:])) == 1 and labels[0] != labels[10]
    assert info["pca_dims"] == 3 and info["clusters"] == 2 and 0.9 < info["explained_variance"] <= 1
    np.testing.assert_array_equal(labels, core.cluster_labels(x, 2, 3, seed=0)[0])


# -------------------------------------------------------------------------------------------- leaning


def test_leaning_with_image_centroid_anchors_by_hand():
    x = np.array([[1, 0], [0.8, 0.6], [0, 1],  # stratum g: traditional, traditional, modern
                  [1, 0], [3, 1], [30, 10],  # scored images of g
                  [1, 0]])  # a stratum h without modern images
    strata = ["g"] * 6 + ["h"]
    trad = [True, True, False, False, False, False, True]
    mod = [False, False, True, False, False, False, False]
    scored = [False] * 3 + [True] * 3 + [False]
    s, cos_t, cos_m = core.leaning_scores(x, strata, trad, mod, scored)
    anchor = np.array([0.9, 0.3]) / np.linalg.norm([0.9, 0.3])  # centroid of the traditional images
    np.testing.assert_allclose(cos_t[0], anchor[0])
    np.testing.assert_allclose(cos_m, [0, 1 / math.sqrt(10), 1 / math.sqrt(10)])
    np.testing.assert_allclose(s[1], anchor @ (np.array([3, 1]) / math.sqrt(10)) - 1 / math.sqrt(10))
    assert s[0] > 0 and s[1] == pytest.approx(s[2]), "s is invariant to scaling an image's embedding"
    modern = core.leaning_scores(x, strata, trad, mod, [False, False, True, False, False, False, False])[0]
    assert modern[0] < 0, "the modern anchor itself leans modern"
    assert np.isnan(core.leaning_scores(x, strata, trad, mod, [False] * 6 + [True])[0][0])


def test_group_means_and_standard_errors_by_hand():
    out = core.group_means([1, 2, 3, 10], ["a", "a", "a", "b"])
    assert out["a"][0] == pytest.approx(2.0) and out["a"][1] == pytest.approx(1 / math.sqrt(3)) and out["a"][2] == 3
    assert out["b"][0] == 10 and math.isnan(out["b"][1])
    # a group whose mean (3), median (2), maximum (6) and minimum (1) all differ; sd = sqrt(14 / 2)
    (mean, se, n), = core.group_means([6, 1, 2], ["c"] * 3).values()
    assert (mean, se, n) == (pytest.approx(3.0), pytest.approx(math.sqrt(7 / 3)), 3)


def test_permutation_p_values_with_known_answers():
    # identical values: every permutation is as extreme as the data, p = 1
    p, omnibus = core.permutation_pvalues([0.2] * 6, list("aabbcc"), list("xyxyxy"), n_perm=99, seed=0)
    assert p == {"a": 1.0, "b": 1.0, "c": 1.0} and omnibus == 1.0
    # a strong shift in 30 strata: only permutations that swap no stratum (2^-30) are as extreme: p = 1/(B+1)
    values = [v for _ in range(30) for v in (1.0, -1.0)]
    p, omnibus = core.permutation_pvalues(values, ["a", "b"] * 30, [k for k in range(30) for _ in (0, 1)],
                                          n_perm=199, seed=1)
    assert p == {"a": 1 / 200, "b": 1 / 200} and omnibus == 1 / 200
    # one stratum, a has one image (value 1), b three (value 0): a permutation is as extreme exactly when a gets
    # the 1, probability 1/4; the dispersion likewise
    p, omnibus = core.permutation_pvalues([1, 0, 0, 0], ["a", "b", "b", "b"], ["x"] * 4, n_perm=4000, seed=2)
    assert p["a"] == pytest.approx(0.25, abs=0.03) and p["b"] == pytest.approx(0.25, abs=0.03)
    assert omnibus == pytest.approx(0.25, abs=0.03)
    assert core.permutation_pvalues([1, 0, 0, 0], ["a", "b", "b", "b"], ["x"] * 4, 4000, 2) == (p, omnibus)


def test_permutations_stay_within_strata():
    # each stratum holds one country only: shuffling within strata never moves a value to the other country,
    # so however far apart the countries are, nothing is significant (a global shuffle would give p < 1)
    p, omnibus = core.permutation_pvalues([1.0, 1.0, 0.0, 0.0], ["a", "a", "b", "b"], ["x", "x", "y", "y"],
                                          n_perm=200, seed=3)
    assert p == {"a": 1.0, "b": 1.0} and omnibus == 1.0


# ------------------------------------------------------------------------------------------ aesthetics


def _head_state(widths):
    gen = torch.Generator().manual_seed(0)
    state = {}
    for k, i in enumerate((0, 2, 4, 6, 7)):
        state[f"layers.{i}.weight"] = torch.randn(widths[k + 1], widths[k], generator=gen) / widths[k] ** 0.5
        state[f"layers.{i}.bias"] = torch.randn(widths[k + 1], generator=gen)
    return state


def test_aesthetic_head_on_a_fixed_embedding_by_hand():
    eye = torch.eye(2)
    state = {"layers.0.weight": torch.tensor([[1.0, -1.0], [2.0, 0.0]]), "layers.0.bias": torch.tensor([0.0, -1.0]),
             "layers.2.weight": eye, "layers.2.bias": torch.zeros(2), "layers.4.weight": eye,
             "layers.4.bias": torch.zeros(2), "layers.6.weight": eye, "layers.6.bias": torch.zeros(2),
             "layers.7.weight": torch.tensor([[1.0, 1.0]]), "layers.7.bias": torch.tensor([0.5])}
    x = torch.tensor([[0.6, 0.8]])
    # layer 0: (0.6 - 0.8, 1.2 - 1) = (-0.2, 0.2); identities; layer 7: -0.2 + 0.2 + 0.5
    assert head_module(state, "linear")(x).item() == pytest.approx(0.5)
    # ECB's variant: ReLU after layer 0 gives (0, 0.2), so 0.2 + 0.5
    assert head_module(state, "relu")(x).item() == pytest.approx(0.7)


def test_canonical_head_is_affine_and_ecb_relu_is_not():
    state = _head_state((768, 1024, 128, 64, 16, 1))
    x = torch.nn.functional.normalize(torch.randn(1, 768, generator=torch.Generator().manual_seed(1)), dim=-1)
    zero = torch.zeros(1, 768)
    for activation, affine in (("linear", True), ("relu", False)):
        f = head_module(state, activation)
        with torch.no_grad():
            lhs, rhs = f(-2.5 * x) - f(zero), -2.5 * (f(x) - f(zero))
        assert torch.allclose(lhs, rhs, atol=1e-4) == affine, activation
    with pytest.raises(RuntimeError):
        head_module({k: v for k, v in state.items() if k != "layers.7.bias"}, "linear")


def test_aesthetic_scorer_applies_the_head_to_normalised_clip_features(tmp_path):
    folder = save_tiny_aesthetic(tmp_path / "aesthetic")
    scorer = load_scorer("a", config={"a": {"backend": "laion-aesthetic", "path": str(folder)}}, device="cpu")
    pixels = torch.rand(3, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        features = scorer.model.get_image_features(pixel_values=pixels)
        features = getattr(features, "pooler_output", features)
        unit = torch.nn.functional.normalize(features, dim=-1)
        expected = head_module(torch.load(folder / "aesthetic-model.pth"), "linear")(unit)
        raw = head_module(torch.load(folder / "aesthetic-model.pth"), "linear")(features)
    got = scorer.encode_pixels(pixels)
    assert got.shape == (3, 1)
    np.testing.assert_allclose(got, expected.numpy(), atol=1e-5)
    assert not np.allclose(got, raw.numpy(), atol=1e-3), "the head reads L2-normalised embeddings"
    assert scorer.text_preprocessing is None and "(linear)" in scorer.preprocessing
