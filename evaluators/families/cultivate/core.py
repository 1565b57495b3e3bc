r"""AHEaD's maths on arrays (Malakouti et al. 2025, section 3.2), with no files and no models.

For one image and one descriptor dimension, ``S`` is the (n_pred, n_ref) matrix of cosine similarities
s_ij = cos(e(\hat d_i), e(d_j)) between the descriptors the extractor listed and the reference descriptors. The
functions take ``{dimension: S}``; each metric is computed per dimension, then averaged over dimensions.

Conventions (the paper's; the released code differs at the threshold and is not followed):

* a reference descriptor is *matched* when max_i s_ij > tau (eq. 1, strict); a prediction is *hallucinated*
  when max_j s_ij <= tau (eq. 2);
* a dimension without reference descriptors is left out of every mean;
* a dimension with references but no prediction has ALIGN 0 and no HAL (left out of HAL's mean, where the released
  code would count 0, the best value); an image with no prediction in any scored dimension has no HAL (None:
  its row is flagged, never scored as perfect).

* :func:`align`, :func:`hal` -- eqs. 1 and 2; :func:`pool` -- the N images of a prompt as one prediction set;
* :func:`exag` -- eq. 4 (``max``) or the released code's mean (``mean``);
* :func:`faith` -- eq. 5; :func:`ddiv`, :func:`sdiv` -- eqs. 6 and 7;
* :func:`quartiles` -- tau is the third quartile of the reference descriptors' best-match similarities on real
  photographs (appendix A.3).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

Sims = Mapping[str, np.ndarray]


def _scored(sims: Sims) -> dict[str, np.ndarray]:
    """The dimensions that have reference descriptors."""
    return {d: np.asarray(S, dtype=np.float64) for d, S in sims.items() if np.shape(S)[1] > 0}


def matched(S: np.ndarray, tau: float) -> np.ndarray:
    """Which reference descriptors (columns) some prediction matches: max_i s_ij > tau (all False without
    predictions)."""
    S = np.asarray(S)
    return S.max(axis=0) > tau if S.shape[0] else np.zeros(S.shape[1], dtype=bool)


def align(sims: Sims, tau: float) -> tuple[float | None, dict[str, float]]:
    """(ALIGN, per dimension): mean over dimensions of (1/|D_ref|) sum_j 1[max_i s_ij > tau]; higher is better,
    in [0, 1]. None when no dimension has reference descriptors."""
    per = {d: float(matched(S, tau).mean()) for d, S in _scored(sims).items()}
    return (float(np.mean(list(per.values()))) if per else None), per


def hal(sims: Sims, tau: float) -> tuple[float | None, dict[str, float]]:
    """(HAL, per dimension): mean over dimensions of (1/|D_pred|) sum_i 1[max_j s_ij <= tau]; lower is better,
    in [0, 1]. Dimensions without predictions are left out; None when none is left."""
    per = {d: float((S.max(axis=1) <= tau).mean()) for d, S in _scored(sims).items() if S.shape[0]}
    return (float(np.mean(list(per.values()))) if per else None), per


def pool(images: Sequence[Sims]) -> dict[str, np.ndarray]:
    """The predictions of several images of one prompt as one set: per dimension, their rows stacked."""
    return {d: np.vstack([np.asarray(sims[d]) for sims in images]) for d in images[0]}


def exag(scores: np.ndarray, baseline: np.ndarray, variant: str = "max") -> float:
    r"""EXAG of N images over K stereotype candidates; lower is better, in [0, 1].

    ``scores`` (N, K): f(I_n, d_k), the image-text score of image n and candidate k; ``baseline`` (K,):
    \bar f_gt(d_k), the mean score of the real photographs (eq. 3). With excess e_nk = max(0, f(I_n, d_k) -
    \bar f_gt(d_k)): ``max`` (eq. 4) = (1/N) sum_n max_k e_nk, the worst over-expressed stereotype per image;
    ``mean`` (the released code) = (1/K) sum_k (1/N) sum_n e_nk."""
    excess = np.maximum(0.0, np.atleast_2d(np.asarray(scores, dtype=np.float64)) - np.asarray(baseline, dtype=np.float64))
    if variant == "max":
        return float(excess.max(axis=1).mean())
    if variant == "mean":
        return float(excess.mean())
    raise ValueError(f"EXAG variant must be 'max' or 'mean', not {variant!r}")


def faith(align_value: float, hal_value: float, exag_value: float) -> float:
    """FAITH = (ALIGN + (1 - HAL) + (1 - EXAG)) / 3 (eq. 5); higher is better, in [0, 1]."""
    return (align_value + (1.0 - hal_value) + (1.0 - exag_value)) / 3.0


def ddiv(images: Sequence[Sims], tau: float) -> tuple[float | None, dict[str, float]]:
    r"""(DDIV, per dimension) of N >= 2 images of one prompt: with c_j the number of images matching reference
    descriptor j and q_j = c_j / sum c, DDIV_dim = -(1 / ln |D_ref|) sum_{q_j > 0} q_j ln q_j (eq. 6), the
    normalised entropy of what the images cover; 0 when |D_ref| = 1 or nothing is matched. Higher is better,
    in [0, 1]. Raises ValueError for fewer than 2 images."""
    if len(images) < 2:
        raise ValueError(f"DDIV needs at least 2 images, got {len(images)}")
    per = {}
    for d in _scored(images[0]):
        counts = np.sum([matched(sims[d], tau) for sims in images], axis=0).astype(np.float64)
        if len(counts) <= 1 or counts.sum() == 0:
            per[d] = 0.0
            continue
        q = counts[counts > 0] / counts.sum()
        per[d] = float(-(q * np.log(q)).sum() / np.log(len(counts)))
    return (float(np.mean(list(per.values()))) if per else None), per


def sdiv(images: Sequence[Sims], tau: float) -> tuple[float | None, dict[str, float]]:
    """(SDIV, per dimension) of N >= 2 images: ALIGN of the pooled predictions minus the mean single-image ALIGN
    (eq. 7), per dimension; in [0, 1), >= 0 since pooling can only add matches. Raises ValueError for fewer
    than 2 images."""
    if len(images) < 2:
        raise ValueError(f"SDIV needs at least 2 images, got {len(images)}")
    _, pooled = align(pool(images), tau)
    singles = [align(sims, tau)[1] for sims in images]
    per = {d: pooled[d] - float(np.mean([s[d] for s in singles])) for d in pooled}
    return (float(np.mean(list(per.values()))) if per else None), per


def best_matches(S: np.ndarray) -> np.ndarray:
    """max_i s_ij for every reference descriptor j: what tau is calibrated on (empty without predictions)."""
    S = np.asarray(S, dtype=np.float64)
    return S.max(axis=0) if S.shape[0] else np.zeros(0)


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """(Q1, median, Q3) with numpy's default linear interpolation; tau is Q3 (the paper's choice among the
    three, appendix A.3, Table 5)."""
    if len(values) == 0:
        raise ValueError("no similarities to calibrate tau on")
    q1, q2, q3 = np.quantile(np.asarray(values, dtype=np.float64), [0.25, 0.5, 0.75])
    return float(q1), float(q2), float(q3)
