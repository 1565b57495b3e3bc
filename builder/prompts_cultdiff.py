"""The ``cultdiff`` prompt set: CultDiff's three templates (Bayramli et al., ACL 2025, arXiv 2502.08914, A.1).

    architecture  "A panoramic view of {landmark} in {country}, realistic"   country with article: "the United States"
    clothing      "An image of {clothes} from {country} clothing, realistic"  country as adjective: "Chinese"
    food          "An image of {food} from {country} cuisine, realistic"      country as adjective: "Azerbaijani"

CultDiff's hand-made artifact lists (10 countries x 3 categories x 50) are not released, so the
artifacts come from our knowledge base: landmarks -> architecture, art of sub-type clothing ->
clothing, cuisine -> food; other art sub-types have no CultDiff template. By default only CultDiff's
ten countries are built. One image per prompt, seed 0 (the paper's pair counts imply one image per
prompt per model; it states no seeds).
"""

from __future__ import annotations

from cultureboard.countries import CountryTable

from .prompt_common import consecutive_seeds, country_fields, make_prompt_id
from .prompt_sets import PromptSet

PROMPT_SET = "cultdiff"
SEED_SCHEME = "consecutive"

#: Azerbaijan, China, Ethiopia, Indonesia, Mexico, Pakistan, South Korea, Spain, United Kingdom, United States.
CULTDIFF_COUNTRIES = ("AZ", "CN", "ET", "ID", "MX", "PK", "KR", "ES", "GB", "US")

#: CultDiff category -> (template, which form of the country fills {country}).
TEMPLATES = {
    "architecture": ("A panoramic view of {landmark} in {country}, realistic", "name_in_sentence"),
    "clothing": ("An image of {clothes} from {country} clothing, realistic", "adjective"),
    "food": ("An image of {food} from {country} cuisine, realistic", "adjective"),
}
_SLOT = {"architecture": "landmark", "clothing": "clothes", "food": "food"}


def cultdiff_category(artifact: dict) -> str | None:
    """The CultDiff category of an artifact of our space, or None when CultDiff has no template for it."""
    concept = artifact.get("concept")
    if concept == "landmarks":
        return "architecture"
    if concept == "cuisine":
        return "food"
    if concept == "art" and artifact.get("subcategory") == "clothing":
        return "clothing"
    return None


def render(category: str, name: str, country) -> str:
    """The CultDiff prompt for one artifact name and country (a ``cultureboard.countries.Country``)."""
    template, form = TEMPLATES[category]
    return template.format(**{_SLOT[category]: name, "country": getattr(country, form)})


def build_cultdiff(
    artifacts: list[dict], countries: CountryTable, *, country_codes: tuple[str, ...] | None = CULTDIFF_COUNTRIES,
    images_per_prompt: int = 1,
) -> PromptSet:
    """Build ``cultdiff``: one prompt per artifact of a CultDiff category and country.

    ``country_codes=None`` keeps every country of ``artifacts``.
    """
    keep = {c.iso2 for c in countries.resolve(list(country_codes))} if country_codes is not None else None
    rows = []
    for artifact in artifacts:
        category = cultdiff_category(artifact)
        if category is None or (keep is not None and artifact["country"] not in keep):
            continue
        country = countries.by_iso(artifact["country"])
        rows.append({
            "prompt_id": make_prompt_id(PROMPT_SET, artifact["qid"], country.iso2),
            "prompt_set": PROMPT_SET, "text": render(category, artifact["name"], country), "negative_prompt": "",
            "artifact_id": artifact["qid"], "artifact_name": artifact["name"], **country_fields(country),
            "category": category, "subcategory": None, "era": artifact.get("era"), "level": None, "kind": "t2i",
            "template": TEMPLATES[category][0], "images_per_prompt": images_per_prompt,
            "seeds": consecutive_seeds(0, images_per_prompt), "seed_scheme": SEED_SCHEME,
        })
    return PromptSet(
        name=PROMPT_SET, version="1.0", family="cultdiff",
        description="CultDiff: architecture, clothing and food prompts for ten countries, compared with real "
                    "reference images (image-image similarity, CultDiff-S) and human ratings.",
        rows=rows,
        notes=[
            "The artifacts come from our knowledge base: CultDiff's hand-compiled lists (50 per country and "
            "category, from Wikipedia, heritage sites and TripAdvisor) and its reference images are unreleased.",
            "Mapping: landmarks -> architecture, art of sub-type clothing -> clothing, cuisine -> food.",
            "Templates are CultDiff A.1 verbatim (no final period; section 3.1 writes 'realistic.'). Architecture "
            "writes the country with its article ('in the United States'), clothing and food its adjective.",
            "Artifact names are Wikidata labels, without the article CultDiff's lists sometimes write "
            "('the Empire State Building').",
            f"{images_per_prompt} image per prompt, seed 0: CultDiff's pair counts imply one image per prompt per "
            "model; it states no seeds." if images_per_prompt == 1 else
            f"{images_per_prompt} images per prompt, seeds 0..{images_per_prompt - 1} (CultDiff used one).",
            "Countries: " + (", ".join(sorted(keep)) if keep is not None else "every country of the artifact space")
            + ".",
        ],
    )
