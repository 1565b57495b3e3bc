"""The SPARQL source against a real SPARQL server (Oxigraph on 127.0.0.1) loaded with the same data as RDF:
the dump and the endpoint must give identical artifact tables."""

from __future__ import annotations

import pytest

from cultureboard.builder.artifact_space import extract
from cultureboard.builder.build import sample_dump_path
from cultureboard.builder.kb_sparql import SparqlKnowledgeBase
from cultureboard.errors import CultureboardError
from sparql_server import OxigraphServer
from test_traversal import graph
from wikidata_factory import write_dump

COUNTRIES = ["BR", "FR", "IN", "IT", "JP", "NG", "TR", "US", "CN", "MX", "KR", "ES", "GB"]


def both(dump, tmp_path, concepts, countries, concepts_file=None):
    with OxigraphServer(dump, tmp_path) as url:
        via_sparql, report = extract(sparql=url, concepts=concepts, countries=countries, concepts_file=concepts_file)
    via_dump, _ = extract(dump=str(dump), concepts=concepts, countries=countries, concepts_file=concepts_file)
    return via_dump, via_sparql, report


def test_dump_equals_sparql_on_hand_made_graph(tmp_path):
    dump = write_dump(tmp_path / "d.json", graph())
    concepts_file = tmp_path / "concepts.yaml"
    concepts_file.write_text("cuisine:\n  roots:\n    - {qid: Q746549, name: dish}\n")
    via_dump, via_sparql, report = both(dump, tmp_path, ["cuisine"], ["IT", "JP"], concepts_file)
    assert len(via_dump) == 7 and via_sparql == via_dump and report["sparql_queries"] > 0


def test_dump_equals_sparql_on_shipped_sample(tmp_path):
    via_dump, via_sparql, _ = both(sample_dump_path(), tmp_path, ["cuisine", "landmarks", "art"], COUNTRIES)
    assert len(via_dump) > 100
    assert via_sparql == via_dump


def test_unreachable_endpoint_is_a_clear_error():
    kb = SparqlKnowledgeBase("http://127.0.0.1:9/sparql", retries=0, timeout=2)
    with pytest.raises(CultureboardError, match="unreachable") as err:
        kb.children(["Q746549"])
    assert "--sparql http://127.0.0.1:9/sparql" in err.value.message
