r"""Language parity: a prompt set's native-language variant (``<base>-native``), scored like its base set, and the
gap a model shows between a prompt in a country's own language and the same prompt in English.

A native variant's rows (:mod:`cultureboard.records`: ``language``, ``translation_of``) are the base set's
English rows of each artifact (``language`` "en") and one row per (English row, native language) whose
``translation_of`` names the English row it translates (same artifact, country and seeds).

* **Scorers read English.** Before the base set's scoring function runs, every native row's ``text`` is replaced
  by its English row's text (:func:`in_english`, the one place this happens), so an image-text scorer compares
  each image with the English prompt: the gap measures the images, not the scorer's skill in Yoruba. Generation
  reads the row's own text (the submission's images).
* **The gap.** For every metric m of the base set (one value per image), ``<m>.parity`` has one row per native
  prompt n (its unit, :data:`PAIR_UNIT`), whose value is the paired difference

  .. math:: d_n = \bar m(n) - \bar m(e(n)),

  :math:`\bar m(p)` the mean of m over prompt p's scored images and e(n) the English prompt n translates. The
  summary's value is the mean of :math:`d_n` over the pairs of a slice (country, language, ...), and its
  bootstrap resamples pairs, each with both of its sides (the paired bootstrap), clustered by ``translation_of``:
  the native rows of one English row (Nigeria's ha, yo and ig) share that row's images, so they are drawn
  together (two stages: English rows, then their pairs), and the sign-flip test flips them together. A bounded
  and discrete base metric's gap is bounded too (in [low - high, high - low]) and gets the Wilson interval over
  the English rows instead. Each entry is tested against 0 (``p``) and Benjamini-Hochberg adjusted across the
  slices of its type (``p_adjusted``: across countries on the country slices; :mod:`..results.aggregate`). Direction ``target`` 0: the project's own
  measure (same artifacts, same seeds: no gap is the definitional ideal).
* **Refusals count.** A native prompt whose every image the model declared refused has no gap row and is counted
  in the slice's ``n_refused`` (the aggregate's rule); a pair whose English prompt was refused, or one side of
  which has no scored image (every row flagged), is a flagged row saying which. Per language, each parity
  metric's notes (key ``counts``, summed over shards) hold ``<language> pairs``, ``<language> refused`` (native
  prompts fully refused) and ``<language> English refused``, so a language the model refuses entirely is shown.

Only metrics with one row per image have a gap (the native variants are of image-level sets).
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from typing import Mapping

import numpy as np

from cultureboard.errors import CultureboardError

from .context import Context, score_row
from .registry import IMAGE_UNIT, MetricCard, PromptSetSpec

SUFFIX = "parity"
NATIVE = "native"
#: The unit of a gap row: the native prompt of a (native, English) pair.
PAIR_UNIT = "pair"
#: Bumped when the gap's computation changes; a parity card's version is ``100 * base version + PARITY_VERSION``
#: so that a change of either changes it. 2: pairs clustered by their English row; Wilson for bounded metrics.
PARITY_VERSION = 2
ENGLISH_REFUSED = "the English prompt of the pair was refused"
#: What the notes of every metric of a native variant say about the text its scorers read.
SCORER_TEXT = ("native-language rows are scored against the English text of the prompt they translate "
               "(translation_of), so image-text scores measure the images, not the scorer's languages")
EVIDENCE = ("The project's own measure, not a paper's: a native prompt and the English prompt it translates ask for "
            "the same artifact with the same seeds, so a model that serves both languages alike has no gap; 0 is "
            "the definitional ideal, and |gap| is ranked (either sign is a language served worse or better).")


def parity_name(metric: str) -> str:
    return f"{metric}.{SUFFIX}"


def is_parity(metric: str) -> bool:
    return metric.endswith("." + SUFFIX)


def parity_base(metric: str) -> str:
    """The base metric of the gap ``metric`` (the inverse of :func:`parity_name`)."""
    return metric.removesuffix("." + SUFFIX)


def native_name(prompt_set: str) -> str:
    return f"{prompt_set}-{NATIVE}"


def parity_card(base: MetricCard) -> MetricCard:
    """The card of ``base``'s gap, native minus English (module docstring)."""
    if base.unit != IMAGE_UNIT:
        raise ValueError(f"metric {base.name}: a language-parity gap needs one row per image, not per {base.unit}")
    return MetricCard(
        parity_name(base.name), base.family, f"Language parity gap: {base.title}",
        f"mean over native prompts n of [mean over n's images of {base.name} - mean over the images of the English "
        f"prompt n translates]; image-text scorers read the English text for both",
        "target", f"a difference of two values in {base.range}", base.scorers,
        f"the project's own measure (native minus English) of {base.source}",
        version=100 * base.version + PARITY_VERSION, unit=PAIR_UNIT, target=0.0, direction_evidence=EVIDENCE,
        cluster="translation_of", bounded=None if base.bounded is None else (
            base.bounded[0] - base.bounded[1], base.bounded[1] - base.bounded[0]),
        description=(f"{base.title} on prompts in the country's own language minus the same on their English "
                     "originals (same artifacts, same seeds), with a paired bootstrap CI over the pairs, those of one "
                     "English prompt drawn together; 0 is no gap. "
                     "Scorers that compare an image with text read the English prompt for both, so the gap is "
                     "about the images, not the scorer's languages. A native prompt the model refused is counted "
                     "(refused), not dropped."))


def native_variant(base: PromptSetSpec, cards: Mapping[str, MetricCard]) -> tuple[PromptSetSpec, tuple[MetricCard, ...]]:
    """The spec that scores ``<base>-native`` (the base's metrics on English-text scorers, their gaps, a
    ``language`` slice) and the gaps' cards. An English row and its translations are one shard unit."""
    gaps = tuple(parity_card(cards[m]) for m in base.metrics)

    def score(ctx: Context) -> list[dict]:
        in_english(ctx)
        rows = base.score(ctx)
        for metric in base.metrics:
            ctx.note(metric, "scorer_text", SCORER_TEXT)
        counts = refusal_counts(ctx)
        for card in gaps:
            ctx.note(card.name, "counts", counts)
        return rows + pair_rows(rows, ctx.prompts, ctx.refused, base.metrics)

    spec = PromptSetSpec(native_name(base.name), score, base.metrics + tuple(c.name for c in gaps),
                         shard_unit=lambda p: p.get("translation_of") or p["prompt_id"],
                         units={**base.units, PAIR_UNIT: lambda p: p["prompt_id"] if p.get("translation_of") else None},
                         slice_fields=base.slice_fields + ("language",), cross_slices=base.cross_slices)
    return spec, gaps


def in_english(ctx: Context) -> None:
    """Give every native row of ``ctx`` (its prompts, images and refusals) its English row's ``text``."""
    english = {}
    for pid, p in ctx.prompts.items():
        source = p.get("translation_of")
        if source is not None and source not in ctx.prompts:
            raise CultureboardError(ctx.dataset, f"prompt {pid} translates {source}, which is not in its prompt set",
                                    "rebuild the dataset (a native row's translation_of names an English row of "
                                    "the same set)")
        english[pid] = {**p, "text": ctx.prompts[source]["text"]} if source is not None else p
    ctx.prompts = english
    ctx.images = [dataclasses.replace(im, prompt=english[im.prompt_id]) for im in ctx.images]
    ctx.all_images = [dataclasses.replace(im, prompt=english[im.prompt_id]) for im in ctx.all_images]
    ctx.refused = [{**r, "prompt": english[r["prompt_id"]]} for r in ctx.refused]


def fully_refused(refused: list[dict], prompts: Mapping[str, dict]) -> set[str]:
    """The prompts every image of which the model declared refused."""
    counted = Counter(r["prompt_id"] for r in refused)
    return {pid for pid, n in counted.items() if n >= prompts[pid]["images_per_prompt"]}


def refusal_counts(ctx: Context) -> dict[str, int]:
    """Per language of the native prompts this run holds (scored or refused): ``<lang> pairs``, ``<lang>
    refused`` (native prompts fully refused), ``<lang> English refused`` (their English prompt fully refused)."""
    held = {im.prompt_id for im in ctx.images} | {r["prompt_id"] for r in ctx.refused}
    gone = fully_refused(ctx.refused, ctx.prompts)
    counts: Counter = Counter()
    for pid in held:
        p = ctx.prompts[pid]
        if p.get("translation_of"):
            lang = p.get("language") or "unknown"
            counts[f"{lang} pairs"] += 1
            counts[f"{lang} refused"] += pid in gone
            counts[f"{lang} English refused"] += p["translation_of"] in gone
    return dict(sorted(counts.items()))


def pair_rows(rows: list[dict], prompts: Mapping[str, dict], refused: list[dict], metrics) -> list[dict]:
    """The gap rows of ``metrics`` from their per-image score ``rows`` (module docstring): one per native prompt
    with rows (scored or flagged) or refusals, except a fully refused one (counted by the aggregate instead)."""
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    flags: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for r in rows:
        if r["prompt_id"] is None:
            continue
        if r["flag"] is None:
            values[r["metric"], r["prompt_id"]].append(r["value"])
        else:
            flags[r["metric"], r["prompt_id"]][r["flag"]] += 1
    gone = fully_refused(refused, prompts)
    held = {r["prompt_id"] for r in rows if r["prompt_id"] is not None} | {r["prompt_id"] for r in refused}
    natives = sorted(pid for pid in held - gone if prompts[pid].get("translation_of"))
    out = []
    for metric in metrics:
        name = parity_name(metric)
        for n in natives:
            e = prompts[n]["translation_of"]
            detail = {"translation_of": e, "language": prompts[n].get("language")}
            if e in gone:
                out.append(score_row(name, None, unit_id=n, slices=prompts[n], detail=detail, flag=ENGLISH_REFUSED))
                continue
            sides = {"native": values.get((metric, n), []), "English": values.get((metric, e), [])}
            empty = [side for side, v in sides.items() if not v]
            if empty:
                why = {side: dict(flags.get((metric, pid), {})) for side, pid in (("native", n), ("English", e))}
                out.append(score_row(name, None, unit_id=n, slices=prompts[n], detail={**detail, "flags": why},
                                     flag=f"no {metric} score for the {' or '.join(empty)} prompt"))
                continue
            native, english = float(np.mean(sides["native"])), float(np.mean(sides["English"]))
            out.append(score_row(name, native - english, unit_id=n, slices=prompts[n],
                                 detail={**detail, "native": native, "english": english,
                                         "images": len(sides["native"]) + len(sides["English"])}))
    return out
