"""CULTIVate / AHEaD (Malakouti, Gong, Kovashka, "Culture in Action", ICLR 2026): is an image of a social activity
faithful to how it looks in the country, without hallucinated or exaggerated cultural cues, and how diverse are a
prompt's images?

Every image of the ``cultivate`` prompt set is compared with its prompt's reference descriptors (the dataset's
``cultivate-descriptors`` config, :mod:`cultureboard.builder.descriptors`) in five dimensions:

1. **Extract.** The judge (option ``extractor``, default ``qwen2.5-vl-7b``; the paper: InternVL3-14B and
   Qwen2.5-VL-7B) lists the descriptors it sees, one question per dimension as the paper's Tables 23-27 (option
   ``extraction``; ``single`` asks once per image for all five, recorded as the metric versions "<version>+single"),
   each answer decoded within its JSON schema (:mod:`cultureboard.evaluators.engine.judge_grammar`: it always
   parses); an image whose answer still fails the check (a judge that cannot be constrained) is asked again at most
   ``retries`` times, then flagged ("descriptor extraction failed", counted in the summary's flags), never scored.
2. **Match.** Descriptors are embedded by all-MiniLM-L6-v2 (option ``embedder``; the ``sentence-transformers``
   backend, :mod:`.sentence_embedder`) and compared by cosine within each dimension at a threshold tau.
3. **Tau** (options ``tau``, ``tau_from``) is the third quartile of the best-match similarities of the reference
   descriptors against the descriptors the *same* extractor lists for the prompts' real reference photographs
   (``ctx.references()``; appendix A.3). Without any photograph it falls back to the paper's tau for the
   extractor (0.67 for Qwen2.5-VL-7B), and so it does with fewer than ``tau_min_similarities`` (200) similarities,
   saying why in the note; that fallback holds only for the paper's per-dimension prompts (with ``single``
   extraction tau must come from the photographs or the ``tau`` option). By construction, a real photograph then
   scores ALIGN of about 0.25: tau is the third quartile of the photographs' own best-match similarities, so about a
   quarter of their reference descriptors clear it. The resolved tau and its source are recorded as options, so scores made
   with different extractors or thresholds are never ranked together; the calibration is a note on every metric
   that uses tau.
4. **Score** (:mod:`.core`): ALIGN, HAL (eqs. 1-2), EXAG (eq. 4: the largest excess of P(yes) to 'Does this
   figure show "<stereotype>"?' over its mean on the prompt's real photographs, for the stereotype candidates of the
   prompt's activity in its country (the paper's Table 28 asks per activity and country); option ``exag_variant=mean`` gives the released code's mean instead, recorded as the metric
   versions "<card version>+mean" of EXAG and FAITH: :func:`variant_versions`), FAITH = mean(ALIGN, 1 - HAL,
   1 - EXAG) per image (eq. 5), and per prompt of at least two usable images DDIV and SDIV (eqs. 6-7).
   ``cultivate.judge_yes`` is the judge VLM's P(yes) that the image shows "A photorealistic image of <activity> in
   <country>" (the paper's VQAScore baseline asks the same of CLIP-FlanT5; this is another model, so descriptive).
   P(yes) sums both spellings ("Yes", "yes") from one forward pass (:func:`cultureboard.evaluators.engine.judge.yes_no`).

Each image's rows carry its explanation in ``detail`` (:mod:`.explain`): the aligned, missing and hallucinated
descriptors with their similarities, the exaggerated stereotypes, and the edit instruction built from them.
Rows that cannot be scored are flagged with the reason: no reference descriptors (a seed build covers a few prompts),
no reference photographs (EXAG needs them), extraction failed, nothing extracted, fewer than two images.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import defaultdict
from dataclasses import dataclass
from typing import Literal

import numpy as np
from cultureboard.builder.descriptors import CONFIG, DIMENSIONS

from cultureboard.countries import load_countries
from cultureboard.errors import CultureboardError

from ...engine.context import Context, score_row
from ...engine.registry import Evidence, Family, MetricCard, PromptSetSpec, register
from ...results.reported import load_validity
from . import (
    core,
    explain,
    sentence_embedder,  # noqa: F401  (registers the sentence-transformers backend)
)
from .questions import (
    DIMENSION_SCHEMA,
    EXTRACTION_SCHEMA,
    PROMPT_DESCRIPTION,
    dimension_question,
    extraction_question,
    predicted_descriptors,
    vqa_question,
)

FAMILY = "cultivate"
JUDGE, EMBEDDER = "qwen2.5-vl-7b", "all-minilm-l6-v2"
#: The paper's calibrated tau per extractor (appendix A.3), used when no reference photograph exists: registry name
#: -> tau. Calibrated with all-MiniLM-L6-v2 matching; InternVL3-14B's is 0.52 (no registry entry here).
PAPER_TAU = {"qwen2.5-vl-7b": 0.67}
TAU_QUANTILE = 0.75
SOURCE = "Malakouti et al., Culture in Action (CULTIVate / AHEaD), ICLR 2026"
PAPER = "https://arxiv.org/abs/2511.05681"

NO_DESCRIPTORS = "no reference descriptors for the prompt"
EMPTY_DESCRIPTORS = "the prompt's reference descriptors are all empty"
EXTRACTION_FAILED = "descriptor extraction failed"
NOTHING_EXTRACTED = "no descriptors extracted in a dimension with references"
NO_STEREOTYPES = "no stereotype candidates for the activity in the country"
NO_REFERENCES = "no reference photographs for the prompt"
TOO_FEW = "fewer than 2 images with extracted descriptors"


@dataclass(frozen=True)
class CultivateOptions:
    extractor: str = JUDGE  # judge scorer that lists each image's descriptors
    vqa: str = JUDGE  # judge scorer whose P(yes) is the image-text score f of EXAG and of judge_yes
    embedder: str = EMBEDDER  # embedding scorer that matches descriptors (text)
    tau: float | None = None  # the matching threshold; None: resolved by tau_from (and recorded)
    # "auto": calibrated on the reference photographs when there are any, else the paper's value for the extractor;
    # "references" / "paper": only that; "option": the tau given. A given tau is used as is (tau_from auto becomes
    # option; a recorded tau with its recorded tau_from reproduces the recorded run)
    tau_from: Literal["auto", "references", "paper", "option"] = "auto"
    # fewest reference similarities tau is calibrated on; with fewer, auto takes the paper's tau (and says why) and
    # references is an error: a Q3 of a few dozen best matches moves every tau-based score by chance
    tau_min_similarities: int = 200
    exag_variant: Literal["max", "mean"] = "max"  # max: the paper's eq. 4; mean: the released code
    # per-dimension: one question per dimension (the paper's Tables 23-27); single: one for all five per image
    extraction: Literal["per-dimension", "single"] = "per-dimension"
    retries: int = 2  # extraction: further questions after an answer that fails its check (unconstrained judges)
    max_new_tokens: int = 512  # extraction answer length
    shown: int = 3  # exaggerated stereotypes listed per image

    def __post_init__(self):
        if self.tau is not None and not -1.0 <= self.tau <= 1.0:
            raise ValueError("tau is a cosine similarity: between -1 and 1")
        if self.tau_from == "option" and self.tau is None:
            raise ValueError("tau_from=option needs tau")
        if self.retries < 0 or self.max_new_tokens < 16 or self.shown < 1 or self.tau_min_similarities < 1:
            raise ValueError("retries >= 0, max_new_tokens >= 16, shown >= 1 and tau_min_similarities >= 1 are "
                             "required")


def _validity(metric: str) -> tuple[Evidence, ...]:
    """The paper's Spearman correlations of ``metric`` with GT-FAITH over all rated images (Table 2), from the
    reported data (evaluators/results/data/reported/validity.yaml)."""
    rows = [r for r in load_validity() if r["family"] == FAMILY and r["metric"] == metric and r["slice"] == "all"]
    what = ("between two annotators (human-human agreement, the ceiling)" if metric == "Human"
            else f"of {metric} with annotators")
    return tuple(Evidence(f"Spearman {r['value']:+.2f} {what} on {r['human']}", f"{SOURCE}, {r['source']}",
                          r["value"]) for r in rows)


def _reported(table: str, *cells: tuple[str, float]) -> tuple[Evidence, ...]:
    """Correlations transcribed from the paper's ``table`` (all rated images): (statement, Spearman)."""
    return tuple(Evidence(f"Spearman {value:+.2f} {statement}", f"{SOURCE}, {table}", value) for statement, value in cells)


HUMAN_CEILING = _validity("Human")
_TAU = ("tau: Q3 of reference-descriptor best matches on real photographs (option tau_from); so calibrated, a real "
        "photograph scores ALIGN of about 0.25 by construction (a quarter of its best matches clear the third quartile)")
#: Table 1's arrows: the paper's own ranking rule for every AHEaD metric.
_TABLE1 = "Table 1 marks {} {} (the paper's ranking rule)"
VERSION = 2  # 2: per-dimension extraction, P(yes) over both spellings, per-activity stereotypes, DDIV counts images


def _card(name: str, title: str, formula: str, direction: str, scorers: tuple, description: str, *, section: str,
          unit: str = "image", validity: tuple = (), version: int = VERSION, **kw) -> MetricCard:
    return MetricCard(name, FAMILY, title, formula, direction, "[0, 1]", scorers, SOURCE + section, version=version,
                      unit=unit, description=description, validity=validity, **kw)


METRICS = (
    _card("cultivate.faith", "Faithfulness (FAITH)", "(ALIGN + (1 - HAL) + (1 - EXAG)) / 3 per image", "higher",
          (JUDGE, EMBEDDER), "How faithfully the image shows the activity as it looks in the country: the mean of "
          "reference coverage, the absence of hallucinated descriptors and the absence of exaggerated stereotypes.",
          primary=True, section=", eq. 5", proxy_for="GT-FAITH: native annotators' 1-5 rating of how well the image "
          "shows the activity in their country",
          direction_evidence="Table 2: FAITH correlates positively with GT-FAITH (Spearman +0.42 with the Qwen2.5-VL "
          "extractor, +0.47 with InternVL3); " + _TABLE1.format("FAITH", "higher is better (up arrow)"),
          validity=_validity("FAITH (InternVL3)") + _reported("Table 3", (
              "of FAITH with the Qwen2.5-VL extractor (this registry's default) with annotators on GT-FAITH", 0.42))
          + HUMAN_CEILING),
    _card("cultivate.align", "Alignment (ALIGN)", "mean over dimensions of |{ref d_j : max_i cos(pred_i, d_j) > tau}| "
          "/ |refs|; " + _TAU, "higher", (JUDGE, EMBEDDER),
          "The share of the prompt's reference descriptors the image shows, per dimension, averaged.",
          section=", eq. 1", version=VERSION + 1, bounded=(0.0, 1.0),  # + 1: Wilson intervals (a share)
          direction_evidence="Table 3: ALIGN alone correlates positively with GT-FAITH (Spearman "
          "+0.39 Qwen2.5-VL, +0.41 InternVL3); " + _TABLE1.format("ALIGN", "higher is better (up arrow)"),
          validity=_reported("Table 3", ("of ALIGN (Qwen2.5-VL) with GT-FAITH", 0.39),
                             ("of ALIGN (InternVL3) with GT-FAITH", 0.41))),
    _card("cultivate.hal", "Hallucination (HAL)", "mean over dimensions with predictions of |{pred_i : max_j cos(pred_i,"
          " d_j) <= tau}| / |preds|; " + _TAU, "lower", (JUDGE, EMBEDDER),
          "The share of what the image shows that matches no reference descriptor of the activity in the country.",
          section=", eq. 2", proxy_for="GT-HAL: annotators' rating of incorrect elements",
          version=VERSION + 1, bounded=(0.0, 1.0),  # + 1: Wilson intervals (a share)
          direction_evidence="Table 7: HAL (Qwen2.5-VL) correlates +0.36 with GT-HAL and -0.36 with GT-FAITH (more "
          "hallucination, less faithful); " + _TABLE1.format("HAL", "lower is better (down arrow)"),
          validity=_reported("Table 7", ("of HAL (Qwen2.5-VL) with GT-HAL", 0.36),
                             ("of HAL (Qwen2.5-VL) with GT-FAITH (lower HAL, more faithful)", -0.36),
                             ("between annotators on GT-HAL (human-human, the ceiling)", 0.39))),
    _card("cultivate.exag", "Exaggeration (EXAG)", "max over stereotype candidates k of max(0, P(yes | image, k) - "
          "mean over the prompt's real photographs of P(yes | photo, k)); option exag_variant=mean: the mean over k",
          "lower", (JUDGE,), "How much more the image shows the stereotypes of the activity in the country than real "
          "photographs of it do (the worst one). The candidates are listed per (activity, country), as the paper's "
          "Table 28 asks, in the dataset's cultivate-descriptors config.", section=", eq. 4",
          proxy_for="GT-EXAG: annotators' rating of exaggeration",
          direction_evidence=_TABLE1.format("EXAG", "lower is better (down arrow)") + "; section 5.1 reads higher "
          "EXAG as more exaggerated content. The paper's correlations with GT-EXAG (Table 9) used CLIP-FlanT5 "
          "VQAScore as f, not this judge, and are not claimed for it"),
    _card("cultivate.ddiv", "Descriptor diversity (DDIV)", "mean over dimensions of the normalised entropy "
          "-sum q_j ln q_j / ln |refs|, q_j the share of the prompt's images that match reference descriptor j "
          "(an image counts once per descriptor)", "higher", (JUDGE, EMBEDDER),
          "How evenly a prompt's images spread over the activity's reference descriptors (at least 2 images).",
          unit="prompt", section=", eq. 6", direction_evidence=_TABLE1.format("DDIV", "higher is better (up arrow)")
          + "; section 5.1 reads lower DDIV as less diversity (no human study of diversity)"),
    _card("cultivate.sdiv", "Set diversity (SDIV)", "ALIGN of the prompt's images pooled minus their mean "
          "single-image ALIGN, per dimension, averaged", "higher", (JUDGE, EMBEDDER),
          "How much more of the activity a prompt's images cover together than one alone (at least 2 images).",
          unit="prompt", section=", eq. 7", direction_evidence=_TABLE1.format("SDIV", "higher is better (up arrow)")
          + "; section 5.1 reads lower SDIV as less diversity (no human study of diversity)"),
    _card("cultivate.judge_yes", "Judge P(yes) that the image shows the prompt", "P(yes | image, 'Does this figure "
          "show \"A photorealistic image of <activity> in <country>.\"?'), both spellings, one forward pass",
          "none", (JUDGE,), "The judge VLM's probability that the image shows the prompt. The paper's VQAScore "
          "baseline asks the same of CLIP-FlanT5-xxl; this is another model, with no human evidence of its own, so "
          "it is shown, never ranked.", section=", section 4.2"),
)
TAU_METRICS = ("cultivate.faith", "cultivate.align", "cultivate.hal", "cultivate.ddiv", "cultivate.sdiv")


def variant_versions(options: CultivateOptions) -> dict[str, str]:
    """Options that make another metric are recorded in its version: exag_variant=mean (the released code's mean over
    the candidates) changes EXAG and FAITH ("+mean"); extraction=single (one question for all dimensions) changes
    every descriptor-based metric ("+single"); the defaults keep the cards' versions."""
    suffixes: dict[str, str] = defaultdict(str)
    if options.exag_variant != "max":
        for name in ("cultivate.exag", "cultivate.faith"):
            suffixes[name] += f"+{options.exag_variant}"
    if options.extraction != "per-dimension":
        for name in TAU_METRICS:
            suffixes[name] += f"+{options.extraction}"
    return {m.name: f"{m.version}{suffixes[m.name]}" for m in METRICS if suffixes[m.name]}


# ------------------------------------------------------------------------------------------------ data

def read_descriptors(ctx: Context) -> dict[str, dict]:
    """{prompt id: {"refs": {dimension: [token]}, "stereotypes": [...], "source": ...}} from the dataset's
    ``cultivate-descriptors`` config (a dataset without it is an error naming the config)."""
    return {r["prompt_id"]: {"refs": {d: [i["token"] for i in r[d] or []] for d in DIMENSIONS},
                             "stereotypes": list(r["stereotypes"] or []), "source": r["source"]}
            for r in ctx.config(CONFIG)}


@dataclass(frozen=True)
class Extraction:
    descriptors: dict[str, list[str]] | None  # None: no valid answer
    attempts: int
    error: str | None = None


def extraction_questions(extraction: str) -> list[tuple[str | None, str]]:
    """(dimension, question) pairs asked of every image: one per dimension, or one for all (dimension None)."""
    if extraction == "single":
        return [(None, extraction_question())]
    return [(d, dimension_question(d)) for d in DIMENSIONS]


def _extract(ctx: Context, items: list) -> dict[str, Extraction]:
    """{sha256: Extraction} of submitted images or reference sources (each asked once per question); an image is
    extracted when every one of its answers is."""
    unique = list({im.sha256: im for im in items}.values())
    if not unique:
        return {}
    opts = ctx.options
    asked = extraction_questions(opts.extraction)
    schema = EXTRACTION_SCHEMA if opts.extraction == "single" else DIMENSION_SCHEMA
    answers = ctx.ask_json(opts.extractor, [(im, q) for im in unique for _, q in asked], schema,
                           retries=opts.retries, max_new_tokens=opts.max_new_tokens)
    out = {}
    for k, im in enumerate(unique):
        parts = answers[k * len(asked):(k + 1) * len(asked)]
        attempts = max(a.attempts for a in parts)
        failed = [a for a in parts if a.value is None]
        if failed:
            out[im.sha256] = Extraction(None, attempts, failed[0].error)
            continue
        value = parts[0].value if opts.extraction == "single" else {d: a.value for (d, _), a in zip(asked, parts)}
        out[im.sha256] = Extraction(predicted_descriptors(value), attempts)
    return out


class Matcher:
    """Similarity matrices of predicted against reference descriptors, per dimension, from the embedder (one
    cached pass over every text)."""

    def __init__(self, ctx: Context, texts: set[str]):
        self.vectors = ctx.text_embeddings(ctx.options.embedder, sorted(texts)) if texts else {}

    def _stack(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.vectors[t] for t in texts]) if texts else np.zeros((0, 1), dtype=np.float32)

    def sims(self, predicted: dict[str, list[str]], refs: dict[str, list[str]]) -> dict[str, np.ndarray]:
        out = {}
        for d in DIMENSIONS:
            P, R = self._stack(predicted.get(d, [])), self._stack(refs.get(d, []))
            out[d] = P @ R.T if len(P) and len(R) else np.zeros((len(P), len(R)))
        return out


def _texts(descriptors: dict[str, list[str]] | None) -> set[str]:
    return {t for d in DIMENSIONS for t in (descriptors or {}).get(d, [])}


# ------------------------------------------------------------------------------------------------ tau

def _resolve_tau(ctx: Context, refs_by_prompt: dict, calibration: list, extracted: dict, matcher: Matcher) -> dict:
    """The threshold and how it was chosen; sets the resolved ``tau`` and ``tau_from`` on ``ctx.options``."""
    opts = ctx.options
    info = {"extractor": opts.extractor, "embedder": opts.embedder, "quantile": TAU_QUANTILE}
    if opts.tau is not None:
        tau, source = opts.tau, "option" if opts.tau_from == "auto" else opts.tau_from
        if source == "paper" and PAPER_TAU.get(opts.extractor) != tau:
            raise CultureboardError(f"--option tau={tau}", f"is not the paper's tau for {opts.extractor} "
                                    f"({PAPER_TAU.get(opts.extractor)})", "leave tau out with tau_from=paper")
    else:
        values, used, failed = [], set(), 0
        for pid, src in calibration:
            ext = extracted[src.sha256]
            if ext.descriptors is None:
                failed += 1
                continue
            used.add(src.sha256)
            for S in matcher.sims(ext.descriptors, refs_by_prompt[pid]["refs"]).values():
                values.extend(core.best_matches(S))
        info.update(reference_images=len({s.sha256 for _, s in calibration}), failed_reference_images=failed,
                    prompts=len({pid for pid, _ in calibration}), similarities=len(values))
        enough = len(values) >= opts.tau_min_similarities
        if enough and opts.tau_from in ("auto", "references"):
            q1, median, q3 = core.quartiles(values)
            tau, source = round(q3, 4), "references"
            info.update(q1=round(q1, 4), median=round(median, 4), q3=round(q3, 4))
        elif opts.tau_from == "references":
            raise CultureboardError(ctx.dataset, f"gives {len(values)} reference similarities (extracted descriptors "
                                    f"of its reference photographs), fewer than the {opts.tau_min_similarities} "
                                    "that tau_from=references calibrates on", "add reference photographs, or pass "
                                    "--option tau_from=auto (the paper's tau), --option tau=VALUE or a lower "
                                    "--option tau_min_similarities")
        elif opts.extractor in PAPER_TAU and opts.extraction == "per-dimension":
            tau, source = PAPER_TAU[opts.extractor], "paper"
            if values:
                info["why_paper"] = (f"{len(values)} reference similarities, fewer than tau_min_similarities = "
                                     f"{opts.tau_min_similarities}: too few for a stable third quartile")
        else:
            why = ("has no paper tau" if opts.extractor not in PAPER_TAU else
                   "has a paper tau for the paper's per-dimension prompts only (extraction=single)")
            raise CultureboardError(f"extractor {opts.extractor}", f"{why} and its reference photographs give "
                                    f"{len(values)} similarities, fewer than tau_min_similarities = "
                                    f"{opts.tau_min_similarities}", "pass --option tau=VALUE, or a lower "
                                    "--option tau_min_similarities")
    ctx.options = dataclasses.replace(opts, tau=float(tau), tau_from=source)  # recorded as resolved
    return {**info, "tau": float(tau), "from": source}


# ------------------------------------------------------------------------------------------------ scoring

def score_cultivate(ctx: Context) -> list[dict]:
    opts = ctx.options
    descriptors = read_descriptors(ctx)
    photos, _ = ctx.references()
    table = load_countries()

    def photos_of(prompt: dict) -> list:
        return photos.get(prompt.get("artifact_id"), [])

    # the calibration set: every described prompt of the whole set with photographs (the same in every shard)
    calibration = [(pid, src) for pid in sorted(descriptors) if pid in ctx.prompts
                   for src in photos_of(ctx.prompts[pid])] if opts.tau is None and opts.tau_from != "paper" else []
    images = sorted(ctx.images, key=lambda im: (im.prompt_id, im.sample_idx))
    extracted = _extract(ctx, [im for im in images if im.prompt_id in descriptors] + [s for _, s in calibration])
    # only what will be matched is embedded: the prompts with at least one extracted image or photograph
    ok = {sha for sha, e in extracted.items() if e.descriptors is not None}
    matched = {im.prompt_id for im in images if im.sha256 in ok} | {pid for pid, s in calibration if s.sha256 in ok}
    texts = set().union(*(_texts(extracted[sha].descriptors) for sha in ok),
                        *(_texts(descriptors[pid]["refs"]) for pid in matched))
    matcher = Matcher(ctx, texts)
    calibration_note = _resolve_tau(ctx, descriptors, calibration, extracted, matcher)
    tau = ctx.options.tau
    for metric in TAU_METRICS:
        ctx.note(metric, "tau", calibration_note)
        ctx.note(metric, "descriptors", dict(sorted(_sources(descriptors).items())))
    ctx.note("cultivate.exag", "variant", "max (eq. 4)" if opts.exag_variant == "max" else "mean (released code)")
    ctx.note("cultivate.exag", "question", vqa_question("<stereotype candidate>"))
    ctx.note("cultivate.judge_yes", "question", vqa_question(PROMPT_DESCRIPTION))
    questions = "\n".join(q for _, q in extraction_questions(opts.extraction))
    for metric in ("cultivate.align", "cultivate.hal"):
        ctx.note(metric, "extraction_question_sha256", hashlib.sha256(questions.encode()).hexdigest()[:16])

    exaggeration = _exaggeration(ctx, images, descriptors, photos_of)
    judge_yes = _p_yes(ctx, [(im, vqa_question(_description(im.prompt, table))) for im in images])
    rows, usable = [], defaultdict(list)
    for im, p_yes in zip(images, judge_yes):
        rows.append(score_row("cultivate.judge_yes", float(p_yes), im))
        rec = descriptors.get(im.prompt_id)
        ext = extracted.get(im.sha256)
        part: dict[str, tuple] = {}  # metric -> (value, flag, detail)
        if rec is None:
            part["align"] = part["hal"] = (None, NO_DESCRIPTORS, None)
        elif not any(rec["refs"].values()):
            part["align"] = part["hal"] = (None, EMPTY_DESCRIPTORS, None)
        elif ext.descriptors is None:
            failure = {"error": ext.error, "attempts": ext.attempts}
            part["align"] = part["hal"] = (None, EXTRACTION_FAILED, failure)
        else:
            sims = matcher.sims(ext.descriptors, rec["refs"])
            usable[im.prompt_id].append(sims)
            lists = explain.matches(ext.descriptors, rec["refs"], sims, tau)
            a, a_dims = core.align(sims, tau)
            h, h_dims = core.hal(sims, tau)
            part["align"] = (a, None, {"per_dimension": a_dims, "aligned": lists["aligned"],
                                       "missing": lists["missing"]})
            part["hal"] = (h, None if h is not None else NOTHING_EXTRACTED,
                           {"per_dimension": h_dims, "hallucinated": lists["hallucinated"],
                            "descriptors": ext.descriptors})
        part["exag"] = exaggeration[im]
        for name in ("align", "hal", "exag"):
            value, flag, detail = part[name]
            rows.append(score_row(f"cultivate.{name}", value, im, detail=detail, flag=flag))
        rows.append(_faith_row(im, part, rec, table))
    for pid in sorted({im.prompt_id for im in images}):
        rows += _diversity_rows(ctx.prompts[pid], descriptors.get(pid), usable.get(pid, []), tau)
    return rows


def _sources(descriptors: dict) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for rec in descriptors.values():
        counts[rec["source"]] += 1
    return counts


def _p_yes(ctx: Context, items: list) -> np.ndarray:
    """P(yes), both spellings, of each (image, question) from the ``vqa`` judge."""
    return ctx.yes_no(ctx.options.vqa, items)[0] if items else np.zeros(0)


def _description(prompt: dict, table) -> str:
    return PROMPT_DESCRIPTION.format(activity=prompt["artifact_name"],
                                     country=table.by_iso(prompt["country"]).name_in_sentence)


def _exaggeration(ctx: Context, images: list, descriptors: dict, photos_of) -> dict:
    """{image: (EXAG, flag, detail)}: P(yes) of every stereotype candidate of the prompt's activity in its country,
    for the image and for the prompt's real photographs (one batch through the cache), then eq. 4 per image."""
    opts = ctx.options
    out, jobs = {}, []
    for im in images:
        rec = descriptors.get(im.prompt_id)
        if rec is None:
            out[im] = (None, NO_DESCRIPTORS, None)
        elif not rec["stereotypes"]:
            out[im] = (None, NO_STEREOTYPES, None)
        elif not photos_of(im.prompt):
            out[im] = (None, NO_REFERENCES, {"artifact_id": im.prompt.get("artifact_id"),
                                             "reason": ctx.references()[1].get(im.prompt.get("artifact_id"))})
        else:
            jobs.append(im)
    questions = {pid: [vqa_question(c) for c in descriptors[pid]["stereotypes"]] for pid in {im.prompt_id for im in jobs}}
    photo_items = {pid: [(src, q) for src in photos_of(ctx.prompts[pid]) for q in qs] for pid, qs in questions.items()}
    items = [(im, q) for im in jobs for q in questions[im.prompt_id]]
    items += [it for pid in sorted(photo_items) for it in photo_items[pid]]
    probs = iter(_p_yes(ctx, items))
    scores = {im: np.array([next(probs) for _ in questions[im.prompt_id]]) for im in jobs}
    baseline = {}
    for pid in sorted(photo_items):
        k = len(questions[pid])
        baseline[pid] = np.array([next(probs) for _ in photo_items[pid]]).reshape(-1, k).mean(axis=0)
    for im in jobs:
        pid = im.prompt_id
        value = core.exag(scores[im], baseline[pid], opts.exag_variant)
        shown = explain.exaggerated(descriptors[pid]["stereotypes"], scores[im], baseline[pid], opts.shown)
        out[im] = (value, None, {"exaggerated": shown, "photos": len(photo_items[pid]) // len(questions[pid])})
    return out


def _faith_row(im, part: dict, rec: dict | None, table) -> dict:
    values = {name: part[name][0] for name in ("align", "hal", "exag")}
    flags = {name: part[name][1] for name in ("align", "hal", "exag") if part[name][1]}
    detail = {"components": values}
    if part["align"][1] is None:  # descriptors were matched: the explanation and its edit instruction exist
        lists = {"aligned": part["align"][2]["aligned"], "missing": part["align"][2]["missing"],
                 "hallucinated": part["hal"][2]["hallucinated"]}
        shown = part["exag"][2]["exaggerated"] if part["exag"][1] is None else []
        country = table.by_iso(im.prompt["country"]).name_in_sentence
        detail["edit_instruction"] = explain.edit_instruction(im.prompt["artifact_name"], country, lists, shown)
    if flags:
        detail["missing"] = flags
        return score_row("cultivate.faith", None, im, detail=detail, flag=next(iter(flags.values())))
    return score_row("cultivate.faith", core.faith(values["align"], values["hal"], values["exag"]), im, detail=detail)


def _diversity_rows(prompt: dict, rec: dict | None, usable: list, tau: float) -> list[dict]:
    """DDIV and SDIV of a prompt over its images whose descriptors were extracted (``usable``: their similarity
    matrices), or flagged rows."""
    if rec is None:
        flag = NO_DESCRIPTORS
    elif not any(rec["refs"].values()):
        flag = EMPTY_DESCRIPTORS
    else:
        flag = TOO_FEW if len(usable) < 2 else None
    rows = []
    for name, fn in (("ddiv", core.ddiv), ("sdiv", core.sdiv)):
        value, per = fn(usable, tau) if flag is None else (None, {})
        rows.append(score_row(f"cultivate.{name}", value, unit_id=prompt["prompt_id"], slices=prompt,
                              detail={"images": len(usable), "per_dimension": per}, flag=flag))
    return rows


register(Family(
    name=FAMILY,
    title="CULTIVate / AHEaD: social activities, faithfulness, hallucination, exaggeration, diversity",
    description=("CULTIVate asks models for photos of social activities (dances, games, greetings, celebrations, "
                 "religious practices, eating, concerts, weddings, funerals) in 16 countries. AHEaD reads what each "
                 "image shows as short descriptors (setting, objects, attire, interaction, spatial arrangement), "
                 "matches them with the activity's reference descriptors, and scores coverage (ALIGN), wrong "
                 "elements (HAL), over-expressed stereotypes compared with real photographs (EXAG), their mean "
                 "(FAITH), and how varied a prompt's images are (DDIV, SDIV). Each image gets the descriptors it "
                 "matched, missed, hallucinated and exaggerated, and an edit instruction."),
    papers={"paper": PAPER, "code and data": "https://github.com/sinamalakouti/AHEaD"},
    prompt_sets=(PromptSetSpec("cultivate", score_cultivate, tuple(m.name for m in METRICS),
                               shard_unit=lambda prompt: prompt["prompt_id"],
                               units={"prompt": lambda prompt: prompt["prompt_id"]}),),
    metrics=METRICS,
    options=CultivateOptions,
    variant_versions=variant_versions,
))
