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
from itertools import pairwise
from typing import NamedTuple

import numpy as np

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
        from scipy.special import xlogy  # imported where used: a cached rerun of ``evaluate`` needs no scipy

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


def _cube_codes(continents, countries, artifacts) -> list[np.ndarray]:
    """Integer codes of the three label lists (continents, countries, artifacts), checked for equal length."""
    lists = {"continents": continents, "countries": countries, "artifacts": artifacts}
    codes = [_codes(labels, name) for name, labels in lists.items()]
    if len({len(c) for c in codes}) != 1:
        raise ValueError(f"continents, countries and artifacts differ in length: {[len(c) for c in codes]}")
    return codes


def _cube_features(continents, countries, artifacts, w) -> np.ndarray:
    r"""Rows x_i with :math:`x_i^\top x_j = \sum_k w_k [\ell^k_i = \ell^k_j]`: :math:`X = Z W^{1/2}`.

    Z concatenates the one-hot indicator matrices of the three label lists; zero-weight blocks are
    dropped. Each row holds one 1 per block, so its squared norm is w1 + w2 + w3 = 1.
    """
    return _one_hot_features(_cube_codes(continents, countries, artifacts), _weights(w))


def _one_hot_features(codes: list[np.ndarray], w: np.ndarray) -> np.ndarray:
    """:func:`_cube_features` from integer codes and validated weights."""
    blocks = [np.sqrt(wk) * (c[:, None] == np.arange(c.max() + 1)) for wk, c in zip(w, codes) if wk > 0]
    return np.hstack(blocks)


_EPS = np.finfo(float).eps
_NEWTON_STEPS = 30  # safeguarded steps per root before plain bisection takes over
_MAX_STEPS = 1200  # then bisection, which reaches relative width 4 eps within the double range
_CHUNK = 1 << 20  # entries of one padded (roots x poles) matrix of the secular solver


def _label_chain(codes: list[np.ndarray], w: np.ndarray) -> list[tuple[np.ndarray, float]] | None:
    """The label lists with w_k > eps, finest first, if each partition refines the next; else None.

    Lists are ordered by number of distinct labels (descending); list i refines list i + 1 when every
    label of list i occurs with a single label of list i + 1 (artifact within one country, country
    within one continent). Any refinement order works, not only artifact < country < continent.
    A list with 0 < w_k <= eps is left out: it moves every eigenvalue of K by less than eps N, below
    the zero tolerance N eps max(lambda) (max(lambda) >= trace / rank >= 1), and its poles would
    overflow the secular solver.
    """
    levels = sorted(((c, float(wk)) for c, wk in zip(codes, w) if wk > _EPS), key=lambda cw: -(cw[0].max() + 1))
    for (fine, _), (coarse, _) in pairwise(levels):
        parent = np.empty(fine.max() + 1, dtype=coarse.dtype)
        parent[fine] = coarse
        if not np.array_equal(parent[fine], coarse):
            return None
    return levels


def _secular_roots(block, pole, z2, rho) -> tuple[np.ndarray, np.ndarray]:
    r"""Eigenvalues of :math:`\mathrm{diag}(d) + \rho z z^\top` per block, and the squared projections of z.

    Input rows are sorted by (block, pole) with strictly increasing poles within a block, z2 > 0 and
    rho > 0. A block of poles :math:`d_1 < \dots < d_k` has one root of the secular equation
    :math:`f(\lambda) = 1 + \rho \sum_j z_j^2 / (d_j - \lambda) = 0` in each interval
    :math:`(d_j, d_{j+1})` and one in :math:`(d_k, d_k + \rho \lVert z \rVert^2]` (f increases from
    :math:`-\infty` to :math:`+\infty` between poles), returned in row j. Each root is written as
    :math:`\lambda = o + \tau` with o the pole nearer to it (the sign of f at the interval's midpoint
    tells which), so differences :math:`d_j - \lambda = (d_j - o) - \tau` keep their relative accuracy
    near a pole; :func:`_secular_offsets` finds :math:`\tau`.

    The eigenvector of root :math:`\lambda` is :math:`\propto (D - \lambda)^{-1} z`, so with
    :math:`\sum_j z_j^2/(d_j - \lambda) = -1/\rho` the squared projection of z on it is
    :math:`u^2 = 1 / (\rho^2 \sum_j z_j^2 / (d_j - \lambda)^2)`; per block the u^2 sum to
    :math:`\lVert z \rVert^2`.
    """
    n_rows = len(pole)
    first = np.r_[True, block[1:] != block[:-1]]
    last = np.r_[block[1:] != block[:-1], True]
    bid = np.cumsum(first) - 1
    bstart = np.flatnonzero(first)
    sizes = np.diff(np.r_[bstart, n_rows])
    local = np.arange(n_rows) - bstart[bid]
    # bracket widths from the left pole: to the next pole, or rho |z|^2 past the last one
    next_pole = np.r_[pole[1:], 0.0]
    width = np.where(last, rho * np.bincount(bid, z2)[bid], next_pole - pole)
    kmax = int(sizes.max())
    roots, u2 = np.empty(n_rows), np.empty(n_rows)
    step = max(1, _CHUNK // kmax)
    for lo_row in range(0, n_rows, step):
        rows = slice(lo_row, min(lo_row + step, n_rows))
        cols = np.arange(kmax)
        valid = cols < sizes[bid[rows]][:, None]
        idx = np.minimum(bstart[bid[rows]][:, None] + cols, n_rows - 1)
        P, W = pole[idx], np.where(valid, z2[idx], 0.0)
        half = width[rows] / 2
        delta_left = np.where(valid, P - pole[rows, None], np.inf)  # padding: 1 / (inf - tau) = 0
        f_mid = 1 + rho * (W / (delta_left - half[:, None])).sum(axis=1)
        left = last[rows] | (f_mid >= 0)  # origin at the pole left of the root
        origin = np.where(left, pole[rows], next_pole[rows])
        delta = np.where(left[:, None], delta_left, np.where(valid, P - origin[:, None], np.inf))
        ocol = np.where(left, local[rows], local[rows] + 1)
        at = (np.arange(len(ocol)), ocol)
        a = rho * W[at]  # weight of the pole term at the origin
        W_rest = W.copy()
        W_rest[at] = 0.0
        tau_mid = np.where(left, half, half - width[rows])
        lo = np.where(left, np.where(f_mid >= 0, 0.0, half), tau_mid)
        hi = np.where(left, np.where(f_mid >= 0, half, width[rows]), 0.0)
        tau = _secular_offsets(delta, W_rest, a, left, lo, hi, tau_mid, rho)
        r = 1 / (delta - tau[:, None])
        roots[rows] = origin + tau
        u2[rows] = tau**2 / (rho**2 * (a / rho + tau**2 * (W_rest * r * r).sum(axis=1)))
    return roots, u2


def _secular_offsets(delta, W_rest, a, left, lo, hi, tau, rho) -> np.ndarray:
    r"""Offsets :math:`\tau` from the origin pole o that solve the secular equation of :func:`_secular_roots`.

    In those coordinates :math:`f(\tau) = 1 - a/\tau + \rho \sum_j W_j/(\delta_j - \tau)`. One row per
    root: ``delta`` the poles minus o (inf for padding), ``W_rest`` their :math:`z_j^2` with the
    origin's column zeroed, ``a`` :math:`\rho z_o^2`, ``left`` whether o is the left pole (then
    :math:`\tau > 0`), [``lo``, ``hi``] a bracket of the root, ``tau`` a start inside it. A safeguarded
    fixed-weight iteration (Bunch, Nielsen & Sorensen 1978: the pole term at o kept exact, the other
    terms linearised, the quadratic solved for the root of :math:`\tau`'s sign) runs inside the bracket,
    kept by the sign of f; a step that leaves the bracket, or any step after ``_NEWTON_STEPS``, bisects.
    A row stops when its step is below :math:`4\varepsilon|\tau|` or |f| below the rounding error of
    its terms: relative accuracy in :math:`\tau`, which the projections u^2 need when rho is small.
    Finished rows leave the working matrices, so a slow root costs only its own row.
    """
    tau = tau.copy()
    active = np.arange(len(tau))
    t = tau
    for it in range(_MAX_STEPS):
        r = 1 / (delta - t[:, None])
        terms = W_rest * r
        phi, dphi = rho * terms.sum(axis=1), rho * (terms * r).sum(axis=1)
        f = 1 - a / t + phi
        at_root = np.abs(f) <= 8 * _EPS * (1 + a / np.abs(t) + rho * np.abs(terms).sum(axis=1))  # f's rounding
        lo, hi = np.where(f < 0, t, lo), np.where(f > 0, t, hi)
        # 1 + phi + dphi (x - t) - a / x = 0, i.e. dphi x^2 + c x - a = 0
        c = 1 + phi - dphi * t
        s = np.sqrt(c * c + 4 * dphi * a)
        with np.errstate(divide="ignore", invalid="ignore"):
            pos = np.where(c > 0, 2 * a / (c + s), (s - c) / (2 * dphi))
            neg = np.where(c < 0, 2 * a / (c - s), -(c + s) / (2 * dphi))
        candidate = np.where(left, pos, neg)
        ok = (candidate >= lo) & (candidate <= hi) & (it < _NEWTON_STEPS)
        new = np.where(ok, candidate, (lo + hi) / 2)
        done = at_root | (np.abs(new - t) <= 4 * _EPS * np.abs(new))
        t = np.where(at_root, t, new)
        tau[active] = t
        if done.all():
            return tau
        if done.any():
            keep = ~done
            active, t, lo, hi, delta, W_rest, a, left = (
                x[keep] for x in (active, t, lo, hi, delta, W_rest, a, left)
            )
    raise RuntimeError("secular equation did not converge (a bug: please report it with the labels)")


def _rank_one_update(block, d, z2, rho) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""Spectrum of :math:`\mathrm{diag}(d) + \rho \sum_b z_b z_b^\top`, :math:`z_b` = z on the rows of block b.

    Rows of one block with equal d (within 4 eps relative) form a group of m: its (m - 1)-dimensional
    subspace orthogonal to z keeps eigenvalue d (these are returned as ``deflated``: z has no part
    in them, so no coarser rank-one term touches them either), and one combined coordinate carries
    :math:`\sum z^2`; a group whose :math:`\sum z^2` underflowed to 0 is deflated whole. The combined
    coordinates go to :func:`_secular_roots`.

    Returns:
        (roots, u2, root_block, deflated): the eigenvalues that z touches, the squared projection of z
        on each of their eigenvectors, the block of each, and the eigenvalues that z does not touch.
    """
    order = np.lexsort((d, block))
    block, d, z2 = block[order], d[order], z2[order]
    start = np.r_[True, (block[1:] != block[:-1]) | (d[1:] - d[:-1] > 4 * _EPS * d[1:])]
    group = np.cumsum(start) - 1
    pole, pole_block, Z2 = d[start], block[start], np.bincount(group, z2)
    touched = Z2 > 0  # (z underflowed to 0 has no part in that group)
    roots, u2 = _secular_roots(pole_block[touched], pole[touched], Z2[touched], rho)
    return roots, u2, pole_block[touched], np.concatenate([d[~start], pole[~touched]])


def _nested_spectrum(chain: list[tuple[np.ndarray, float]], n: int) -> np.ndarray:
    r"""Nonzero spectrum of the N x N kernel :math:`K = \sum_\ell w_\ell [\text{same label of list } \ell]`.

    ``chain`` lists (codes, weight) finest first, each partition refining the next. With A the N x a
    one-hot matrix of the finest labels and D = A^T A their counts, :math:`K = A S A^\top`, and K shares
    its nonzero eigenvalues with :math:`M = D^{1/2} S D^{1/2} = w_0 D + \sum_{\ell \ge 1} w_\ell
    \sum_g s_g s_g^\top`, where :math:`s_g` holds :math:`\sqrt{n_a}` on the finest labels inside label g of
    list :math:`\ell`. Since the partitions nest, M is built up level by level: each label g of list
    :math:`\ell` adds the rank-one term :math:`w_\ell s_g s_g^\top` to the block of its sub-labels, and in
    that block's eigenbasis :math:`s_g` has the coordinates u computed at the level below (level 0:
    :math:`u^2 = n_a`), so every level is one :func:`_rank_one_update`. Cost per level: a handful of
    iterations over a (roots x largest block) matrix, never a dense decomposition.
    """
    (fine, w0), *coarser = chain
    counts = np.bincount(fine).astype(float)
    lam, z2, label = w0 * counts, counts, np.arange(len(counts))
    untouched = []
    for coarse, wk in coarser:
        parent = np.empty(fine.max() + 1, dtype=coarse.dtype)
        parent[fine] = coarse
        lam, z2, label, deflated = _rank_one_update(parent[label], lam, z2, wk)
        untouched.append(deflated)
        fine = coarse
    spectrum = np.concatenate([*untouched, lam])
    if not abs(spectrum.sum() - n) <= 1e-9 * n:  # trace K = N: a check on every level's u^2
        raise RuntimeError(f"label-kernel eigenvalues sum to {spectrum.sum():.12g}, not N = {n} (a bug: please report)")
    return spectrum


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
    geographical origin"). When the lists with w_k > 0 nest (each artifact label under one country,
    each country under one continent, or any other refinement order), the spectrum is exact from
    the label counts by :func:`_nested_spectrum`: per country a diagonal plus rank-one matrix, per
    continent another rank-one update, both solved through their secular equations, in about
    O(distinct labels x largest block) per iteration. Otherwise, with Z the N x d concatenated
    one-hot matrix (d distinct labels over the kernels with w_k > 0) and W the diagonal of weights,
    :math:`K = \sum_k w_k Z_k Z_k^\top = ZWZ^\top`, whose nonzero eigenvalues are those of the d x d
    matrix :math:`W^{1/2}Z^\top Z W^{1/2}`; the smaller side is decomposed
    (:func:`vendi_from_embeddings` on :math:`X = ZW^{1/2}`). Both give the value and range of
    :func:`vendi_score` on the explicit K, with the same zero-eigenvalue tolerance.

    Args:
        continents, countries, artifacts: one label per image each (same length, no None).
        w: (w1, w2, w3), each >= 0 and summing to 1 (unit diagonal), or a :data:`CUBE_KERNEL_PRESETS` name.
        q: Vendi order.
    """
    q = _check_q(q)
    weights = _weights(w)
    codes = _cube_codes(continents, countries, artifacts)
    chain = _label_chain(codes, weights)
    if chain is None:
        return vendi_from_embeddings(_one_hot_features(codes, weights), q)
    n = len(codes[0])
    return float(_vendi_from_eigenvalues(_nested_spectrum(chain, n) / n, n, q))


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
