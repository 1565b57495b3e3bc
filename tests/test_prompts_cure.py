"""cure-ladder: CuRe Table 5 templates, the c and r slots, seeds, ids."""

import hashlib
import random

import pytest

from cultureboard.builder.prompts_cure import SEED_SCHEME, build_ladder, category_phrase, prompt_seeds, render, with_article
from cultureboard.countries import load_countries
from cultureboard.records import PROMPT_SCHEMA, table_from_rows


@pytest.fixture(scope="module")
def countries():
    return load_countries()


def _artifacts():
    return [
        # knowledge-base artifacts: c is the class the traversal went through, or a fallback
        {"qid": "Q5449200", "name": "Filone", "country": "IT", "concept": "cuisine", "category": "cuisine",
         "source": "wikidata", "parent": "Q7802", "parent_name": "bread", "era": None},
        {"qid": "Q1", "name": "Bibimbap", "country": "KR", "concept": "cuisine", "category": "cuisine",
         "source": "wikidata", "era": None},
        {"qid": "Q2", "name": "ukiyo-e", "country": "JP", "concept": "art", "category": "art",
         "subcategory": "painting", "source": "wikidata", "era": "early modern"},
        # an artifact imported from the CuRe CSVs: c is its (normalised) CSV category
        {"qid": "cure:food-jiaozi", "name": "jiaozi", "country": "CN", "concept": "food", "category": "food",
         "subcategory": "dumpling", "source": "cure", "era": None},
    ]


def test_table5_templates_exactly():
    assert render("n", "jiaozi") == "An image of jiaozi"
    assert render("n,c", "jiaozi", "dumpling") == "An image of jiaozi, a type of dumpling"
    assert render("n,r", "jiaozi", r="China") == "An image of jiaozi, from China"
    assert render("n,c,r", "jiaozi", "dumpling", "China") == "An image of jiaozi, a type of dumpling from China"
    assert render("c", c="dumpling") == "An image of a dumpling"


def test_articles_and_category_phrases():
    assert with_article("oil painting") == "an oil painting"
    assert with_article("jewellery") == "jewellery"
    assert with_article("traditional clothing") == "traditional clothing"
    assert with_article("uniform") == "a uniform"
    assert category_phrase("Rice_Dish") == "rice dish"
    assert category_phrase("Christmas_food") == "Christmas food"
    assert category_phrase("New_Year_celebration") == "New Year celebration"


def test_ladder_rows(countries):
    ps = build_ladder(_artifacts(), countries)
    by_id = {r["prompt_id"]: r for r in ps.rows}
    assert len(ps.rows) == 4 * 4 + 4  # four levels per artifact; P(c) for bread, dish, painting, dumpling
    jiaozi = by_id["cure-ladder/cure-food-jiaozi/cn/n-c-r"]
    assert jiaozi["text"] == "An image of jiaozi, a type of dumpling from China"
    assert (jiaozi["category"], jiaozi["subcategory"], jiaozi["level"]) == ("food", "dumpling", "n,c,r")
    assert (jiaozi["country"], jiaozi["country_name"], jiaozi["region_group"]) == ("CN", "China", "GS")
    assert jiaozi["template"] == "An image of {n}, a type of {c} from {r}"
    assert jiaozi["seeds"] == prompt_seeds(jiaozi["prompt_id"], 4) and jiaozi["images_per_prompt"] == 4
    assert by_id["cure-ladder/q5449200/it/n-c"]["text"] == "An image of Filone, a type of bread"
    assert by_id["cure-ladder/q1/kr/n-c-r"]["text"] == "An image of Bibimbap, a type of dish from South Korea"
    assert by_id["cure-ladder/q2/jp/n-c"]["text"] == "An image of ukiyo-e, a type of painting"
    assert by_id["cure-ladder/q2/jp/n"]["era"] == "early modern"

    category_rows = [r for r in ps.rows if r["level"] == "c"]
    assert {r["text"] for r in category_rows} == {
        "An image of a dumpling", "An image of bread", "An image of a dish", "An image of a painting"}
    dumpling = by_id["cure-ladder/c/food/dumpling"]
    assert dumpling["seeds"] == prompt_seeds(dumpling["prompt_id"], 80) and dumpling["images_per_prompt"] == 80
    assert dumpling["country"] is None and dumpling["artifact_id"] is None
    assert {r["level"] for r in ps.rows} == {"n", "n,c", "n,r", "n,c,r", "c"}


def test_ids_are_unique_and_stable(countries):
    first = build_ladder(_artifacts(), countries)
    shuffled = _artifacts()
    random.Random(0).shuffle(shuffled)
    second = build_ladder(shuffled, countries)
    ids = [r["prompt_id"] for r in first.rows]
    assert len(ids) == len(set(ids))
    assert {r["prompt_id"]: r["text"] for r in first.rows} == {r["prompt_id"]: r["text"] for r in second.rows}


def test_rows_fit_the_prompt_schema(countries):
    table = table_from_rows(build_ladder(_artifacts(), countries).rows, PROMPT_SCHEMA)
    assert table.schema == PROMPT_SCHEMA and table.num_rows == 20


def test_every_prompt_has_its_own_seed_stream(countries):
    """Issue 22: image k of P(n), P(n,c), ... and P(c) must not share initial noise (with seeds 0..3 everywhere,
    phi_PS and phi_DIV partly measured the shared noise)."""
    ps = build_ladder(_artifacts(), countries)
    assert ps.version == "1.1"
    seeds = [s for r in ps.rows for s in r["seeds"]]
    assert len(seeds) == 4 * 4 * 4 + 4 * 80 and len(set(seeds)) == len(seeds)  # no two images share a seed
    assert all(0 <= s < 2**31 for s in seeds) and all(r["seed_scheme"] == SEED_SCHEME for r in ps.rows)
    # the scheme's text is what the function computes, and a prompt's seeds do not depend on the others
    row = ps.rows[0]
    assert row["seeds"][2] == int(hashlib.sha256(f"{row['prompt_id']}#2".encode()).hexdigest()[:8], 16) >> 1
    assert build_ladder(_artifacts()[:1], countries).rows[0]["seeds"] == row["seeds"]
    assert prompt_seeds(row["prompt_id"], 6)[:4] == row["seeds"]  # more images extend the stream
