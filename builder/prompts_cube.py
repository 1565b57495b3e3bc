"""The CUBE prompt sets (Kannen et al., NeurIPS 2024 D&B, arXiv 2407.06863), from our artifact space.

``cube-awareness`` (section 3.2, Table 13): one prompt per artifact, from the template of its concept
(cuisine, landmarks) or art sub-type (clothing, painting, performance, folk art), with Table 13's
negative prompt. ``level`` is null.

``cube-diversity`` (section 5, appendices J, K, M): under-specified prompts, five rephrasings per
concept. ``level`` ``global`` prompts name only the concept ("Produce a high quality image of a
dish.") and carry no country; ``within-culture`` prompts name the concept and one country ("Image of
a dish from Brazilian cuisine."). ``artifact_id`` is null: the evaluator maps each image to the
artifact it shows.

The templates, rephrasings, negative prompt and the eight CUBE countries are data, in
``data/cube_prompts.yaml``. The released CUBE-1K prompts are imported as they are by
``builder.importers.import_cube_1k``.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml

from cultureboard.countries import Country, CountryTable

from .prompt_common import consecutive_seeds, country_fields, indefinite_article, make_prompt_id
from .prompt_sets import PromptSet

TEMPLATES_PATH = Path(__file__).parent / "data" / "cube_prompts.yaml"
SEED_SCHEME = "consecutive"
_NO_COUNTRY = dict.fromkeys(("country", "country_name", "continent", "region_group"))  # prompts naming no country
CONCEPTS = ("cuisine", "landmarks", "art")


@functools.cache
def load_templates() -> dict[str, Any]:
    """``data/cube_prompts.yaml`` as parsed (shared; do not mutate)."""
    return yaml.safe_load(TEMPLATES_PATH.read_text(encoding="utf-8"))


def slot_values(country: Country, name: str = "") -> dict[str, str]:
    """The values of the template placeholders for one country (and artifact name)."""
    return {
        "name": name, "adjective": country.adjective, "country": country.name_in_sentence,
        "Article": indefinite_article(name).capitalize() or "A",
    }


def awareness_template(concept: str, subcategory: str | None, name: str) -> str | None:
    """The Table 13 template for an artifact, or None when its concept or art sub-type has none.

    When the name already ends with the word the template puts after it ("baroque painting"), that
    word is dropped: "A baroque painting from Italy.", not "... painting painting ..." (a defect of
    three CUBE-1K prompts)."""
    spec = load_templates()["awareness"].get(concept)
    if spec is not None and "template" not in spec:
        spec = spec.get(subcategory)
    if spec is None:
        return None
    template, noun = spec["template"], spec.get("noun")
    if noun and name.split() and name.split()[-1].casefold() == noun:
        template = template.replace("{name} " + noun, "{name}")
    return template


def _row(prompt_set, prompt_id, text, template, images, *, country=None, artifact=None, category,
         subcategory=None, level=None):
    return {
        "prompt_id": prompt_id, "prompt_set": prompt_set, "text": text,
        "negative_prompt": load_templates()["negative_prompt"],
        "artifact_id": artifact["qid"] if artifact else None,
        "artifact_name": artifact["name"] if artifact else None,
        **(country_fields(country) if country else _NO_COUNTRY),
        "category": category, "subcategory": subcategory, "era": artifact.get("era") if artifact else None,
        "level": level, "kind": "t2i", "template": template,
        "images_per_prompt": images, "seeds": consecutive_seeds(0, images), "seed_scheme": SEED_SCHEME,
    }


def build_awareness(artifacts: list[dict], countries: CountryTable, *, images_per_prompt: int = 4) -> PromptSet:
    """Build ``cube-awareness``: one Table 13 prompt per artifact of a CUBE concept.

    ``images_per_prompt`` defaults to 4 (seeds 0..3): CUBE does not say how many images per prompt it
    generated (its raters scored one image per prompt); 4 is one API batch and gives a per-prompt spread.
    Artifacts of other concepts, and art artifacts without a known sub-type, are left out and counted
    in the notes.
    """
    rows, skipped = [], 0
    for artifact in artifacts:
        concept, sub = artifact.get("concept"), artifact.get("subcategory")
        template = awareness_template(concept, sub, artifact["name"]) if concept in CONCEPTS else None
        if template is None:
            skipped += 1
            continue
        country = countries.by_iso(artifact["country"])
        rows.append(_row(
            "cube-awareness", make_prompt_id("cube-awareness", artifact["qid"], country.iso2),
            template.format(**slot_values(country, artifact["name"])), template, images_per_prompt,
            country=country, artifact=artifact, category=concept, subcategory=sub if concept == "art" else None,
        ))
    notes = [
        "Templates are CUBE Table 13's. Table 13 writes <country_name> for cuisine too; we use the adjective "
        "('from Brazilian cuisine'), as the released CUBE-1K does. Countries after a preposition take their "
        "article ('in the United States'); CUBE-1K writes 'in United States'.",
        "CUBE-1K appends ', realistic' and drops the final period; these prompts follow Table 13 instead.",
        "Folk art has no Table 13 template; ours is CUBE-1K's wording for its folk-art rows in Table 13's style: "
        "'Image of {name} art from {country}.'. A name that already ends in 'painting' or 'art' does not repeat "
        "the word. 'A'/'An' before a painting style is chosen by spelling (Table 13 always writes 'A').",
        "The negative prompt is Table 13's, verbatim, for every concept, although it lists 'people, human, man, "
        "woman' and 'painting', which clothing, performance and painting prompts ask for.",
        f"{images_per_prompt} images per prompt (seeds 0..{images_per_prompt - 1}): CUBE does not state it.",
    ]
    if skipped:
        notes.append(f"{skipped} artifacts are not cuisine, landmarks or an art sub-type with a template and have "
                     "no prompt.")
    return PromptSet(
        name="cube-awareness", version="1.0", family="cube",
        description="CUBE cultural awareness: one prompt per artifact (cuisine, landmarks, art) from Table 13's "
                    "templates; rated for faithfulness, cultural relevance and realism.",
        rows=rows, notes=notes,
    )


def build_diversity(
    artifacts: list[dict], countries: CountryTable, *, country_codes: list[str] | None = None,
    images_per_prompt: int = 8,
) -> PromptSet:
    """Build ``cube-diversity``: 5 global rephrasings per concept, and 5 within-culture rephrasings per
    (country, concept).

    Countries: ``country_codes`` if given, else those of the cuisine, landmarks and art ``artifacts``, else
    CUBE's eight.
    ``images_per_prompt`` defaults to 8 (seeds 0..7), one batch of CUBE J.1; CUBE's full protocol is ten
    such batches, 80 seeds (0..79) per prompt and 400 images per concept: pass ``images_per_prompt=80``.
    """
    data = load_templates()
    present = sorted({a["country"] for a in artifacts if a.get("country") and a.get("concept") in CONCEPTS})
    codes = country_codes or present or data["countries"]
    chosen = countries.resolve(list(codes))
    rows = []
    for concept, variants in data["diversity"]["global"].items():
        sub = "clothing" if concept == "art" else None
        for k, text in enumerate(variants, start=1):
            rows.append(_row(
                "cube-diversity", make_prompt_id("cube-diversity", "global", concept, f"v{k}"), text, text,
                images_per_prompt, category=concept, subcategory=sub, level="global",
            ))
    for country in chosen:
        for concept, variants in data["diversity"]["within-culture"].items():
            sub = "clothing" if concept == "art" else None
            for k, template in enumerate(variants, start=1):
                rows.append(_row(
                    "cube-diversity", make_prompt_id("cube-diversity", "within-culture", country.iso2, concept, f"v{k}"),
                    template.format(**slot_values(country)), template, images_per_prompt,
                    country=country, category=concept, subcategory=sub, level="within-culture",
                ))
    return PromptSet(
        name="cube-diversity", version="1.0", family="cube",
        description="CUBE cultural diversity: under-specified prompts, global (concept only) and within-culture "
                    "(concept and country), five rephrasings each; scored by quality-weighted Vendi over the "
                    "artifacts the images are mapped to.",
        rows=rows,
        notes=[
            "CUBE's five rephrasings per prompt were written by GPT-4-Turbo and are not released. Quoted from the "
            "paper: 'Produce a high quality image of a dish.', 'High definition photo of a monument.' (Figure 8), "
            "'Image of monuments.', 'Image of a Nigerian dish' (J.1), 'Image of tourist landmarks' (section 5), "
            "'Image of traditional clothing.' (J), 'Image of a dish from Brazilian cuisine.' (K). Every other "
            "rephrasing is ours.",
            "Art prompts ask for traditional clothing (subcategory 'clothing'), the paper's only art example.",
            f"{images_per_prompt} images per prompt, consecutive seeds from 0 (J.1: batches of 8). The paper's full "
            "protocol uses 80 seeds per prompt (0..79), i.e. 400 images per concept; diversity is then averaged "
            "over 50 resamplings.",
            "The negative prompt is Table 13's: J.2.1 says negative prompting was used to get a single dominant "
            "artifact per image, without giving it.",
            "Within-culture countries: " + ", ".join(c.iso2 for c in chosen) + ".",
        ],
    )
