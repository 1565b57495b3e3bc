"""Turn a Wikidata JSON dump into N-Triples in the Wikidata Query Service's RDF vocabulary.

Loaded into any SPARQL 1.1 store, the result answers the builder's SPARQL queries exactly as the
Wikidata Query Service would for those entities: full statements (``p:``/``ps:`` with
``wikibase:rank``), truthy ``wdt:`` triples for non-deprecated values, labels in English and in the country
table's languages (``kb_dump.LABEL_LANGUAGES``), English descriptions and aliases, and the
``wikibase:sitelinks`` count. It covers the properties the builder reads.
Maintainers use it to stand up a local endpoint from a dump (``cultureboard dump-to-rdf``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Iterator
from urllib.parse import quote


from cultureboard.atomic import atomic_write_text

from .kb_dump import BAD_JSON, _decode_entity, _Entity, _Statement, dump_lines, label_values

WD = "http://www.wikidata.org/entity/"
WDS = "http://www.wikidata.org/entity/statement/"
WDT = "http://www.wikidata.org/prop/direct/"
P = "http://www.wikidata.org/prop/"
PS = "http://www.wikidata.org/prop/statement/"
WIKIBASE = "http://wikiba.se/ontology#"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
SCHEMA_DESCRIPTION = "http://schema.org/description"
SKOS_ALT = "http://www.w3.org/2004/02/skos/core#altLabel"
COMMONS = "http://commons.wikimedia.org/wiki/Special:FilePath/"
XSD = "http://www.w3.org/2001/XMLSchema#"
RANKS = {"normal": "NormalRank", "preferred": "PreferredRank", "deprecated": "DeprecatedRank"}
PROPERTIES = ("P31", "P279", "P495", "P17", "P2012", "P361", "P18", "P373", "P571", "P2348", "P580")
STRING_PROPERTIES = ("P373",)  # string-valued: a plain literal, where a commonsMedia string is a Commons file IRI


def _lit(text: str, lang: str | None = None, datatype: str | None = None) -> str:
    body = json.dumps(text, ensure_ascii=False)  # N-Triples string escaping is JSON's, for these characters
    if lang:
        return f"{body}@{lang}"
    if datatype:
        return f"{body}^^<{datatype}>"
    return body


def _object(value) -> str | None:
    """The RDF term of a statement value: an item IRI, a Commons file IRI or an xsd:dateTime."""
    if isinstance(value, dict) and isinstance(value.get("id"), str):
        return f"<{WD}{value['id']}>"
    if isinstance(value, dict) and isinstance(value.get("time"), str):
        t = value["time"].lstrip("+")
        sign = "-" if t.startswith("-") else ""
        year, month, rest = t.lstrip("-").split("-", 2)
        day, clock = rest.split("T", 1)
        month = month if month != "00" else "01"  # WDQS writes year-precision dates as January 1st
        day = day if day != "00" else "01"
        return _lit(f"{sign}{year}-{month}-{day}T{clock}", datatype=XSD + "dateTime")
    if isinstance(value, str):
        return f"<{COMMONS}{quote(value)}>"
    return None


def entity_triples(e: _Entity) -> Iterator[str]:
    s = f"<{WD}{e.id}>"
    for code, label in label_values(e.labels).items():
        yield f"{s} <{RDFS_LABEL}> {_lit(label, code)} ."
    if e.descriptions.en:
        yield f"{s} <{SCHEMA_DESCRIPTION}> {_lit(e.descriptions.en.value, 'en')} ."
    for alias in e.aliases.en:
        yield f"{s} <{SKOS_ALT}> {_lit(alias.value, 'en')} ."
    yield f"{s} <{WIKIBASE}sitelinks> {_lit(str(len(e.sitelinks)), datatype=XSD + 'integer')} ."
    for prop in PROPERTIES:
        statements: list[_Statement] = getattr(e.claims, prop)
        for i, st in enumerate(statements):
            snak = st.mainsnak
            if snak.snaktype != "value" or snak.datavalue is None:
                continue
            value = snak.datavalue.value
            obj = _lit(value) if prop in STRING_PROPERTIES and isinstance(value, str) else _object(value)
            if obj is None:
                continue
            node = f"<{WDS}{e.id}-{prop}-{i}-{hashlib.sha1(obj.encode()).hexdigest()[:8]}>"
            yield f"{s} <{P}{prop}> {node} ."
            yield f"{node} <{PS}{prop}> {obj} ."
            yield f"{node} <{WIKIBASE}rank> <{WIKIBASE}{RANKS.get(st.rank, 'NormalRank')}> ."
            if st.rank != "deprecated":
                yield f"{s} <{WDT}{prop}> {obj} ."


def dump_to_ntriples(dump: str | Path, out: str | Path) -> int:
    """Write ``out`` (N-Triples) from the dump; returns the number of entities converted.
    Malformed lines are skipped, as the builder skips them."""
    lines, count = [], 0
    for _, raw in dump_lines(Path(dump)):
        try:
            e = _decode_entity(raw)
            triples = list(entity_triples(e))
        except (*BAD_JSON, ValueError):  # hostile lines (bad UTF-8, deep nesting, a malformed time) are skipped
            continue
        count += 1
        lines.extend(triples)
    atomic_write_text(out, "\n".join(lines) + "\n")
    return count
