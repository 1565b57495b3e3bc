"""CUBE's maths on arrays, with no files and no models: what the CUBE family computes, testable by hand.

* :func:`country_probabilities` -- zero-shot country recognition: softmax_c(s * cos(x, t_c));
* :func:`relevance` -- the probability of the prompt's country and whether it is the most probable one;
* :func:`top_candidates` -- the k artifacts closest to an image on one similarity scale;
* :func:`choice_schema` / :func:`judge_choice` -- the judge's multiple-choice answer, validated;
* :func:`pool_diversity` -- CUBE's grouped (quality-weighted) Vendi score of one pool, or the reason it
  cannot be ranked (a pool smaller than the group size).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..vendi import grouped_qvendi


def country_probabilities(image: np.ndarray, countries: np.ndarray, scale: float) -> np.ndarray:
    r"""p_c = softmax_c(s \cdot \cos(x, t_c)): ``image`` a unit vector (d,), ``countries`` unit rows (C, d),
    ``scale`` the scorer's exponentiated logit scale s. Sums to 1."""
    logits = scale * (countries @ image)
    p = np.exp(logits - logits.max())
    return p / p.sum()


def relevance(p: np.ndarray, target: int) -> tuple[float, float]:
    """(p[target], 1 if target is the most probable country else 0). Chance level: 1 / len(p)."""
    return float(p[target]), float(int(np.argmax(p)) == target)


def top_candidates(image: np.ndarray, candidates: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` rows of ``candidates`` (unit vectors, one scale) most similar to ``image``, best first;
    ties broken by the lower index."""
    sims = candidates @ image
    order = np.lexsort((np.arange(len(sims)), -sims))
    return order[:k]


def choice_schema(k: int) -> dict:
    """The judge's answer: {"choice": n}, n in 1..k the chosen candidate, 0 when none matches."""
    return {"type": "object", "required": ["choice"],
            "properties": {"choice": {"type": "integer", "minimum": 0, "maximum": k}}}


def judge_choice(answer: dict | None, k: int) -> tuple[str, int | None]:
    """The judge's answer among ``k`` listed candidates: ("chosen", n - 1) for a choice n in 1..k, ("none", None)
    for 0 (none of them matches), ("unusable", None) for no usable answer or a number beyond the ``k`` listed."""
    if not answer:
        return "unusable", None
    n = int(answer["choice"])
    if n == 0:
        return "none", None
    return ("chosen", n - 1) if 1 <= n <= k else ("unusable", None)


def pool_diversity(continents: Sequence, countries: Sequence, artifacts: Sequence, quality: Sequence[float],
                   preset: str, size: int, repetitions: int, seed: int) -> tuple[float | None, float | None, str | None]:
    """(qVS mean, its spread over the groups, None), or (None, None, reason) when the pool has fewer images than
    the group size: VS/N of a smaller group is not comparable with that of a full one (a one-image pool scores
    1.0), so such a pool is flagged, never ranked. ``quality`` all ones gives VS/N (diversity alone)."""
    if len(artifacts) < size:
        return None, None, f"pool of {len(artifacts)} images is smaller than the group size {size}"
    r = grouped_qvendi(continents, countries, artifacts, quality, w=preset, size=size, repetitions=repetitions,
                       seed=seed)
    return r.mean, r.std, None
