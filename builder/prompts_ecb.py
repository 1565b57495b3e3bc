"""The ``ecb`` prompt set: ECB's grammar (``data/ecb_schema.yaml``) rendered for its six countries.

Rows (columns of ``cultureboard.records.PROMPT_SCHEMA``), per country:

- 78 text-to-image base prompts (kind ``t2i``): 19 era subcategories x traditional / modern / general,
  3 landscapes, 12 people, 2 wildlife subcategories x common / general / national. 468 in all.
- the multi-loop chain of each base prompt: 5 edits with the same instruction (kind ``i2i``, edit_step
  1..5, ``source_prompt_id`` = the previous step, step 1's is the base prompt). 2,340 in all.
- the attribute-addition chain: a mannequin base (kind ``t2i``, the same text for every country) and 5
  cumulative edits (background, text, food, clothing, accessory). 36 in all.

and once, with no country (country, country_name, continent, region_group null): the 78 country-agnostic
text-to-image prompts of ECB's distribution analysis (``level`` ``agnostic``, wildlife ``agnostic:national``;
"Traditional wedding, photorealistic."), which start no chain.

Encoding of ECB's ``variant`` column:

- ``era`` holds traditional / modern / general (era-agnostic) for the era categories and is null for
  landscape, people, wildlife and attribute addition.
- ``level`` is the stage: ``t2i``, ``edit`` or ``attribute``. Wildlife's variant (common / general /
  national, not an era) is appended to it: ``t2i:national``, ``edit:national``. So every row of the
  released CSVs maps to one (country, category, subcategory, era or level suffix) and back.
- ``subcategory`` is the released slug with ``_`` written as a space ("main dish", "bride and groom").

Prompt ids: ``ecb/{iso2}/{category}/{sub}[/{variant}][/edit/{k}]``, e.g. ``ecb/kr/food/main-dish/modern``
and ``ecb/kr/food/main-dish/modern/edit/3``; attribute addition: ``ecb/kr/attribute-addition/base`` and
``ecb/kr/attribute-addition/food/edit/3``; country-agnostic: ``ecb/agnostic/food/main-dish/modern``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Iterator

import yaml

from cultureboard.countries import CountryTable
from cultureboard.errors import CultureboardError

from .prompt_common import consecutive_seeds, country_fields, make_prompt_id
from .prompt_sets import PromptSet

SCHEMA_PATH = Path(__file__).parent / "data" / "ecb_schema.yaml"
PROMPT_SET = "ecb"
SEED_SCHEME = "consecutive"  # one image per prompt, seed 0 (ECB states neither images per prompt nor seeds)
IMAGES_PER_PROMPT = 1


@functools.cache
def load_schema() -> dict[str, Any]:
    """The ECB grammar as parsed from ``data/ecb_schema.yaml`` (shared; do not mutate)."""
    return yaml.safe_load(SCHEMA_PATH.read_text(encoding="utf-8"))


def render(template: str, country: Mapping[str, str] | None, sub: str = "") -> str:
    """Fill one template for one country (an entry of the schema's ``countries``; None for a country-agnostic
    template, which names none) and subcategory slug."""
    words = sub.replace("_", " ")
    names = {key: (country or {}).get(key) for key in ("written", "possessive", "adjective")}
    return template.format(
        country=names["written"], possessive=names["possessive"], adjective=names["adjective"],
        sub=words, Sub=words[:1].upper() + words[1:], Article="An" if words[:1] in tuple("aeiou") else "A",
    )


def slots(schema: dict[str, Any]) -> Iterator[tuple[str, str, str, bool, dict[str, str]]]:
    """(category, subcategory slug, variant, variant is an era, templates) for one country's 78 prompts."""
    for category, spec in schema["categories"].items():
        grammar = schema["grammars"][spec["grammar"]]
        for sub in spec["subcategories"]:
            for variant, templates in grammar["variants"].items():
                yield category, sub, variant, grammar["era"], {**templates, **grammar.get("overrides", {}).get(sub, {})}


def agnostic_template(t2i: str, schema: dict[str, Any]) -> str:
    """A t2i template without its country (the schema's ``agnostic.remove``); every t2i template names one."""
    remove = schema["agnostic"]["remove"]
    if remove not in t2i:
        raise ValueError(f"t2i template {t2i!r} has no {remove!r} to remove for the country-agnostic prompt")
    return t2i.replace(remove, "")


def is_agnostic(prompt: Mapping) -> bool:
    """A country-agnostic prompt (no country named; level ``agnostic`` or ``agnostic:<variant>``)."""
    return str(prompt.get("level") or "").split(":")[0] == "agnostic"


def _as_released(text: str, schema: dict, kind: str, category: str, sub: str, variant: str) -> str:
    for d in schema["released_defects"]:
        if (d["kind"], d["category"], d["subcategory"]) == (kind, category, sub) and d.get("variant", variant) == variant:
            text = text.replace(d["fixed"], d["released"])
    return text


def _row(prompt_id, text, template, fields, category, sub, level, kind, *, era=None, step=None, source=None):
    return {
        "prompt_id": prompt_id, "prompt_set": PROMPT_SET, "text": text, "negative_prompt": "",
        "artifact_id": None, "artifact_name": None, **fields,
        "category": category, "subcategory": sub.replace("_", " "), "era": era, "level": level, "kind": kind,
        "edit_step": step, "source_prompt_id": source, "template": template,
        "images_per_prompt": IMAGES_PER_PROMPT, "seeds": consecutive_seeds(0, IMAGES_PER_PROMPT),
        "seed_scheme": SEED_SCHEME,
    }


def checked_subset(subset: Any) -> dict:
    """A slice of the set (build option ``ecb_subset``), checked: ``{"countries": [ISO codes of ECB's], "subcategories":
    [ECB slugs], "steps": 1..5, "agnostic": true | false}``, each key optional (the country-agnostic prompts are
    kept unless ``agnostic: false``); a bad one is a one-line error."""
    schema = load_schema()
    slugs = {s for spec in schema["categories"].values() for s in spec["subcategories"]}
    fix = ("give {countries: [KR, ...], subcategories: [main_dish, ...], steps: N, agnostic: true}, with ECB's countries "
           f"{', '.join(schema['countries'])} and 1 <= N <= {schema['multi_loop']['steps']}")
    if not isinstance(subset, Mapping) or set(subset) - {"countries", "subcategories", "steps", "agnostic"}:
        raise CultureboardError("ecb_subset", f"{subset!r} is not a mapping of countries, subcategories, steps, agnostic",
                                fix)
    codes, subs = [str(c).upper() for c in subset.get("countries") or []], list(subset.get("subcategories") or [])
    steps = subset.get("steps", schema["multi_loop"]["steps"])
    unknown = [c for c in codes if c not in schema["countries"]] + [s for s in subs if s not in slugs]
    if unknown or isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= schema["multi_loop"]["steps"]:
        raise CultureboardError("ecb_subset", f"names {unknown or steps!r}, outside ECB's grammar", fix)
    agnostic = subset.get("agnostic", True)
    if not isinstance(agnostic, bool):
        raise CultureboardError("ecb_subset", f"agnostic is {agnostic!r}, not true or false", fix)
    return {"countries": codes, "subcategories": subs, "steps": steps, "agnostic": agnostic}


def build_ecb(artifacts: list[dict], countries: CountryTable, *, as_released: bool = False,
              subset: Mapping | None = None) -> PromptSet:
    """Build the ``ecb`` prompt set (``artifacts`` is ignored: ECB is a fixed grammar, not an artifact space).

    ``as_released=True`` writes the released CSVs' texts instead of the fixed ones (the two typos of
    ``released_defects`` and the released attribute step-3 wording), for bit-exact comparison only.
    ``subset`` (:func:`checked_subset`) keeps a slice for demos and smoke tests: only those countries and
    subcategories, and chains of that many edit steps (the attribute-addition chains keep their first steps).
    """
    schema = load_schema()
    subset = checked_subset(subset) if subset is not None else None
    steps = subset["steps"] if subset else schema["multi_loop"]["steps"]
    attr = schema["attribute_addition"]
    rows: list[dict] = []
    for iso, written in schema["countries"].items():
        if subset and subset["countries"] and iso not in subset["countries"]:
            continue
        fields = country_fields(countries.by_iso(iso))
        for category, sub, variant, is_era, templates in slots(schema):
            if subset and subset["subcategories"] and sub not in subset["subcategories"]:
                continue
            era = variant if is_era else None
            suffix = f":{variant}" if variant and not is_era else ""
            base_id = make_prompt_id(PROMPT_SET, iso, category, sub, variant or None)
            t2i, i2i = render(templates["t2i"], written, sub), render(templates["i2i"], written, sub)
            if as_released:
                t2i = _as_released(t2i, schema, "t2i", category, sub, variant)
                i2i = _as_released(i2i, schema, "i2i", category, sub, variant)
            rows.append(_row(base_id, t2i, templates["t2i"], fields, category, sub, "t2i" + suffix, "t2i", era=era))
            source = base_id
            for k in range(1, steps + 1):
                edit_id = make_prompt_id(PROMPT_SET, iso, category, sub, variant or None, "edit", k)
                rows.append(_row(edit_id, i2i, templates["i2i"], fields, category, sub, "edit" + suffix, "i2i",
                                 era=era, step=k, source=source))
                source = edit_id
        source = make_prompt_id(PROMPT_SET, iso, attr["category"], attr["base"]["subcategory"])
        rows.append(_row(source, attr["base"]["t2i"], attr["base"]["t2i"], fields, attr["category"],
                         attr["base"]["subcategory"], "attribute", "t2i"))
        for k, step in enumerate(attr["steps"][:steps], start=1):
            template = step.get("released", step["i2i"]) if as_released else step["i2i"]
            step_id = make_prompt_id(PROMPT_SET, iso, attr["category"], step["subcategory"], "edit", k)
            rows.append(_row(step_id, render(template, written), template, fields, attr["category"],
                             step["subcategory"], "attribute", "i2i", step=k, source=source))
            source = step_id
    if not subset or subset["agnostic"]:
        rows += _agnostic_rows(schema, subset)
    return PromptSet(
        name=PROMPT_SET, version="1.0", family="ecb",
        description=(
            "ECB (Exposing Blindspots, arXiv 2510.20042): 6 countries x 8 categories / 36 subcategories with "
            "era variants (traditional / modern / era-agnostic); 468 T2I base prompts, each edited 5 times "
            "with the same instruction (multi-loop I2I), and a 5-step cumulative attribute-addition chain per country."
        ),
        rows=rows, license="CC0-1.0", notes=_notes(schema, as_released) + ([
            f"A SLICE of the set for demos and smoke tests (ecb_subset {subset}): not comparable with the full set."]
            if subset else []),
    )


def _agnostic_rows(schema: dict, subset: dict | None) -> list[dict]:
    """The country-agnostic t2i prompts (no country fields), one per slot of the grammar."""
    rows = []
    none = {"country": None, "country_name": None, "continent": None, "region_group": None}
    for category, sub, variant, is_era, templates in slots(schema):
        if subset and subset["subcategories"] and sub not in subset["subcategories"]:
            continue
        template = agnostic_template(templates["t2i"], schema)
        level = "agnostic" + (f":{variant}" if variant and not is_era else "")
        prompt_id = make_prompt_id(PROMPT_SET, schema["agnostic"]["id"], category, sub, variant or None)
        rows.append(_row(prompt_id, render(template, None, sub), template, none, category, sub, level, "t2i",
                         era=variant if is_era else None))
    return rows


def _notes(schema: dict, as_released: bool) -> list[str]:
    released_step = next(s for s in schema["attribute_addition"]["steps"] if "released" in s)
    notes = [d["note"] for d in schema["released_defects"]]
    if as_released:
        notes = ["Built with as_released=True: the texts reproduce the released CSVs, including the defects below "
                 "(which are NOT fixed in this build)."] + notes
    return notes + [
        "ECB's own release (code and dataset) is MIT; this rendering of its grammar is CC0-1.0.",
        "Countries are written as ECB writes them ('Korea', 'the United States'); country_name holds the country "
        "table's name.",
        "Multi-loop instructions use the released form ('Change the image to represent traditional wedding in "
        "Korea.': lower case, no article, the era word left out for era-agnostic and single-variant rows), not "
        "the paper's 'Change the image to represent {era} {subcategory} in {Country}'.",
        "subcategory is ECB's slug with '_' written as a space ('main dish', 'bride and groom'); prompt ids use "
        "the hyphenated slug ('ecb/kr/food/main-dish/modern', '.../edit/3' for chain steps).",
        "era is null for landscape, people and wildlife; wildlife's variant (common / general / national, not an "
        "era) is the suffix of level ('t2i:national', 'edit:national').",
        f"Attribute addition uses the paper's Table 9 wording; the released step 3 reads "
        f"{released_step['released']!r} instead of {released_step['i2i']!r}.",
        "Attribute addition: the paper describes the base canvas (a genderless green mannequin on a white "
        "background) but gives no prompt; the base prompt wording is ours. ECB made one shared base image; here "
        "every country has its own base row (same text, same seed, so a deterministic generator gives the same "
        "image) so that each chain is self-contained and every row carries its country.",
        "One image per prompt with seed 0 (seed_scheme 'consecutive', base 0): ECB generates one image per "
        "prompt and states no seeds. Every edit step uses seed 0 as well.",
        "Country-agnostic prompts (ECB section 4.1, not in the released prompt data; the wording is ours): every "
        f"text-to-image template without {schema['agnostic']['remove']!r} ('Traditional wedding, photorealistic.'), "
        "level 'agnostic', no country; text-to-image only, the reference group of the T2I analyses.",
        "Not included: the occupational audit and the cross-country restyle study (neither is in the released "
        "prompt data).",
    ]
