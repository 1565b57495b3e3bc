"""The ``cultivate`` prompt set: social activities x countries (CULTIVate, Malakouti et al. 2025).

Every (country, category) pair gets one generic prompt whose subcategory is the category name (as
in the authors' repo), then its specific activities: the country's own ones for multi-variant
categories, the shared settings for setting-based ones (indoor/outdoor, home/restaurant), none for
single-variant ones (wedding, funeral). The activities come from ``data/cultivate_activities.yaml``,
a catalogue written for this project; pass another one from :func:`load_activities` to extend it.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import yaml

from cultureboard.countries import CountryTable
from cultureboard.errors import CultureboardError
from cultureboard.naming import slug

from .prompt_common import consecutive_seeds, country_fields, make_prompt_id
from .prompt_sets import PromptSet

TEMPLATE = "A photorealistic photo of {activity} in {country}."
IMAGES_PER_PROMPT = 10
SEED_BASE = 42  # the authors' seeds for open models: 42 + i, i = 0..9
CATEGORY_TYPES = ("multi-variant", "setting-based", "single-variant")
PACKAGED = "data/cultivate_activities.yaml"


def load_activities(path: str | Path | None = None) -> dict:
    """Read and check an activity catalogue (the packaged one when ``path`` is None).

    The YAML has ``categories`` (name -> ``category_type``, ``generic`` phrase and, for
    setting-based ones, the shared ``activities``) and ``countries`` (ISO code -> multi-variant
    category -> list of ``{id, phrase}``).
    """
    if path is None:
        source = f"cultureboard/builder/{PACKAGED}"
        text = resources.files("cultureboard.builder").joinpath(PACKAGED).read_text(encoding="utf-8")
    else:
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as e:
            raise CultureboardError(source, f"cannot be read ({e.strerror})", "give the path of a YAML file") from None
    try:
        catalogue = yaml.safe_load(text)
        _check(catalogue)
    except (yaml.YAMLError, ValueError) as e:
        raise CultureboardError(
            source, f"is not a valid activity catalogue: {e}", f"follow the layout of the packaged {PACKAGED}"
        ) from None
    return catalogue


def _check(catalogue) -> None:
    """Raise ValueError naming the first structural problem of a catalogue."""
    if not isinstance(catalogue, dict) or not {"categories", "countries"} <= set(catalogue):
        raise ValueError("it needs `categories` and `countries` mappings")
    multi = []
    for name, spec in catalogue["categories"].items():
        kind = spec.get("category_type") if isinstance(spec, dict) else None
        if kind not in CATEGORY_TYPES or not spec.get("generic"):
            raise ValueError(f"category {name!r} needs a `generic` phrase and a category_type in {CATEGORY_TYPES}")
        if (kind == "setting-based") != bool(spec.get("activities")):
            raise ValueError(f"category {name!r}: shared `activities` belong to setting-based categories only")
        if kind == "setting-based":
            _check_activities(spec["activities"], name, f"category {name!r}")
        elif kind == "multi-variant":
            multi.append(name)
    for code, own in catalogue["countries"].items():
        if not isinstance(own, dict) or sorted(own) != sorted(multi):
            raise ValueError(f"country {code!r} must list activities for exactly the multi-variant categories {multi}")
        for category, activities in own.items():
            _check_activities(activities, category, f"country {code!r}, category {category!r}")


def _check_activities(activities, category: str, where: str) -> None:
    """Each activity is ``{id: slug, phrase: text}``; ids are unique and are not the category name."""
    if not isinstance(activities, list) or not activities:
        raise ValueError(f"{where}: needs a non-empty list of activities")
    for a in activities:
        if not isinstance(a, dict) or not a.get("phrase") or slug(a.get("id", "")) != a.get("id"):
            raise ValueError(f"{where}: activity {a!r} needs a slug `id` and a `phrase`")
    ids = [a["id"] for a in activities]
    if len(set(ids)) != len(ids) or category in ids:
        raise ValueError(f"{where}: activity ids must be unique and differ from the category name")


def build_cultivate(artifacts: list[dict], countries: CountryTable, activities: dict | None = None) -> PromptSet:
    """Render ``TEMPLATE`` for every activity of every catalogue country (``artifacts`` is unused)."""
    catalogue = activities if activities is not None else load_activities()
    seeds = consecutive_seeds(SEED_BASE, IMAGES_PER_PROMPT)
    rows = []
    for code, own in catalogue["countries"].items():
        country = countries.by_iso(code)
        for category, spec in catalogue["categories"].items():
            specific = spec.get("activities") or own.get(category, [])
            items = [("generic", category, spec["generic"])] + [("specific", a["id"], a["phrase"]) for a in specific]
            for level, activity_id, phrase in items:
                rows.append({
                    "prompt_id": make_prompt_id("cultivate", country.iso2, category, activity_id),
                    "prompt_set": "cultivate",
                    "text": TEMPLATE.format(activity=phrase, country=country.name_in_sentence),
                    "negative_prompt": "",
                    "artifact_id": f"activity:{activity_id}",
                    "artifact_name": phrase,
                    **country_fields(country),
                    "category": category,
                    "subcategory": activity_id,
                    "era": None,
                    "level": level,
                    "kind": "t2i",
                    "template": TEMPLATE,
                    "images_per_prompt": IMAGES_PER_PROMPT,
                    "seeds": seeds,
                    "seed_scheme": f"consecutive from {SEED_BASE}",
                })
    return PromptSet(
        name="cultivate",
        version="1.0",
        family="cultivate",
        description=(
            "CULTIVate-style social-activity prompts: 16 countries x 9 activity categories (celebration, "
            "concert, dancing, eating, funeral, game, greeting, religious, wedding), one generic prompt per "
            "category plus country-specific activities, rendered as 'A photorealistic photo of {activity} "
            "in {country}.'"
        ),
        rows=rows,
        license="CC0-1.0",
        notes=[
            "The activity catalogue was written for cultureboard from general knowledge; the authors' "
            "catalogue is unreleased and unlicensed, so activities and phrasings differ from the paper's.",
            "Every country has 5 celebration, 5 dancing, 5 game, 4 greeting and 4 religious activities, "
            "4 shared settings (indoor/outdoor concert, eating at home/restaurant) and 9 generic prompts: "
            "36 prompts per country, 576 in all (the paper also has 576, but its per-country counts vary).",
            "Wedding and funeral are single-variant: their generic prompt is their only prompt.",
            "10 images per prompt with seeds 42..51 for every model (the paper made 1 image per prompt "
            "for proprietary models).",
            "No negative prompt, as the paper states none (the authors' repo passes a generic one to "
            "SD-3.5 and FLUX); no model-specific suffix (the repo appends one for Qwen-Image).",
        ],
    )
