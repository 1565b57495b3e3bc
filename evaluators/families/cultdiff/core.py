"""CultDiff's maths on arrays, with no files and no models (Bayramli et al., ACL 2025; notes/002-cultdiff.md):

* :func:`cosines` -- cos(x, r_k) of an image embedding with each reference embedding (unit vectors);
* :func:`reduce_references` -- one value per image from its values against its K references: the mean (each
  real-generated pair counts once, as CultDiff's pairs do) or the best (max similarity / min distance);
* :func:`ssim` -- the structural similarity of Wang et al. (2004) of two grey images, :func:`luma`;
* :func:`similarity_score`, :func:`pair_label`, :func:`pair_weight` -- CultDiff-S's labels from the Likert
  answers: the mean of Q1.1-Q1.4, positive when >= 3, weight (s - 1) / 4;
* :func:`weighted_contrastive_loss` -- CultDiff-S's loss (section 3.3.2), on numpy or torch arrays.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: The mean Q1 score from which a real-generated pair is a positive (CultDiff section 3.3.1).
POSITIVE_FROM = 3.0
#: The Likert scale of every CultDiff question.
LIKERT_LOW, LIKERT_HIGH = 1.0, 5.0
#: SSIM constants (Wang et al. 2004): K1, K2, the Gaussian window's sigma and side, the dynamic range L.
SSIM_K1, SSIM_K2, SSIM_SIGMA, SSIM_WINDOW, SSIM_RANGE = 0.01, 0.03, 1.5, 11, 255.0


def cosines(image: np.ndarray, references: np.ndarray) -> np.ndarray:
    """cos(x, r_k) for each row r_k of ``references`` (K, d): unit vectors, so the dot products."""
    return np.asarray(references, dtype=float) @ np.asarray(image, dtype=float)


def reduce_references(values: Sequence[float], reduction: str, higher_is_better: bool = True) -> float:
    """One image's value from its values against its K >= 1 references: ``mean`` = (1/K) sum_k v_k; ``best`` =
    max_k v_k for a similarity, min_k v_k for a distance (``higher_is_better=False``)."""
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or not len(values):
        raise ValueError("need one value per reference, and at least one reference")
    if reduction == "mean":
        return float(values.mean())
    if reduction == "best":
        return float(values.max() if higher_is_better else values.min())
    raise ValueError(f"reduction must be 'mean' or 'best', not {reduction!r}")


def luma(rgb: np.ndarray) -> np.ndarray:
    """ITU-R BT.601 luma Y = 0.299 R + 0.587 G + 0.114 B of an (H, W, 3) array, as float64 on the same scale."""
    return np.asarray(rgb, dtype=float) @ np.array([0.299, 0.587, 0.114])


def _gaussian_window(side: int = SSIM_WINDOW, sigma: float = SSIM_SIGMA) -> np.ndarray:
    x = np.arange(side) - (side - 1) / 2
    g = np.exp(-(x**2) / (2 * sigma**2))
    return np.outer(g, g) / np.outer(g, g).sum()


def ssim(a: np.ndarray, b: np.ndarray, data_range: float = SSIM_RANGE) -> float:
    r"""Mean SSIM of two grey images of one shape (H, W >= 11), Wang et al. (2004) eq. 13 with their settings:

    .. math::
        \mathrm{SSIM}(x, y) = \frac{(2 \mu_x \mu_y + C_1)(2 \sigma_{xy} + C_2)}
                                   {(\mu_x^2 + \mu_y^2 + C_1)(\sigma_x^2 + \sigma_y^2 + C_2)},
        \quad C_1 = (K_1 L)^2, \; C_2 = (K_2 L)^2

    with local means, variances and covariance under an 11 x 11 Gaussian window (sigma 1.5), computed where
    the window fits ("valid", as their reference code), and averaged over the map. 1 for identical images;
    symmetric; at most 1. Two constant images c1, c2 give (2 c1 c2 + C1) / (c1^2 + c2^2 + C1).
    """
    from scipy.signal import fftconvolve

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 2 or min(a.shape) < SSIM_WINDOW:
        raise ValueError(f"need two grey images of one shape, at least {SSIM_WINDOW} px a side: {a.shape}, {b.shape}")
    window = _gaussian_window()

    def local(x):
        return fftconvolve(x, window, mode="valid")

    mu_a, mu_b = local(a), local(b)
    var_a = local(a * a) - mu_a**2
    var_b = local(b * b) - mu_b**2
    cov = local(a * b) - mu_a * mu_b
    c1, c2 = (SSIM_K1 * data_range) ** 2, (SSIM_K2 * data_range) ** 2
    index = ((2 * mu_a * mu_b + c1) * (2 * cov + c2)) / ((mu_a**2 + mu_b**2 + c1) * (var_a + var_b + c2))
    return float(index.mean())


def similarity_score(answers: Sequence[float]) -> float:
    """CultDiff's image-image similarity score: the mean of the Q1.1-Q1.4 answers (1-5) given about an item."""
    answers = np.asarray(answers, dtype=float)
    if not len(answers) or ((answers < LIKERT_LOW) | (answers > LIKERT_HIGH)).any():
        raise ValueError(f"need answers on the 1-5 scale, got {answers.tolist()}")
    return float(answers.mean())


def pair_label(score: float) -> int:
    """1 (positive pair) when the similarity score is >= 3, else 0 (CultDiff section 3.3.1)."""
    return int(score >= POSITIVE_FROM)


def pair_weight(score: float) -> float:
    """The human score on [0, 1]: (s - 1) / 4, so 1 -> 0 and 5 -> 1. CultDiff weights each real-generated pair
    by it, negatives included ("high-scored pairs get more attention"); the normalisation is our choice where the
    paper gives none."""
    return (score - LIKERT_LOW) / (LIKERT_HIGH - LIKERT_LOW)


def weighted_contrastive_loss(d, y, w, margin: float):
    r"""CultDiff-S's loss (section 3.3.2), a Hadsell-style contrastive loss with per-pair weights:

    .. math:: L = \frac1N \sum_i w_i \left[ y_i d_i^2 + (1 - y_i) \max(0, m - d_i)^2 \right]

    ``d``: the pairs' embedding distances ||f(x_i1) - f(x_i2)||_2; ``y``: 1 for a positive pair, 0 for a
    negative; ``w``: the pair weights; ``margin``: m. Works on numpy arrays and on torch tensors (differentiable).
    A positive at d = 0 and a negative at d >= m cost nothing; w = 0 removes a pair; scaling w scales L.
    """
    gap = margin - d
    hinge = gap * (gap > 0)
    return (w * (y * d**2 + (1 - y) * hinge**2)).mean()
