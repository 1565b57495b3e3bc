"""ECB (Seo et al., "Exposing Blindspots: Cultural Bias Evaluation in Generative Image Models", arXiv
2510.20042): era-aware edit chains, the culture-aware RAG + VQA metric, separability and leaning.

The ``ecb`` prompt set has 468 multi-loop chains (a text-to-image base, then the same edit instruction 5
times, each step editing the previous image) and 6 attribute-addition chains (5 cumulative edits of a
mannequin). What is scored (modules ``chains``, ``culture``, ``t2i``; maths in ``core``):

* per chain step (units ``chain`` and ``attribute-chain``, slices ``edit_step`` and country x edit_step): CLIPScore
  against the edit
  instruction and against the base prompt, the LAION aesthetic score, DreamSim distance to the base and to
  the previous step; ``ecb.*`` for the multi-loop chains, ``ecb.attribute.*`` for attribute addition;
* the culture-aware metric (multi-loop chains): accuracy, precision, recall and F1 of the judge's yes/no
  answers to the dataset's questions per step (``ecb.culture.*``, diagnostics), the share of ambiguous
  answers, and per chain whether its F1 picks are the positional baseline (best = base, worst = last step);
  per chain (module ``final``), the headline ``ecb.culture.accuracy_last`` (accuracy after the last edit) and
  ``ecb.culture.accuracy_change`` (its change from the base);
* the T2I analyses (unit ``country``: the six countries and ``agnostic``, the prompts that name no country) of
  the base images: separability, proximity of each country to the agnostic images (which country the model
  draws by default) and traditional-modern leaning.

Ranked (``direction_evidence`` on the card): CLIPScore with the edit instruction and the aesthetic score (their
correlations with expert quality, ECB appendix E) and ``ecb.culture.accuracy_last`` (Fig. 5). Everything else
is descriptive: DreamSim is an edit magnitude (ranking it would reward an editor that does nothing), the T2I
statistics and the attribute-addition scores have no human evidence of a better direction.

ECB's human survey ratings are imported by ``results/studies/ecb.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...engine.context import Context
from ...engine.registry import Evidence, Family, MetricCard, PromptSetSpec, register
from . import aesthetic  # noqa: F401  (registers the laion-aesthetic scorer backend and its stand-in)
from .chains import (
    AESTHETIC,
    CLIP,
    DREAMSIM,
    attribute_chain,
    chain_id,
    metric_name,
    multiloop_chain,
    score_chains,
    unit_name,
)
from .culture import JUDGE, score_culture
from .final import score_final
from .t2i import country_unit, score_t2i

FAMILY = "ecb"
SOURCE = "Seo et al., Exposing Blindspots: Cultural Bias Evaluation in Generative Image Models (arXiv 2510.20042)"


@dataclass(frozen=True)
class EcbOptions:
    aesthetic: Literal["laion", "ecb-relu"] = "laion"  # the canonical linear head, or ECB's released ReLU variant
    context_chunks: int = 3  # retrieved passages shown to the judge with each question (ECB: 8)
    min_answer_mass: float = 0.5  # P(yes) + P(no) below this is an ambiguous answer
    clusters: int = 8  # k-means clusters of a model's base images (ECB's K_m is unstated)
    pca_dims: int = 50  # PCA dimensions before k-means (unstated in ECB)
    n_boot: int = 1000  # bootstrap replicates of the proximity sampling ranges
    permutations: int = 999  # permutations of the separability null and of the leaning tests (smallest p = 0.001)
    leaning_images: Literal["era-agnostic", "all"] = "era-agnostic"  # which base images the leaning scores

    def __post_init__(self):
        if self.context_chunks < 0 or not 0 <= self.min_answer_mass <= 1:
            raise ValueError("context_chunks >= 0 and 0 <= min_answer_mass <= 1 are required")
        if self.clusters < 2 or self.pca_dims < 1 or self.n_boot < 1 or self.permutations < 1:
            raise ValueError("clusters >= 2, pca_dims >= 1, n_boot >= 1 and permutations >= 1 are required")


def score_ecb(ctx: Context) -> list[dict]:
    culture = score_culture(ctx)
    return score_chains(ctx) + culture + score_final(culture) + score_t2i(ctx)


_CLIP_SCALE = ("Scale: 100 x cos, as ECB's released code computes it (released values about 22-26.5). The paper prints "
               "CLIPScore on two other, unstated scales (Table 5 finals 1.86-2.06; appendix E.1, Fig. 13: 3.0-3.4), "
               "so only trends and changes compare with the paper, never levels.")
_ATTRIBUTE_NONE = ("ECB shows no human correlation for the attribute-addition study (appendix E's correlations are "
                   "of the multi-loop images), so this is descriptive, never ranked.")
_CHAIN_CARDS = {
    "clipscore.instruction": {
        "title": "CLIPScore with the edit instruction", "formula": "100 * max(cos(f_img(x), f_txt(instruction)), 0)",
        "direction": "higher", "range": "[0, 100], typically 20-30", "scorers": (CLIP,), "version": 2,
        "direction_evidence": "ECB appendix E.1, Fig. 13(c): r(CLIPScore, HQS) = +0.42 over the multi-loop images "
                              "(positive, moderate: higher CLIPScore goes with higher human quality)",
        "description": "How well each step's image matches the edit instruction (CLIP ViT-L/14), as ECB scores it. "
                       + _CLIP_SCALE,
        "validity": (Evidence("CLIPScore stays flat or rises over the edit steps while human quality (HQS) falls by "
                           "44%; r(CLIPScore, HQS) = 0.42", "ECB, section 4.2.1 and appendix E.1", 0.42),)},
    "clipscore.prompt": {
        "title": "CLIPScore with the base prompt", "formula": "100 * max(cos(f_img(x), f_txt(base prompt)), 0)",
        "direction": "none", "range": "[0, 100], typically 20-30", "scorers": (CLIP,), "version": 2,
        "description": "How well each step's image still matches the text-to-image prompt of its chain's base. The "
                       "project's addition (ECB scores only the edit instruction), with no human evidence: "
                       "descriptive. " + _CLIP_SCALE},
    "aesthetic": {
        "title": "Aesthetic score (LAION predictor)",
        "formula": "linear head of the LAION improved aesthetic predictor on the L2-normalised CLIP ViT-L/14 embedding",
        "direction": "higher", "range": "about 1-10", "scorers": (AESTHETIC["laion"],), "version": 2,
        "direction_evidence": "ECB appendix E.2, Fig. 14(c): r(Aesthetic, HQS) = +0.78 over the multi-loop images "
                              "(positive: higher aesthetic score goes with higher human quality)",
        "description": "Predicted visual appeal of each step's image (option aesthetic=ecb-relu: ECB's released "
                    "variant with ReLUs, for comparison only).",
        "validity": (Evidence("r(aesthetic, HQS) = 0.78, but it stays at 3.0-3.5 where HQS falls to 1",
                           "ECB, appendix E.2", 0.78),)},
    "dreamsim.base": {
        "title": "DreamSim distance to the base image", "formula": "DreamSim(x_0, x_k), k = 1..5", "direction": "none",
        "range": "[0, 2] (d = 1 - cos)", "scorers": (DREAMSIM,), "version": 2,
        "description": "How far each edit step has drifted from the chain's text-to-image base (0: identical). An "
                       "edit magnitude, not a quality: ECB (appendix E.3) reads small distances as edit saturation "
                       "that 'coincides with rising human dissatisfaction' and gives no human correlation, and "
                       "ranking it would make an editor that returns its input unchanged the best. Descriptive."},
    "dreamsim.prev": {
        "title": "DreamSim distance to the previous step", "formula": "DreamSim(x_(k-1), x_k), k = 1..5",
        "direction": "none", "range": "[0, 2] (d = 1 - cos)", "scorers": (DREAMSIM,), "version": 2,
        "description": "How much each edit step changed the image it edited (shrinking steps: edit saturation, ECB "
                       "appendix E.3, Fig. 15). An edit magnitude with no human correlation in ECB: descriptive."},
}


def _chain_cards() -> list[MetricCard]:
    cards = []
    for attribute in (False, True):
        for name, spec in _CHAIN_CARDS.items():
            study = "attribute addition (section 3.3.2)" if attribute else "multi-loop edit (section 3.3.1)"
            direction = "none" if attribute else spec["direction"]
            cards.append(MetricCard(metric_name(name, attribute), FAMILY, spec["title"] + (
                " (attribute addition)" if attribute else ""), spec["formula"], direction, spec["range"],
                spec["scorers"], f"{SOURCE}, {study}", version=spec["version"], unit=unit_name(attribute),
                description=spec["description"] + (" " + _ATTRIBUTE_NONE if attribute and spec["direction"] != "none"
                                                   else ""),
                validity=spec.get("validity", ()),
                direction_evidence=spec.get("direction_evidence", "") if direction != "none" else ""))
    return cards


_QA = "over the image's questions: TP / FP / FN / TN of expected yes/no against the judge's answers"
_JUDGE = (" The judge is Qwen2.5-VL-7B-Instruct (ECB used Qwen2-VL-7B-Instruct, with a system prompt left out here); "
          "P(yes) and P(no) each add the capitalised and lower-case answer.")
#: for a judge that ignores the image; y = questions expecting yes, N = questions (template sets: y = 2, N = 4).
#: The note constant_answers gives the always-yes / always-no means on the evaluated dataset.
_CHANCE = {
    "accuracy": "0.5 answering at random; the majority expected answer's share (y / N or 1 - y / N; 0.5 for "
                "template sets) answering always the same",
    "precision": "y / N (0.5 for template sets) answering at random or always yes",
    "recall": "0.5 answering at random, 1 answering always yes",
    "f1": "about 2y / (N + 2y) answering at random (0.5 for template sets), 2y / (N + y) answering always yes "
          "(0.667 for template sets; above ECB's released F1 of 0.33-0.47)",
}
_POSITIONAL = Evidence("Agreement with expert best / worst choices 73.8% / 83.7% (Fig. 5); in ECB's released outputs "
                       "(template questions only) the picks equal the positional baseline in 76-93% of chains and QA "
                       "F1 rises over the steps while human quality falls", "ECB, Fig. 5; notes/004-blindspots.md 4.2")


_CULTURE_EVIDENCE = ("ECB Fig. 5 and section 4.2: the steps where the culture metric is highest / lowest agree with the "
                     "experts' best / worst choice in 73.8% / 83.7% of chains, and the metric 'shows a stepwise decline "
                     "consistent with HQS' (positive: higher score goes with what humans prefer)")
_ALL_STEPS = ("A diagnostic, never ranked: a mean over every step, the unedited base included, so it mixes the "
              "text-to-image base with what the edits did (the headline is ecb.culture.accuracy_last).")


def _culture_card(name: str, title: str, formula: str, source: str, direction: str = "none", version: int = 4,
                  bounded: tuple[float, float] = (0.0, 1.0), **fields) -> MetricCard:
    """A culture-aware card: a share of one chain's yes/no answers, bounded and discrete (Wilson intervals; every
    version bumped for them)."""
    return MetricCard(f"ecb.culture.{name}", FAMILY, f"Culture-aware metric: {title}", f"{formula} {_QA}", direction,
                      "[0, 1]", (JUDGE,), f"{SOURCE}, {source}", version=version, unit="chain", bounded=bounded,
                      chance=fields.pop("chance", _CHANCE[name.split("_")[0]]),
                      direction_evidence=_CULTURE_EVIDENCE if direction != "none" else "",
                      **{**fields, "description": fields.get("description", "") + _JUDGE})


METRICS = (
    *_chain_cards(),
    _culture_card("accuracy_last", "accuracy after the last edit", "a_last = (TP + TN) / N of the chain's last step "
                  "(step 5),", "section 3.3.1, appendix A.2, Table 6", direction="higher", version=2, primary=True,
                  proxy_for="ECB's expert human quality score (HQS) at step 5 and best / worst choices",
                  description="Share of the knowledge-grounded yes/no questions about each chain's last image that the "
                              "judge answers as expected, one value per chain (N counts ambiguous answers). ECB names "
                              "no single headline score; the project chose the last step's accuracy because the "
                              "multi-loop study asks what repeated edits leave of the culture (Table 6 reports each "
                              "cell's HQS at step 5) and accuracy, unlike precision / recall / F1, is not one ECB "
                              "reports only 'for auditing'. An editor that returns its input (control 'unedited') "
                              "keeps its base's value here; only edits that add cultural consistency beat it.",
                  validity=(_POSITIONAL,)),
    _culture_card("accuracy_change", "accuracy change over the edits", "a_last - a_0, a_k = (TP + TN) / N of step k,",
                  "section 3.3.1, Table 6 (the human side: HQS change base -> step 5)", version=2, bounded=(-1.0, 1.0),
                  proxy_for="ECB's change of expert human quality from the base to step 5 (Table 6)",
                  description="How much the chain's accuracy moved from the unedited base to the last step, one value "
                              "per chain (< 0: the edits lost culture the base had). Descriptive, never ranked: an "
                              "editor that returns its input unchanged gets exactly 0 and would top every editor "
                              "whose edits lose anything.",
                  chance="0 for a judge that ignores the image"),
    _culture_card("accuracy", "accuracy, mean over all steps", "(TP + TN) / N", "section 3.1, appendix A.2",
                  proxy_for="ECB's expert human quality score (HQS) and best / worst choices",
                  description="Share of the knowledge-grounded yes/no questions about each step's image that the "
                              "judge answers as expected (N counts ambiguous answers). " + _ALL_STEPS,
                  validity=(_POSITIONAL,)),
    _culture_card("precision", "precision", "TP / (TP + FP), 0 if undefined,", "appendix A.2",
                  proxy_for="ECB's expert human quality score",
                  description="Reported for auditing, as in ECB (appendix A.2: 'reported for auditing purposes'). "
                              + _ALL_STEPS),
    _culture_card("recall", "recall", "TP / (TP + FN), 0 if undefined,", "appendix A.2",
                  proxy_for="ECB's expert human quality score",
                  description="Reported for auditing, as in ECB (appendix A.2: 'reported for auditing purposes'). "
                              + _ALL_STEPS),
    _culture_card("f1", "F1", "2PR / (P + R), 0 if undefined,", "appendix A.2",
                  proxy_for="ECB's expert best / worst choices",
                  description="Also picks each chain's best and worst step (in the rows' detail); how often these "
                              "picks are the positional baseline is ecb.positional_match. Reported for auditing, as "
                              "in ECB. " + _ALL_STEPS,
                  validity=(_POSITIONAL,)),
    MetricCard("ecb.culture.ambiguous", FAMILY, "Culture-aware metric: ambiguous answers",
               "ambiguous answers / N over the image's questions (P(yes) + P(no) < min_answer_mass, or a tie)",
               "none", "[0, 1]", (JUDGE,), f"{SOURCE}, appendix A.2", version=2, unit="chain", bounded=(0.0, 1.0),
               description="Share of the questions the judge answered neither yes nor no. Diagnostic, never ranked: "
                           "ambiguous answers count against accuracy without showing in it." + _JUDGE),
    MetricCard("ecb.positional_match", FAMILY, "Culture-aware metric: picks equal to the positional baseline",
               "[0 in best] / #best x [last in worst] / #worst, best / worst = the chain's steps of highest / lowest "
               "F1", "none", "[0, 1]", (JUDGE,), f"{SOURCE}, Fig. 5; notes/004-blindspots.md 4.2", version=2,
               unit="chain", bounded=(0.0, 1.0), chance="1 / 30 for picks at random among 6 steps (best and worst distinct)",
               description="Share of chains whose F1 picks are the positional baseline (best = the base, worst = the "
                           "last step), ties broken at random; the detail splits it into best_is_base and "
                           "worst_is_last and gives F1 at the base and at the last step. Near 1, the metric's best / "
                           "worst agreement with humans is only position. A chain score, not an image's (hence not ecb.culture.*: "
                           "the ratings study correlates those with HQS per image)."),
    MetricCard("ecb.separability", FAMILY, "Country separability (T2I)",
               "1 - max_(b != c) h_cb, h = 2 cos(p_c, p_b)(1 - JSD_2(p_c, p_b)) / (cos + 1 - JSD_2), p = cluster "
               "proportions of k-means on PCA of CLIP image embeddings", "none", "[0, 1]", (CLIP,),
               f"{SOURCE}, section 4.1.1, eq. 1-3", version=3, unit="country",
               description="How distinct a group's text-to-image base images are from those of its nearest other "
                           "group (the six countries and the country-agnostic images; 0: the same visual modes in the "
                           "same proportions). The project's own statistic on ECB's proximity (K = 8 clusters and 50 "
                           "PCA dimensions are its choices, ECB states neither; one clustering seed), with no human "
                           "evidence of which way is better: descriptive, never ranked. The detail's p tests whether "
                           "the group is more distinct than when the labels are shuffled across the images "
                           "(one-sided permutation test, null_mean = the value shuffling alone gives); its ci is only "
                           "the bootstrap sampling range of the proportions (clusters fixed), biased toward distinct "
                           "(resampling lowers h) and widened to contain the value: read p, not the ci, for "
                           "'distinct'."),
    MetricCard("ecb.default_proximity", FAMILY, "Proximity to the country-agnostic images (T2I)",
               "h(p_c, p_agnostic), h = 2 cos (1 - JSD_2) / (cos + 1 - JSD_2) of the cluster proportions (eq. 1-3) of "
               "the country's and the country-agnostic prompts' base images", "none", "[0, 1]", (CLIP,),
               f"{SOURCE}, section 4.1.1 and Fig. 3", version=1, unit="country",
               description="How closely a country's images match what the model draws when the prompt names no "
                           "country (1: the same visual modes in the same proportions); the note default_country names "
                           "the closest, the country the model treats as the default (ECB's headline T2I finding: "
                           "the United States, h = 0.892 [0.844, 0.931] averaged over five models). Descriptive, never "
                           "ranked: ECB shows no human judgement of which value is better. The detail's ci is the "
                           "bootstrap sampling range of ecb.separability (clusters fixed)."),
    MetricCard("ecb.leaning", FAMILY, "Traditional-modern leaning (T2I)",
               "mean over the country's era-agnostic base images of cos(x, mu_trad(g)) - cos(x, mu_mod(g)), mu = "
               "centroids of the subcategory's traditional / modern base images", "none", "[-2, 2], typically +-0.1",
               (CLIP,), f"{SOURCE}, section 4.1.2, eq. 5-6", version=2, unit="country",
               description="Signed and descriptive, never ranked: > 0 leans traditional, < 0 modern; the detail "
                           "holds SE, mean cosines, p and its Benjamini-Hochberg q over ECB's 7 groups (the six countries and "
                           "the country-agnostic images). p tests "
                           "whether the country's mean differs from the pooled mean of all countries (two-sided "
                           "permutation test, labels shuffled within subcategories), not whether it differs from "
                           "0: lean is only the sign of the mean."),
)


register(Family(
    name=FAMILY,
    title="ECB: cultural bias in generation and iterative editing",
    description=("ECB generates a base image per country, category and era, then edits it five times with the same "
                 "instruction and asks whether the culture survives. Each step is scored by CLIPScore, an aesthetic "
                 "predictor, DreamSim drift, and a culture-aware metric: a vision-language judge answers yes/no "
                 "questions written from Wikipedia passages about the country. The base images, and images of the "
                 "same prompts with no country named, are also clustered to see which countries a model depicts "
                 "alike, which country it draws when none is named, and whether its era-agnostic images lean "
                 "traditional or modern."),
    papers={"paper": "https://arxiv.org/abs/2510.20042", "code": "https://github.com/cmubig/ECB",
            "data": "https://huggingface.co/datasets/seochan99/ecb-datasets"},
    prompt_sets=(PromptSetSpec(
        "ecb", score_ecb, tuple(m.name for m in METRICS), shard_unit=chain_id,
        units={"chain": multiloop_chain, "attribute-chain": attribute_chain, "country": country_unit}, slice_fields=("edit_step",),
        cross_slices=(("country", "edit_step"),)),),  # the per-step curves per country
    metrics=METRICS,
    options=EcbOptions,
))
