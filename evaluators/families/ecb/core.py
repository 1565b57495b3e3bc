"""ECB's maths on arrays, with no files and no models: what the ECB family computes, testable by hand.

Edit chains (section 3.3, appendix E):

* :func:`clipscore` -- 100 * max(cos(image, text), 0);
* :func:`chain_pairs` -- which images of a chain DreamSim compares (to step 0, to the previous step).

Culture-aware metric (section 3.1, appendix A.2):

* :func:`classify_answers` -- a judge's P("Yes") and P("No") as yes / no / ambiguous;
* :func:`qa_scores` -- accuracy, precision, recall and F1 of the answers against the expected ones;
* :func:`extreme_steps` / :func:`pick_agreement` -- the best and worst step of a chain by a score, and how
  often a pick matches a human's.

Separability and leaning (section 4.1, equations 1-6):

* :func:`cluster_labels` -- PCA then k-means, seeded;
* :func:`cluster_proportions` (eq. 1), :func:`jsd` (eq. 2), :func:`proximity` (eq. 3) and
  :func:`proximity_matrix`; :func:`bootstrap_proximity` resamples images within each group;
  :func:`separability` -- 1 minus the proximity to the nearest other group; :func:`separability_null` -- its
  permutation null (group labels shuffled across the images);
* :func:`leaning_scores` (eq. 5), :func:`group_means` (eq. 6) and :func:`permutation_pvalues` (within-stratum
  permutation tests of each group's mean and of their dispersion).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ...results.stats import percentile_interval, resample_indices

# --------------------------------------------------------------------------------------- edit chains


def clipscore(image: np.ndarray, text: np.ndarray) -> float:
    r"""CLIPScore as ECB computes it, clipped at zero: :math:`100 \max(\cos(x, t), 0)` for unit vectors
    ``image`` and ``text``. Range [0, 100], higher is better; ECB's released values are about 22-26.5 (it
    did not clip, but CLIP ViT-L/14 cosines of an image and a related text are positive). Hessel et al.'s
    weight 2.5 is not applied."""
    return 100.0 * max(float(image @ text), 0.0)


def chain_pairs(n_images: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The DreamSim comparisons of a chain of ``n_images`` images (step 0 = the text-to-image base):
    ``(to_base, to_previous)``, each a list of (i, j) index pairs for steps j = 1..n-1: (0, j) and (j-1, j).
    Step 0 has neither (its distance to itself is 0 by definition and it has no previous step)."""
    steps = range(1, n_images)
    return [(0, j) for j in steps], [(j - 1, j) for j in steps]


# ------------------------------------------------------------------------------------- culture metric

ANSWERS = ("yes", "no", "ambiguous")


def classify_answers(p_yes: Sequence[float], p_no: Sequence[float], min_mass: float) -> list[str]:
    """A judge's answer from its probabilities of answering "Yes" and "No": "yes" when P(Yes) > P(No),
    "no" when P(No) > P(Yes), and "ambiguous" when they tie or when P(Yes) + P(No) < ``min_mass`` (the
    judge would rather say something else; ECB normalises the first generated word the same way)."""
    out = []
    for y, n in zip(p_yes, p_no, strict=True):
        out.append("ambiguous" if y + n < min_mass or y == n else ("yes" if y > n else "no"))
    return out


class QAScores(NamedTuple):
    accuracy: float
    precision: float
    recall: float
    f1: float
    tp: int
    fp: int
    fn: int
    tn: int
    ambiguous: int


def qa_scores(expected: Sequence[str], answers: Sequence[str]) -> QAScores:
    r"""ECB's per-image scores of yes/no answers against the expected answers ("yes": the element should
    appear; "no": it must not). TP = expected yes and answered yes, FP = expected no and answered yes, FN =
    expected yes and answered no, TN = expected no and answered no; ambiguous answers count only in
    N = len(expected).

    accuracy = (TP + TN) / N, precision = TP / (TP + FP), recall = TP / (TP + FN), F1 = 2PR / (P + R); each
    is 0 where its denominator is 0 (ECB's convention: with no expected-yes question, P = R = F1 = 0).
    All in [0, 1], higher is better.
    """
    if len(expected) != len(answers) or not expected:
        raise ValueError(f"need one answer per question and at least one question, got {len(expected)} "
                         f"questions and {len(answers)} answers")
    if not set(expected) <= {"yes", "no"} or not set(answers) <= set(ANSWERS):
        raise ValueError(f"expected answers must be yes/no and answers yes/no/ambiguous: {expected}, {answers}")
    pairs = list(zip(expected, answers))
    tp, fp = pairs.count(("yes", "yes")), pairs.count(("no", "yes"))
    fn, tn = pairs.count(("yes", "no")), pairs.count(("no", "no"))

    def ratio(a: float, b: float) -> float:
        return a / b if b else 0.0

    precision, recall = ratio(tp, tp + fp), ratio(tp, tp + fn)
    return QAScores(ratio(tp + tn, len(pairs)), precision, recall, ratio(2 * precision * recall, precision + recall),
                    tp, fp, fn, tn, sum(a == "ambiguous" for a in answers))


def extreme_steps(values: dict[int, float]) -> tuple[list[int], list[int]]:
    """(best steps, worst steps) of a chain: the steps with the highest and with the lowest value, every tied
    step listed (in step order). Ties are kept, not broken by position: breaking them toward the base
    would make a metric agree with the positional baseline for free."""
    if not values:
        raise ValueError("a chain without values has no best or worst step")
    top, bottom = max(values.values()), min(values.values())
    return sorted(s for s, v in values.items() if v == top), sorted(s for s, v in values.items() if v == bottom)


def pick_agreement(picked: Sequence[int], human: int) -> float:
    """How far a pick among tied steps agrees with a human's choice: 1 / len(picked) when ``human`` is among
    them, else 0 (the expected agreement when the tie is broken at random)."""
    return 1.0 / len(picked) if human in picked else 0.0


# ----------------------------------------------------------------------------- separability and leaning


def cluster_labels(x: np.ndarray, n_clusters: int, pca_dims: int, seed: int) -> tuple[np.ndarray, dict]:
    """k-means cluster of each row of ``x`` (n, d) after PCA to ``pca_dims`` dimensions, as ECB clusters each
    model's image embeddings (PCA and k-means of scikit-learn, ``random_state=seed``, 10 k-means starts).

    Dimensions are capped at min(n - 1, d) and clusters at n. Returns (labels in 0..K-1, {"pca_dims",
    "clusters", "explained_variance"}).
    """
    from sklearn.cluster import KMeans
    from sklearn.decomposition import PCA

    n, d = x.shape
    dims = max(1, min(pca_dims, n - 1, d))
    k = max(1, min(n_clusters, n))
    pca = PCA(n_components=dims, svd_solver="full", random_state=seed)
    reduced = pca.fit_transform(np.asarray(x, dtype=np.float64))
    labels = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(reduced)
    return labels.astype(int), {"pca_dims": dims, "clusters": k,
                                "explained_variance": float(pca.explained_variance_ratio_.sum())}


def cluster_proportions(labels: Sequence[int], groups: Sequence[str], n_clusters: int) -> tuple[list[str], np.ndarray]:
    r"""ECB eq. 1: for each group c (sorted), :math:`p_{c,k} = \#\{i: c(i) = c, k(i) = k\} / \#\{i: c(i) = c\}`.
    Returns (group names, P of shape (groups, n_clusters)); each row sums to 1."""
    labels, groups = np.asarray(labels), np.asarray(groups)
    names = sorted(set(groups.tolist()))
    p = np.stack([np.bincount(labels[groups == g], minlength=n_clusters) for g in names]).astype(float)
    return names, p / p.sum(axis=1, keepdims=True)


def jsd(p: np.ndarray, q: np.ndarray) -> float:
    r"""ECB eq. 2, base 2: :math:`\frac12 KL(p \| m) + \frac12 KL(q \| m)`, :math:`m = (p + q) / 2`, with
    :math:`0 \log 0 = 0`. Symmetric, 0 for p = q, 1 for distributions with disjoint supports; in [0, 1]."""
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    return float(_jsd(p[None], q[None])[0])


def _jsd(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """JSD of the rows of p and q (..., K)."""
    m = (p + q) / 2

    def kl(a):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(a > 0, a * np.log2(a / m), 0.0).sum(axis=-1)

    return np.clip(0.5 * kl(p) + 0.5 * kl(q), 0.0, 1.0)


def proximity(p: np.ndarray, q: np.ndarray) -> float:
    r"""ECB eq. 3: the harmonic mean of :math:`\cos(p, q)` and :math:`1 - JSD(p, q)`:
    :math:`h = 2 c (1 - J) / (c + 1 - J)`, defined as 0 when both terms are 0 (disjoint supports). In [0, 1];
    1 for p = q, higher = the two groups' images fall in the same clusters."""
    return float(_proximity(np.asarray(p, dtype=float)[None], np.asarray(q, dtype=float)[None])[0])


def _proximity(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    cos = (p * q).sum(-1) / (np.linalg.norm(p, axis=-1) * np.linalg.norm(q, axis=-1))
    overlap = 1.0 - _jsd(p, q)
    total = cos + overlap
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, 2 * cos * overlap / total, 0.0)


def proximity_matrix(p: np.ndarray) -> np.ndarray:
    """h of every pair of rows of ``p`` (groups x clusters): a symmetric matrix with ones on the diagonal."""
    p = np.asarray(p, dtype=float)
    return _proximity(p[:, None, :], p[None, :, :])


def separability(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(1 - max over b != a of h[a, b], that nearest b) for each group a of a proximity matrix: 0 when a's
    images share every cluster with another group in the same proportions, 1 when a shares none. Ties go to
    the lower index."""
    h = np.asarray(h, dtype=float)
    others = h + np.diag(np.full(len(h), -np.inf))
    nearest = others.argmax(axis=1)
    return 1.0 - others[np.arange(len(h)), nearest], nearest


class ProximityCI(NamedTuple):
    h: np.ndarray  # (G, G) point values
    low: np.ndarray  # (G, G) sampling ranges, each widened to contain its point value
    high: np.ndarray
    separability_low: np.ndarray  # (G,) sampling ranges of separability(), likewise
    separability_high: np.ndarray


def _group_proportions(labels: np.ndarray, codes: np.ndarray, n_groups: int, n_clusters: int) -> np.ndarray:
    """Eq. 1 for every replicate b: ``codes`` (B, n) gives each image's group (0..G-1), ``labels`` (B, n) or
    (n,) its cluster; returns (B, G, K) proportions."""
    labels = np.broadcast_to(labels, codes.shape)
    flat = (codes * n_clusters + labels) + (np.arange(len(codes)) * n_groups * n_clusters)[:, None]
    counts = np.bincount(flat.ravel(), minlength=len(codes) * n_groups * n_clusters).astype(float)
    counts = counts.reshape(len(codes), n_groups, n_clusters)
    return counts / counts.sum(axis=2, keepdims=True)


def _separabilities(proportions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(h (B, G, G), separability (B, G)) of every replicate's (G, K) proportions."""
    h = _proximity(proportions[:, :, None, :], proportions[:, None, :, :])
    return h, np.stack([separability(m)[0] for m in h])


def bootstrap_proximity(labels: Sequence[int], groups: Sequence[str], n_clusters: int, n_boot: int, seed: int,
                        level: float = 0.95) -> ProximityCI:
    """Proximities (eq. 3 on eq. 1) of the sorted groups with bootstrap sampling ranges: each replicate redraws
    every group's images with replacement (``stats.resample_indices``; the clusters stay fixed: the range shows
    the sampling variation of the proportions, not of the clustering) and recomputes the proportions, the
    proximity matrix and :func:`separability`. Deterministic for a seed.

    The range is the percentile interval widened to contain the point value: [min(q_lo, v), max(q_hi, v)].
    It is biased and is not a test: h is largest (1) when two groups' proportions are equal, so resampling
    pulls h down and separability up (equal proportions give h = 1 and percentiles below 1). Whether a group
    is more distinct than chance is :func:`separability_null`'s p."""
    labels, groups = np.asarray(labels), np.asarray(groups)
    names, p = cluster_proportions(labels, groups, n_clusters)
    codes = np.searchsorted(names, groups)
    rng = np.random.default_rng(seed)
    drawn = np.empty((n_boot, len(labels)), dtype=int)
    for g in range(len(names)):
        members = np.flatnonzero(codes == g)
        drawn[:, members] = members[resample_indices(len(members), n_boot, rng)]
    h_boot, sep_boot = _separabilities(_group_proportions(labels[drawn], np.broadcast_to(codes, drawn.shape),
                                                          len(names), n_clusters))
    h = proximity_matrix(p)

    def bounds(values: np.ndarray, point: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        flat = values.reshape(n_boot, -1)
        lows, highs = zip(*(percentile_interval(flat[:, j], level) for j in range(flat.shape[1])))
        return (np.minimum(np.reshape(lows, point.shape), point), np.maximum(np.reshape(highs, point.shape), point))

    return ProximityCI(h, *bounds(h_boot, h), *bounds(sep_boot, separability(h)[0]))


class SeparabilityNull(NamedTuple):
    mean: np.ndarray  # (G,) mean separability of each group under the null
    p: np.ndarray  # (G,) one-sided permutation p-values


def separability_null(labels: Sequence[int], groups: Sequence[str], n_clusters: int, n_perm: int,
                      seed: int) -> SeparabilityNull:
    r"""Permutation null of :func:`separability` for the sorted groups.

    Null hypothesis: the group labels are exchangeable across the images (no group has visual modes of its
    own). Each of ``n_perm`` permutations shuffles the labels over all images (group sizes kept, clusters
    fixed) and recomputes every group's separability :math:`S^*_{g,b}`. Returns each group's null mean
    :math:`\frac1B \sum_b S^*_{g,b}` (the separability that sampling noise alone gives groups of these sizes)
    and the one-sided :math:`p_g = (1 + \#\{b: S^*_{g,b} \ge S_g\}) / (B + 1)`: small p = the group is more
    distinct than with shuffled labels. Groups with identical proportions have S = 0 and p = 1. Deterministic
    for a seed."""
    labels, groups = np.asarray(labels), np.asarray(groups)
    names, p = cluster_proportions(labels, groups, n_clusters)
    codes = np.searchsorted(names, groups)
    observed = separability(proximity_matrix(p))[0]
    rng = np.random.default_rng(seed)
    shuffled = np.stack([rng.permutation(codes) for _ in range(n_perm)])
    _, null = _separabilities(_group_proportions(labels, shuffled, len(names), n_clusters))
    hits = (null >= observed - 1e-12).sum(axis=0)
    return SeparabilityNull(null.mean(axis=0), (1 + hits) / (n_perm + 1))


def leaning_scores(x: np.ndarray, strata: Sequence[str], traditional: Sequence[bool], modern: Sequence[bool],
                   scored: Sequence[bool]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""ECB eq. 5 for the ``scored`` rows of ``x`` (unit vectors): :math:`s_i = \cos(x_i, \mu_{trad}(g(i))) -
    \cos(x_i, \mu_{mod}(g(i)))`, the anchors :math:`\mu` being the centroids of the traditional and of the
    modern rows of the same stratum g (image-embedding anchors: ECB's cosines of 0.73-0.87 imply them).
    Positive = closer to the traditional images, negative = closer to the modern ones; invariant to scaling
    any :math:`x_i`. Returns (s, cos to the traditional anchor, cos to the modern anchor) for the scored
    rows in order; NaN where the stratum lacks traditional or modern rows."""
    x = np.asarray(x, dtype=float)
    strata, trad, mod = np.asarray(strata), np.asarray(traditional, bool), np.asarray(modern, bool)
    rows = np.flatnonzero(np.asarray(scored, bool))
    cos_t, cos_m = np.full(len(rows), np.nan), np.full(len(rows), np.nan)
    for g in set(strata[rows].tolist()):
        in_g = strata == g
        if not (trad & in_g).any() or not (mod & in_g).any():
            continue
        anchors = np.stack([x[trad & in_g].mean(axis=0), x[mod & in_g].mean(axis=0)])
        anchors /= np.linalg.norm(anchors, axis=1, keepdims=True)
        mine = strata[rows] == g
        v = x[rows[mine]]
        cos = (v / np.linalg.norm(v, axis=1, keepdims=True)) @ anchors.T
        cos_t[mine], cos_m[mine] = cos[:, 0], cos[:, 1]
    return cos_t - cos_m, cos_t, cos_m


def group_means(s: Sequence[float], groups: Sequence[str]) -> dict[str, tuple[float, float, int]]:
    r"""ECB eq. 6 per group c (sorted): (:math:`\bar s_c`, SE = sd(s, ddof=1) / :math:`\sqrt{n_c}`, n_c);
    SE is NaN for a single value."""
    s, groups = np.asarray(s, dtype=float), np.asarray(groups)
    out = {}
    for g in sorted(set(groups.tolist())):
        v = s[groups == g]
        out[g] = (float(v.mean()), float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else float("nan"), len(v))
    return out


def permutation_pvalues(s: Sequence[float], groups: Sequence[str], strata: Sequence[str], n_perm: int,
                        seed: int) -> tuple[dict[str, float], float]:
    r"""Within-stratum permutation tests of the group means of ``s`` (ECB section 4.1.2).

    Null hypothesis: within each stratum (a semantic category) the group labels are exchangeable. Each of
    ``n_perm`` permutations shuffles the labels among the values of every stratum separately (so each
    group keeps its mix of strata). Statistics, with :math:`\bar s` the mean of all values:

    * per group c: :math:`T_c = \bar s_c - \bar s`, two-sided: :math:`p_c = (1 + \#\{b: |T^*_{c,b}| \ge |T_c|\})
      / (B + 1)`;
    * omnibus (dispersion of the group means): :math:`D = \sum_c n_c (\bar s_c - \bar s)^2`,
      :math:`p = (1 + \#\{b: D^*_b \ge D\}) / (B + 1)`.

    The smallest p is 1 / (B + 1); identical values give p = 1. Deterministic for a seed. Returns
    ({group: p}, omnibus p)."""
    s, groups, strata = np.asarray(s, dtype=float), np.asarray(groups), np.asarray(strata)
    names = sorted(set(groups.tolist()))
    codes = np.searchsorted(names, groups)
    sizes = np.bincount(codes, minlength=len(names))
    overall = s.mean()

    def stats_of(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        dev = np.bincount(labels, weights=s, minlength=len(names)) / sizes - overall
        return dev, (sizes * dev ** 2).sum()

    observed, dispersion = stats_of(codes)
    rng = np.random.default_rng(seed)
    members = [np.flatnonzero(strata == g) for g in sorted(set(strata.tolist()))]
    hits, hits_d = np.zeros(len(names)), 0
    tolerance = 1e-12 * max(1.0, float(np.abs(s).max()))
    for _ in range(n_perm):
        permuted = codes.copy()
        for idx in members:
            permuted[idx] = codes[rng.permutation(idx)]
        dev, d = stats_of(permuted)
        hits += np.abs(dev) >= np.abs(observed) - tolerance
        hits_d += d >= dispersion - tolerance
    p = (1 + hits) / (n_perm + 1)
    return {g: float(v) for g, v in zip(names, p)}, float((1 + hits_d) / (n_perm + 1))
