"""CuRe's maths on arrays, with no files and no models (Rege et al., arXiv 2506.08071, section 2).

Embeddings are unit rows (float, L2-normalised), so sim(x, y) = x . y is the cosine similarity: the paper
writes "cosine distance" but uses it as a similarity (higher = more alike).

* :func:`set_similarity` -- sim(x, S) of each image x with a set S (CuRe leaves the reduction open):
  ``mean_pairwise`` = (1/|S|) sum_s x . s (= x . mean(S)), ``centroid`` = cos(x, mean(S));
* :func:`phi_set` -- the per-artifact score (1/N) sum_i sim(I(a)_i, S) over its N seeds: phi_PS(n) with
  S = I(c) (eq. 2), phi_GT(n) with S = G (eq. 1);
* :func:`ps_delta` -- Delta phi_PS(a) = phi_PS(a) - phi_PS(n), signed (CuRe E.1: closer to zero is better);
* :func:`phi_ita` -- phi_ITA(a) = (1/N) sum_i [x_i . t(n) + x_i . t(a)] / 2 over the seeds of I(n) (eq. 3);
* :func:`mean_pairwise_distance` / :func:`phi_div` / :func:`div_delta` -- the mean of a distance over all
  pairs of a set; phi_DIV = that over the images of the four prompt styles pooled (eq. 4, every pair,
  same-style pairs included); Delta phi_DIV = phi_DIV - LPIPS(n) (appendix I.1);
* :func:`acceptance` / :func:`acceptance_percent` -- the share of a prompt set's images a model generated
  (not refused), and CuRe Table 6's printed percentage (two decimals, half up).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from itertools import combinations

import numpy as np

REDUCTIONS = ("mean_pairwise", "centroid")


def set_similarity(x: np.ndarray, s: np.ndarray, reduction: str = "mean_pairwise") -> np.ndarray:
    r"""sim(x_i, S) for each unit row x_i of ``x`` (N, d) with the set ``s`` (M, d) of unit rows.

    ``mean_pairwise``: (1/M) \sum_j x_i . s_j, the mean cosine over the set, in [-1, 1];
    ``centroid``: x_i . m / ||m|| with m = (1/M) \sum_j s_j, the cosine with the set's mean direction, in
    [-1, 1] (NaN when the set's vectors cancel out, m = 0). Both are invariant to permuting S and to
    rescaling any row of S by a positive factor before it is normalised; for |S| = 1 they agree.
    """
    x, s = np.atleast_2d(np.asarray(x, dtype=float)), np.atleast_2d(np.asarray(s, dtype=float))
    if not len(s):
        raise ValueError("the set to compare with is empty")
    m = s.mean(axis=0)
    if reduction == "mean_pairwise":
        return x @ m
    if reduction == "centroid":
        norm = np.linalg.norm(m)
        return x @ (m / norm) if norm > 0 else np.full(len(x), np.nan)
    raise ValueError(f"reduction must be one of {REDUCTIONS}, not {reduction!r}")


def phi_set(x: np.ndarray, s: np.ndarray, reduction: str = "mean_pairwise") -> float:
    """(1/N) sum_i sim(x_i, S): an artifact's score over its N seeds (higher = its images look more like S)."""
    x = np.atleast_2d(np.asarray(x, dtype=float))
    if not len(x):
        raise ValueError("no image to score")
    return float(set_similarity(x, s, reduction).mean())


def phi_sets(x: np.ndarray, sets: list[np.ndarray], reduction: str = "mean_pairwise") -> float:
    """(1/N) sum_i sim(x_i, S_i): :func:`phi_set` with a set of its own for each image (``sets[i]`` for row
    ``x_i``), as when each image leaves its own photograph out of the references (leave-one-out)."""
    x = np.atleast_2d(np.asarray(x, dtype=float))
    if not len(x) or len(x) != len(sets):
        raise ValueError(f"need one set per image: {len(x)} images, {len(sets)} sets")
    return float(np.mean([set_similarity(row, s, reduction)[0] for row, s in zip(x, sets)]))


def ps_delta(x_a: np.ndarray, sets_a: list[np.ndarray], x_n: np.ndarray, sets_n: list[np.ndarray],
             reduction: str = "mean_pairwise") -> float:
    """Delta phi_PS(a) = phi_PS(a) - phi_PS(n) = phi(I(a), I(c)) - phi(I(n), I(c)), each image with its own copy of
    the category's images I(c) (``sets_a[i]`` for ``x_a[i]``: the family leaves out copies of it).

    Positive when adding attributes moved the images towards the category's generic images; CuRe finds it
    anti-correlated with human judgements and ranks it by its distance from zero (appendix E.1)."""
    return phi_sets(x_a, sets_a, reduction) - phi_sets(x_n, sets_n, reduction)


def phi_ita(x_n: np.ndarray, t_n: np.ndarray, t_a: np.ndarray) -> tuple[float, float, float]:
    """(phi_ITA(a), mean_i x_i . t(n), mean_i x_i . t(a)) for the images ``x_n`` (N, d) of P(n) and the unit
    text embeddings of the scoring texts P(n) and P(a). phi_ITA(a) = (1/N) sum_i [x_i . t(n) + x_i . t(a)] / 2,
    a raw cosine in [-1, 1] (higher = better aligned); with t(a) = t(n) it is sim(I(n), P(n))."""
    x_n = np.atleast_2d(np.asarray(x_n, dtype=float))
    if not len(x_n):
        raise ValueError("no image to score")
    sim_n, sim_a = float((x_n @ t_n).mean()), float((x_n @ t_a).mean())
    return (sim_n + sim_a) / 2, sim_n, sim_a


def pairs(n: int) -> list[tuple[int, int]]:
    """Every unordered pair (i, j), i < j, of n items: C(n, 2) of them (120 for CuRe's 16 images)."""
    return list(combinations(range(n), 2))


def mean_pairwise_distance(distances: dict[tuple[int, int], float], members: Sequence[int]) -> float | None:
    """Mean of d(i, j) over every pair i < j of ``members`` (indices into the pooled set whose pair
    ``distances`` are given); None when fewer than two members (no pair)."""
    members = sorted(members)
    if len(members) < 2:
        return None
    return float(np.mean([distances[p] for p in combinations(members, 2)]))


def phi_div(distances: dict[tuple[int, int], float], n_images: int) -> float | None:
    """phi_DIV = mean of d over all C(K, 2) pairs of the K pooled images of the four prompt styles (eq. 4);
    0 when every image is identical (d(x, x) = 0), higher = more diverse. None for K < 2."""
    return mean_pairwise_distance(distances, range(n_images))


def div_delta(distances: dict[tuple[int, int], float], n_images: int, name_only: Sequence[int]) -> float | None:
    """Delta phi_DIV = phi_DIV - LPIPS(n), LPIPS(n) the mean pairwise distance within the images of P(n)
    (``name_only``: their indices in the pool). None when either side has no pair."""
    pooled, within = phi_div(distances, n_images), mean_pairwise_distance(distances, name_only)
    return None if pooled is None or within is None else pooled - within


def acceptance(accepted: int, expected: int) -> float:
    """The share of the ``expected`` images a model generated rather than refused: accepted / expected in [0, 1]
    (CuRe Table 6: N_img_gen(s) / (N_artifact(s) * N_promptstyle * N_seeds), as a fraction)."""
    if expected < 1 or not 0 <= accepted <= expected:
        raise ValueError(f"need 0 <= accepted <= expected and expected >= 1, got {accepted} of {expected}")
    return accepted / expected


def acceptance_percent(accepted: int, expected: int) -> str:
    """CuRe Table 6's printed form: 100 * accepted / expected with two decimals, rounded half up
    (765 / 800 -> "95.63%"; ``round`` would give 95.62 from the binary float)."""
    acceptance(accepted, expected)  # the same checks
    value = (Decimal(100) * accepted / expected).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return f"{value}%"
