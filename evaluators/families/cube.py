"""CUBE (Kannen et al., NeurIPS 2024 D&B): cultural awareness and cultural diversity.

Awareness (``cube-awareness``, section 4): the paper measures it with human ratings (see
``ratings.py``); these are the automatic proxies, each validated against the ratings where they exist:

- ``cube.faithfulness``: cos(f_img(x), f_txt(prompt)) with the alignment scorer (SigLIP 2).
- ``cube.cultural_relevance``: zero-shot recognition of the target country among the prompt set's
  countries: softmax over countries c of ``logit_scale * cos(f_img(x), f_txt("An image from c."))``,
  the probability of the prompt's country (the CuRe P(r) scoring text).
- ``cube.country_top1``: 1 when that most probable country is the prompt's country.
- ``cube.quality``: HPS v2.1 = cos(f_img(x), f_txt(prompt)) of the HPS model, the quality s(x) of CUBE 5.1.2.

Diversity (``cube-diversity``, section 5, appendices J, K): each image is mapped to its closest
artifact of the artifact space by zero-shot retrieval over artifact names ("An image of {name}.")
with the multilingual SigLIP scorer (``cube.retrieval``: the score of the match, its labels in
``detail``), giving (continent, country, artifact). With reference images (``references``: a folder of
``<qid>.<ext>`` files, e.g. the artifacts' Wikidata P18 images fetched from Commons), an artifact that
has one is scored by the mean of the image-text and image-image cosines, as CUBE refines retrieval
with reference images (J.2.1); the others by the image-text cosine alone. The images of each pool (the prompts of one
level x concept x country: CUBE pools its 5 rephrasings) are scored with the quality-weighted,
size-normalised Vendi score (eq. 3) of the kernel w1 [same continent] + w2 [same country] +
w3 [same artifact], for the five presets of J.2.2, over ``repetitions`` random groups of 8 images
(CUBE: 50): ``cube.qvs.<preset>`` (quality s = HPS clipped to [0, 1]) and ``cube.vs.<preset>``
(VS/N, diversity alone, CUBE Table 4). Higher is more diverse; range [0, 1].
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from cultureboard.countries import load_countries
from cultureboard.errors import CultureboardError
from cultureboard.provenance import file_sha256

from ..engine.context import Context, Image, Metric, score_row
from .vendi import CUBE_KERNEL_PRESETS, grouped_qvendi

FAMILY = "cube"
ALIGNMENT, QUALITY, RETRIEVAL = "siglip2-so400m", "hpsv2.1", "msiglip"
SOURCE = "Kannen et al., Beyond Aesthetics: Cultural Competence in Text-to-Image Models, NeurIPS 2024 D&B"
GROUP_SIZE = 8
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".webp"}

METRICS = [
    Metric("cube.faithfulness", FAMILY, "Faithfulness (image-text alignment)", "cos(f_img(x), f_txt(prompt))",
           "higher", "[-1, 1]", ALIGNMENT, SOURCE + ", section 4 (automatic proxy)"),
    Metric("cube.cultural_relevance", FAMILY, "Cultural relevance (zero-shot country)",
           "softmax_c(s * cos(f_img(x), f_txt('An image from c.')))[prompt country]", "higher", "[0, 1]",
           ALIGNMENT, SOURCE + ", section 4 (automatic proxy)"),
    Metric("cube.country_top1", FAMILY, "Country recognised (top-1)",
           "1[argmax_c cos(f_img(x), f_txt('An image from c.')) = prompt country]", "higher", "{0, 1}",
           ALIGNMENT, SOURCE + ", section 4 (automatic proxy)"),
    Metric("cube.quality", FAMILY, "Quality (HPS v2.1)", "cos(f_img(x), f_txt(prompt)) of the HPS v2.1 model",
           "higher", "[-1, 1], typically 0.2-0.35", QUALITY, SOURCE + ", section 5.1.2"),
    Metric("cube.retrieval", FAMILY, "Artifact retrieval score",
           "max_a cos(f_img(x), f_txt('An image of a.')), averaged with cos(f_img(x), f_img(ref_a)) where a has a reference image",
           "higher", "[-1, 1]", RETRIEVAL, SOURCE + ", appendix J.2.1"),
    *[Metric(f"cube.qvs.{preset}", FAMILY, f"Cultural diversity qVS, {preset} kernel w={w}",
             "mean over groups of N = 8 (or the whole pool if smaller): (1/N sum s(x_i)) * VS_1(X; w1 k_continent + "
             "w2 k_country + w3 k_artifact) / N",
             "higher", "[0, 1]", RETRIEVAL, SOURCE + ", eq. 3 and appendix J.2.2", unit="pool")
      for preset, w in CUBE_KERNEL_PRESETS.items()],
    *[Metric(f"cube.vs.{preset}", FAMILY, f"Cultural diversity VS/N, {preset} kernel w={w}",
             "mean over groups of N = 8 (or the whole pool if smaller): VS_1(X; w1 k_continent + w2 k_country + "
             "w3 k_artifact) / N", "higher", "[1/N, 1]", RETRIEVAL, SOURCE + ", Table 4", unit="pool")
      for preset, w in CUBE_KERNEL_PRESETS.items()],
]


def _cosines(images: list[Image], img: dict, txt: dict, text_of) -> np.ndarray:
    return np.array([float(img[im.sha256] @ txt[text_of(im)]) for im in images])


def _quality(ctx: Context) -> dict[str, float]:
    img = ctx.image_embeddings(QUALITY)
    txt = ctx.text_embeddings(QUALITY, [im.prompt["text"] for im in ctx.images])
    return {im.sha256 + im.prompt_id: float(img[im.sha256] @ txt[im.prompt["text"]]) for im in ctx.images}


def score_awareness(ctx: Context) -> list[dict]:
    rows = []
    img = ctx.image_embeddings(ALIGNMENT)
    txt = ctx.text_embeddings(ALIGNMENT, [im.prompt["text"] for im in ctx.images])
    for im, value in zip(ctx.images, _cosines(ctx.images, img, txt, lambda im: im.prompt["text"])):
        rows.append(score_row("cube.faithfulness", value, im))

    table = load_countries()
    codes = sorted({p["country"] for p in ctx.prompts.values() if p.get("country")})
    if not codes:  # a set whose prompts name no country: no cultural relevance to measure
        return rows + [score_row("cube.quality", v, im) for im, v in zip(ctx.images, _quality_values(ctx))]
    phrases = [f"An image from {table.by_iso(c).name_in_sentence}." for c in codes]
    country_txt = ctx.text_embeddings(ALIGNMENT, phrases)
    T = np.stack([country_txt[p] for p in phrases])
    scale = ctx.load(ALIGNMENT).logit_scale or 100.0
    for im in ctx.images:
        if not im.prompt.get("country"):
            continue
        logits = scale * (T @ img[im.sha256])
        p = np.exp(logits - logits.max())
        p /= p.sum()
        target = codes.index(im.prompt["country"])
        rows.append(score_row("cube.cultural_relevance", p[target], im))
        rows.append(score_row("cube.country_top1", float(np.argmax(p) == target), im))

    return rows + [score_row("cube.quality", v, im) for im, v in zip(ctx.images, _quality_values(ctx))]


def _quality_values(ctx: Context) -> list[float]:
    quality = _quality(ctx)
    return [quality[im.sha256 + im.prompt_id] for im in ctx.images]


def _artifact_space(ctx: Context) -> list[dict]:
    shards = sorted((ctx.dataset / "data" / "artifacts").glob("*.parquet"))
    if not shards:
        raise CultureboardError(ctx.dataset, "has no artifacts config, which cube-diversity maps images to",
                                "evaluate against the dataset folder that `cultureboard build` wrote")
    return [r for s in shards for r in pq.read_table(s).to_pylist()]


def _reference_embeddings(ctx: Context) -> dict[str, np.ndarray]:
    """{qid: embedding} of the reference images in ``ctx.options["references"]`` (none without it)."""
    folder = ctx.options.get("references")
    if not folder:
        return {}
    files = {p.stem: p for p in sorted(Path(folder).iterdir()) if p.suffix.lower() in IMAGE_SUFFIXES}
    if not files:
        raise CultureboardError(folder, "holds no reference images", "name them <qid>.jpg / .png / .webp")
    hashes = {qid: file_sha256(path) for qid, path in files.items()}
    vectors = ctx.cache.embed_images(ctx.load(RETRIEVAL), [(hashes[q], files[q]) for q in files])
    return {qid: vectors[h] for qid, h in hashes.items()}


def score_diversity(ctx: Context) -> list[dict]:
    rows = []
    table = load_countries()
    space = _artifact_space(ctx)
    img = ctx.image_embeddings(RETRIEVAL)
    references = _reference_embeddings(ctx)
    candidates: dict[tuple, tuple[list[dict], np.ndarray]] = {}  # (concept, subcategory) -> artifacts, name embeddings
    mapped: dict[str, dict] = {}
    for im in ctx.images:
        key = (im.prompt["category"], im.prompt.get("subcategory"))
        if key not in candidates:
            pool = [a for a in space if a["concept"] == key[0] and (key[1] is None or a["subcategory"] == key[1])]
            pool = pool or [a for a in space if a["concept"] == key[0]]
            if not pool:
                raise CultureboardError(ctx.dataset, f"has no artifact of concept {key[0]!r} to map images to",
                                        "build the dataset with that concept")
            texts = [f"An image of {a['name']}." for a in pool]
            txt = ctx.text_embeddings(RETRIEVAL, texts)
            candidates[key] = (pool, np.stack([txt[t] for t in texts]))
        arts, names = candidates[key]
        sims = names @ img[im.sha256]
        for i, a in enumerate(arts):
            if a["qid"] in references:
                sims[i] = (sims[i] + references[a["qid"]] @ img[im.sha256]) / 2
        best = arts[int(np.argmax(sims))]
        label = {"artifact": best["qid"], "name": best["name"], "country": best["country"],
                 "continent": table.by_iso(best["country"]).continent}
        mapped[im.sha256 + im.prompt_id] = label
        rows.append(score_row("cube.retrieval", float(sims.max()), im, detail=json.dumps(label, ensure_ascii=False)))

    quality = _quality(ctx)
    rows += [score_row("cube.quality", quality[im.sha256 + im.prompt_id], im) for im in ctx.images]
    pools: dict[str, list[Image]] = defaultdict(list)
    for im in ctx.images:
        pools[pool_id(im.prompt)].append(im)
    repetitions = int(ctx.options.get("repetitions", 50))
    for pid, members in sorted(pools.items()):
        members.sort(key=lambda im: (im.prompt_id, im.sample_idx))
        labels = [mapped[im.sha256 + im.prompt_id] for im in members]
        s = np.clip([quality[im.sha256 + im.prompt_id] for im in members], 0.0, 1.0)
        size = min(GROUP_SIZE, len(members))
        args = ([lab["continent"] for lab in labels], [lab["country"] for lab in labels], [lab["artifact"] for lab in labels])
        slices = {**members[0].prompt, "era": None}
        for preset in CUBE_KERNEL_PRESETS:
            for metric, weights in ((f"cube.qvs.{preset}", s), (f"cube.vs.{preset}", np.ones(len(members)))):
                r = grouped_qvendi(*args, weights, w=preset, size=size, repetitions=repetitions, seed=ctx.seed)
                detail = json.dumps({"std": r.std, "images": r.n, "group_size": size, "repetitions": repetitions})
                rows.append(score_row(metric, r.mean, unit_id=pid, slices=slices, detail=detail))
    return rows


def pool_id(prompt: dict) -> str:
    """The diversity pool of a prompt: its set, level, concept and country (CUBE pools the rephrasings)."""
    parts = [prompt["prompt_set"], prompt.get("level") or "all", prompt["category"], prompt.get("country") or "global"]
    return "/".join(parts) + "/pool"


#: prompt set -> (scoring function, unit of sharding: prompt -> key that must stay in one shard)
FAMILIES = {
    "cube-awareness": (score_awareness, lambda prompt: prompt["prompt_id"]),
    "cube-diversity": (score_diversity, pool_id),
}
