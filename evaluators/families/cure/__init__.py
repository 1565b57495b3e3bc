"""CuRe (Rege et al., arXiv 2506.08071, ICCV 2025): marginal information attribution on the ``cure-ladder``.

The unit is an artifact's **ladder**: its images I(n), I(n,c), I(n,r), I(n,c,r) (the prompts P(n) "An image of
{n}", P(n,c), P(n,r), P(n,c,r), several seeds each), plus the images I(c) of its category's prompt P(c) "An
image of a {c}" that every ladder of the category reads; the shard unit is therefore the category. One row per
ladder and metric; a per-artifact score is the mean over its seeds. sim is the cosine of unit embeddings and
sim(x, S) of an image with a set uses the option ``reduction`` (``mean_pairwise``, the default: the mean cosine
over S; ``centroid``: the cosine with S's mean direction), recorded with the results.

- ``cure.ps`` = phi_PS(n) = sim(I(n), I(c)) (eq. 2), no ground truth needed; ``cure.ps_delta.c`` and
  ``cure.ps_delta.cr`` = Delta phi_PS(a) = sim(I(a), I(c)) - sim(I(n), I(c)) for a = {n,c}, {n,c,r},
  signed (values can be negative, and the sign is kept), ranked by |value| (direction ``target`` 0: CuRe E.1,
  "a value closer to zero is better"). Every ladder of a category reads the same I(c), so these cards name
  the prompt field ``subcategory`` (c) as their ``cluster``: the interval resamples categories, then ladders.
- ``cure.gt`` = phi_GT(n) = sim(I(n), G) (eq. 1) with G the artifact's reference photographs (the dataset's
  ``references`` config); an artifact without any is a flagged row (counted, never scored as zero). In the
  ``reference-photos`` control, whose images are those photographs, image x_i is compared with G minus its own
  photograph (leave-one-out, ``Context.references_of``): (1/N) sum_i sim(x_i, G \\ {g_i}). An image whose
  DINOv2-large embedding is within the recorded threshold of one of G (max cosine >= t,
  :mod:`...engine.near_reference`) is left out of every ``cure.gt`` metric and counted (``near_reference``).
- The image encoder is part of each metric's name: no suffix = SigLIP 2, ``.dinov2`` = DINOv2, ``.aimv2`` =
  AIMV2 (``cure.ps.dinov2``, ``cure.ps_delta.c.aimv2``, ``cure.gt.dinov2``...). One evaluation gives CuRe's
  three columns side by side (Table 1, Table 8), and two encoders' raw cosines, whose scales differ, can never
  be ranked as one metric.
- ``cure.ita.c``, ``cure.ita.r``, ``cure.ita.cr`` = phi_ITA(a) = [sim(I(n), P(n)) + sim(I(n), P(a))] / 2 (eq. 3)
  with SigLIP 2 and the scoring texts of CuRe Table 14 (trailing period): "An image of {n}.", "An image of
  {c}.", "An image from {r}.", "An image of {c} from {r}."; raw cosine. The headline is ``cure.ita.cr``, cultureboard's choice (``HEADLINE_NOTE``).
- Entanglement view (Table 15): ``cure.ita.cr.laion2b``, ``.wit``, ``.dfn5b``, ``.datacomp`` recompute
  ``cure.ita.cr`` with OpenCLIP backbones trained on those data; a scorer trained on a generator's training data
  inflates its score, so the spread of a submission's ranks across backbones is what to read.
- ``cure.div`` = phi_DIV = mean pairwise LPIPS (AlexNet) over every pair of the ladder's images of the four
  prompt styles pooled (eq. 4; 120 pairs for 4 seeds); ``cure.div_delta`` = phi_DIV - LPIPS(n), LPIPS(n) the
  mean pairwise LPIPS within I(n) (appendix I.1). Never ranked (direction ``none``): CuRe's Table 3 and its Table 8 arrow disagree.
- ``cure.acceptance`` = accepted images / expected images of the ladder's four prompts (CuRe Table 6; a closed
  model's declared refusals are not accepted). Its per-category-of-the-axis summary is Table 6. Not ranked.

Every card's evidence (its validity and ``direction_evidence``) quotes CuRe's correlation tables from
``results/data/reported/cure.yaml`` (:func:`reported_rho`), the column of the gold score the card stands for.

A ladder whose P(n) images were all refused (or whose category images were) gets flagged rows for the metrics
that need them ("refused: ..."); the other ladders' values do not change.

Prompt fields: ``category`` is CuRe's axis (or, for knowledge-base artifacts, the CUBE concept) and
``subcategory`` the category c; ``country`` is the region r. Summaries (unweighted means over ladders, with a
bootstrap over ladders) are per region, continent, GN / GS, axis, category c, and GN / GS x axis.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Literal

import numpy as np
from cultureboard.builder.prompts_cure import CATEGORY_LEVEL, LADDER, with_article

from ...engine import near_reference
from ...engine.context import SLICE_FIELDS, Context, Image, score_row
from ...engine.registry import Evidence, Family, MetricCard, PromptSetSpec, register
from ...submission.controls import REFERENCE_PHOTOS
from ...results.aggregate import unit_slices
from ...results.reported import load_reported
from . import core
from .encoders import DISTANCE, ENTANGLEMENT, IMAGE_ENCODERS, TEXT_ENCODER

FAMILY = "cure"
PROMPT_SET = "cure-ladder"
SOURCE = "Rege et al., CuRe: Cultural Gaps in the Long Tail of Text-to-Image Systems, ICCV 2025"
LEVELS = tuple(LADDER)  # n, n,c  n,r  n,c,r
#: CuRe Table 14: the texts phi_ITA compares I(n) with (P(a) for a = c, r, c,r; P(n) always).
SCORING_TEXTS = {"n": "An image of {n}.", "c": "An image of {c}.", "r": "An image from {r}.",
                 "c,r": "An image of {c} from {r}."}
ITA = {"cure.ita.c": "c", "cure.ita.r": "r", "cure.ita.cr": "c,r"}
_ENCODER_TITLES = {"": "SigLIP 2", ".dinov2": "DINOv2", ".aimv2": "AIMV2"}


@dataclass(frozen=True)
class CureOptions:
    # how sim(x, S) reduces an image's cosines with a set (the category images, the reference photographs):
    # CuRe leaves it open; the mean of the cosines is our default
    reduction: Literal["mean_pairwise", "centroid"] = "mean_pairwise"


def ladder_id(prompt: dict) -> str | None:
    """The ladder of an artifact prompt (prompt set / artifact / country); None for a category prompt P(c)."""
    if prompt.get("level") == CATEGORY_LEVEL:
        return None
    return f"{prompt['prompt_set']}/{prompt['artifact_id']}/{prompt['country']}"


def category_id(prompt: dict) -> str:
    """The category whose images I(c) a ladder reads: (axis or concept, c). The shard unit."""
    return f"{prompt['category']}/{prompt['subcategory']}"


# ------------------------------------------------------------------------------------------- cards

MODELS = ("FLUX.1 [dev]", "SD 3.5 Large", "SD 1.5")  # the user study's systems, in CuRe's column order
#: the proxy_for of each kind of card: the user-study question (gold score) it stands for
_PROXY_PS = "phi*_PS: a rater's 1-5 judgement of how similar the image is to real photographs of the artifact"
_PROXY_CURE = "phi*_CuRe: a rater's 1-5 judgement of how likely the item in the image is found in their country"
#: the CuRe Table 1 scorer of each similarity metric (its encoder label is the card's, _ENCODER_TITLES)
_TABLE1_SCORER = {"cure.ps": "phi_PS(n)", "cure.gt": "phi_GT(n)", "cure.ps_delta.c": "Delta phi_PS(n,c)",
                  "cure.ps_delta.cr": "Delta phi_PS(n,c,r)"}
_ITA_SCORER = {"c": "phi_ITA(c)", "r": "phi_ITA(r)", "c,r": "phi_ITA(c,r)"}
_BACKBONE = {".laion2b": "LAION-2B", ".wit": "WIT", ".dfn5b": "DFN-5B", ".datacomp": "DC-1B"}  # Table 15 columns
#: the prompt field that groups ladders sharing their category's P(c) images (the bootstrap's first stage)
PS_CLUSTER = "subcategory"
_REFERENCES_NOTE = ("The reference photographs are the first K files (the Wikidata image, then the artifact's "
                    "Commons category; K = 4 by default) that fetch-references accepts, not CuRe's curated "
                    "ground-truth sets, so absolute values are not the paper's.")


def reported_rho() -> dict[tuple[str, ...], str | None]:
    """CuRe's correlation tables (1, 2, 3, 15 in ``results/data/reported/cure.yaml``) as (table, *labels) ->
    the printed Spearman rho (None where the paper prints none). The cards' evidence reads them from here."""
    return {(t.table, *(row[c] for c in t.labels)): printed["rho"]
            for t in load_reported(FAMILY) if t.numbers == ("rho",) for row, printed in zip(t.rows, t.printed)}


def _per_model(rho: dict, table: str, *labels: str, gold: str) -> list[str]:
    return [rho[(table, *labels, model, gold)] for model in MODELS]


def _evidence(values: list[str], gold: str, source: str) -> tuple[Evidence, ...]:
    return (Evidence(f"Spearman with the user study's {gold} ({' / '.join(MODELS)}): {' / '.join(values)}", source,
                     float(values[0])),)


#: Said on every cure.gt card (:mod:`...engine.near_reference`).
NEAR_REFERENCE_NOTE = ("An image of P(n) whose DINOv2-large embedding is at least as close to one of the artifact's "
                       "photographs (cosine) as the threshold measured for that checkpoint is flagged near_reference "
                       "and left out of the ladder's value (counted in the row and the summary; a ladder left with "
                       "no image is flagged); for a checkpoint with no measured threshold the check is recorded as "
                       "not checked.")


def _ps_cards(rho: dict, suffix: str, scorer: str) -> list[MetricCard]:
    enc = _ENCODER_TITLES[suffix]

    def table1(metric: str) -> list[str]:
        return _per_model(rho, "Table 1", enc, _TABLE1_SCORER[metric], gold="phi*_PS")

    def positive(metric: str) -> str:
        return (f"CuRe Table 1 ({enc}): Spearman of {_TABLE1_SCORER[metric]} with phi*_PS, the gold score it stands "
                f"for, is positive on every system ({' / '.join(table1(metric))}): higher is better")

    common = {"family": FAMILY, "scorers": (scorer,), "source": SOURCE + ", section 2.1", "version": 1,
              "unit": "ladder", "proxy_for": _PROXY_PS}
    cards = [
        MetricCard(f"cure.ps{suffix}", title=f"Perceptual similarity to the category, {enc} (phi_PS(n))",
                   formula="(1/N) sum_i sim(I(n)_i, I(c) less any copy of I(n)_i)", direction="higher",
                   range="[-1, 1]",
                   validity=_evidence(table1("cure.ps"), "phi*_PS", "CuRe Table 1"),
                   direction_evidence=positive("cure.ps"), cluster=PS_CLUSTER,
                   description=f"How much the images of the artifact's name look like the model's generic images "
                               f"of its category, by {enc} image embeddings; needs no ground truth. Every ladder of "
                               "a category reads the same category images, so its interval resamples categories "
                               "first.",
                   # version 2: an image is never compared with a copy of itself in I(c)
                   **(common | {"version": 2})),
        MetricCard(f"cure.gt{suffix}", title=f"Similarity to reference photographs, {enc} (phi_GT(n))",
                   formula="(1/N) sum_i sim(I(n)_i, G_i), G_i = the artifact's reference photographs (in the "
                           "reference-photos control, all but image i's own: leave-one-out)",
                   direction="higher", range="[-1, 1]", validity=_evidence(table1("cure.gt"), "phi*_PS", "CuRe Table 1"),
                   direction_evidence=positive("cure.gt"),
                   description=f"How much the images of the artifact's name look like real photographs of it, "
                               f"by {enc} image embeddings (CuRe's ground-truth baseline). {_REFERENCES_NOTE} "
                               "Artifacts without photographs are counted as flagged, never scored. The "
                               "reference-photos control compares each photograph with the others only. "
                               f"{NEAR_REFERENCE_NOTE}",
                   # version 2: leave-one-out in the reference-photos control (only the control's values change);
                   # version 3: near-reference images are left out
                   **(common | {"version": 3})),
    ]
    for level, key in (("n,c", "c"), ("n,c,r", "cr")):
        metric = f"cure.ps_delta.{key}"
        values = table1(metric)
        cards.append(MetricCard(
            f"{metric}{suffix}", title=f"Perceptual-similarity divergence P(n) -> P({level}), {enc}",
            formula=f"(1/N) sum_i sim(I({level})_i, I(c)) - (1/N) sum_i sim(I(n)_i, I(c)), each image's I(c) less any "
                    "copy of it (cosine >= 0.9999); ranked by |value - 0|",
            direction="target", target=0.0, range="[-2, 2]", validity=_evidence(values, "phi*_PS", "CuRe Table 1"),
            direction_evidence=(
                "CuRe appendix E.1, the ranking rule of Table 8's divergence column: 'As this scorer is a divergence, "
                f"a value closer to zero is better' (stated for Delta phi_PS(n,c); {metric}'s region step is ranked "
                f"alike). CuRe Table 1 ({enc}): Spearman with phi*_PS {' / '.join(values)} ({' / '.join(MODELS)}), "
                "negative where the divergence works (a smaller divergence, higher ratings), not on SD 1.5"),
            cluster=PS_CLUSTER,
            description=f"How far naming the {'category' if key == 'c' else 'category and region'} moves the "
                        f"images towards the category's generic images ({enc}). Near zero: the model already knew "
                        "the artifact (head); large: it did not (long tail). Ranked by the distance from zero, as "
                        "CuRe ranks it; the signed value is kept. Every ladder of a category reads the same "
                        "category images, so its interval resamples categories first.",
            # version 2: ranked by |value| (CuRe E.1), no longer by the signed value; version 3: an image is never
            # compared with a copy of itself in I(c)
            **(common | {"version": 3})))
    return cards


def _ita_card(metric: str, variant: str, scorer: str, evidence: tuple[Evidence, ...], direction_evidence: str,
              title_extra: str = "", primary: bool = False, description: str = "") -> MetricCard:
    return MetricCard(
        metric, FAMILY, f"Image-text alignment phi_ITA({variant}){title_extra}",
        f"(1/N) sum_i [sim(I(n)_i, '{SCORING_TEXTS['n']}') + sim(I(n)_i, '{SCORING_TEXTS[variant]}')] / 2",
        "higher", "[-1, 1], raw cosine (SigLIP 2 about 0.1, CLIP about 0.25)", (scorer,), SOURCE + ", section 2.2",
        version=1, unit="ladder", primary=primary, proxy_for=_PROXY_CURE, validity=evidence,
        direction_evidence=direction_evidence,
        description=description or "How well the images of the artifact's name match texts that name it and its "
                                   f"{'category' if variant == 'c' else 'region' if variant == 'r' else 'category and region'}.")


HEADLINE_NOTE = ("Headline chosen by cultureboard, as CuRe names none (Table 8 prints a PS, an ITA and a DIV column "
                 "side by side): phi_ITA(c,r), whose Spearman with phi*_CuRe is on every system at least as strong as "
                 "the other two columns' (Tables 1-3), and which needs neither photographs nor category images.")


def _cards() -> tuple[MetricCard, ...]:
    rho = reported_rho()
    cards = [c for suffix, scorer in IMAGE_ENCODERS.items() for c in _ps_cards(rho, suffix, scorer)]
    for metric, variant in ITA.items():
        values = _per_model(rho, "Table 2", _ITA_SCORER[variant], gold="phi*_CuRe")
        headline = metric == "cure.ita.cr"
        cards.append(_ita_card(
            metric, variant, TEXT_ENCODER, _evidence(values, "phi*_CuRe", "CuRe Table 2"),
            f"CuRe Table 2: Spearman of {_ITA_SCORER[variant]} with phi*_CuRe, the gold score it stands for, is "
            f"positive on every system ({' / '.join(values)}): higher is better", " (SigLIP 2)", primary=headline,
            description=(f"How well the images of the artifact's name match texts that name it and its category and "
                         f"region. {HEADLINE_NOTE}" if headline else "")))
    headline_values = _per_model(rho, "Table 2", "phi_ITA(c,r)", gold="phi*_CuRe")
    for suffix, (scorer, data) in ENTANGLEMENT.items():
        value = rho[("Table 15", "phi_ITA(c,r)", _BACKBONE[suffix])]
        cards.append(_ita_card(
            f"cure.ita.cr{suffix}", "c,r", scorer,
            (Evidence(f"Spearman with phi*_PS on FLUX.1 [dev] images: {value} ({data} backbone; SigLIP 2: "
                      f"{rho[('Table 15', 'phi_ITA(c,r)', 'SigLIP 2')]}); Table 15 has no phi*_CuRe column",
                      "CuRe Table 15", float(value)),),
            f"CuRe Table 15: Spearman of phi_ITA(c,r) with phi*_PS on FLUX.1 [dev] is positive with this backbone "
            f"({value}); the direction is cure.ita.cr's (Table 2, phi*_CuRe {' / '.join(headline_values)})",
            f" (OpenCLIP, {data})",
            description=f"cure.ita.cr recomputed with an OpenCLIP backbone trained on {data}. A scorer trained on a "
                        "generator's own training data inflates that generator's score (generative entanglement): "
                        "compare a submission's ranks across the backbones, beside its declared training data."))
    div = {gold: _per_model(rho, "Table 3", "phi_DIV(a)", gold=gold) for gold in ("phi*_CuRe", "phi*_PS")}
    cards += [
        MetricCard("cure.div", FAMILY, "Diversity across the ladder (phi_DIV, LPIPS AlexNet)",
                   "mean of LPIPS(x, y) over every pair of the images of P(n), P(n,c), P(n,r), P(n,c,r) pooled",
                   "none", "[0, 1] in practice (0: all images identical)", (DISTANCE,), SOURCE + ", section 2.3",
                   # version 2: no longer ranked (was 'higher')
                   version=2, unit="ladder",
                   validity=_evidence(div["phi*_CuRe"], "phi*_CuRe", "CuRe Table 3"),
                   direction_evidence=(
                       "Not ranked: CuRe's human evidence and its ranking rule disagree. Table 3 correlates phi_DIV "
                       f"negatively with every gold score on every system (phi*_CuRe {' / '.join(div['phi*_CuRe'])}, "
                       f"phi*_PS {' / '.join(div['phi*_PS'])}: across one model's artifacts, less diversity went "
                       "with better ratings), while Table 8 prints it with an up arrow; ranking 'lower' would "
                       "also put a model that repeats one image (phi_DIV = 0) first."),
                   description="How different the artifact's images are from each other across the four prompts. "
                               "Shown with its interval, never ranked and never part of a composite."),
        MetricCard("cure.div_delta", FAMILY, "Diversity gained by adding attributes (Delta phi_DIV)",
                   "phi_DIV - mean of LPIPS(x, y) over every pair of the images of P(n)", "none", "[-1, 1]",
                   (DISTANCE,), SOURCE + ", appendix I.1", version=2, unit="ladder",  # version 2: no longer ranked
                   validity=(Evidence("Larger for Global South than Global North artifacts on every axis (FLUX.1 "
                                      "[dev]): a large gain marks the long tail", "CuRe appendix I.1, Fig. 16"),),
                   direction_evidence="Not ranked: CuRe gives it no direction and no human correlation; appendix "
                                      "I.1 only contrasts Global South with Global North artifacts by it.",
                   description="How much more diverse the images become when the category and region are named. "
                               "A large gain suggests the model did not know the artifact from its name alone."),
        MetricCard("cure.acceptance", FAMILY, "Accepted (not refused) share of the ladder's images",
                   "accepted images / (4 prompts x images per prompt)", "none", "[0, 1]", (), SOURCE +
                   ", appendix B.2 (Table 6)", version=3, unit="ladder", bounded=(0.0, 1.0),
                   # version 2: no longer ranked; 3: Wilson intervals (a share of images)
                   direction_evidence="Not ranked: CuRe reports refusal rates (Table 6, appendix B.2) as a caveat "
                                      "on the starred systems of Table 8, with no human judgement of which way is "
                                      "better.",
                   description="The share of the artifact's images the model generated rather than refused (a "
                               "closed model's declared refusals). Summarised per axis it is CuRe Table 6."),
    ]
    return tuple(cards)


METRICS = _cards()


# ------------------------------------------------------------------------------------------- scoring

@dataclass
class _Ladder:
    prompts: list[dict]
    images: dict[str, list[Image]]  # level -> images, by sample_idx
    refused: dict[str, int]  # level -> refused images

    @property
    def first(self) -> dict:
        return self.prompts[0]


def _gather(ctx: Context) -> tuple[dict[str, _Ladder], dict[str, list[Image]], dict[str, int]]:
    """The ladders this run scores (those with an image or a refusal here: a shard holds whole categories),
    the category images by category, and the refused category images by category."""
    ladders: dict[str, _Ladder] = {}
    for p in sorted(ctx.prompts.values(), key=lambda p: p["prompt_id"]):
        lid = ladder_id(p)
        if lid is not None:
            ladders.setdefault(lid, _Ladder([], {lvl: [] for lvl in LEVELS}, dict.fromkeys(LEVELS, 0))).prompts.append(p)
    categories: dict[str, list[Image]] = defaultdict(list)
    category_refused: dict[str, int] = defaultdict(int)
    active = set()
    for im in sorted(ctx.images, key=lambda im: (im.prompt_id, im.sample_idx)):
        lid = ladder_id(im.prompt)
        if lid is None:
            categories[category_id(im.prompt)].append(im)
        else:
            ladders[lid].images[im.prompt["level"]].append(im)
            active.add(lid)
    for r in ctx.refused:
        lid = ladder_id(r["prompt"])
        if lid is None:
            category_refused[category_id(r["prompt"])] += 1
        else:
            ladders[lid].refused[r["prompt"]["level"]] += 1
            active.add(lid)
    return {lid: ladders[lid] for lid in sorted(active)}, categories, category_refused


def _missing(what: str, refused: int) -> str:
    return f"refused: every image of {what} was refused" if refused else f"no image of {what}"


class _Rows:
    """Score rows of one ladder: its unit id and slices, every row the same way."""

    def __init__(self, lid: str, ladder: _Ladder):
        self.lid, self.slices = lid, unit_slices(ladder.prompts, SLICE_FIELDS)
        self.out: list[dict] = []

    def add(self, metric: str, value: float | None, detail: dict, flag: str | None = None) -> None:
        if flag is None and value is None:
            raise AssertionError(f"{metric}: no value and no flag")
        self.out.append(score_row(metric, value, unit_id=self.lid, slices=self.slices, detail=detail, flag=flag))


def score_ladder(ctx: Context) -> list[dict]:
    reduction = ctx.options.reduction
    ladders, categories, category_refused = _gather(ctx)
    refs, no_refs = ctx.references()
    rows = {lid: _Rows(lid, ladder) for lid, ladder in ladders.items()}
    for lid, ladder in ladders.items():
        accepted = sum(len(v) for v in ladder.images.values())
        expected = sum(p["images_per_prompt"] for p in ladder.prompts)
        rows[lid].add("cure.acceptance", core.acceptance(accepted, expected),
                      {"images": accepted, "accepted": accepted, "expected": expected,
                       "refused": sum(ladder.refused.values())})
    near = _near_reference(ctx, ladders)
    for suffix, scorer in IMAGE_ENCODERS.items():
        _score_similarity(ctx, ladders, rows, categories, category_refused, refs, no_refs, suffix, scorer, reduction,
                          near)
    _score_alignment(ctx, ladders, rows)
    _score_diversity(ctx, ladders, rows)
    for metric, variant in ITA.items():
        ctx.note(metric, "texts", [SCORING_TEXTS["n"], SCORING_TEXTS[variant]])
    for suffix, (scorer, data) in ENTANGLEMENT.items():
        ctx.note(f"cure.ita.cr{suffix}", "training_data", data)
    return [r for lid in sorted(rows) for r in rows[lid].out]


def _vectors(emb: dict, images: list) -> np.ndarray:
    return np.stack([emb[im.sha256] for im in images]) if images else np.zeros((0, 0))


#: The embedder of the near-reference check (:mod:`...engine.near_reference`): DINOv2, which cure.gt.dinov2 computes
#: for every image and photograph anyway; its verdict leaves an image out of every cure.gt metric.
NEAR_REFERENCE_SCORER = IMAGE_ENCODERS[".dinov2"]
GT_METRICS = tuple(f"cure.gt{suffix}" for suffix in IMAGE_ENCODERS)


def _near_reference(ctx: Context, ladders: dict[str, _Ladder]) -> _Near:
    """s(x) of every ladder image with reference photographs and the near-reference ones among them
    (:class:`_Near`); the check is recorded on every cure.gt metric with the images of P(n) (those cure.gt reads)
    it leaves out."""
    check = near_reference.check_for(ctx, NEAR_REFERENCE_SCORER)
    images = [im for ladder in ladders.values() for ims in ladder.images.values() for im in ims
              if ctx.references_of(im)]
    photos = list({p.sha256: p for im in images for p in ctx.references_of(im)}.values())
    similarity = near_reference.similarities(images, ctx.references_of,
                                             ctx.image_embeddings(NEAR_REFERENCE_SCORER, images) if images else {},
                                             ctx.image_embeddings(NEAR_REFERENCE_SCORER, photos) if photos else {})
    named = [im for im in images if im.prompt["level"] == "n"]
    left_out = sum(check.near(similarity[im.sha256]) for im in named)
    near_reference.note(ctx, check, dict.fromkeys(GT_METRICS, left_out), len(named))
    return _Near(similarity, {sha for sha, v in similarity.items() if check.near(v)})


@dataclass(frozen=True)
class _Near:
    similarity: dict[str, float]  # s(x) of each image with reference photographs
    near: set[str]  # the near-reference images, left out of cure.gt

    def detail(self, images: list[Image]) -> dict:
        """What a cure.gt row says about its P(n) images: each one's s(x), and how many were left out."""
        return {"nearest_reference": [round(self.similarity[im.sha256], 6) for im in images
                                      if im.sha256 in self.similarity],
                "near_reference": sum(im.sha256 in self.near for im in images)}


def _score_similarity(ctx, ladders, rows, categories, category_refused, refs, no_refs, suffix, scorer, reduction,
                      near: _Near):
    """cure.ps / cure.ps_delta.* / cure.gt with one image encoder (metric-name ``suffix``); cure.gt leaves the
    near-reference images out (``near``)."""
    emb = ctx.image_embeddings(scorer)
    references = {ladder.first["artifact_id"]: refs[ladder.first["artifact_id"]] for ladder in ladders.values()
                  if refs.get(ladder.first["artifact_id"])}
    ref_emb = ctx.image_embeddings(scorer, [s for sources in references.values() for s in sources]) if references else {}
    for lid, ladder in ladders.items():
        out, cat = rows[lid], category_id(ladder.first)
        x = {lvl: _vectors(emb, ims) for lvl, ims in ladder.images.items()}
        n_images = len(ladder.images["n"])
        cat_images = categories.get(cat, [])
        qid = ladder.first["artifact_id"]
        # cure.gt: the reference photographs, or a flag saying why there are none
        photos = references.get(qid, [])
        detail = {"images": n_images, "references": len(photos)}
        if not n_images:
            out.add(f"cure.gt{suffix}", None, detail, _missing("P(n)", ladder.refused["n"]))
        elif not photos:
            reason = no_refs.get(qid) or ("the dataset has no references config" if not refs and not no_refs
                                          else "not in the references config")
            out.add(f"cure.gt{suffix}", None, detail, f"no reference photographs: {reason}")
        else:
            if ctx.control == REFERENCE_PHOTOS:
                detail["left_out"] = "each image's own photograph (leave-one-out)"
            detail.update(near.detail(ladder.images["n"]))
            levels = {lvl: _phi_references(ctx, ref_emb, x[lvl], ims, reduction, near.near)
                      for lvl, ims in ladder.images.items() if ims}
            if levels["n"] is None:
                out.add(f"cure.gt{suffix}", None, detail, near_reference.FLAG if detail["near_reference"]
                        else "no reference photograph besides the image's own")
            else:
                out.add(f"cure.gt{suffix}", levels["n"], {**detail, "levels": levels})
        # cure.ps and its divergences: the category's images I(c)
        detail = {"images": n_images, "category_images": len(cat_images)}
        if not n_images or not cat_images:
            flag = (_missing("P(n)", ladder.refused["n"]) if not n_images
                    else _missing(f"the category prompt P(c) ({cat})", category_refused.get(cat, 0)))
            for metric in ("cure.ps", "cure.ps_delta.c", "cure.ps_delta.cr"):
                out.add(f"{metric}{suffix}", None, detail, flag)
            continue
        kept = {lvl: _without_copies(emb, ims, cat_images) for lvl, ims in ladder.images.items() if ims}
        levels = {lvl: core.phi_sets(*pair, reduction) if len(pair[0]) else None for lvl, pair in kept.items()}
        if levels["n"] is None:
            for metric in ("cure.ps", "cure.ps_delta.c", "cure.ps_delta.cr"):
                out.add(f"{metric}{suffix}", None, detail, "every category image is a copy of an image of P(n)")
            continue
        out.add(f"cure.ps{suffix}", levels["n"], {**detail, "levels": levels})
        for level, key in (("n,c", "c"), ("n,c,r", "cr")):
            metric = f"cure.ps_delta.{key}{suffix}"
            if levels.get(level) is not None:
                out.add(metric, core.ps_delta(*kept[level], *kept["n"], reduction),
                        {**detail, "images": n_images + len(kept[level][0])})
            else:
                out.add(metric, None, detail, _missing(f"P({level})", ladder.refused[level]) if level not in levels
                        else f"every category image is a copy of an image of P({level})")


#: Two embeddings at least this close (cosine) are one picture, whatever their files' bytes (a copy re-encoded).
SAME_PICTURE = 0.9999


def _without_copies(emb: dict, images: list[Image], category: list[Image]) -> tuple[np.ndarray, list[np.ndarray]]:
    """The embeddings of ``images`` and, for each, the category's images I(c) less any copy of it (cosine of the
    embeddings >= :data:`SAME_PICTURE`): an image is never compared with itself, so a ladder answered with its
    category's own images (the category-images control, or a model that copies them) gains nothing from the copy.
    Images left with no category image are dropped."""
    c = _vectors(emb, category)
    x, sets = [], []
    for im in images:
        v = emb[im.sha256]
        others = c[c @ v < SAME_PICTURE * np.linalg.norm(v) * np.linalg.norm(c, axis=1)]
        if len(others):
            x.append(v)
            sets.append(others)
    return np.asarray(x), sets


def _phi_references(ctx: Context, ref_emb: dict, x: np.ndarray, images: list[Image], reduction: str,
                    near: set[str]) -> float | None:
    """phi_GT of one level's images (embeddings ``x``): (1/N) sum_i sim(x_i, G_i), G_i the photographs image i is
    compared with (all of the artifact's, or all but its own in the reference-photos control), over the images
    left with any and not near a reference photograph (sha256 in ``near``); None when none is."""
    sets = [_vectors(ref_emb, ctx.references_of(im)) for im in images]
    kept = [i for i, g in enumerate(sets) if len(g) and images[i].sha256 not in near]
    return core.phi_sets(x[kept], [sets[i] for i in kept], reduction) if kept else None


def _scoring_texts(prompt: dict) -> dict[str, str]:
    """CuRe Table 14's texts for an artifact: n its name, c its category with its article, r its country."""
    slots = {"n": prompt["artifact_name"], "c": with_article(prompt["subcategory"]), "r": prompt["country_name"]}
    return {key: text.format(**slots) for key, text in SCORING_TEXTS.items()}


def _score_alignment(ctx, ladders, rows):
    """cure.ita.* with SigLIP 2, and cure.ita.cr with each OpenCLIP backbone of the entanglement view."""
    name_only = [im for ladder in ladders.values() for im in ladder.images["n"]]
    texts = {lid: _scoring_texts(ladder.first) for lid, ladder in ladders.items()}
    every_text = [t for by_key in texts.values() for t in by_key.values()]
    jobs = [(metric, variant, TEXT_ENCODER) for metric, variant in ITA.items()]
    jobs += [(f"cure.ita.cr{suffix}", "c,r", scorer) for suffix, (scorer, _) in ENTANGLEMENT.items()]
    for scorer in dict.fromkeys(s for _, _, s in jobs):
        img = ctx.image_embeddings(scorer, name_only) if name_only else {}
        txt = ctx.text_embeddings(scorer, every_text) if name_only else {}
        for metric, variant, _ in (j for j in jobs if j[2] == scorer):
            for lid, ladder in ladders.items():
                images = ladder.images["n"]
                if not images:
                    rows[lid].add(metric, None, {"images": 0}, _missing("P(n)", ladder.refused["n"]))
                    continue
                t = texts[lid]
                value, sim_n, sim_a = core.phi_ita(_vectors(img, images), txt[t["n"]], txt[t[variant]])
                rows[lid].add(metric, value, {"images": len(images), "sim_n": sim_n, "sim_a": sim_a,
                                              "text": t[variant]})


def _score_diversity(ctx, ladders, rows):
    """cure.div and cure.div_delta: LPIPS over every pair of each ladder's pooled images (one batch)."""
    pooled = {lid: [im for lvl in LEVELS for im in ladder.images[lvl]] for lid, ladder in ladders.items()}
    jobs = [(lid, i, j) for lid, ims in pooled.items() for i, j in core.pairs(len(ims))]
    values = ctx.distances(DISTANCE, [(pooled[lid][i], pooled[lid][j]) for lid, i, j in jobs]) if jobs else []
    distances: dict[str, dict] = defaultdict(dict)
    for (lid, i, j), d in zip(jobs, values):
        distances[lid][(i, j)] = float(d)
    for lid in ladders:
        ims, d = pooled[lid], distances[lid]
        name_only = [k for k, im in enumerate(ims) if im.prompt["level"] == "n"]
        within = core.mean_pairwise_distance(d, name_only)
        detail = {"images": len(ims), "pairs": len(d), "lpips_n": within}
        div = core.phi_div(d, len(ims))
        if div is None:
            rows[lid].add("cure.div", None, detail, f"fewer than 2 images in the ladder ({len(ims)} accepted)")
        else:
            rows[lid].add("cure.div", div, detail)
        if div is None or within is None:
            rows[lid].add("cure.div_delta", None, detail,
                          f"fewer than 2 images of P(n) ({len(name_only)} accepted)" if within is None
                          else f"fewer than 2 images in the ladder ({len(ims)} accepted)")
        else:
            rows[lid].add("cure.div_delta", core.div_delta(d, len(ims), name_only), detail)


register(Family(
    name=FAMILY,
    title="CuRe: cultural gaps in the long tail",
    description=("CuRe asks whether a model knows an artifact from its name alone. For each artifact it generates "
                 "images from its name, then adding its category, its region, and both, and measures how much "
                 "the images change: if naming the category or region changes little, the model already knew "
                 "the artifact (the head of its distribution); if it changes a lot, the artifact lies in the long "
                 "tail. Three kinds of scorer: image similarity to the category's generic images (PS) or to real "
                 "photographs (GT), image-text alignment (ITA, also under four other text-image models to show "
                 "how a scorer's training data can favour a generator), and diversity (LPIPS)."),
    papers={"paper": "https://arxiv.org/abs/2506.08071", "code and data": "https://github.com/aniketrege/cure-bench"},
    prompt_sets=(PromptSetSpec(PROMPT_SET, score_ladder, tuple(m.name for m in METRICS), shard_unit=category_id,
                               units={"ladder": ladder_id}, slice_fields=("subcategory",),  # CuRe's category c
                               cross_slices=(("region_group", "category"),)),),  # GN / GS per axis (Fig. 16)
    metrics=METRICS,
    options=CureOptions,
))
