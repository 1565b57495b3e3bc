"""CultDiff (Bayramli et al., "Diffusion Models Through a Global Lens: Are They Culturally Inclusive?", ACL 2025):
how similar a generated image of a country's landmark, garment or dish is to real photographs of it.

Each image of the ``cultdiff`` prompt set is compared with the first ``references`` (default 3, as CultDiff's
survey showed 3 of its 5) reference photographs of its prompt's artifact (``ctx.references()``, best-ranked
first); the K values are reduced to one per image by option ``reduction``: ``mean`` (default; every
real-generated pair counts once, as CultDiff's pairs do) or ``best`` (the closest reference):

- ``cultdiff.dino``: cos(f(x), f(r_k)), f = DINOv2-base (CLS token); higher is better (CuRe Table 1: DINOv2
  similarity to ground-truth images correlates positively with human perceptual similarity); the headline, by
  the project's choice (:data:`HEADLINE`);
- ``cultdiff.clip``: cos of CLIP ViT-L/14 image embeddings; not CultDiff's, descriptive (direction none);
- ``cultdiff.lpips``: LPIPS-alex distance; lower is better (CultDiff section 4.2, Table 2: negative Spearman);
- ``cultdiff.dreamsim``: DreamSim distance 1 - cos (the ``dreamsim`` package); not CultDiff's, descriptive;
- ``cultdiff.ssim``: SSIM of the two images in grey, both resized and centre-cropped to ``ssim_size`` px; higher
  is better (Table 2: positive, weak);
- ``cultdiff.learned``: CultDiff-S, cos of the learned twin-ViT embeddings (trained with ``cultureboard train
  cultdiff-s``; no released weights, so its rows are flagged until a model is configured); higher is better
  (Table 2, the paper's model). A learned scorer never grades its own training data: an image whose artifact,
  own bytes or any of its K references are in the model folder's ``training.json`` (``trained_on``) is flagged
  "in training set" and left out of the value.

The references are the first K Wikimedia Commons files of each artifact, not CultDiff's curated photographs, so
absolute values are not the paper's (:data:`REFERENCES_NOTE`, on every card).

In the ``reference-photos`` control, whose images are those photographs, each image's own photograph is left
out of its K (leave-one-out, ``Context.references_of``), so the control is never compared with itself.

An image whose artifact has no reference photograph is flagged ("no reference photograph"; the reason is in
the row's detail), counted in the summary and never scored. An image whose DINOv2-base embedding is within the
recorded threshold of one of its artifact's photographs (max cosine >= t, :mod:`...engine.near_reference`) is
flagged ``near_reference`` in every metric (its value kept in the detail, never averaged) and counted. These scores are automatic proxies of CultDiff's
human image-image similarity rating; the human study is imported by ``results/studies/cultdiff.py`` and
analysed by :mod:`.human`. The summary has a country x category slice (CultDiff ranks models per cell); the
countries a model under-represents come from :mod:`.leaderboard`.

``cultdiff-native`` is the same prompts in each country's own language(s): every image is compared with the
artifact's photographs as above (no scorer reads text), plus each metric's native-minus-English gap
(``<metric>.parity``, :mod:`...engine.parity`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ...engine.context import IN_TRAINING, Context, Image, score_row
from ...engine import near_reference
from ...engine.images import ImageSource
from ...engine.pairwise import square_pixels
from ...engine.parity import native_variant
from ...engine.registry import Family, MetricCard, PromptSetSpec, register
from . import core
from .learned import TRAINING_FILE, configured, model_folder, trained_on
from .reported import evidence, reported

FAMILY = "cultdiff"
DINO, CLIP, LPIPS, DREAMSIM, LEARNED = "dinov2-base", "clip-vit-l-14", "lpips-alex", "dreamsim", "cultdiff.learned"
SOURCE = "Bayramli et al., Diffusion Models Through a Global Lens: Are They Culturally Inclusive?, ACL 2025"
HUMAN = "CultDiff's human image-image similarity score (mean of Q1.1-Q1.4, 1-5)"
NO_REFERENCE = "no reference photograph"
NO_ARTIFACT = "the prompt names no artifact"
_REFS = ("over the artifact's first K reference photographs r_k (in the reference-photos control, the first K "
         "besides the image's own)")


@dataclass(frozen=True)
class CultDiffOptions:
    reduction: Literal["mean", "best"] = "mean"  # over an image's K references: their mean, or the closest one
    references: int = 3  # K: the best-ranked reference photographs compared with each image (CultDiff showed 3)
    ssim_size: int = 256  # SSIM compares both images resized (shorter side) and centre-cropped to this square

    def __post_init__(self):
        if self.references < 1 or self.ssim_size < core.SSIM_WINDOW:
            raise ValueError(f"references >= 1 and ssim_size >= {core.SSIM_WINDOW} are required")


#: Said on every card: what the references are, so that nobody compares the values with the paper's.
REFERENCES_NOTE = ("The references are the artifact's first K Wikimedia Commons files as `fetch-references` ranks "
                   "them, not CultDiff's hand-collected photographs (5 per artifact, 3 shown to raters), so absolute "
                   "values are not the paper's.")
#: Why the headline is DINOv2 similarity (the project's choice: CultDiff's own metric is CultDiff-S).
HEADLINE = ("The headline is the project's choice, not CultDiff's (whose metric is CultDiff-S): no CultDiff-S "
            "weights were released and a model trained here may score only artifacts it was not trained on, while "
            "DINOv2 similarity to real photographs needs no training on these data and correlates positively with "
            "human perceptual similarity on every T2I system of CuRe Table 1 (the highest of any scorer on SD 1.5 "
            "only).")
_NOT_IN_CULTDIFF = (" Not one of CultDiff's metrics (section 4.2 compares SSIM, FID, LPIPS and CultDiff-S only): "
                    "the project's addition, with no evidence of which way human raters prefer, so not ranked.")


def _table2(metric: str, whose: str, meaning: str) -> str:
    """A card's direction evidence from CultDiff Table 2: the printed Spearman of ``whose`` and what it means."""
    return (f"CultDiff section 4.2, Table 2: {whose} has Spearman {reported()[metric]['printed']} with the human "
            f"image-image similarity score (mean of Q1.1-Q1.4): {meaning}")


#: Said on every card: what the near-reference check does to the metric's value (:mod:`...engine.near_reference`).
NEAR_REFERENCE_NOTE = ("An image whose DINOv2-base embedding is at least as close to one of its artifact's reference "
                       "photographs (cosine) as the threshold measured for that checkpoint is flagged near_reference "
                       "and left out of this metric (counted in the summary and on the board, never averaged in); "
                       "for a checkpoint with no measured threshold the check is recorded as not checked.")


def _card(name, title, formula, direction, value_range, scorers, description, source=SOURCE, version=3,
          **kw) -> MetricCard:
    # version 2: leave-one-out in the reference-photos control (only the control's values change); version 3 (and
    # 4 where the card was at 3): near-reference images are left out (near_reference)
    return MetricCard(name, FAMILY, title, formula, direction, value_range, scorers, source, version=version,
                      proxy_for=HUMAN, description=f"{description} {REFERENCES_NOTE} {NEAR_REFERENCE_NOTE}",
                      validity=evidence(name), **kw)


METRICS = (
    _card("cultdiff.dino", "DINOv2 similarity to real photographs",
          f"reduce_k cos(f(x), f(r_k)) {_REFS}; f = DINOv2-base CLS embedding", "higher", "[-1, 1]", (DINO,),
          f"How close the image is to real photographs of the artifact, by DINOv2 image embeddings. {HEADLINE}",
          source="CuRe (Rege et al., 2025) phi_GT(n) with DINOv2, applied to CultDiff's artifacts", primary=True,
          direction_evidence="CuRe Table 1 (section 3.2): DINOv2 phi_GT(n), cosine similarity to ground-truth "
                             "images, has a positive Spearman with the user study's perceptual similarity phi*_PS "
                             "on FLUX.1 [dev], SD 3.5 Large and SD 1.5: higher is more similar"),
    # version 3: not ranked (direction none)
    _card("cultdiff.clip", "CLIP image similarity to real photographs",
          f"reduce_k cos(g(x), g(r_k)) {_REFS}; g = CLIP ViT-L/14 image embedding", "none", "[-1, 1]", (CLIP,),
          "How close the image is to real photographs of the artifact, by CLIP image embeddings." + _NOT_IN_CULTDIFF,
          source="not in CultDiff: the project's addition (CLIP ViT-L/14 image embeddings)", version=4),
    _card("cultdiff.lpips", "LPIPS distance to real photographs",
          f"reduce_k LPIPS_alex(x, r_k) {_REFS} (best: the smallest)", "lower", "[0, inf), below 1 in practice",
          (LPIPS,),
          "Perceptual distance (LPIPS, AlexNet) from real photographs of the artifact; 0 for an identical image.",
          source=f"{SOURCE}, section 4.2, Table 2 (a baseline)",
          direction_evidence=_table2("cultdiff.lpips", "LPIPS", "negative, so a smaller distance goes with a higher "
                                                                    "human score")),
    # version 3: not ranked (direction none)
    _card("cultdiff.dreamsim", "DreamSim distance to real photographs",
          f"reduce_k (1 - cos(e(x), e(r_k))) {_REFS}; e = DreamSim embedding (best: the smallest)", "none",
          "[0, 2]", (DREAMSIM,),
          "Perceptual distance (DreamSim, tuned to human similarity judgements of generic images) from real "
          "photographs of the artifact; 0 for an identical image." + _NOT_IN_CULTDIFF,
          source="not in CultDiff: the project's addition (Fu et al., DreamSim, NeurIPS 2023)", version=4),
    _card("cultdiff.ssim", "SSIM with real photographs",
          f"reduce_k SSIM(Y(x), Y(r_k)) {_REFS}; Y = BT.601 luma after a shorter-side resize and centre crop to "
          "ssim_size; 11x11 Gaussian window, sigma 1.5, K1 0.01, K2 0.03, L 255", "higher", "[-1, 1]", (),
          "Structural similarity (Wang et al. 2004) of the image with real photographs of the artifact.",
          source=f"{SOURCE}, section 4.2, Table 2 (a baseline)",
          direction_evidence=_table2("cultdiff.ssim", "SSIM (printed SISM)", "positive (weak), higher is more similar")),
    # version 3: artifacts the configured model was trained on are flagged "in training set", never averaged
    _card("cultdiff.learned", "CultDiff-S learned similarity to real photographs",
          f"reduce_k cos(h(x), h(r_k)) {_REFS}; h = the CultDiff-S twin ViT (CLS, L2-normalised); only images of "
          "artifacts the model was not trained on (its training.json)", "higher", "[-1, 1]", (LEARNED,),
          "CultDiff's learned similarity: a ViT trained on human ratings to embed real and generated images of an "
          "artifact close together. No weights were released: its rows are flagged until a model trained with "
          "`cultureboard train cultdiff-s` is configured, and an image is scored only when neither its artifact "
          "nor any of its images was in that model's training data (others are flagged \"in training set\").",
          source=f"{SOURCE}, section 3.3 (the model) and 4.2 (its evaluation)", version=4,
          direction_evidence=_table2("cultdiff.learned", "the paper's own CultDiff-S model (not this one)",
                                     "positive, and the model is trained to score pairs rated more similar higher, so "
                                     "higher is more similar (this model's own held-out correlation is in its "
                                     "training.json)")),
)


METRIC_NAMES = tuple(m.name for m in METRICS)


def _plan(ctx: Context) -> tuple[list[tuple[Image, list[ImageSource]]], list[dict]]:
    """(images with their references, flagged rows of the images that have none)."""
    refs, missing = ctx.references()
    plan, flagged = [], []
    for im in ctx.images:
        qid = im.prompt.get("artifact_id")
        sources = ctx.references_of(im)[:ctx.options.references]
        if sources:
            plan.append((im, sources))
            continue
        flag = NO_ARTIFACT if not qid else NO_REFERENCE
        reason = None if not qid else missing.get(qid, "the references config lists no photograph of it"
                                                  if qid not in refs else "it has no photograph besides this one")
        flagged += [score_row(m.name, None, im, flag=flag, detail={"artifact": qid, "reason": reason})
                    for m in METRICS]
    return plan, flagged


def _rows(metric: str, plan, values: dict, higher_is_better: bool, reduction: str) -> list[dict]:
    return [score_row(metric, core.reduce_references(values[im], reduction, higher_is_better), im,
                      detail={"artifact": im.prompt["artifact_id"], "references": len(sources),
                              "per_reference": [round(float(v), 6) for v in values[im]]})
            for im, sources in plan]


def _pairwise_rows(ctx: Context, metric: str, scorer: str, plan, higher_is_better: bool) -> list[dict]:
    flat = iter(ctx.distances(scorer, [(im, s) for im, sources in plan for s in sources]))
    return _rows(metric, plan, {im: [next(flat) for _ in sources] for im, sources in plan}, higher_is_better,
                 ctx.options.reduction)


def _learned_rows(ctx: Context, plan) -> list[dict]:
    """cultdiff.learned: flagged without a model; an image whose artifact, own bytes or any of its K references
    the model was trained on (its training.json) is flagged "in training set" and never scored."""
    entry = ctx.scorers.registry.get(LEARNED, {})
    if not configured(entry):
        return [score_row(LEARNED, None, im, flag="no CultDiff-S model configured",
                          detail={"fix": "train one with `cultureboard train cultdiff-s` and set "
                                         "`cultdiff.learned: {path: MODEL_DIR}` in --scorers FILE"})
                for im, _ in plan]
    artifacts, images = trained_on(model_folder(LEARNED, entry))
    ctx.note(LEARNED, "trained_on", {"artifacts": len(artifacts), "images": len(images), "from": TRAINING_FILE})
    held, rows = [], []
    for im, sources in plan:
        seen = sorted({s.sha256 for s in (im.source, *sources)} & images)
        if im.prompt["artifact_id"] in artifacts or seen:
            rows.append(score_row(LEARNED, None, im, flag=IN_TRAINING, detail={
                "artifact": im.prompt["artifact_id"], "artifact_trained_on": im.prompt["artifact_id"] in artifacts,
                "images_trained_on": seen, "fix": "score with a CultDiff-S model trained without this artifact"}))
        else:
            held.append((im, sources))
    return rows + (_pairwise_rows(ctx, LEARNED, LEARNED, held, True) if held else [])


def _grey(source: ImageSource, size: int) -> np.ndarray:
    pixels = square_pixels(source.open(), size)  # (S, S, 3) in [-1, 1]: LPIPS's resize and crop, without torch
    return core.luma((pixels.astype(np.float64) + 1.0) * 127.5)


def score_cultdiff(ctx: Context) -> list[dict]:
    opts = ctx.options
    plan, flagged = _plan(ctx)
    if not plan:
        return flagged
    references = list({s.sha256: s for _, sources in plan for s in sources}.values())
    rows = []
    for metric, scorer in (("cultdiff.dino", DINO), ("cultdiff.clip", CLIP)):
        images = ctx.image_embeddings(scorer, [im for im, _ in plan])
        refs = ctx.image_embeddings(scorer, references)
        values = {im: core.cosines(images[im.sha256], np.stack([refs[s.sha256] for s in sources]))
                  for im, sources in plan}
        rows += _rows(metric, plan, values, True, opts.reduction)
    for metric, scorer in (("cultdiff.lpips", LPIPS), ("cultdiff.dreamsim", DREAMSIM)):
        rows += _pairwise_rows(ctx, metric, scorer, plan, False)
    rows += _learned_rows(ctx, plan)
    grey = {s.sha256: _grey(s, opts.ssim_size) for s in [im.source for im, _ in plan] + references}
    values = {im: [core.ssim(grey[im.sha256], grey[s.sha256]) for s in sources] for im, sources in plan}
    rows += _rows("cultdiff.ssim", plan, values, True, opts.reduction)
    return flagged + _near_reference(ctx, [im for im, _ in plan], rows)


def _near_reference(ctx: Context, images: list[Image], rows: list[dict]) -> list[dict]:
    """The near-reference check (:mod:`...engine.near_reference`) on the DINOv2-base embeddings of the images and of
    all their artifact's photographs: a near-reference image's rows of every metric are flagged and counted."""
    check = near_reference.check_for(ctx, DINO)
    photos = list({s.sha256: s for im in images for s in ctx.references_of(im)}.values())
    similarity = near_reference.similarities(images, ctx.references_of, ctx.image_embeddings(DINO, images),
                                             ctx.image_embeddings(DINO, photos))
    rows = near_reference.leave_out(rows, similarity, check, METRIC_NAMES)
    near_reference.note(ctx, check, {m: sum(r["metric"] == m and r["flag"] == near_reference.FLAG for r in rows)
                                     for m in METRIC_NAMES}, len(similarity))
    return rows


CULTDIFF = PromptSetSpec("cultdiff", score_cultdiff, METRIC_NAMES,
                         shard_unit=lambda prompt: prompt["prompt_id"],
                         cross_slices=(("country", "category"),))  # CultDiff ranks per country x category
#: cultdiff in each country's own language(s), and its metrics' native-minus-English gaps (:mod:`...engine.parity`)
CULTDIFF_NATIVE, NATIVE_GAPS = native_variant(CULTDIFF, {m.name: m for m in METRICS})

register(Family(
    name=FAMILY,
    title="CultDiff: similarity to real photographs of cultural artifacts",
    description=("CultDiff asks how closely a model's image of a country's landmark, traditional garment or dish "
                 "resembles real photographs of it. Each image is compared with reference photographs of the named "
                 "artifact by several image similarities (DINOv2, CLIP, LPIPS, DreamSim, SSIM) and by CultDiff-S, a "
                 "similarity learned from human ratings. In the paper, native annotators of ten countries rated the "
                 "images; these automatic scores stand in for those ratings and agree with them only weakly."),
    papers={"paper": "https://arxiv.org/abs/2502.08914", "ACL anthology": "https://aclanthology.org/2025.acl-long.1503"},
    prompt_sets=(CULTDIFF, CULTDIFF_NATIVE),
    metrics=METRICS + NATIVE_GAPS,
    options=CultDiffOptions,
))
