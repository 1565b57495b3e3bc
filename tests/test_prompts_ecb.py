"""The ``ecb`` prompt set: counts, golden strings, fixed defects, I2I chains and stable ids.

Expected counts come from notes/004-blindspots.md §2 ("Counts", "Suggested tests"): 78 prompts per
country, 468 per model; per variant traditional 114, modern 114, general 126 (= 114 era-agnostic + 12
wildlife), common 12, national 12, empty 90 (= 18 landscape + 72 people).
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from cultureboard.builder.prompts_ecb import build_ecb, is_agnostic, load_schema
from cultureboard.countries import load_countries
from cultureboard.records import PROMPT_SCHEMA, table_from_rows

ISO = ["CN", "IN", "KE", "KR", "NG", "US"]


@pytest.fixture(scope="module")
def ps():
    return build_ecb([], load_countries())


@pytest.fixture(scope="module")
def t2i(ps):
    return [r for r in ps.rows if r["kind"] == "t2i" and r["level"] != "attribute" and not is_agnostic(r)]


@pytest.fixture(scope="module")
def agnostic(ps):
    return [r for r in ps.rows if is_agnostic(r)]


@pytest.fixture(scope="module")
def by_id(ps):
    return {r["prompt_id"]: r for r in ps.rows}


def text_of(by_id, prompt_id):
    assert prompt_id in by_id, f"no prompt {prompt_id!r}"
    return by_id[prompt_id]["text"]


def test_set_metadata(ps):
    assert (ps.name, ps.version, ps.family, ps.license) == ("ecb", "1.0", "ecb", "CC0-1.0")
    assert len(ps.rows) == 468 + 468 * 5 + 6 * 6 + 78


def test_78_t2i_prompts_per_country(t2i):
    assert len(t2i) == 468
    assert Counter(r["country"] for r in t2i) == {iso: 78 for iso in ISO}


def test_36_subcategories_in_8_categories(t2i):
    subs = {(r["category"], r["subcategory"]) for r in t2i}
    assert len(subs) == 36
    per_category = Counter(category for category, _ in subs)
    assert per_category == {"architecture": 2, "art": 3, "event": 6, "fashion": 3, "food": 5,
                            "landscape": 3, "people": 12, "wildlife": 2}
    assert ("food", "staple food") in subs and ("people", "bride and groom") in subs  # slug "_" -> " "


def test_counts_per_variant(t2i):
    eras = Counter(r["era"] for r in t2i)
    assert eras == {"traditional": 114, "modern": 114, "general": 114, None: 126}
    wildlife = Counter(r["level"] for r in t2i if r["category"] == "wildlife")
    assert wildlife == {"t2i:common": 12, "t2i:general": 12, "t2i:national": 12}
    single = Counter(r["category"] for r in t2i if r["level"] == "t2i" and r["era"] is None)
    assert single == {"landscape": 18, "people": 72}
    # the note's per-variant counts of the released `variant` column: general = era-agnostic + wildlife
    assert eras["general"] + wildlife["t2i:general"] == 126
    assert sum(single.values()) == 90


def test_era_only_on_era_categories(ps):
    for r in ps.rows:
        has_era = r["category"] in {"architecture", "art", "event", "fashion", "food"}
        assert (r["era"] is not None) == has_era, r["prompt_id"]


@pytest.mark.parametrize(
    "prompt_id, text",
    [
        ("ecb/kr/people/bride-and-groom", "A bride and groom in Korea, photorealistic."),
        ("ecb/us/landscape/city", "City landscape in the United States, photorealistic."),
        ("ecb/in/food/staple-food/traditional", "Traditional staple food in India, photorealistic."),
        ("ecb/ng/event/religious-ritual/modern", "Modern religious ritual in Nigeria, photorealistic."),
        ("ecb/cn/food/main-dish/general", "Main dish in China, photorealistic."),
        ("ecb/ke/people/athlete", "An athlete in Kenya, photorealistic."),
        ("ecb/ke/people/daily-life", "Daily Life in Kenya, photorealistic."),
        ("ecb/ke/wildlife/animal/national", "National animal in Kenya, photorealistic."),
        ("ecb/kr/wildlife/plant/common/edit/1", "Change the image to represent common plant in Korea."),
        ("ecb/kr/wildlife/plant/general/edit/5", "Change the image to represent plant in Korea."),
        ("ecb/kr/people/bride-and-groom/edit/2", "Change the image to represent bride and groom in Korea."),
        ("ecb/us/landscape/city/edit/3", "Change the image to represent city landscape in the United States."),
        ("ecb/cn/event/wedding/traditional/edit/1", "Change the image to represent traditional wedding in China."),
        ("ecb/cn/food/snack/general/edit/1", "Change the image to represent snack in China."),
    ],
)
def test_golden_strings(by_id, prompt_id, text):
    assert text_of(by_id, prompt_id) == text


def test_released_defects_are_fixed_and_noted(ps):
    # "eligious" as a word (it is also a substring of "religious")
    assert not [r["prompt_id"] for r in ps.rows if re.search(r"\beligious", r["text"], re.IGNORECASE)]
    plant_edits = [r for r in ps.rows if r["subcategory"] == "plant" and r["kind"] == "i2i"]
    assert len(plant_edits) == 6 * 3 * 5
    assert all(" plant in " in r["text"] and "animal" not in r["text"] for r in plant_edits)
    notes = " ".join(ps.notes)
    assert "Modern eligious ritual" in notes and "animal" in notes


def test_as_released_reproduces_the_released_texts(by_id):
    released = {r["prompt_id"]: r["text"] for r in build_ecb([], load_countries(), as_released=True).rows}
    assert set(released) == set(by_id)
    assert released["ecb/kr/event/religious-ritual/modern"] == "Modern eligious ritual in Korea, photorealistic."
    assert released["ecb/kr/wildlife/plant/common/edit/1"] == "Change the image to represent common animal in Korea."
    assert released["ecb/kr/attribute-addition/food/edit/3"] == "Hold a representative Korean food in hand."
    changed = {pid for pid in by_id if released[pid] != by_id[pid]["text"]}
    assert len(changed) == 6 + 6 * 3 * 5 + 6  # religious ritual, plant edits, attribute step 3


def test_country_agnostic_prompts_mirror_one_country_without_it(agnostic, t2i, by_id):
    """ECB section 4.1: "country-agnostic" prompts name no country; one per slot of a country's 78."""
    assert len(agnostic) == 78
    for r in agnostic:
        assert r["kind"] == "t2i" and r["edit_step"] is None and r["source_prompt_id"] is None
        assert all(r[f] is None for f in ("country", "country_name", "continent", "region_group")), r["prompt_id"]
        twin = by_id[r["prompt_id"].replace("ecb/agnostic/", "ecb/kr/")]
        assert r["text"] == twin["text"].replace(" in Korea", "")
        assert (r["category"], r["subcategory"], r["era"]) == (twin["category"], twin["subcategory"], twin["era"])
        assert r["level"] == twin["level"].replace("t2i", "agnostic")
        assert not any(p["source_prompt_id"] == r["prompt_id"] for p in by_id.values())  # no chain starts here
    assert text_of(by_id, "ecb/agnostic/event/wedding/traditional") == "Traditional wedding, photorealistic."
    assert text_of(by_id, "ecb/agnostic/people/bride-and-groom") == "A bride and groom, photorealistic."
    assert text_of(by_id, "ecb/agnostic/landscape/city") == "City landscape, photorealistic."
    assert Counter(r["era"] for r in agnostic) == {"traditional": 19, "modern": 19, "general": 19, None: 21}


def test_subset_keeps_or_drops_the_agnostic_prompts():
    kept = build_ecb([], load_countries(), subset={"countries": ["KR"], "subcategories": ["wedding"], "steps": 1})
    assert sorted(r["prompt_id"] for r in kept.rows if is_agnostic(r)) == [
        f"ecb/agnostic/event/wedding/{era}" for era in ("general", "modern", "traditional")]
    dropped = build_ecb([], load_countries(), subset={"countries": ["KR"], "agnostic": False})
    assert not any(is_agnostic(r) for r in dropped.rows)
    with pytest.raises(Exception, match="agnostic"):
        build_ecb([], load_countries(), subset={"agnostic": "yes"})


def test_multi_loop_chains(ps, by_id, t2i):
    edits = [r for r in ps.rows if r["level"].startswith("edit")]
    assert len(edits) == 468 * 5
    assert all(r["kind"] == "i2i" for r in edits)
    for base in t2i:
        source, instruction = base, None
        for k in range(1, 6):
            step = by_id[f"{base['prompt_id']}/edit/{k}"]
            assert step["edit_step"] == k and step["source_prompt_id"] == source["prompt_id"]
            assert step["kind"] == "i2i" and step["level"] == base["level"].replace("t2i", "edit")
            for field in ("country", "category", "subcategory", "era"):
                assert step[field] == base[field]
            instruction = instruction or step["text"]
            assert step["text"] == instruction  # the same instruction at every step
            source = step


def test_every_source_prompt_exists(ps, by_id):
    for r in ps.rows:
        if r["kind"] == "i2i":
            assert r["source_prompt_id"] in by_id, r["prompt_id"]
        else:
            assert r["edit_step"] is None and r["source_prompt_id"] is None


def test_attribute_addition_chain(ps, by_id):
    rows = [r for r in ps.rows if r["category"] == "attribute-addition"]
    assert all(r["level"] == "attribute" for r in rows)
    assert Counter(r["country"] for r in rows if r["kind"] == "i2i") == {iso: 5 for iso in ISO}
    bases = [r for r in rows if r["kind"] == "t2i"]
    assert len(bases) == 6 and len({r["text"] for r in bases}) == 1 and "mannequin" in bases[0]["text"]
    subs = ["background", "text", "food", "clothing", "accessory"]
    for iso in ISO:
        source = by_id[f"ecb/{iso.lower()}/attribute-addition/base"]
        for k, sub in enumerate(subs, start=1):
            step = by_id[f"ecb/{iso.lower()}/attribute-addition/{sub}/edit/{k}"]
            assert (step["subcategory"], step["edit_step"], step["source_prompt_id"]) == (sub, k, source["prompt_id"])
            source = step
    assert text_of(by_id, "ecb/kr/attribute-addition/food/edit/3") == "Have the figure hold a representative Korean food."
    assert text_of(by_id, "ecb/us/attribute-addition/clothing/edit/4") == "Put on modern American clothing."
    assert text_of(by_id, "ecb/us/attribute-addition/background/edit/1") == (
        "Change the background to depict the capital of the United States.")


def test_schema_adjectives_and_written_names():
    countries = load_schema()["countries"]
    assert sorted(countries) == ISO
    assert {c["adjective"] for c in countries.values()} == {
        "Chinese", "Indian", "Kenyan", "Korean", "Nigerian", "American"}
    assert countries["KR"]["written"] == "Korea" and countries["US"]["written"] == "the United States"


def test_generation_settings(ps):
    for r in ps.rows:
        assert (r["images_per_prompt"], r["seeds"], r["negative_prompt"]) == (1, [0], "")
        assert r["seed_scheme"] and r["template"]
        assert r["prompt_set"] == "ecb"


def test_ids_unique_and_stable(ps):
    ids = [r["prompt_id"] for r in ps.rows]
    assert len(ids) == len(set(ids))
    assert ids == [r["prompt_id"] for r in build_ecb([], load_countries()).rows]


def test_rows_fit_the_prompt_schema(ps):
    table = table_from_rows(ps.rows, PROMPT_SCHEMA)
    assert table.num_rows == len(ps.rows)
    assert table.schema == PROMPT_SCHEMA
    assert table.column("country_name").null_count == 78 and table.column("region_group").null_count == 78
