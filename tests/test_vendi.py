"""Vendi scores and CUBE's quality-weighted cultural diversity (evaluators/vendi.py)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from cultureboard.evaluators.families import vendi as vendi_module
from cultureboard.evaluators.families.vendi import (
    CUBE_KERNEL_PRESETS,
    _cube_codes,
    _label_chain,
    _nested_spectrum,
    draw_groups,
    grouped_qvendi,
    qvendi_score,
    vendi_from_embeddings,
    vendi_from_kernel_weights,
    vendi_from_labels,
    vendi_score,
)

ORDERS = [0, 0.5, 1, 2, np.inf]


def label_kernel(labels):
    labels = np.asarray(labels)
    return (labels[:, None] == labels[None, :]).astype(float)


def cube_kernel(continents, countries, artifacts, w):
    """CUBE eq. 4 written out: k = w1 [same continent] + w2 [same country] + w3 [same artifact]."""
    return sum(wk * label_kernel(labels) for wk, labels in zip(w, (continents, countries, artifacts)))


def unit_rows(rng, n, d):
    X = rng.normal(size=(n, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


# --- hand-computed values --------------------------------------------------------------------------


@pytest.mark.parametrize("q", ORDERS)
def test_distinct_items_give_n_and_identical_items_give_1(q):
    assert vendi_score(np.eye(5), q) == pytest.approx(5)
    assert vendi_score(np.ones((5, 5)), q) == pytest.approx(1)
    assert vendi_score([[1.0]], q) == pytest.approx(1)


def test_label_kernel_hand_values():
    assert vendi_from_labels(list("AABB")) == pytest.approx(2.0)
    p = np.array([0.75, 0.25])
    assert vendi_from_labels(list("AAAB"), q=1) == pytest.approx(math.exp(-(p * np.log(p)).sum()))
    assert vendi_from_labels(list("AAAB"), q=1) == pytest.approx(1.7548, abs=1e-4)
    assert vendi_from_labels(list("AAAB"), q=2) == pytest.approx(1 / (0.75**2 + 0.25**2)) == pytest.approx(1.6)
    assert vendi_from_labels(list("AAAB"), q=0) == 2
    assert vendi_from_labels(list("AAAB"), q=np.inf) == pytest.approx(1 / 0.75)
    assert vendi_score(label_kernel(list("AAAB")), q=2) == pytest.approx(1.6)


def test_cube_presets_hand_values():
    # Two Asian and two European images, four countries, four artifacts.
    continents, countries, artifacts = ["AS", "AS", "EU", "EU"], ["JP", "CN", "FR", "DE"], list("abcd")

    def vs(w, q):
        return vendi_from_kernel_weights(continents, countries, artifacts, w, q)

    assert vs("continent", 1) == pytest.approx(2)
    assert vs("country", 1) == pytest.approx(4)
    assert vs("artifact", 1) == pytest.approx(4)
    # hierarchical: blocks [[1, 1/2], [1/2, 1]] -> eigenvalues of K/4: 3/8, 3/8, 1/8, 1/8
    assert vs("hierarchical", 2) == pytest.approx(1 / (2 * (3 / 8) ** 2 + 2 * (1 / 8) ** 2)) == pytest.approx(3.2)
    lam = np.array([3, 3, 1, 1]) / 8
    assert vs("hierarchical", 1) == pytest.approx(math.exp(-(lam * np.log(lam)).sum()))
    # uniform: blocks [[1, 1/3], [1/3, 1]] -> eigenvalues of K/4: 1/3, 1/3, 1/6, 1/6
    assert vs("uniform", 2) == pytest.approx(3.6)
    assert vs("uniform", np.inf) == pytest.approx(3.0)


def test_cube_kernel_artifact_shared_across_countries():
    # Pizza mapped to France and Italy: the artifact kernel ignores geography (CUBE J.2.2).
    continents, countries, artifacts = ["EU", "EU", "AS"], ["FR", "IT", "JP"], ["pizza", "pizza", "sushi"]
    assert vendi_from_kernel_weights(continents, countries, artifacts, "artifact", 2) == pytest.approx(1.8)
    # uniform: k(1, 2) = 1/3 + 0 + 1/3; eigenvalues of K/3: 5/9, 1/9, 1/3
    assert vendi_from_kernel_weights(continents, countries, artifacts, "uniform", 2) == pytest.approx(81 / 35)


def test_presets_are_cube_j22():
    assert CUBE_KERNEL_PRESETS == {
        "continent": (1, 0, 0),
        "country": (0, 1, 0),
        "artifact": (0, 0, 1),
        "hierarchical": (1 / 2, 1 / 2, 0),
        "uniform": (1 / 3, 1 / 3, 1 / 3),
    }
    assert all(sum(w) == pytest.approx(1) for w in CUBE_KERNEL_PRESETS.values())


def test_qvendi_hand_value():
    K, quality = label_kernel(list("AABB")), [1.0, 0.5, 0.5, 0.0]
    assert qvendi_score(K, quality) == pytest.approx(0.5 * 2 / 4)
    assert qvendi_score(K, quality, normalize=False) == pytest.approx(0.5 * 2)
    assert qvendi_score(np.eye(6), np.ones(6)) == pytest.approx(1.0)  # CUBE: maximum 1
    assert qvendi_score(np.eye(6), np.zeros(6)) == 0.0  # CUBE: minimum 0


# --- properties stated in CUBE 5.1.3 and appendix I --------------------------------------------------


@pytest.mark.parametrize("q", ORDERS)
@pytest.mark.parametrize("M", [2, 3])
def test_duplication_scaling(q, M):
    rng = np.random.default_rng(1)
    X = unit_rows(rng, 6, 4)
    K, quality = X @ X.T, rng.uniform(size=6)
    K_dup, quality_dup = np.kron(K, np.ones((M, M))), np.repeat(quality, M)  # each item M times
    assert qvendi_score(K, quality, q) == pytest.approx(M * qvendi_score(K_dup, quality_dup, q))
    assert qvendi_score(K, quality, q, normalize=False) == pytest.approx(qvendi_score(K_dup, quality_dup, q, normalize=False))


def test_quality_awareness():
    K = label_kernel(list("AABC"))  # same VS for both collections
    high, low = [0.9, 0.8, 0.7, 0.9], [0.2, 0.8, 0.7, 0.1]
    assert qvendi_score(K, high) > qvendi_score(K, low)
    assert qvendi_score(K, high) / qvendi_score(K, low) == pytest.approx(np.mean(high) / np.mean(low))


def test_kernel_generalizability_kernels_order_as_cube_table_4():
    # Fewer distinct continents than countries than artifacts: continent <= country <= artifact diversity.
    rng = np.random.default_rng(2)
    artifacts = rng.integers(0, 12, size=40)
    countries = artifacts // 2
    continents = countries // 3
    vs = {name: vendi_from_kernel_weights(continents, countries, artifacts, name) for name in CUBE_KERNEL_PRESETS}
    assert vs["continent"] < vs["hierarchical"] < vs["country"] < vs["artifact"]


def test_order_limits_and_monotonicity():
    labels = list("AAAAABBBCD")
    p = np.array([5, 3, 1, 1]) / 10
    assert vendi_from_labels(labels, q=1e-9) == pytest.approx(4, rel=1e-6)  # q -> 0: number of labels
    assert vendi_from_labels(labels, q=1e6) == pytest.approx(1 / p.max(), rel=1e-4)  # q -> inf: 1 / max p
    assert vendi_from_labels(labels, q=1 + 1e-7) == pytest.approx(vendi_from_labels(labels, q=1), rel=1e-6)
    assert vendi_from_labels(labels, q=1 - 1e-7) == pytest.approx(vendi_from_labels(labels, q=1), rel=1e-6)
    X = unit_rows(np.random.default_rng(3), 12, 5)
    K = X @ X.T
    qs = [0, 0.1, 0.5, 0.9, 1, 1.1, 2, 5, 50, 1e4, np.inf]
    values = [vendi_score(K, q) for q in qs]
    assert values[0] == 5  # rank of K
    assert all(a >= b - 1e-9 for a, b in itertools.pairwise(values))
    assert values[-2] == pytest.approx(values[-1], rel=1e-3)


# --- fast paths agree with the explicit eigendecomposition --------------------------------------------


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("q", [0, 0.3, 1, 2, 7, np.inf])
def test_fast_paths_match_explicit(seed, q):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 40))
    labels = rng.integers(0, 6, size=n)
    assert vendi_from_labels(labels.tolist(), q) == pytest.approx(vendi_score(label_kernel(labels), q))

    # Independent label lists: artifacts recur under several countries and continents.
    continents, countries, artifacts = rng.integers(0, 3, n), rng.integers(0, 7, n), rng.integers(0, 10, n)
    for w in [*CUBE_KERNEL_PRESETS.values(), tuple(rng.dirichlet(np.ones(3)))]:
        explicit = vendi_score(cube_kernel(continents, countries, artifacts, w), q)
        assert vendi_from_kernel_weights(continents, countries, artifacts, w, q) == pytest.approx(explicit)

    for d in (3, n + 5):  # dual (d < N) and primal (d >= N)
        X = unit_rows(rng, n, d)
        assert vendi_from_embeddings(X, q) == pytest.approx(vendi_score(X @ X.T, q))


# --- the nested label-kernel path (secular equations) --------------------------------------------------


def nested_pool(rng, n, n_artifacts, n_countries, n_continents, zipf):
    """String labels of n images: Zipf-like artifact counts, artifact in one country, country in one continent."""
    country_of = rng.integers(0, n_countries, n_artifacts)
    continent_of = rng.integers(0, n_continents, n_countries)
    p = 1 / np.arange(1, n_artifacts + 1) ** zipf
    artifact = rng.permutation(n_artifacts)[rng.choice(n_artifacts, size=n, p=p / p.sum())]
    country = country_of[artifact]
    return ([f"cont{c}" for c in continent_of[country]], [f"cty{r}" for r in country], [f"art{a}" for a in artifact])


NESTED_SHAPES = [  # n, artifacts, countries, continents, Zipf exponent
    (1, 1, 1, 1, 0.0),
    (2, 2, 1, 1, 0.0),
    (9, 4, 2, 2, 0.0),
    (40, 40, 40, 6, 0.0),  # mostly distinct everything
    (60, 12, 4, 2, 1.2),
    (80, 30, 1, 1, 1.0),  # a single country
    (90, 6, 6, 6, 0.5),  # partitions that may coincide
    (120, 40, 10, 3, 1.0),
    (150, 90, 30, 6, 1.5),
    (160, 25, 12, 6, 2.0),  # a few very frequent artifacts
    (160, 100, 50, 6, 1.1),
]


def random_weights(rng):
    return [*CUBE_KERNEL_PRESETS.values(), tuple(rng.dirichlet(np.ones(3))), tuple(rng.dirichlet(np.full(3, 0.3)))]


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("shape", NESTED_SHAPES)
def test_nested_path_matches_dense(shape, seed):
    rng = np.random.default_rng([seed, *[int(x * 10) for x in shape]])
    continents, countries, artifacts = nested_pool(rng, *shape)
    for w in random_weights(rng):
        K = cube_kernel(continents, countries, artifacts, w)
        assert _label_chain(_cube_codes(continents, countries, artifacts), np.asarray(w)) is not None  # fast path
        for q in ORDERS:
            fast, dense = vendi_from_kernel_weights(continents, countries, artifacts, w, q), vendi_score(K, q)
            assert fast == pytest.approx(dense, rel=1e-9, abs=0), (w, q)
            if q == 0:
                assert fast == dense == np.linalg.matrix_rank(K)


@pytest.mark.parametrize("seed", range(4))
def test_nested_spectrum_is_the_dense_spectrum(seed):
    rng = np.random.default_rng(seed)
    continents, countries, artifacts = nested_pool(rng, 150, 50, 15, 4, 1.0)
    for w in random_weights(rng):
        chain = _label_chain(_cube_codes(continents, countries, artifacts), np.asarray(w))
        spectrum = np.sort(_nested_spectrum(chain, 150))
        dense = np.linalg.eigvalsh(cube_kernel(continents, countries, artifacts, w))
        nonzero = dense[dense > 1e-9]
        finest = next(labels for labels, wk in zip((artifacts, countries, continents), w[::-1]) if wk > 0)
        assert len(spectrum) == len(nonzero) == len(set(finest))  # rank K = distinct finest labels
        np.testing.assert_allclose(spectrum, nonzero, rtol=0, atol=1e-10)
        assert spectrum.sum() == pytest.approx(150, rel=1e-12)  # trace K = N


def test_nested_hand_values_secular():
    # One country, artifact counts (2, 1), w = (0, 1/2, 1/2): D^1/2 S D^1/2 = [[2, 1/sqrt 2], [1/sqrt 2, 1]],
    # eigenvalues (3 +- sqrt 3) / 2, so K/3 has (3 +- sqrt 3) / 6.
    labels = (["EU"] * 3, ["FR"] * 3, ["brie", "brie", "crepe"])
    p = np.array([3 + np.sqrt(3), 3 - np.sqrt(3)]) / 6
    assert vendi_from_kernel_weights(*labels, (0, 0.5, 0.5), 2) == pytest.approx(1.5, rel=1e-12)
    assert vendi_from_kernel_weights(*labels, (0, 0.5, 0.5), np.inf) == pytest.approx(1 / p[0], rel=1e-12)
    entropy = -(p * np.log(p)).sum()
    assert vendi_from_kernel_weights(*labels, (0, 0.5, 0.5), 1) == pytest.approx(math.exp(entropy), rel=1e-12)
    # Two countries of one continent (1 image; 2 images of one artifact), uniform weights: S = [[1, 1/3],
    # [1/3, 1]], D = diag(1, 2), M = [[1, sqrt 2 / 3], [sqrt 2 / 3, 2]] -> eigenvalues (3 +- sqrt(17/9)) / 2.
    labels = (["AS"] * 3, ["JP", "CN", "CN"], ["sushi", "baozi", "baozi"])
    lam = np.array([3 + np.sqrt(17 / 9), 3 - np.sqrt(17 / 9)]) / 2
    assert vendi_from_kernel_weights(*labels, "uniform", 2) == pytest.approx(9 / (lam**2).sum(), rel=1e-12)


@pytest.mark.parametrize("q", ORDERS)
def test_nested_degenerate_pools(q):
    one = (["EU"], ["FR"], ["brie"])
    same = (["EU"] * 7, ["FR"] * 7, ["brie"] * 7)
    distinct = ([f"c{i}" for i in range(6)], [f"r{i}" for i in range(6)], [f"a{i}" for i in range(6)])
    one_country = (["EU"] * 6, ["FR"] * 6, [f"a{i}" for i in range(6)])
    for w in CUBE_KERNEL_PRESETS:
        assert vendi_from_kernel_weights(*one, w, q) == pytest.approx(1, rel=1e-12)
        assert vendi_from_kernel_weights(*same, w, q) == pytest.approx(1, rel=1e-12)
        assert vendi_from_kernel_weights(*distinct, w, q) == pytest.approx(6, rel=1e-12)
    # One country, six distinct artifacts: K = 2/3 + I/3, eigenvalues of K/6: 13/18 once and 1/18 five times.
    lam = np.array([13] + [1] * 5) / 18
    expected = {0: 6, 0.5: np.sqrt(lam).sum() ** 2, 1: math.exp(-(lam * np.log(lam)).sum()),
                2: 1 / (lam**2).sum(), np.inf: 18 / 13}[q]
    assert vendi_from_kernel_weights(*one_country, "uniform", q) == pytest.approx(expected, rel=1e-12)
    assert vendi_from_kernel_weights(*one_country, "country", q) == pytest.approx(1, rel=1e-12)
    assert vendi_from_kernel_weights(*one_country, "artifact", q) == pytest.approx(6, rel=1e-12)


def test_nested_path_with_tiny_weights_and_many_equal_blocks():
    rng = np.random.default_rng(11)
    continents, countries, artifacts = nested_pool(rng, 150, 60, 20, 3, 1.3)
    # 30 countries of the same shape in one continent: equal eigenvalues across countries
    twins = (["X"] * 90, [f"t{i // 3}" for i in range(90)], [f"t{i // 3}-{min(i % 3, 1)}" for i in range(90)])
    for labels in ((continents, countries, artifacts), twins):
        weights = [(0.5, 1e-9, 0.5 - 1e-9), (1e-9, 0.999, 0.001 - 1e-9), (0.98, 0.01, 0.01), (0.2, 0.3, 0.5)]
        for w in [*weights, (0.5, 0.5, 1e-300), (1e-300, 0.5, 0.5)]:  # the last two: below eps, left out
            K = cube_kernel(*labels, w)
            for q in ORDERS:
                assert vendi_from_kernel_weights(*labels, w, q) == pytest.approx(vendi_score(K, q), rel=1e-9, abs=0)


def test_nested_path_in_chunks(monkeypatch):
    rng = np.random.default_rng(5)
    labels = nested_pool(rng, 200, 80, 12, 3, 1.0)
    whole = [vendi_from_kernel_weights(*labels, "uniform", q) for q in ORDERS]
    monkeypatch.setattr(vendi_module, "_CHUNK", 7)  # a few roots per padded matrix
    assert [vendi_from_kernel_weights(*labels, "uniform", q) for q in ORDERS] == pytest.approx(whole, rel=1e-12)


def test_label_chain_order_and_fallback():
    codes = _cube_codes(["EU", "EU", "EU"], ["FR", "IT", "ES"], ["pizza", "pizza", "paella"])
    chain = _label_chain(codes, np.array([1 / 3, 1 / 3, 1 / 3]))
    assert [id(c) for c, _ in chain] == [id(codes[1]), id(codes[2]), id(codes[0])]  # country < artifact < continent
    assert _label_chain(codes, np.array([0.5, 0.0, 0.5])) is not None  # artifacts nest in continents
    # a country (and so its artifact) under two continents: no chain, the exact fallback
    crossed = _cube_codes(["EU", "AS", "AS"], ["FR", "FR", "JP"], ["pizza", "pizza", "sushi"])
    assert _label_chain(crossed, np.array([1 / 3, 1 / 3, 1 / 3])) is None
    assert _label_chain(crossed, np.array([0.0, 0.5, 0.5])) is not None  # continents unused


@pytest.mark.parametrize("seed", range(4))
def test_non_nested_labels_fall_back_exactly(seed):
    rng = np.random.default_rng(seed)
    continents, countries, artifacts = nested_pool(rng, 60, 15, 6, 3, 1.0)
    artifacts[0] = artifacts[1] = "shared"  # an artifact under (most likely) two countries
    countries[2] = countries[3]
    continents[2] = "elsewhere"  # and a country under two continents
    codes = _cube_codes(continents, countries, artifacts)
    assert _label_chain(codes, np.full(3, 1 / 3)) is None
    for w in random_weights(rng):
        K = cube_kernel(continents, countries, artifacts, w)
        for q in ORDERS:
            fallback = vendi_from_kernel_weights(continents, countries, artifacts, w, q)
            assert fallback == pytest.approx(vendi_score(K, q), rel=1e-9)


def test_labels_may_be_any_hashable():
    assert vendi_from_labels([("FR", 1), ("FR", 1), ("IT", 2)]) == pytest.approx(vendi_from_labels([0, 0, 1]))


# --- CUBE's grouped protocol ----------------------------------------------------------------------


def _pool(seed=0, n=30):
    rng = np.random.default_rng(seed)
    artifacts = rng.integers(0, 8, n)
    return (artifacts // 4).tolist(), (artifacts // 2).tolist(), artifacts.tolist(), rng.uniform(0.1, 0.4, n)


def test_draw_groups():
    groups = draw_groups(20, size=8, repetitions=50, seed=4)
    assert groups.shape == (50, 8)
    assert all(len(set(row)) == 8 for row in groups)
    assert groups.min() >= 0 and groups.max() < 20
    assert np.array_equal(groups, draw_groups(20, size=8, repetitions=50, seed=4))
    expected = np.random.default_rng(4).permuted(np.tile(np.arange(20), (50, 1)), axis=1)[:, :8]
    assert np.array_equal(groups, expected)  # the documented draw


@pytest.mark.parametrize("w", ["continent", "uniform", (0.2, 0.3, 0.5)])
@pytest.mark.parametrize("q", [1, 2])
def test_grouped_qvendi_is_mean_of_group_scores(w, q):
    continents, countries, artifacts, quality = _pool()
    result = grouped_qvendi(continents, countries, artifacts, quality, w=w, q=q, size=8, repetitions=20, seed=7)
    weights = CUBE_KERNEL_PRESETS[w] if isinstance(w, str) else w
    K = cube_kernel(continents, countries, artifacts, weights)
    scores = [qvendi_score(K[np.ix_(g, g)], quality[g], q) for g in draw_groups(len(K), 8, 20, 7)]
    assert result.mean == pytest.approx(np.mean(scores))
    assert result.std == pytest.approx(np.std(scores))
    assert result.n == 30


def test_grouped_qvendi_deterministic_and_whole_pool():
    continents, countries, artifacts, quality = _pool()
    a = grouped_qvendi(continents, countries, artifacts, quality, seed=3)
    assert a == grouped_qvendi(continents, countries, artifacts, quality, seed=3)
    whole = grouped_qvendi(continents, countries, artifacts, quality, size=30, repetitions=5)
    K = cube_kernel(continents, countries, artifacts, CUBE_KERNEL_PRESETS["uniform"])
    assert whole.mean == pytest.approx(qvendi_score(K, quality))
    assert whole.std == pytest.approx(0, abs=1e-12)
    raw = grouped_qvendi(continents, countries, artifacts, quality, normalize=False, seed=3)
    assert raw.mean == pytest.approx(8 * a.mean)


# --- input validation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("K", "message"),
    [
        (np.ones((2, 3)), "square"),
        (np.zeros((0, 0)), "square"),
        ([[1.0, np.nan], [np.nan, 1.0]], "NaN"),
        ([[1.0, 0.5], [0.2, 1.0]], "symmetric"),
        ([[2.0, 0.0], [0.0, 2.0]], "unit diagonal"),
        ([[1.0, 2.0], [2.0, 1.0]], "positive semi-definite"),
    ],
)
def test_vendi_score_rejects_bad_matrices(K, message):
    with pytest.raises(ValueError, match=message):
        vendi_score(K)


def test_rejects_bad_arguments():
    with pytest.raises(ValueError, match="order q"):
        vendi_score(np.eye(2), q=-1)
    with pytest.raises(ValueError, match="order q"):
        vendi_from_labels("AB", q=np.nan)
    with pytest.raises(ValueError, match="one score per item"):
        qvendi_score(np.eye(3), [1.0, 1.0])
    with pytest.raises(ValueError, match="NaN"):
        qvendi_score(np.eye(2), [1.0, np.nan])
    with pytest.raises(ValueError, match="empty"):
        vendi_from_labels([])
    with pytest.raises(ValueError, match="None"):
        vendi_from_labels(["A", None])
    with pytest.raises(ValueError, match="unit L2 norm"):
        vendi_from_embeddings(np.ones((3, 2)))
    with pytest.raises(ValueError, match="sum to 1"):
        vendi_from_kernel_weights("ab", "ab", "ab", w=(1, 1, 1))
    with pytest.raises(ValueError, match=">= 0"):
        vendi_from_kernel_weights("ab", "ab", "ab", w=(1.5, -0.5, 0))
    with pytest.raises(ValueError, match="unknown kernel preset"):
        vendi_from_kernel_weights("ab", "ab", "ab", w="global")
    with pytest.raises(ValueError, match="differ in length"):
        vendi_from_kernel_weights("ab", "abc", "ab")
    with pytest.raises(ValueError, match="group size"):
        grouped_qvendi("abc", "abc", "abc", [1, 1, 1], size=8)
