"""CUBE Algorithm 1 on small hand-made dumps: hop limit, emit-and-stop, cycles, deprecated ranks,
several countries, malformed lines and compressed inputs."""

from __future__ import annotations

import gzip

import pytest

from cultureboard.builder.eras import era_of_year
from cultureboard.builder.kb_dump import DumpKnowledgeBase
from cultureboard.builder.traversal import Concept, Root, extract_artifacts
from cultureboard.countries import load_countries
from cultureboard.errors import CultureboardError
from wikidata_factory import entity, write_dump

IT, JP, FR = "Q38", "Q17", "Q142"
DISH = "Q746549"
CUISINE = Concept("cuisine", (Root(DISH, "dish"),))


def graph() -> list[dict]:
    chain = [entity(f"Q90{i}", f"class {i}", claims={"P279": [DISH if i == 1 else f"Q90{i - 1}"]}) for i in range(1, 5)]
    return [
        entity(DISH, "dish"),
        entity(IT, "Italy"), entity(JP, "Japan"), entity(FR, "France"),
        entity("Q7802", "bread", claims={"P279": [DISH]}),  # hop 1, no country: traversed
        entity("Q5449200", "Filone", claims={"P279": ["Q7802"], "P495": [IT]}, sitelinks=3,
               description="Italian bread", aliases=("filone bread",), image="Filone.jpg", inception="+1900-00-00T00:00:00Z"),
        entity("Q100", "Sushi", claims={"P31": [DISH], "P495": [JP]}, sitelinks=40),  # hop 1, emitted
        entity("Q101", "Sushi child", claims={"P279": ["Q100"], "P495": [IT]}),  # below an artifact: never reached
        *chain,  # Q901..Q904: hops 1..4, no country
        entity("Q905", "Hop four dish", claims={"P279": ["Q903"], "P495": [IT]}),  # hop 4
        entity("Q906", "Hop five dish", claims={"P279": ["Q904"], "P495": [IT]}),  # hop 5
        entity("Q300", "cycle a", claims={"P279": [DISH, "Q301"]}),
        entity("Q301", "cycle b", claims={"P279": ["Q300"]}),
        entity("Q302", "Cycle dish", claims={"P279": ["Q301"], "P495": [IT]}),  # hop 3 through a cycle
        entity("Q400", "Deprecated edge dish", claims={"P31": [(DISH, "deprecated")], "P495": [IT]}),
        entity("Q401", "Deprecated country dish", claims={"P31": [DISH], "P495": [IT, (JP, "deprecated")]}),
        entity("Q500", "Two country dish", claims={"P31": [DISH], "P495": [IT], "P17": [JP]}),
        entity("Q600", "French dish", claims={"P31": [DISH], "P495": [FR]}),
        entity("Q601", "Under French dish", claims={"P279": ["Q600"], "P495": [IT]}),
    ]


def run(path, hops=4, countries=("IT", "JP")):
    wanted = load_countries().resolve(list(countries))
    kb = DumpKnowledgeBase(path, [c.qid for c in wanted])
    rows, report = extract_artifacts(kb, [CUISINE], wanted, hops)
    return {(r["qid"], r["country"]): r for r in rows}, report, kb


@pytest.fixture
def dump(tmp_path):
    return write_dump(tmp_path / "dump.json", graph())


def test_algorithm_1_rules(dump):
    rows, report, _ = run(dump)
    assert set(rows) == {
        ("Q5449200", "IT"), ("Q100", "JP"), ("Q905", "IT"), ("Q302", "IT"), ("Q401", "IT"), ("Q500", "IT"), ("Q500", "JP"),
    }
    assert rows[("Q100", "JP")]["hop"] == 1 and rows[("Q5449200", "IT")]["hop"] == 2
    assert rows[("Q905", "IT")]["hop"] == 4 and rows[("Q302", "IT")]["hop"] == 3
    assert report.outside_countries["cuisine"] == 1  # Q600 (France) is an artifact, not emitted, not traversed


def test_filone_record(dump):
    rows, _, _ = run(dump)
    r = rows[("Q5449200", "IT")]
    assert (r["name"], r["root"], r["parent"], r["parent_name"], r["found_via"]) == ("Filone", DISH, "Q7802", "bread", "P279")
    assert (r["country_property"], r["popularity"], r["image"], r["inception_year"]) == ("P495", 3, "Filone.jpg", 1900)
    assert r["era"] == "modern" and r["aliases"] == ["filone bread"] and r["description"] == "Italian bread"
    assert r["P279"] == ["Q7802"] and r["P495"] == [IT] and r["P17"] == []


def test_several_countries_each_listed_with_its_property(dump):
    rows, _, _ = run(dump)
    assert rows[("Q500", "IT")]["country_property"] == "P495"
    assert rows[("Q500", "JP")]["country_property"] == "P17"


def test_deprecated_country_ignored(dump):
    rows, _, _ = run(dump)
    assert ("Q401", "JP") not in rows and rows[("Q401", "IT")]["P495"] == [IT]


def test_hop_limit(dump):
    rows, _, _ = run(dump, hops=5)
    assert rows[("Q906", "IT")]["hop"] == 5
    rows, _, _ = run(dump, hops=1)
    assert {q for q, _ in rows} == {"Q100", "Q401", "Q500"}


def test_compressed_dumps_give_the_same_rows(tmp_path, dump):
    expected, _, _ = run(dump)
    for suffix in (".json.gz", ".json.bz2"):
        assert run(write_dump(tmp_path / f"d{suffix}", graph()))[0] == expected


def test_malformed_lines_counted_and_threshold(tmp_path):
    bad = ("{not json", '{"type":"item"}')  # broken JSON; an entity without an id
    entities = graph() * 1 + [entity(f"Q{7000 + i}", f"filler {i}") for i in range(200)]
    path = write_dump(tmp_path / "d.json", entities, extra_lines=bad)
    rows, _, kb = run(path)
    assert kb.report.malformed == 2 and len(kb.report.malformed_examples) == 2
    assert ("Q5449200", "IT") in rows
    few = write_dump(tmp_path / "few.json", graph()[:3], extra_lines=bad)
    with pytest.raises(CultureboardError, match="not valid entities"):
        run(few)


def test_corrupt_and_missing_dumps(tmp_path, dump):
    data = gzip.compress(dump.read_bytes())
    truncated = tmp_path / "t.json.gz"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(CultureboardError, match="cannot be read as a Wikidata JSON dump"):
        run(truncated)
    with pytest.raises(CultureboardError, match="no such dump file"):
        run(tmp_path / "missing.json")
    empty = tmp_path / "empty.json"
    empty.write_text("[\n]\n")
    with pytest.raises(CultureboardError, match="holds no Wikidata entity"):
        run(empty)


def test_era_buckets():
    assert [era_of_year(y) for y in (None, -500, 499, 500, 1499, 1500, 1799, 1800, 1945, 1946, 2020)] == [
        None, "ancient", "ancient", "medieval", "medieval", "early modern", "early modern", "modern", "modern",
        "contemporary", "contemporary",
    ]
