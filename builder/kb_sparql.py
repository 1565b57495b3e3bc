"""A knowledge base served by a SPARQL 1.1 endpoint with Wikidata's RDF vocabulary.

In production that is the Wikidata Query Service (https://query.wikidata.org/sparql). Statements are
read through ``p:``/``ps:`` with their ``wikibase:rank`` so that deprecated ones are skipped exactly
as the dump reader skips them (the truthy ``wdt:`` triples would also drop normal-rank values
whenever a preferred one exists). Queries go out in batches of ``batch`` QIDs.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections import defaultdict
from typing import Iterable
from urllib.parse import unquote

from cultureboard import __version__
from cultureboard.errors import CultureboardError
from cultureboard.http import with_retries

from .kb import COUNTRY_PROPERTIES, EDGE_PROPERTIES, Details, Edge, qid_number, year_of
from .kb_rdf import COMMONS, WD

PREFIXES = """PREFIX wd: <http://www.wikidata.org/entity/>
PREFIX p: <http://www.wikidata.org/prop/>
PREFIX ps: <http://www.wikidata.org/prop/statement/>
PREFIX wikibase: <http://wikiba.se/ontology#>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
PREFIX schema: <http://schema.org/>
PREFIX skos: <http://www.w3.org/2004/02/skos/core#>
"""

DETAIL_PROPERTIES = ("P31", "P279", "P495", "P17", "P2012", "P361", "P18", "P373", "P571", "P2348")


def _statements(subject: str, props: Iterable[str]) -> str:
    """A graph pattern binding ?prop, ?value for the non-deprecated statements of ``props``."""
    rows = " ".join(f'(p:{p} ps:{p} "{p}")' for p in props)
    return (
        f"VALUES (?p ?ps ?prop) {{ {rows} }}\n"
        f"{subject} ?p ?st . ?st ?ps ?value ; wikibase:rank ?rank .\n"
        "FILTER(?rank != wikibase:DeprecatedRank)"
    )


def _qid(term: dict) -> str | None:
    v = term["value"]
    if term["type"] == "uri" and v.startswith(WD + "Q"):
        return v[len(WD):]
    return None


class SparqlKnowledgeBase:
    def __init__(self, url: str, batch: int = 200, timeout: float = 60.0, retries: int = 3):
        self.url, self.batch, self.timeout, self.retries = url, batch, timeout, retries
        self.queries = 0

    # -- transport

    def _query(self, query: str) -> list[dict]:
        data = urllib.parse.urlencode({"query": PREFIXES + query}).encode()
        request = urllib.request.Request(
            self.url, data=data, method="POST",
            headers={
                "Accept": "application/sparql-results+json",
                "Content-Type": "application/x-www-form-urlencoded",
                "User-Agent": f"cultureboard/{__version__} (benchmark builder)",
            },
        )
        def attempt() -> list[dict]:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                answer = json.load(response)["results"]["bindings"]
            self.queries += 1
            return answer

        try:
            return with_retries(attempt, retries=self.retries)
        except urllib.error.HTTPError as exc:
            problem = f"answered HTTP {exc.code} ({exc.reason})"
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            problem = f"is unreachable ({getattr(exc, 'reason', exc)})"
        except (ValueError, KeyError):
            problem = "did not answer with SPARQL JSON results"
        raise CultureboardError(
            f"--sparql {self.url}", problem,
            "check the endpoint URL (it must accept SPARQL 1.1 queries over HTTP POST) and that it is running, or use --dump",
        )

    def _batched(self, qids: Iterable[str]):
        qids = sorted(set(qids), key=qid_number)
        for i in range(0, len(qids), self.batch):
            yield " ".join(f"wd:{q}" for q in qids[i : i + self.batch])

    # -- the KnowledgeBase questions

    def children(self, parents: Iterable[str]) -> list[Edge]:
        edges = set()
        for values in self._batched(parents):
            for b in self._query(
                f"SELECT ?child ?value ?prop WHERE {{ VALUES ?value {{ {values} }}\n{_statements('?child', EDGE_PROPERTIES)} }}"
            ):
                child, parent = _qid(b["child"]), _qid(b["value"])
                if child and parent:
                    edges.add(Edge(child, parent, b["prop"]["value"]))
        return sorted(edges)

    def countries(self, qids: Iterable[str]) -> dict[str, list[tuple[str, str]]]:
        out: dict[str, set] = defaultdict(set)
        for values in self._batched(qids):
            for b in self._query(
                f"SELECT ?item ?value ?prop WHERE {{ VALUES ?item {{ {values} }}\n{_statements('?item', COUNTRY_PROPERTIES)} }}"
            ):
                item, country = _qid(b["item"]), _qid(b["value"])
                if item and country:
                    out[item].add((b["prop"]["value"], country))
        return {q: sorted(v) for q, v in out.items()}

    def details(self, qids: Iterable[str]) -> dict[str, Details]:
        out: dict[str, Details] = {}
        for values in self._batched(qids):
            for b in self._query(
                f"""SELECT ?item ?label ?description ?sitelinks WHERE {{ VALUES ?item {{ {values} }}
                OPTIONAL {{ ?item rdfs:label ?label FILTER(lang(?label) = "en") }}
                OPTIONAL {{ ?item schema:description ?description FILTER(lang(?description) = "en") }}
                OPTIONAL {{ ?item wikibase:sitelinks ?sitelinks }} }}"""
            ):
                d = out.setdefault(_qid(b["item"]), Details())
                d.name = b.get("label", {}).get("value")
                d.description = b.get("description", {}).get("value")
                d.sitelinks = int(b["sitelinks"]["value"]) if "sitelinks" in b else 0
            for b in self._query(
                f'SELECT ?item ?alias WHERE {{ VALUES ?item {{ {values} }} ?item skos:altLabel ?alias FILTER(lang(?alias) = "en") }}'
            ):
                out[_qid(b["item"])].aliases.append(b["alias"]["value"])
            strings: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)  # (item, field) -> (rank, value)
            for b in self._query(
                f"SELECT ?item ?value ?prop ?rank WHERE {{ VALUES ?item {{ {values} }}\n{_statements('?item', DETAIL_PROPERTIES)} }}"
            ):
                d, prop, value = out[_qid(b["item"])], b["prop"]["value"], b["value"]
                rank = 0 if b["rank"]["value"].endswith("PreferredRank") else 1
                if prop == "P18" and value["value"].startswith(COMMONS):
                    strings[_qid(b["item"]), "image"].append((rank, unquote(value["value"][len(COMMONS):])))
                elif prop == "P373" and value["type"] == "literal":
                    strings[_qid(b["item"]), "commons_category"].append((rank, value["value"]))
                elif prop == "P571":
                    year = year_of(value["value"])
                    if year is not None and (d.inception_year is None or year < d.inception_year):
                        d.inception_year = year
                elif prop == "P2348" and _qid(value):
                    d.time_period.append(_qid(value))
                elif prop in d.claims and _qid(value):
                    d.claims[prop].append(_qid(value))
            for (item, field_name), candidates in strings.items():  # preferred rank first, then the smallest value
                best = min(rank for rank, _ in candidates)
                setattr(out[item], field_name, min(v for rank, v in candidates if rank == best))
        for d in out.values():
            d.aliases = sorted(set(d.aliases))
            d.time_period = sorted(set(d.time_period), key=qid_number)
            d.claims = {p: sorted(set(v), key=qid_number) for p, v in d.claims.items()}
        return out

    def labels(self, qids: Iterable[str]) -> dict[str, str]:
        out = {}
        for values in self._batched(qids):
            for b in self._query(
                f'SELECT ?item ?label WHERE {{ VALUES ?item {{ {values} }} ?item rdfs:label ?label FILTER(lang(?label) = "en") }}'
            ):
                out[_qid(b["item"])] = b["label"]["value"]
        return out

    def start_years(self, qids: Iterable[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for values in self._batched(qids):
            for b in self._query(
                f"SELECT ?item ?value ?prop WHERE {{ VALUES ?item {{ {values} }}\n{_statements('?item', ['P580'])} }}"
            ):
                year = year_of(b["value"]["value"])
                item = _qid(b["item"])
                if year is not None and (item not in out or year < out[item]):
                    out[item] = year
        return out

    def close(self) -> None:
        pass
