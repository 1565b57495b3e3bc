"""CUBE (Kannen et al., NeurIPS 2024 D&B): cultural awareness and cultural diversity.

Awareness (``cube-awareness``, section 4): the paper measures it with human ratings (see the ratings
import); these are automatic proxies of those human-rated constructs, never the constructs themselves:

- ``cube.faithfulness``: cos(f_img(x), f_txt(prompt)) with the alignment scorer (SigLIP 2);
- ``cube.cultural_relevance``: zero-shot recognition of the target country among the prompt set's
  countries: softmax over countries c of ``logit_scale * cos(f_img(x), f_txt("An image from c."))``, the
  probability of the prompt's country (chance: 1 / number of countries);
- ``cube.country_top1``: 1 when that most probable country is the prompt's country;
- ``cube.quality``: HPS v2.1 = cos(f_img(x), f_txt(prompt)) of the HPS model, CUBE 5.1.2's quality s(x).

Directions follow the paper's evidence (each card's ``direction_evidence``): quality and the diversity scores
rank higher first by CUBE's own ranking rule (Tables 4 and 5); ``cube.faithfulness``, ``cube.country_top1`` and
``cube.retrieval`` are descriptive (CUBE never relates them to a human judgement); the headline
``cube.cultural_relevance`` is ranked (a prompt set's headline must be) on weak evidence that its card states.

Diversity (``cube-diversity``, section 5, appendices J, K). Each image is mapped to an artifact of the
artifact space (J.2.1, as far as the scorers allow): the ``candidates`` artifacts of the prompt's concept
(and art sub-type; for a within-culture prompt, of the named country only, as J.2.1 retrieves within the
country) closest to the image by mSigLIP image-text similarity to "An image of {name}." (one similarity
scale), then, where CUBE asks GPT-4-Turbo, the judge VLM chooses among them (option ``mapping``). With the
dataset's reference photographs (option ``retrieve_by``, by default whenever the dataset has them), the
candidates are the artifacts whose photographs are closest to the image (mSigLIP image-image, as CUBE retrieves
reference images), and each row counts the candidate artifacts that have no photograph. ``cube.retrieval``
keeps the mapping (labels in ``detail``; value: the similarity of the chosen artifact).

Every row records which path decided and any fallback; each pool's detail and the summary's notes (key
``counts``, per metric) count the images that met each of :data:`EVENTS`: the candidates widened beyond the
prompt's sub-type or country, candidates without a photograph, a judge with no usable answer (retrieval top-1
decided), a judge that found none of the candidates matches (the image's ``cube.retrieval`` row is flagged and
the image is left out of every pool, global ones included), and, with ``mapping=judge``, a within-culture image
the judge says does not show the named culture (P("Yes") < 0.5 to :data:`CULTURE_QUESTION`: left out of its
pool, as appendix K removes them).

Global prompts (concept only) and within-culture prompts (concept and country) are separate measurements:

- ``cube.qvs.<preset>`` / ``cube.vs.<preset>``: global pools only (CUBE Tables 4 and 5), the quality-weighted,
  size-normalised Vendi score (eq. 3) of the kernel w1 [same continent] + w2 [same country] + w3 [same
  artifact] for the five presets of J.2.2, averaged over ``repetitions`` random groups of ``group_size``
  images (quality s = HPS clipped to [0, 1]; VS/N alone for ``cube.vs``). The headline is qvs.uniform.
- ``cube.within.vs.artifact``: within-culture pools, VS/N of the artifact kernel only (appendix K; the other
  kernels would reward images mapped to other countries), with uniform quality as in K.

A pool (the rephrasings of one level x concept x country) left with fewer images than the group size is
flagged and not ranked.

``cube-awareness-native`` is cube-awareness in each country's own language(s), scored the same way with the
English prompt's text for every image-text scorer, plus each metric's native-minus-English gap
(``<metric>.parity``, :mod:`...engine.parity`).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass
from typing import Literal

import numpy as np

from cultureboard.countries import load_countries
from cultureboard.errors import CultureboardError

from ...engine.context import Context, Image, score_row
from ...engine.parity import native_variant
from ...engine.registry import Evidence, Family, MetricCard, PromptSetSpec, register
from ...results.aggregate import unit_slices
from ..vendi import CUBE_KERNEL_PRESETS
from .core import choice_schema, country_probabilities, judge_choice, pool_diversity, relevance, top_candidates

FAMILY = "cube"
ALIGNMENT, QUALITY, RETRIEVAL, JUDGE = "siglip2-so400m", "hpsv2.1", "msiglip", "qwen2.5-vl-7b"
SOURCE = "Kannen et al., Beyond Aesthetics: Cultural Competence in Text-to-Image Models, NeurIPS 2024 D&B"
MAPPING_EVIDENCE = Evidence("Human reviewers found CUBE's artifact mapping (mSigLIP retrieval, then GPT-4-Turbo "
                            "among the top five) about 70% accurate on a small subset of images", "CUBE appendix J.2.1",
                            0.70)
CLIPSCORE_EVIDENCE = Evidence("A CLIPScore-style image-text similarity reached Spearman 0.04 with human faithfulness "
                              "ratings of culture-specific images", "Nayak et al. (CULTIVate / AHEaD), human study",
                              0.04)


@dataclass(frozen=True)
class CubeOptions:
    repetitions: int = 50  # random groups per diversity pool (CUBE: 50)
    group_size: int = 8  # images per group (CUBE: 8)
    candidates: int = 5  # artifacts the judge chooses among (CUBE retrieves 5)
    mapping: Literal["judge", "retrieval"] = "judge"  # who makes the final choice among the candidates
    # what the candidates are retrieved by: the artifacts' names, their reference photographs (CUBE J.2.1), or
    # the photographs when the dataset has a references config ("auto"; the result records the resolved choice)
    retrieve_by: Literal["auto", "names", "references"] = "auto"

    def __post_init__(self):
        if self.repetitions < 1 or self.group_size < 2 or self.candidates < 1:
            raise ValueError("repetitions >= 1, group_size >= 2 and candidates >= 1 are required")


#: Why the diversity scores rank higher first: the paper's own ranking rule (no human rating of diversity exists).
DIVERSITY_EVIDENCE = ("CUBE's own ranking rule, not a human study: Table 5 ranks the models by qVS, higher best "
                      "('Imagen 2 (IM) performs best for Cuisine and Art ... even the best scores are low'), Table 4 "
                      "reports the diversity component VS the same way, and section 5.3 reads scores 'far from the "
                      "maximum score of 1' as room for improvement. CUBE rates no diversity by humans; its artifact "
                      "mapping was about 70% accurate (appendix J.2.1).")


# versions: 3 (qvs, vs), 2 (within): within-culture candidates from the named country only, images of another
# culture or matching no candidate left out of the pools, and the judge's reworded JSON retries (e6d0c74);
# 4 (qvs, vs), 3 (within): the judge's choice among the candidates is scored by likelihood, never generated, and
# its P(yes) reads both spellings in one pass (mapping=judge)
def _diversity_card(name: str, title: str, formula: str, version: int = 4, **kw) -> MetricCard:
    return MetricCard(name, FAMILY, title, formula, "higher", "[0, 1]", (RETRIEVAL, QUALITY, JUDGE), SOURCE,
                      version=version, unit="pool", validity=(MAPPING_EVIDENCE,),
                      direction_evidence=DIVERSITY_EVIDENCE, **kw)


_KERNEL_TITLES = {"continent": "continents", "country": "countries", "artifact": "artifacts",
                  "hierarchical": "continents and countries", "uniform": "continents, countries and artifacts"}
_GROUPS = ("mean over random groups of N images of a global pool (images the judge found to match none of "
           "their candidates left out)")

METRICS = (
    # version 2: descriptive (direction none): CUBE never relates this score to its faithfulness ratings
    MetricCard("cube.faithfulness", FAMILY, "Faithfulness proxy (image-text alignment)", "cos(f_img(x), f_txt(prompt))",
               "none", "[-1, 1]", (ALIGNMENT,), SOURCE + ", section 4", version=2,
               proxy_for="CUBE's human faithfulness rating (Q2, 1-5)", validity=(CLIPSCORE_EVIDENCE,),
               description="How well the image matches its prompt, by a SigLIP 2 image-text similarity."),
    MetricCard("cube.cultural_relevance", FAMILY, "Cultural relevance proxy (zero-shot country)",
               "softmax_c(s * cos(f_img(x), f_txt('An image from c.')))[prompt country]", "higher", "[0, 1]",
               (ALIGNMENT,), SOURCE + ", section 4", version=1, primary=True,
               chance="1 / number of countries of the prompt set",
               direction_evidence="Weak: the human question this proxy stands for is better higher (CUBE section 4.1 "
                                  "Q1, 'does the item depicted belong to the annotator's country?'; section 4.2 reads "
                                  "a lower share of yes answers in Table 12 as a culture the model marginalizes), but CUBE never correlates this "
                                  "zero-shot classifier with those ratings. It stays ranked only as the awareness "
                                  "headline; the trust map (cultureboard import ratings) is where its own evidence "
                                  "must come from.",
               proxy_for="CUBE's human cultural relevance rating (Q1: would one see this in the country?)",
               description="The probability a zero-shot classifier gives to the prompt's country among the "
                           "prompt set's countries."),
    MetricCard("cube.country_top1", FAMILY, "Country recognised (top-1) proxy",
               "1[argmax_c cos(f_img(x), f_txt('An image from c.')) = prompt country]", "none", "{0, 1}",
               (ALIGNMENT,), SOURCE + ", section 4", version=3, chance="1 / number of countries of the prompt set",
               bounded=(0.0, 1.0),  # version 3: Wilson intervals (a 0/1 hit)
               proxy_for="CUBE's human cultural relevance rating (Q1)",
               description="Whether the prompt's country is the zero-shot classifier's first choice."),
    MetricCard("cube.quality", FAMILY, "Quality (HPS v2.1)", "cos(f_img(x), f_txt(prompt)) of the HPS v2.1 model",
               "higher", "[-1, 1], typically 0.2-0.35", (QUALITY,), SOURCE + ", section 5.1.2", version=1,
               direction_evidence="CUBE Table 4 ranks the models by the HPS-v2 quality q, higher best ('Playground "
                                  "(PG) has best quality for cuisine and art'); HPS-v2 is trained on 790k human "
                                  "preference choices (section 5.1.2).",
               description="Human preference score: CUBE's quality s(x) of an image for its prompt."),
    MetricCard("cube.retrieval", FAMILY, "Artifact mapping similarity",
               "cos(f_img(x), f_txt('An image of a.')) of the artifact a the image is mapped to; with retrieve_by="
               "references, max over a's reference photos r of cos(f_img(x), f_img(r))", "none", "[-1, 1]",
               (RETRIEVAL, JUDGE), SOURCE + ", appendix J.2.1", version=5, validity=(MAPPING_EVIDENCE,),
               description="The artifact each image is mapped to (in the row's detail), by retrieval over artifact "
                           "names (a within-culture prompt: its country's artifacts) or reference photographs and a "
                           "VLM's choice among the closest candidates; flagged when the VLM says none matches."),
    *(_diversity_card(f"cube.qvs.{p}", f"Global cultural diversity qVS over {_KERNEL_TITLES[p]}",
                      f"{_GROUPS}: (1/N sum s(x_i)) * VS_1(X; k_w) / N, w = {w}", primary=p == "uniform",
                      description=f"How many distinct {_KERNEL_TITLES[p]} the images of a concept-only prompt "
                                  "show, weighted by image quality (1: every image distinct and perfect).")
      for p, w in CUBE_KERNEL_PRESETS.items()),
    *(_diversity_card(f"cube.vs.{p}", f"Global cultural diversity VS/N over {_KERNEL_TITLES[p]}",
                      f"{_GROUPS}: VS_1(X; k_w) / N, w = {w} (range [1/N, 1])",
                      description=f"How many distinct {_KERNEL_TITLES[p]} the images of a concept-only prompt show.")
      for p, w in CUBE_KERNEL_PRESETS.items()),
    _diversity_card("cube.within.vs.artifact", "Within-culture artifact diversity VS/N",
                    "mean over random groups of N images of a within-culture pool: VS_1(X; k_artifact) / N "
                    "(uniform quality; with mapping=judge, images whose P(Yes) to 'Does the ... belong to "
                    "<country> culture?' is below 0.5 left out: appendix K)", version=3,
                    description="How many distinct artifacts the images of a prompt naming one country show."),
)
DIVERSITY_METRICS = tuple(m.name for m in METRICS if m.unit == "pool")


def pool_id(prompt: dict) -> str:
    """The diversity pool of a prompt: its set, level, concept and country (CUBE pools the rephrasings)."""
    parts = [prompt["prompt_set"], prompt.get("level") or "all", prompt["category"], prompt.get("country") or "global"]
    return "/".join(parts) + "/pool"


# ---------------------------------------------------------------------------------------- awareness

def score_awareness(ctx: Context) -> list[dict]:
    rows = []
    img = ctx.image_embeddings(ALIGNMENT)
    txt = ctx.text_embeddings(ALIGNMENT, [im.prompt["text"] for im in ctx.images])
    rows += [score_row("cube.faithfulness", float(img[im.sha256] @ txt[im.prompt["text"]]), im) for im in ctx.images]
    codes = sorted({p["country"] for p in ctx.prompts.values() if p.get("country")})
    if codes:
        table = load_countries()
        phrases = [f"An image from {table.by_iso(c).name_in_sentence}." for c in codes]
        country_txt = ctx.text_embeddings(ALIGNMENT, phrases)
        T = np.stack([country_txt[p] for p in phrases])
        scale = ctx.logit_scale(ALIGNMENT)
        for metric in ("cube.cultural_relevance", "cube.country_top1"):
            ctx.note(metric, "chance", 1 / len(codes))
            ctx.note(metric, "countries", codes)
        for im in ctx.images:
            if im.prompt.get("country"):
                p, top1 = relevance(country_probabilities(img[im.sha256], T, scale), codes.index(im.prompt["country"]))
                rows += [score_row("cube.cultural_relevance", p, im), score_row("cube.country_top1", top1, im)]
    quality = _quality(ctx)
    return rows + [score_row("cube.quality", quality[im], im) for im in ctx.images]


def _quality(ctx: Context) -> dict[Image, float]:
    img = ctx.image_embeddings(QUALITY)
    txt = ctx.text_embeddings(QUALITY, [im.prompt["text"] for im in ctx.images])
    return {im: float(img[im.sha256] @ txt[im.prompt["text"]]) for im in ctx.images}


# ---------------------------------------------------------------------------------------- diversity

# What can happen to an image on its way to a diversity pool, counted per metric (the summary's notes, key
# ``counts``) and per pool (its row's detail): the mapping fell back, or the image was left out of the pool.
WIDENED = "widened_to_concept"  # no artifact of the prompt's sub-type (or country): candidates from wider
REFERENCES_MISSING = "references_missing"  # some candidate artifacts have no reference photograph
JUDGE_FAILED = "judge_failed"  # the judge gave no usable answer: retrieval top-1 decided
JUDGE_NONE = "judge_chose_none"  # the judge said no candidate matches: flagged, left out of the pools
NOT_OF_CULTURE = "not_of_culture"  # within-culture, mapping=judge: P(Yes) < 0.5 that it shows the country's culture
EVENTS = (WIDENED, REFERENCES_MISSING, JUDGE_FAILED, JUDGE_NONE, NOT_OF_CULTURE)
LEFT_OUT = (JUDGE_NONE, NOT_OF_CULTURE)
_ITEM = {"cuisine": "dish", "landmarks": "landmark"}  # what one image of a concept shows (else its sub-type)
CULTURE_QUESTION = "Does the {item} in the image belong to {adjective} culture? Answer Yes or No."  # CUBE K


def _candidate_pool(ctx: Context, concept: str, subcategory: str | None,
                    country: str | None) -> tuple[list[dict], str | None]:
    """The artifacts an image of (concept, sub-type) may be mapped to -- only the named country's for a
    within-culture prompt (CUBE J.2.1 retrieves within the country) -- and the widening taken, if any: to the
    whole concept of that country, or, when it has none, to the whole concept."""
    space = [a for a in ctx.artifacts() if a["concept"] == concept]
    if not space:
        raise CultureboardError(ctx.dataset, f"has no artifact of concept {concept!r} to map images to",
                                "build the dataset with that concept")
    of = f" of {country}" if country else ""
    local = [a for a in space if country is None or a["country"] == country]
    if not local:
        return space, f"no {concept} artifact{of}: candidates from every country"
    exact = [a for a in local if subcategory is None or a.get("subcategory") == subcategory]
    if not exact:
        return local, f"no {subcategory} artifact{of}: candidates from all of {concept}{of}"
    return exact, None


def _map_images(ctx: Context) -> dict[Image, dict]:
    """Each image's artifact: the closest candidates on one similarity scale (artifact names, or the artifacts'
    reference photographs: option ``retrieve_by``), then the judge's choice among them (option ``mapping``).
    Each mapping records the path that decided, its fallbacks, and the :data:`EVENTS` it met (``events``)."""
    opts = ctx.options
    mode = opts.retrieve_by
    if mode == "auto":
        mode = "references" if ctx.references()[0] else "names"
        ctx.options = opts = dataclasses.replace(opts, retrieve_by=mode)  # recorded as resolved
    img = ctx.image_embeddings(RETRIEVAL)
    pools: dict[tuple, tuple] = {}
    mapped, asks = {}, []
    for im in ctx.images:
        key = (im.prompt["category"], im.prompt.get("subcategory"), _named_country(im))
        if key not in pools:
            pools[key] = _candidate_vectors(ctx, mode, *key)
        arts, vectors, owner, notes = pools[key]
        sims = vectors @ img[im.sha256]
        best = {}  # artifact index -> its best similarity (an artifact may have several reference photos)
        for k in top_candidates(img[im.sha256], vectors, len(vectors)):
            best.setdefault(owner[k], float(sims[k]))
            if len(best) == opts.candidates:
                break
        events = {WIDENED} if "fallback" in notes else set()
        events |= {REFERENCES_MISSING} if notes.get("references_missing") else set()
        mapped[im] = {"candidates": [arts[i] for i in best], "sims": list(best.values()), "chosen": 0,
                      "decided_by": f"retrieval ({'image-image' if mode == 'references' else 'image-text'}, top-1)",
                      "events": events, **notes}
        if opts.mapping == "judge" and len(best) > 1:
            asks.append(im)
    if asks:
        questions = [_choice_question(im, mapped[im]["candidates"]) for im in asks]
        answers = ctx.ask_json(JUDGE, list(zip(asks, questions)), choice_schema(opts.candidates), max_new_tokens=16)
        for im, answer in zip(asks, answers):
            m = mapped[im]
            kind, index = judge_choice(answer.value, len(m["candidates"]))
            if kind == "chosen":
                m.update(chosen=index, decided_by="judge (among the retrieval candidates)")
            elif kind == "none":
                m.update(chosen=None, decided_by="judge: none of the retrieval candidates matches")
                m["events"].add(JUDGE_NONE)
            else:
                reason = answer.error or f"choice {answer.value['choice']} is not one of the {len(m['candidates'])}"
                m["fallback"] = "; ".join(filter(None, [m.get("fallback"), f"retrieval top-1 ({reason})"]))
                m["events"].add(JUDGE_FAILED)
    if opts.mapping == "judge":
        _check_culture(ctx, mapped)
    return mapped


def _named_country(im: Image) -> str | None:
    """The country a within-culture prompt names (None for a global prompt)."""
    return im.prompt["country"] if im.prompt.get("level") == "within-culture" else None


def _culture_question(im: Image) -> str:
    item = _ITEM.get(im.prompt["category"]) or im.prompt.get("subcategory") or im.prompt["category"]
    return CULTURE_QUESTION.format(item=item, adjective=load_countries().by_iso(im.prompt["country"]).adjective)


def _check_culture(ctx: Context, mapped: dict[Image, dict]) -> None:
    """CUBE appendix K: an image of a within-culture prompt that the judge says does not show the named
    culture, P("Yes") < 0.5, is left out of its pool (event :data:`NOT_OF_CULTURE`)."""
    within = [im for im in mapped if _named_country(im)]
    if not within:
        return
    ctx.note("cube.within.vs.artifact", "culture_question", CULTURE_QUESTION)
    p_yes = ctx.probability(JUDGE, [(im, _culture_question(im)) for im in within])
    for im, p in zip(within, p_yes):
        mapped[im]["belongs_to_culture"] = float(p)
        if p < 0.5:
            mapped[im]["events"].add(NOT_OF_CULTURE)


def _candidate_vectors(ctx: Context, mode: str, concept: str, subcategory: str | None, country: str | None):
    """(artifacts, one unit vector per row, the artifact index of each row, notes for the rows' detail)."""
    arts, fallback = _candidate_pool(ctx, concept, subcategory, country)
    notes = {"fallback": fallback} if fallback else {}
    if mode == "references":
        refs, _ = ctx.references()
        with_refs = [a for a in arts if refs.get(a["qid"])]
        notes["references_missing"] = len(arts) - len(with_refs)
        if not with_refs:
            raise CultureboardError(ctx.dataset, f"has no reference photograph of any {concept} artifact",
                                    "run `cultureboard fetch-references --dataset DIR`, or pass --option retrieve_by=names")
        sources = [(i, s) for i, a in enumerate(with_refs) for s in refs[a["qid"]]]
        vectors = ctx.image_embeddings(RETRIEVAL, [s for _, s in sources])
        return with_refs, np.stack([vectors[s.sha256] for _, s in sources]), [i for i, _ in sources], notes
    texts = [f"An image of {a['name']}." for a in arts]
    txt = ctx.text_embeddings(RETRIEVAL, texts)
    return arts, np.stack([txt[t] for t in texts]), list(range(len(arts))), notes


def _choice_question(im: Image, candidates: list[dict]) -> str:
    table = load_countries()
    lines = [f"{k}. {a['name']} ({table.by_iso(a['country']).name})" for k, a in enumerate(candidates, 1)]
    return (f"This image was generated for the prompt \"{im.prompt['text']}\". Which of these "
            f"{im.prompt['category']} items does it show?\n" + "\n".join(lines) +
            '\nAnswer with a JSON object {"choice": N}: N is the number of the best match, 0 if none matches.')


def _counts(mappings) -> dict[str, int]:
    """How many of the ``mappings`` met each of :data:`EVENTS`, and how many there are (``images``)."""
    mappings = list(mappings)
    return {"images": len(mappings), **{e: sum(e in m["events"] for m in mappings) for e in EVENTS}}


def score_diversity(ctx: Context) -> list[dict]:
    table = load_countries()
    mapped = _map_images(ctx)
    rows, labels = [], {}
    for im, m in mapped.items():
        detail = {"decided_by": m["decided_by"], "candidates": [c["qid"] for c in m["candidates"]],
                  **{k: m[k] for k in ("fallback", "references_missing", "belongs_to_culture") if k in m}}
        if m["chosen"] is None:
            rows.append(score_row("cube.retrieval", None, im, detail=detail,
                                  flag="the judge found that none of the retrieval candidates matches"))
            continue
        a = m["candidates"][m["chosen"]]
        labels[im] = {"artifact": a["qid"], "name": a["name"], "country": a["country"],
                      "continent": table.by_iso(a["country"]).continent}
        rows.append(score_row("cube.retrieval", float(m["sims"][m["chosen"]]), im, detail={**labels[im], **detail}))
    if mapped:
        ctx.note("cube.retrieval", "counts", _counts(mapped.values()))
    quality = _quality(ctx)
    rows += [score_row("cube.quality", quality[im], im) for im in ctx.images]
    pools: dict[str, list[Image]] = defaultdict(list)
    for im in ctx.images:
        pools[pool_id(im.prompt)].append(im)
    opts = ctx.options
    tallies: dict[str, list[dict]] = defaultdict(list)
    for pid, members in sorted(pools.items()):
        members.sort(key=lambda im: (im.prompt_id, im.sample_idx))
        counts = _counts(mapped[im] for im in members)
        kept = [im for im in members if not mapped[im]["events"] & set(LEFT_OUT)]
        labs = [labels[im] for im in kept]
        args = ([x["continent"] for x in labs], [x["country"] for x in labs], [x["artifact"] for x in labs])
        slices = unit_slices([p for p in ctx.prompts.values() if pool_id(p) == pid],
                             ("country", "continent", "region_group", "category", "subcategory", "level"))
        s = np.clip([quality[im] for im in kept], 0.0, 1.0)
        ones = np.ones(len(kept))
        if members[0].prompt.get("level") == "within-culture":
            jobs = [("cube.within.vs.artifact", "artifact", ones)]
        else:
            jobs = [(f"cube.{kind}.{preset}", preset, weights) for preset in CUBE_KERNEL_PRESETS
                    for kind, weights in (("qvs", s), ("vs", ones))]
        for metric, preset, weights in jobs:
            value, spread, flag = pool_diversity(*args, weights, preset, opts.group_size, opts.repetitions, ctx.seed)
            detail = {"std": spread, "images": len(kept), "counts": counts, "group_size": opts.group_size,
                      "repetitions": opts.repetitions}
            rows.append(score_row(metric, value, unit_id=pid, slices=slices, detail=detail, flag=flag))
            tallies[metric].append(counts)
    for metric, per_pool in tallies.items():
        ctx.note(metric, "counts", {k: sum(c[k] for c in per_pool) for k in per_pool[0]})
    return rows


AWARENESS = PromptSetSpec("cube-awareness", score_awareness,
                          ("cube.faithfulness", "cube.cultural_relevance", "cube.country_top1", "cube.quality"),
                          shard_unit=lambda prompt: prompt["prompt_id"])
#: cube-awareness in each country's own language(s), its metrics' native-minus-English gaps (:mod:`...engine.parity`)
AWARENESS_NATIVE, AWARENESS_GAPS = native_variant(AWARENESS, {m.name: m for m in METRICS})

register(Family(
    name=FAMILY,
    title="CUBE: cultural awareness and cultural diversity",
    description=("CUBE asks whether a model knows a country's dishes, landmarks and art when named (awareness), "
                 "and how many different countries and artifacts it shows when only a concept is named "
                 "(diversity). Awareness is rated by people in the paper; the scores here are automatic proxies. "
                 "Diversity maps each image to a real artifact and counts the effective number of distinct "
                 "continents, countries and artifacts with a quality-weighted Vendi score."),
    papers={"paper": "https://arxiv.org/abs/2407.06863",
            "code and data": "https://github.com/google-research-datasets/cube"},
    prompt_sets=(
        AWARENESS,
        PromptSetSpec("cube-diversity", score_diversity, ("cube.retrieval", "cube.quality", *DIVERSITY_METRICS),
                      shard_unit=pool_id, units={"pool": pool_id}),
        AWARENESS_NATIVE,
    ),
    metrics=METRICS + AWARENESS_GAPS,
    options=CubeOptions,
))
