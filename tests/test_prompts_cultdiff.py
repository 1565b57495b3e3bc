"""cultdiff: CultDiff A.1 templates, the category mapping and the country filter."""

import pytest

from cultureboard.builder.prompts_cultdiff import build_cultdiff, render
from cultureboard.countries import load_countries
from cultureboard.records import PROMPT_SCHEMA, table_from_rows


@pytest.fixture(scope="module")
def countries():
    return load_countries()


def _artifacts():
    return [
        {"qid": "Q1", "name": "plov", "country": "AZ", "concept": "cuisine", "category": "cuisine"},
        # CultDiff's hand lists write the article; Wikidata labels do not, so the test artifact carries it
        {"qid": "Q9188", "name": "the Empire State Building", "country": "US", "concept": "landmarks",
         "category": "landmarks", "era": "modern"},
        {"qid": "Q3", "name": "Hanfu", "country": "CN", "concept": "art", "category": "art", "subcategory": "clothing"},
        {"qid": "Q4", "name": "ukiyo-e", "country": "JP", "concept": "art", "category": "art", "subcategory": "painting"},
        {"qid": "Q5", "name": "feijoada", "country": "BR", "concept": "cuisine", "category": "cuisine"},
    ]


def test_paper_examples(countries):
    texts = {r["artifact_name"]: r["text"] for r in build_cultdiff(_artifacts(), countries).rows}
    assert texts["plov"] == "An image of plov from Azerbaijani cuisine, realistic"
    assert texts["the Empire State Building"] == "A panoramic view of the Empire State Building in the United States, realistic"
    assert texts["Hanfu"] == "An image of Hanfu from Chinese clothing, realistic"
    assert render("architecture", "Palace of Shaki Khans", countries.by_iso("AZ")) == (
        "A panoramic view of Palace of Shaki Khans in Azerbaijan, realistic")


def test_mapping_and_country_filter(countries):
    ps = build_cultdiff(_artifacts(), countries)
    assert {r["artifact_name"]: r["category"] for r in ps.rows} == {
        "plov": "food", "the Empire State Building": "architecture", "Hanfu": "clothing"}  # no painting, no Brazil
    row = next(r for r in ps.rows if r["category"] == "architecture")
    assert row["prompt_id"] == "cultdiff/q9188/us"
    assert (row["images_per_prompt"], row["seeds"], row["era"]) == (1, [0], "modern")
    assert row["template"] == "A panoramic view of {landmark} in {country}, realistic"
    everyone = build_cultdiff(_artifacts(), countries, country_codes=None)
    assert "An image of feijoada from Brazilian cuisine, realistic" in {r["text"] for r in everyone.rows}
    assert any("knowledge base" in note for note in ps.notes)


def test_ids_stable_and_schema(countries):
    first, second = build_cultdiff(_artifacts(), countries), build_cultdiff(_artifacts()[::-1], countries)
    assert {r["prompt_id"]: r["text"] for r in first.rows} == {r["prompt_id"]: r["text"] for r in second.rows}
    assert len({r["prompt_id"] for r in first.rows}) == len(first.rows)
    assert table_from_rows(first.rows, PROMPT_SCHEMA).num_rows == 3
