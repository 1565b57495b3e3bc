"""Vendi scores and CUBE's quality-weighted cultural diversity (CUBE section 5.1, appendices I and J.2.2).

Functional core, one formula per function:

* :func:`vendi_score` -- VS_q of an explicit N x N similarity matrix (CUBE Definition 5.1, eq. 1);
* :func:`qvendi_score` -- quality-weighted VS, CUBE eq. 2 (``normalize=False``) or eq. 3 (default);
* low-rank fast paths that never form the N x N matrix and give the same value:
  :func:`vendi_from_labels` (categorical kernel), :func:`vendi_from_kernel_weights` (CUBE's
  continent / country / artifact kernel, :data:`CUBE_KERNEL_PRESETS`) and
  :func:`vendi_from_embeddings` (cosine kernel);
* :func:`grouped_qvendi` -- CUBE's protocol: qVS of random groups of 8 images, averaged over 50 draws.

Eigenvalues below ``N * eps * max eigenvalue`` (the :func:`numpy.linalg.matrix_rank` tolerance) count
as zero in every path, so orders q < 1, which weigh rare eigenvalues heavily, are not driven by
round-off.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import NamedTuple

import numpy as np
from scipy.special import xlogy

#: CUBE J.2.2 weights (w1 same continent, w2 same country, w3 same artifact) of its five kernels.
CUBE_KERNEL_PRESETS: dict[str, tuple[float, float, float]] = {
    "continent": (1.0, 0.0, 0.0),
    "country": (0.0, 1.0, 0.0),
    "artifact": (0.0, 0.0, 1.0),
    "hierarchical": (1 / 2, 1 / 2, 0.0),
    "uniform": (1 / 3, 1 / 3, 1 / 3),
}

_ATOL = 1e-6  # symmetry, unit diagonal, unit-norm rows, and negative eigenvalues of K/N


def _check_q(q: float) -> float:
    q = float(q)
    if not q >= 0:  # also rejects NaN
        raise ValueError(f"order q must be >= 0 (0, 1 and inf included), got {q}")
    return q


def _hill(p: np.ndarray, q: float) -> np.ndarray:
    """exp(Renyi entropy of order q) of the distributions ``p`` along the last axis (entries >= 0, sum 1)."""
    if q == 0:
        return np.count_nonzero(p, axis=-1).astype(float)
    if q == 1:
        return np.exp(-xlogy(p, p).sum(axis=-1))  # xlogy(0, 0) = 0
    p_max = p.max(axis=-1)
    if q == np.inf:
        return 1 / p_max
    # log sum p^q = q log p_max + log sum (p / p_max)^q: no underflow for large q
    log_sum = q * np.log(p_max) + np.log(((p / p_max[..., None]) ** q).sum(axis=-1))
    return np.exp(log_sum / (1 - q))


def _vendi_from_eigenvalues(lam: np.ndarray, n: int, q: float) -> np.ndarray:
    """Vendi score from eigenvalues (last axis) of K/N, or of any matrix with the same nonzero spectrum."""
    if lam.min(initial=0.0) < -_ATOL:
        raise ValueError(f"similarity matrix is not positive semi-definite (eigenvalue of K/N {lam.min():.3g})")
    lam = np.clip(lam, 0.0, None)
    lam = np.where(lam > n * np.finfo(float).eps * lam.max(axis=-1, keepdims=True), lam, 0.0)
    return _hill(lam / lam.sum(axis=-1, keepdims=True), q)


def vendi_score(K: np.ndarray, q: float = 1.0) -> float:
    r"""Vendi score of order q of an N x N similarity matrix (CUBE Definition 5.1, eq. 1).

    .. math:: \mathrm{VS}_q = \exp\Big(\tfrac{1}{1-q}\log\sum_i \bar\lambda_i^{\,q}\Big)

    where :math:`\bar\lambda_i` are the eigenvalues of K/N (they sum to 1 because diag K = 1). Limits:
    q = 1 gives :math:`\exp(-\sum_i \bar\lambda_i\log\bar\lambda_i)` (0 log 0 = 0), q = 0 the number of
    nonzero eigenvalues, q = inf :math:`1/\max_i \bar\lambda_i`.

    Range [1, N], higher is more diverse: 1 when all items are identical (K all ones), N when all are
    distinct (K = I). Non-increasing in q.

    Args:
        K: symmetric positive semi-definite similarity matrix with unit diagonal (atol 1e-6).
        q: order, >= 0; ``numpy.inf`` allowed.

    Raises:
        ValueError: K empty, not square, not finite, not symmetric, not unit-diagonal or not PSD; q < 0.
    """
    q = _check_q(q)
    K = np.asarray(K, dtype=float)
    if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] == 0:
        raise ValueError(f"similarity matrix must be square N x N with N >= 1, got shape {K.shape}")
    if not np.isfinite(K).all():
        raise ValueError("similarity matrix has NaN or infinite entries")
    if not np.allclose(K, K.T, rtol=0, atol=_ATOL):
        raise ValueError(f"similarity matrix is not symmetric (max |K - K.T| = {np.abs(K - K.T).max():.3g})")
    if not np.allclose(np.diag(K), 1.0, rtol=0, atol=_ATOL):
        raise ValueError("similarity matrix must have a unit diagonal: k(x, x) = 1 (CUBE Definition 5.1)")
    n = K.shape[0]
    return float(_vendi_from_eigenvalues(np.linalg.eigvalsh((K + K.T) / (2 * n)), n, q))


def _quality_weighted(vs: np.ndarray | float, quality_mean: np.ndarray | float, n: int, normalize: bool):
    return quality_mean * vs / n if normalize else quality_mean * vs


def _check_quality(quality: np.ndarray, n: int) -> np.ndarray:
    quality = np.asarray(quality, dtype=float)
    if quality.shape != (n,):
        raise ValueError(f"quality must have one score per item, shape ({n},), got {quality.shape}")
    if not np.isfinite(quality).all():
        raise ValueError("quality scores have NaN or infinite entries")
    return quality


def qvendi_score(K: np.ndarray, quality: Sequence[float], q: float = 1.0, normalize: bool = True) -> float:
    r"""Quality-weighted Vendi score (CUBE eq. 2 and 3; Nguyen & Dieng 2024).

    .. math:: \mathrm{qVS}_q = \Big(\tfrac1N\sum_i s(x_i)\Big)\,\mathrm{VS}_q
              \qquad
              \overline{\mathrm{qVS}}_q = \Big(\tfrac1N\sum_i s(x_i)\Big)\,\frac{\mathrm{VS}_q}{N}

    ``normalize=True`` (default, CUBE's cultural diversity CD) returns eq. 3, comparable across
    collection sizes; ``normalize=False`` returns eq. 2. Higher is better. With quality in [0, 1]
    (HPS-v2 in CUBE) eq. 3 lies in [0, 1]: 0 when every quality is 0, 1 when every quality is 1 and
    all items are distinct. Duplicating every item M times leaves eq. 2 unchanged and divides eq. 3
    by M (CUBE appendix I).

    Args:
        K: N x N similarity matrix, as for :func:`vendi_score`.
        quality: one finite quality score s(x_i) per item.
        q: Vendi order.
        normalize: divide by N (eq. 3).
    """
    vs = vendi_score(K, q)
    n = len(K)
    return float(_quality_weighted(vs, _check_quality(quality, n).mean(), n, normalize))


def _codes(labels: Sequence[Hashable], name: str) -> np.ndarray:
    """Integer code per label, in order of first appearance."""
    index: dict[Hashable, int] = {}
    codes = []
    for label in labels:
        if label is None:
            raise ValueError(f"{name} contains None: map or drop unlabelled items before scoring")
        codes.append(index.setdefault(label, len(index)))
    if not codes:
        raise ValueError(f"{name} is empty: a Vendi score needs at least one item")
    return np.asarray(codes)


def vendi_from_labels(labels: Sequence[Hashable], q: float = 1.0) -> float:
    r"""Vendi score of the categorical kernel :math:`K_{ij} = [\ell_i = \ell_j]`, in O(N).

    K/N has one nonzero eigenvalue per distinct label, equal to that label's proportion :math:`p_c`
    (K is block-diagonal with all-ones blocks), so
    :math:`\mathrm{VS}_q = \exp(H_q(p)) = (\sum_c p_c^q)^{1/(1-q)}`, the Hill number of the label
    distribution. Range [1, number of distinct labels]; higher is more diverse.

    Args:
        labels: one hashable label per item (not None).
        q: Vendi order.
    """
    q = _check_q(q)
    counts = np.bincount(_codes(labels, "labels"))
    return float(_hill(counts / counts.sum(), q))


def vendi_from_embeddings(X: np.ndarray, q: float = 1.0) -> float:
    r"""Vendi score of the cosine kernel :math:`K = XX^\top` of unit-norm rows, without forming K when d < N.

    :math:`XX^\top/N` (N x N) and :math:`X^\top X/N` (d x d) have the same nonzero eigenvalues, so the
    smaller one is decomposed. Same value and range as :func:`vendi_score` on :math:`XX^\top`.

    Args:
        X: N x d array whose rows have unit L2 norm (atol 1e-6); normalise embeddings first.
        q: Vendi order.
    """
    q = _check_q(q)
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[0] == 0:
        raise ValueError(f"embeddings must be an N x d array with N >= 1, got shape {X.shape}")
    if not np.isfinite(X).all():
        raise ValueError("embeddings have NaN or infinite entries")
    if not np.allclose(np.einsum("ij,ij->i", X, X), 1.0, rtol=0, atol=_ATOL):
        raise ValueError("embedding rows must have unit L2 norm (the cosine kernel needs k(x, x) = 1)")
    n, d = X.shape
    gram = X.T @ X if d < n else X @ X.T
    return float(_vendi_from_eigenvalues(np.linalg.eigvalsh(gram / n), n, q))


def _weights(w: tuple[float, float, float] | str) -> np.ndarray:
    if isinstance(w, str):
        if w not in CUBE_KERNEL_PRESETS:
            raise ValueError(f"unknown kernel preset {w!r}; choose one of {sorted(CUBE_KERNEL_PRESETS)}")
        w = CUBE_KERNEL_PRESETS[w]
    w = np.asarray(w, dtype=float)
    if w.shape != (3,) or not np.isfinite(w).all() or (w < 0).any():
        raise ValueError(f"kernel weights must be three finite numbers >= 0 (w1, w2, w3), got {w.tolist()}")
    if not np.isclose(w.sum(), 1.0, rtol=0, atol=1e-9):
        raise ValueError(f"kernel weights must sum to 1 so that k(x, x) = 1, got sum {w.sum():.6g}")
    return w


def _cube_features(continents, countries, artifacts, w) -> np.ndarray:
    r"""Rows x_i with :math:`x_i^\top x_j = \sum_k w_k [\ell^k_i = \ell^k_j]`: :math:`X = Z W^{1/2}`.

    Z concatenates the one-hot indicator matrices of the three label lists; zero-weight blocks are
    dropped. Each row holds one 1 per block, so its squared norm is w1 + w2 + w3 = 1.
    """
    w = _weights(w)
    lists = {"continents": continents, "countries": countries, "artifacts": artifacts}
    codes = [_codes(labels, name) for name, labels in lists.items()]
    if len({len(c) for c in codes}) != 1:
        raise ValueError(f"continents, countries and artifacts differ in length: {[len(c) for c in codes]}")
    blocks = [np.sqrt(wk) * (c[:, None] == np.arange(c.max() + 1)) for wk, c in zip(w, codes) if wk > 0]
    return np.hstack(blocks)


def vendi_from_kernel_weights(
    continents: Sequence[Hashable],
    countries: Sequence[Hashable],
    artifacts: Sequence[Hashable],
    w: tuple[float, float, float] | str = "uniform",
    q: float = 1.0,
) -> float:
    r"""Vendi score of CUBE's kernel (eq. 4), without forming the N x N matrix.

    :math:`k = w_1[\text{same continent}] + w_2[\text{same country}] + w_3[\text{same artifact}]`.

    Each label list is compared on its own (the artifact kernel matches artifacts "regardless of
    geographical origin"); no nesting of artifact in country in continent is assumed. With Z the
    N x d concatenated one-hot matrix (d distinct labels over the kernels with w_k > 0) and W the
    diagonal of weights, :math:`K = \sum_k w_k Z_k Z_k^\top = ZWZ^\top`, whose nonzero eigenvalues
    are those of the d x d matrix :math:`W^{1/2}Z^\top Z W^{1/2}`; the smaller side is decomposed
    (:func:`vendi_from_embeddings` on :math:`X = ZW^{1/2}`). Same value and range as
    :func:`vendi_score` on the explicit K.

    Args:
        continents, countries, artifacts: one label per image each (same length, no None).
        w: (w1, w2, w3), each >= 0 and summing to 1 (unit diagonal), or a :data:`CUBE_KERNEL_PRESETS` name.
        q: Vendi order.
    """
    return vendi_from_embeddings(_cube_features(continents, countries, artifacts, w), q)


def draw_groups(n: int, size: int = 8, repetitions: int = 50, seed: int = 0) -> np.ndarray:
    """Index groups of :func:`grouped_qvendi`: a ``repetitions x size`` int array.

    Row r is ``size`` distinct indices of ``range(n)`` drawn uniformly without replacement (the first
    ``size`` entries of a uniform random permutation); rows are independent, so a group may recur.
    Exactly ``numpy.random.default_rng(seed).permuted(np.tile(np.arange(n), (repetitions, 1)),
    axis=1)[:, :size]``.
    """
    if not 1 <= size <= n:
        raise ValueError(f"group size must be between 1 and the number of images ({n}), got {size}")
    if repetitions < 1:
        raise ValueError(f"repetitions must be >= 1, got {repetitions}")
    rng = np.random.default_rng(seed)
    return rng.permuted(np.tile(np.arange(n), (repetitions, 1)), axis=1)[:, :size]


class GroupedQVendi(NamedTuple):
    """Mean and population standard deviation (ddof=0) of qVS over the drawn groups; ``n`` images pooled."""

    mean: float
    std: float
    n: int


def grouped_qvendi(
    continents: Sequence[Hashable],
    countries: Sequence[Hashable],
    artifacts: Sequence[Hashable],
    quality: Sequence[float],
    w: tuple[float, float, float] | str = "uniform",
    q: float = 1.0,
    normalize: bool = True,
    size: int = 8,
    repetitions: int = 50,
    seed: int = 0,
) -> GroupedQVendi:
    """CUBE's cultural diversity protocol (section 5.2): qVS of groups of ``size`` images, over random draws.

    The inputs are the N images of one pool -- one prompt's images, or one concept's images pooled
    over its prompt variants and seed batches (CUBE J.1 pools 5 prompts x 80 seeds = 400). Each of
    the ``repetitions`` groups is :func:`draw_groups` ``(N, size, repetitions, seed)``: ``size``
    distinct images drawn uniformly without replacement, independently per repetition. For each
    group, :func:`qvendi_score` of CUBE's kernel (``w``) with the images' ``quality`` (eq. 3 by
    default) is computed; the mean over groups is the reported CD, ``std`` is the spread between
    groups (not a confidence interval of the mean).

    Args:
        continents, countries, artifacts: labels of each image (the artifact it was mapped to, CUBE J.2.1).
        quality: one quality score per image (HPS-v2 in CUBE).
        w, q, normalize: kernel weights or preset name, Vendi order, eq. 3 (True) or eq. 2 (False).
        size: images per group (CUBE: 8); must not exceed N.
        repetitions: number of groups (CUBE: 50).
        seed: seed of :func:`numpy.random.default_rng`; equal inputs and seed give equal results.
    """
    q = _check_q(q)
    X = _cube_features(continents, countries, artifacts, w)
    quality = _check_quality(quality, len(X))
    groups = draw_groups(len(X), size, repetitions, seed)
    Xg = X[groups]  # repetitions x size x d
    lam = np.linalg.eigvalsh(Xg @ Xg.transpose(0, 2, 1) / size)
    qvs = _quality_weighted(_vendi_from_eigenvalues(lam, size, q), quality[groups].mean(axis=1), size, normalize)
    return GroupedQVendi(mean=float(qvs.mean()), std=float(qvs.std()), n=len(X))
