"""The ``cultivate`` prompt set: structure, counts, exact wording and stable ids."""

from __future__ import annotations

from collections import Counter

import pytest

from cultureboard.builder.prompts_cultivate import TEMPLATE, build_cultivate, load_activities
from cultureboard.countries import load_countries
from cultureboard.errors import CultureboardError
from cultureboard.records import PROMPT_SCHEMA, table_from_rows

COUNTRIES = {"US", "ES", "IT", "DE", "FR", "IR", "TR", "CN", "IN", "ID", "PH", "NP", "NG", "ZA", "BR", "MX"}
CATEGORIES = {"celebration", "concert", "dancing", "eating", "funeral", "game", "greeting", "religious", "wedding"}
#: Prompts per country and category, as documented in the catalogue (generic prompt included).
PER_CATEGORY = {"celebration": 6, "dancing": 6, "game": 6, "greeting": 5, "religious": 5,
                "concert": 3, "eating": 3, "wedding": 1, "funeral": 1}


@pytest.fixture(scope="module")
def prompt_set():
    return build_cultivate([], load_countries())


def _row(rows, country, category, subcategory):
    (row,) = [r for r in rows
              if (r["country"], r["category"], r["subcategory"]) == (country, category, subcategory)]
    return row


def test_every_country_has_every_category(prompt_set):
    cells = {(r["country"], r["category"]) for r in prompt_set.rows}
    assert cells == {(c, k) for c in COUNTRIES for k in CATEGORIES}


def test_one_generic_prompt_per_country_and_category(prompt_set):
    generic = Counter((r["country"], r["category"]) for r in prompt_set.rows if r["level"] == "generic")
    assert set(generic.values()) == {1} and len(generic) == 16 * 9
    assert all(r["subcategory"] == r["category"] for r in prompt_set.rows if r["level"] == "generic")


def test_counts_per_country_and_in_total(prompt_set):
    assert len(prompt_set.rows) == 576
    assert Counter(r["country"] for r in prompt_set.rows) == {c: 36 for c in COUNTRIES}
    per_cell = Counter((r["country"], r["category"]) for r in prompt_set.rows)
    assert all(per_cell[c, k] == n for c in COUNTRIES for k, n in PER_CATEGORY.items())


def test_category_types_match_the_paper():
    kinds = {name: spec["category_type"] for name, spec in load_activities()["categories"].items()}
    assert kinds == {
        **dict.fromkeys(["celebration", "dancing", "game", "greeting", "religious"], "multi-variant"),
        **dict.fromkeys(["concert", "eating"], "setting-based"),
        **dict.fromkeys(["funeral", "wedding"], "single-variant"),
    }


def test_exact_text(prompt_set):
    text = {(r["country"], r["subcategory"]): r["text"] for r in prompt_set.rows}
    assert text["BR", "dancing"] == "A photorealistic photo of people dancing in Brazil."
    assert text["US", "wedding"] == "A photorealistic photo of a wedding in the United States."
    assert _row(prompt_set.rows, "PH", "eating", "home")["text"] == (
        "A photorealistic photo of a family eating a meal at home in the Philippines.")
    samba = _row(prompt_set.rows, "BR", "dancing", "samba")
    assert samba["text"] == "A photorealistic photo of people dancing samba in Brazil."
    assert (samba["level"], samba["artifact_id"], samba["artifact_name"]) == (
        "specific", "activity:samba", "people dancing samba")
    assert samba["prompt_id"] == "cultivate/br/dancing/samba"
    assert all(r["template"] == TEMPLATE == "A photorealistic photo of {activity} in {country}."
               for r in prompt_set.rows)


def test_prompt_ids_are_unique_and_stable(prompt_set):
    ids = [r["prompt_id"] for r in prompt_set.rows]
    assert len(set(ids)) == len(ids)
    assert build_cultivate([], load_countries()).rows == prompt_set.rows


def test_rows_conform_to_the_prompt_schema(prompt_set):
    table = table_from_rows(prompt_set.rows, PROMPT_SCHEMA)
    assert table.schema == PROMPT_SCHEMA and table.num_rows == 576
    assert set(table.column("prompt_set").to_pylist()) == {"cultivate"}
    assert set(table.column("kind").to_pylist()) == {"t2i"}
    assert set(table.column("era").to_pylist()) == {None}
    assert set(table.column("negative_prompt").to_pylist()) == {""}


def test_global_north_south_split_is_5_11(prompt_set):
    groups = {r["country"]: r["region_group"] for r in prompt_set.rows}
    assert sorted(c for c, g in groups.items() if g == "GN") == ["DE", "ES", "FR", "IT", "US"]
    assert Counter(groups.values()) == {"GN": 5, "GS": 11}


def test_seeds_42_to_51(prompt_set):
    for r in prompt_set.rows:
        assert r["images_per_prompt"] == 10 and r["seeds"] == list(range(42, 52))
        assert r["seed_scheme"] == "consecutive from 42"


def test_prompt_set_metadata(prompt_set):
    assert (prompt_set.name, prompt_set.version, prompt_set.family, prompt_set.license) == (
        "cultivate", "1.0", "cultivate", "CC0-1.0")
    assert any("catalogue" in note for note in prompt_set.notes)


def test_an_extended_catalogue_builds():
    catalogue = load_activities()
    catalogue["countries"]["BR"]["dancing"].append({"id": "lambada", "phrase": "couples dancing lambada"})
    rows = build_cultivate([], load_countries(), activities=catalogue).rows
    assert len(rows) == 577
    assert _row(rows, "BR", "dancing", "lambada")["prompt_id"] == "cultivate/br/dancing/lambada"


def test_a_broken_catalogue_is_a_clear_error(tmp_path):
    path = tmp_path / "activities.yaml"
    path.write_text("categories: {}\ncountries:\n  BR: {dancing: []}\n", encoding="utf-8")
    with pytest.raises(CultureboardError, match="BR") as err:
        load_activities(path)
    assert str(path) in str(err.value)
