"""ECB's text-to-image analyses (section 4.1) of one submission (one model), per country.

Inputs: the CLIP ViT-L/14 image embeddings of the multi-loop base images and of the country-agnostic images
(``clip-vit-l-14``; ECB's "unified CLIP-embedding backbone" is unnamed). Groups: the six countries and
``agnostic`` (the prompts that name no country), ECB's 7 groups.

* ``ecb.separability`` (eq. 1-3): the embeddings -> PCA (``pca_dims``) -> k-means (``clusters``, seeded) ->
  each country's distribution over the clusters -> proximity h of every two countries (harmonic mean of the
  cosine and 1 - JSD, log base 2). A country's value is 1 - h to its nearest other country. The row's detail
  holds a bootstrap sampling range (images redrawn within each country, clusters fixed; biased toward
  "distinct", widened to contain the value: :func:`.core.bootstrap_proximity`), the permutation null
  (country labels shuffled across the images, ``permutations`` times: the null mean and the one-sided p of
  :func:`.core.separability_null`) and its h to every other country with ranges; the note ``proximity`` holds
  the whole matrix.
* ``ecb.default_proximity`` (ECB's headline T2I finding, section 4.1.1): for each country, h between its images'
  cluster proportions and the agnostic images' (the same clustering and bootstrap range as above). The country
  of highest h is the one the model draws when no country is named (ECB: the United States, 0.892); the note
  ``default_country`` names it.
* ``ecb.leaning`` (eq. 5-6): for the era-agnostic base images (option ``leaning_images``), s = cos(x, traditional
  anchor) - cos(x, modern anchor), the anchors being the centroids of the same subcategory's traditional and
  modern base images (all countries); a country's value is the mean s (> 0: traditional, < 0: modern) with its
  SE, mean cosines, a within-subcategory permutation p-value and its Benjamini-Hochberg q over the 7 groups;
  the note ``omnibus`` holds the permutation test of the dispersion of the country means.

Both read every base image of the submission at once (``ctx.all_images``): in a sharded run shard 0 writes
them, so a sharded result equals the unsharded one.
"""

from __future__ import annotations

import numpy as np

from ...engine.context import Context, score_row
from ...results.aggregate import unit_slices
from ...results.stats import benjamini_hochberg
from .chains import CLIP, is_t2i_study
from .core import (
    bootstrap_proximity,
    cluster_labels,
    group_means,
    leaning_scores,
    permutation_pvalues,
    separability,
    separability_null,
)

T2I_METRICS = ("ecb.separability", "ecb.default_proximity", "ecb.leaning")
COUNTRY_SLICES = ("country", "continent", "region_group")
AGNOSTIC = "agnostic"  # the group of the prompts that name no country


def country_unit(prompt: dict) -> str | None:
    """The unit of the T2I metrics: the country of a multi-loop base prompt, ``agnostic`` for a country-agnostic
    prompt."""
    return (prompt["country"] or AGNOSTIC) if is_t2i_study(prompt) else None


def score_t2i(ctx: Context) -> list[dict]:
    if ctx.shard is not None and ctx.shard[0] != 0:
        return []  # whole-set rows are shard 0's
    bases = sorted((im for im in ctx.all_images if is_t2i_study(im.prompt)),
                   key=lambda im: (im.prompt_id, im.sample_idx))
    if not bases:
        return []
    countries = [country_unit(im.prompt) for im in bases]
    slices = {c: unit_slices([p for p in ctx.prompts.values() if country_unit(p) == c], COUNTRY_SLICES)
              for c in set(countries)}
    if len(slices) < 2:
        return [score_row(m, None, unit_id=c, slices=slices[c], detail={"images": 0},
                          flag="the T2I analyses compare countries: the prompt set has one") for c in slices
                for m in T2I_METRICS if m != "ecb.default_proximity" or c != AGNOSTIC]
    emb = ctx.image_embeddings(CLIP, bases)
    x = np.stack([emb[im.sha256] for im in bases])
    return _separability(ctx, x, countries, slices) + _leaning(ctx, x, bases, slices)


def _separability(ctx: Context, x: np.ndarray, countries: list[str], slices: dict) -> list[dict]:
    opts = ctx.options
    labels, info = cluster_labels(x, opts.clusters, opts.pca_dims, ctx.seed)
    ci = bootstrap_proximity(labels, countries, info["clusters"], opts.n_boot, ctx.seed)
    null = separability_null(labels, countries, info["clusters"], opts.permutations, ctx.seed)
    names = sorted(set(countries))
    sep, nearest = separability(ci.h)
    ctx.note("ecb.separability", "proximity", {
        "countries": names, "h": ci.h.round(6).tolist(), "low": ci.low.round(6).tolist(),
        "high": ci.high.round(6).tolist(), **info, "n_boot": opts.n_boot,
        "permutations": opts.permutations})
    rows = []
    for a, name in enumerate(names):
        detail = {"images": countries.count(name), "nearest": names[nearest[a]],
                  "ci": [float(ci.separability_low[a]), float(ci.separability_high[a])],
                  "null_mean": float(null.mean[a]), "p": float(null.p[a]),
                  "proximity": {names[b]: [float(ci.h[a, b]), float(ci.low[a, b]), float(ci.high[a, b])]
                                for b in range(len(names)) if b != a}}
        rows.append(score_row("ecb.separability", float(sep[a]), unit_id=name, slices=slices[name], detail=detail))
    return rows + _default_proximity(ctx, names, ci, slices, countries)


def _default_proximity(ctx: Context, names: list[str], ci, slices: dict, groups: list[str]) -> list[dict]:
    """``ecb.default_proximity``: each country's h to the agnostic group (flagged when no agnostic image was
    scored), and the note ``default_country``."""
    countries = [c for c in names if c != AGNOSTIC]
    if AGNOSTIC not in names:
        return [score_row("ecb.default_proximity", None, unit_id=c, slices=slices[c], detail={"images": 0},
                          flag="no country-agnostic images: the prompt set or the submission has none")
                for c in countries]
    g = names.index(AGNOSTIC)
    h = {c: float(ci.h[names.index(c), g]) for c in countries}
    order = sorted(countries, key=lambda c: (-h[c], c))
    ctx.note("ecb.default_proximity", "default_country", {
        "country": order[0], "h": h[order[0]], "runner_up": order[1] if len(order) > 1 else None,
        "why": "the country whose images fall in the agnostic images' clusters in the most similar proportions "
               "(ECB: the United States, h = 0.892 averaged over five models)"})
    return [score_row("ecb.default_proximity", h[c], unit_id=c, slices=slices[c],
                      detail={"images": groups.count(c), "agnostic_images": groups.count(AGNOSTIC),
                              "rank": order.index(c) + 1,
                              "ci": [float(ci.low[names.index(c), g]), float(ci.high[names.index(c), g])]})
            for c in countries]


def _leaning(ctx: Context, x: np.ndarray, bases: list, slices: dict) -> list[dict]:
    opts = ctx.options
    eras = [im.prompt.get("era") for im in bases]
    scored = [e is not None and (opts.leaning_images == "all" or e == "general") for e in eras]
    strata = [im.prompt["subcategory"] for im in bases]
    s, cos_t, cos_m = leaning_scores(x, strata, [e == "traditional" for e in eras], [e == "modern" for e in eras],
                                     scored)
    picked = [im for im, keep in zip(bases, scored) if keep]
    ok = ~np.isnan(s)
    if not ok.any():
        return [score_row("ecb.leaning", None, unit_id=c, slices=slices[c], detail={"images": 0},
                          flag="no subcategory has traditional and modern base images") for c in sorted(slices)]
    countries = [country_unit(im.prompt) for im, good in zip(picked, ok) if good]
    stats = group_means(s[ok], countries)
    p, omnibus = permutation_pvalues(s[ok], countries, [im.prompt["subcategory"] for im, good in zip(picked, ok) if good],
                                     opts.permutations, ctx.seed)
    names = sorted(stats)
    q = dict(zip(names, benjamini_hochberg([p[c] for c in names])))
    ctx.note("ecb.leaning", "omnibus", {"p": omnibus, "statistic": "sum_c n_c (mean_c - mean)^2",
                                        "permutations": opts.permutations, "strata": "subcategory",
                                        "images": opts.leaning_images})
    rows = []
    for c in names:
        mean, se, n = stats[c]
        mine = np.array([k == c for k in countries])
        detail = {"images": n, "se": None if np.isnan(se) else se, "cos_traditional": float(cos_t[ok][mine].mean()),
                  "cos_modern": float(cos_m[ok][mine].mean()), "p": p[c], "q": float(q[c]),
                  "lean": "traditional" if mean > 0 else "modern" if mean < 0 else "none"}
        rows.append(score_row("ecb.leaning", mean, unit_id=c, slices=slices[c], detail=detail))
    return rows

