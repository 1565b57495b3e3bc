"""cube-awareness (Table 13 templates) and cube-diversity (under-specified prompts)."""

from collections import Counter

import pytest

from cultureboard.builder.prompts_cube import build_awareness, build_diversity
from cultureboard.countries import load_countries
from cultureboard.records import PROMPT_SCHEMA, table_from_rows

NEGATIVE = (
    "multiple items, blurry, painting, cartoon, people, human, man, woman, artificial, multiple images, nsfw, "
    "bad quality, bad anatomy, worst quality, low quality, low resolutions, extra fingers, blur, blurry, ugly, "
    "wrong proportions, watermark, image artifacts, lowres, jpeg artifacts, deformed, noisy"
)


@pytest.fixture(scope="module")
def countries():
    return load_countries()


def _art(qid, name, iso, sub):
    return {"qid": qid, "name": name, "country": iso, "concept": "art", "category": "art", "subcategory": sub}


def _artifacts():
    return [
        {"qid": "Q1", "name": "feijoada", "country": "BR", "concept": "cuisine", "category": "cuisine", "era": "modern"},
        {"qid": "Q9202", "name": "Statue of Liberty", "country": "US", "concept": "landmarks", "category": "landmarks"},
        _art("Q3", "kimono", "JP", "clothing"),
        _art("Q4", "ukiyo-e", "JP", "painting"),
        _art("Q5", "baroque painting", "IT", "painting"),
        _art("Q6", "Kathakali", "IN", "performance"),
        _art("Q7", "maneki-neko", "JP", "folk art"),
        _art("Q8", "mystery", "JP", None),  # no sub-type: no template
        {"qid": "cure:food-jiaozi", "name": "jiaozi", "country": "CN", "concept": "food", "category": "food"},
    ]


def test_awareness_templates(countries):
    ps = build_awareness(_artifacts(), countries)
    texts = {r["artifact_name"]: r["text"] for r in ps.rows}
    assert texts == {
        "feijoada": "A high resolution image of feijoada from Brazilian cuisine.",
        "Statue of Liberty": "A panoramic view of Statue of Liberty in the United States.",
        "kimono": "Image of a person in kimono from Japan.",
        "ukiyo-e": "An ukiyo-e painting from Japan.",
        "baroque painting": "A baroque painting from Italy.",
        "Kathakali": "An image of performance of Kathakali from India.",
        "maneki-neko": "Image of maneki-neko art from Japan.",
    }
    assert any(note.startswith("2 artifacts") for note in ps.notes)
    assert any("adjective" in note for note in ps.notes)


def test_awareness_fields(countries):
    ps = build_awareness(_artifacts(), countries)
    rows = {r["artifact_name"]: r for r in ps.rows}
    feijoada, kimono = rows["feijoada"], rows["kimono"]
    assert feijoada["negative_prompt"] == NEGATIVE
    assert feijoada["prompt_id"] == "cube-awareness/q1/br"
    assert (feijoada["category"], feijoada["subcategory"], feijoada["era"], feijoada["level"]) == (
        "cuisine", None, "modern", None)
    assert (feijoada["country"], feijoada["continent"], feijoada["region_group"]) == ("BR", "South America", "GS")
    assert (kimono["category"], kimono["subcategory"]) == ("art", "clothing")
    assert feijoada["seeds"] == [0, 1, 2, 3] and feijoada["images_per_prompt"] == 4
    assert feijoada["template"] == "A high resolution image of {name} from {adjective} cuisine."
    assert rows["baroque painting"]["template"] == "{Article} {name} from {country}."
    two = build_awareness(_artifacts(), countries, images_per_prompt=2)
    assert {tuple(r["seeds"]) for r in two.rows} == {(0, 1)}


def test_awareness_ids_stable(countries):
    first, second = build_awareness(_artifacts(), countries), build_awareness(_artifacts()[::-1], countries)
    assert {r["prompt_id"]: r["text"] for r in first.rows} == {r["prompt_id"]: r["text"] for r in second.rows}
    assert len({r["prompt_id"] for r in first.rows}) == len(first.rows)


def test_diversity_global_and_within(countries):
    ps = build_diversity(_artifacts(), countries)
    levels = Counter(r["level"] for r in ps.rows)
    assert levels["global"] == 3 * 5
    assert levels["within-culture"] == 5 * 3 * 5  # BR, IN, IT, JP, US (not CN: food is no CUBE concept) x 3 x 5
    texts = {r["text"] for r in ps.rows}
    assert {"Produce a high quality image of a dish.", "High definition photo of a monument.",
            "Image of a dish from Brazilian cuisine.", "Image of a Nigerian dish."} - texts == {"Image of a Nigerian dish."}
    glob = next(r for r in ps.rows if r["text"] == "Produce a high quality image of a dish.")
    assert glob["country"] is None and glob["artifact_id"] is None and glob["category"] == "cuisine"
    assert glob["seeds"] == list(range(8)) and glob["images_per_prompt"] == 8
    within = next(r for r in ps.rows if r["text"] == "Image of a dish from Brazilian cuisine.")
    assert (within["country"], within["level"], within["template"]) == (
        "BR", "within-culture", "Image of a dish from {adjective} cuisine.")
    assert {r["subcategory"] for r in ps.rows if r["category"] == "art"} == {"clothing"}
    assert len({r["prompt_id"] for r in ps.rows}) == len(ps.rows)


def test_diversity_default_countries_and_seeds(countries):
    ps = build_diversity([], countries, images_per_prompt=80)
    within = {r["country"] for r in ps.rows if r["level"] == "within-culture"}
    assert within == {"BR", "FR", "IN", "IT", "JP", "NG", "TR", "US"}
    assert "Image of a Nigerian dish." in {r["text"] for r in ps.rows}
    assert {tuple(r["seeds"]) for r in ps.rows} == {tuple(range(80))}
    only = build_diversity(_artifacts(), countries, country_codes=["NG"])
    assert {r["country"] for r in only.rows if r["level"] == "within-culture"} == {"NG"}


def test_rows_fit_the_prompt_schema(countries):
    for ps in (build_awareness(_artifacts(), countries), build_diversity(_artifacts(), countries)):
        assert table_from_rows(ps.rows, PROMPT_SCHEMA).num_rows == len(ps.rows)
