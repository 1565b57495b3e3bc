"""A knowledge base served by a SPARQL 1.1 endpoint with Wikidata's RDF vocabulary.

In production that is the Wikidata Query Service (https://query.wikidata.org/sparql). Statements are
read through ``p:``/``ps:`` with their ``wikibase:rank`` so that deprecated ones are skipped exactly
as the dump reader skips them (the truthy ``wdt:`` triples would also drop normal-rank values
whenever a preferred one exists). Queries go out in batches of ``batch`` QIDs.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from collections import defaultdict
from typing import Iterable
from urllib.parse import unquote

from cultureboard import __version__
from cultureboard.errors import CultureboardError
from cultureboard.http import Deadlines, DeadlinePassed, open_by, read_body, with_retries

from .kb import COUNTRY_PROPERTIES, EDGE_PROPERTIES, Details, Edge, label_codes, pick_labels, qid_number, year_of
from .kb_rdf import COMMONS, WD

PREFIXES = """PREFIX wd: <http://www.wikidata.org/entity/>
PREFIX p: <http://www.wikidata.org/prop/>
PREFIX ps: <http://www.wikidata.org/prop/statement/>
PREFIX wikibase: <http://wikiba.se/ontology#>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
PREFIX schema: <http://schema.org/>
PREFIX skos: <http://www.w3.org/2004/02/skos/core#>
"""

#: Overall limits on reading answers (``cultureboard.http.Deadlines``): one query's answer, all its attempts
#: together (the Wikidata Query Service stops a query at 60 s), and every answer of one run; and the largest answer.
QUERY_SECONDS, RUN_SECONDS = 300.0, 6 * 3600.0
MAX_ANSWER_BYTES = 1 << 30

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
    """The QID of a wd: IRI term (Q and 1 to 18 ASCII digits, as the dump reader accepts); None otherwise."""
    v = term["value"]
    if term["type"] == "uri" and v.startswith(WD + "Q"):
        digits = v[len(WD) + 1:]
        if digits.isdecimal() and digits.isascii() and len(digits) <= 18:
            return v[len(WD):]
    return None


class _WrongShape(ValueError):
    """An answer that is JSON but not SPARQL results with the variables the query selects."""


def _bindings(answer, required: tuple[str, ...]) -> list[dict]:
    """The rows of a SPARQL JSON results answer, each checked to bind ``required`` (and any other
    variable) to a term ``{"type": str, "value": str}``; ``_WrongShape`` otherwise."""
    results = answer.get("results") if isinstance(answer, dict) else None
    rows = results.get("bindings") if isinstance(results, dict) else None
    if not isinstance(rows, list):
        raise _WrongShape("no results.bindings list")
    for row in rows:
        if not isinstance(row, dict):
            raise _WrongShape("a row is not an object")
        missing = [v for v in required if v not in row]
        if missing:
            raise _WrongShape(f"a row lacks ?{', ?'.join(missing)}")
        for term in row.values():
            if not (isinstance(term, dict) and isinstance(term.get("type"), str) and isinstance(term.get("value"), str)):
                raise _WrongShape("a term is not {type, value}")
    return rows


class SparqlKnowledgeBase:
    def __init__(self, url: str, batch: int = 200, timeout: float = 60.0, retries: int = 3):
        self.url, self.batch, self.timeout, self.retries = url, batch, timeout, retries
        self.queries = 0
        self.deadlines = Deadlines(QUERY_SECONDS, RUN_SECONDS)

    # -- transport

    def _query(self, query: str, required: tuple[str, ...]) -> list[dict]:
        """The rows answering ``query``, every one binding the variables in ``required``; a clear error
        for an unreachable endpoint, an HTTP error, a dropped connection or an answer of the wrong shape."""
        data = urllib.parse.urlencode({"query": PREFIXES + query}).encode()
        request = urllib.request.Request(
            self.url, data=data, method="POST",
            headers={
                "Accept": "application/sparql-results+json",
                "Content-Type": "application/x-www-form-urlencoded",
                "User-Agent": f"cultureboard/{__version__} (benchmark builder)",
            },
        )
        def attempt() -> bytes:
            with open_by(urllib.request.urlopen, request, timeout=self.timeout, deadline=deadline) as response:
                body = read_body(response, max_bytes=MAX_ANSWER_BYTES, deadline=deadline)
            self.queries += 1
            return body

        try:
            deadline = self.deadlines.next()
            body = with_retries(attempt, retries=self.retries)
        except DeadlinePassed as exc:  # before TimeoutError, which it is
            problem = f"answered too slowly ({exc}; {self.deadlines.limits()})"
        except urllib.error.HTTPError as exc:
            problem = f"answered HTTP {exc.code} ({exc.reason})"
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            problem = f"is unreachable ({getattr(exc, 'reason', exc)})"
        except http.client.HTTPException as exc:  # IncompleteRead: the connection dropped mid-answer
            problem = f"broke off its answer ({exc.__class__.__name__})"
        except ValueError as exc:  # not an http(s) URL
            problem = f"cannot be opened ({exc})"
        else:
            if len(body) > MAX_ANSWER_BYTES:
                raise self._wrong(f"an answer larger than {MAX_ANSWER_BYTES:,} bytes")
            try:
                return _bindings(json.loads(body), required)
            except _WrongShape as exc:
                raise self._wrong(str(exc)) from None
            except (ValueError, RecursionError):  # not UTF-8 JSON, or nested deeper than the parser goes
                raise self._wrong("not JSON") from None
        raise CultureboardError(
            f"--sparql {self.url}", problem,
            "check the endpoint URL (it must accept SPARQL 1.1 queries over HTTP POST) and that it is running, or use --dump",
        )

    def _wrong(self, problem: str) -> CultureboardError:
        return CultureboardError(f"--sparql {self.url}", f"did not answer with SPARQL JSON results ({problem})",
                                 "check that the URL is a SPARQL 1.1 endpoint with Wikidata's RDF vocabulary, or use --dump")

    def _item(self, row: dict) -> str:
        """The ?item of a row: one of the wd: items the query asked about."""
        item = _qid(row["item"])
        if item is None:
            raise self._wrong(f"?item {row['item']['value'][:80]!r} is not a Wikidata item")
        return item

    def _details_of(self, out: dict[str, Details], row: dict) -> Details:
        return out.setdefault(self._item(row), Details())

    def _count(self, term: dict) -> int:
        value = term["value"]
        if not (value.isdecimal() and value.isascii() and len(value) <= 18):
            raise self._wrong(f"a sitelinks count {value[:80]!r} is not a number")
        return int(value)

    def _batched(self, qids: Iterable[str]):
        qids = sorted(set(qids), key=qid_number)
        for i in range(0, len(qids), self.batch):
            yield " ".join(f"wd:{q}" for q in qids[i : i + self.batch])

    # -- the KnowledgeBase questions

    def children(self, parents: Iterable[str]) -> list[Edge]:
        edges = set()
        for values in self._batched(parents):
            for b in self._query(
                f"SELECT ?child ?value ?prop WHERE {{ VALUES ?value {{ {values} }}\n{_statements('?child', EDGE_PROPERTIES)} }}",
                ("child", "value", "prop"),
            ):
                child, parent = _qid(b["child"]), _qid(b["value"])
                if child and parent:
                    edges.add(Edge(child, parent, b["prop"]["value"]))
        return sorted(edges)

    def countries(self, qids: Iterable[str]) -> dict[str, list[tuple[str, str]]]:
        out: dict[str, set] = defaultdict(set)
        for values in self._batched(qids):
            for b in self._query(
                f"SELECT ?item ?value ?prop WHERE {{ VALUES ?item {{ {values} }}\n{_statements('?item', COUNTRY_PROPERTIES)} }}",
                ("item", "value", "prop"),
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
                OPTIONAL {{ ?item wikibase:sitelinks ?sitelinks }} }}""",
                ("item",),
            ):
                d = self._details_of(out, b)
                d.name = b.get("label", {}).get("value")
                d.description = b.get("description", {}).get("value")
                d.sitelinks = self._count(b["sitelinks"]) if "sitelinks" in b else 0
            for b in self._query(
                f'SELECT ?item ?alias WHERE {{ VALUES ?item {{ {values} }} ?item skos:altLabel ?alias FILTER(lang(?alias) = "en") }}',
                ("item", "alias"),
            ):
                self._details_of(out, b).aliases.append(b["alias"]["value"])
            strings: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)  # (item, field) -> (rank, value)
            for b in self._query(
                f"SELECT ?item ?value ?prop ?rank WHERE {{ VALUES ?item {{ {values} }}\n{_statements('?item', DETAIL_PROPERTIES)} }}",
                ("item", "value", "prop", "rank"),
            ):
                item, prop, value = self._item(b), b["prop"]["value"], b["value"]
                d = out.setdefault(item, Details())
                rank = 0 if b["rank"]["value"].endswith("PreferredRank") else 1
                if prop == "P18" and value["value"].startswith(COMMONS):
                    strings[item, "image"].append((rank, unquote(value["value"][len(COMMONS):])))
                elif prop == "P373" and value["type"] == "literal":
                    strings[item, "commons_category"].append((rank, value["value"]))
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
                f'SELECT ?item ?label WHERE {{ VALUES ?item {{ {values} }} ?item rdfs:label ?label FILTER(lang(?label) = "en") }}',
                ("item", "label"),
            ):
                out[self._item(b)] = b["label"]["value"]
        return out

    def native_labels(self, qids: Iterable[str], languages: Iterable[str]) -> dict[str, dict[str, str]]:
        languages = list(languages)
        codes = sorted({code for tag in languages for code in label_codes(tag)})
        if not codes:
            return {}
        found: dict[str, dict[str, str]] = defaultdict(dict)
        wanted = ", ".join(f'"{code}"' for code in codes)  # codes are checked BCP 47 tags: nothing to escape
        for values in self._batched(qids):
            for b in self._query(
                f"SELECT ?item ?label WHERE {{ VALUES ?item {{ {values} }} ?item rdfs:label ?label "
                f"FILTER(LCASE(lang(?label)) IN ({wanted})) }}",
                ("item", "label"),
            ):
                found[self._item(b)][b["label"].get("xml:lang", "").lower()] = b["label"]["value"]
        return {q: picked for q, labels in found.items() if (picked := pick_labels(labels, languages))}

    def start_years(self, qids: Iterable[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for values in self._batched(qids):
            for b in self._query(
                f"SELECT ?item ?value ?prop WHERE {{ VALUES ?item {{ {values} }}\n{_statements('?item', ['P580'])} }}",
                ("item", "value"),
            ):
                year = year_of(b["value"]["value"])
                item = self._item(b)
                if year is not None and (item not in out or year < out[item]):
                    out[item] = year
        return out

    def close(self) -> None:
        pass
