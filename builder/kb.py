"""What the traversal needs from a knowledge base, whatever serves it (a dump file or a SPARQL endpoint).

Both sources answer the same five questions with the same rules: deprecated-rank statements are
ignored, "somevalue"/"novalue" snaks carry no value, and every list comes back sorted, so the two
give identical artifact tables on the same data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Protocol

from cultureboard.records import WIKIDATA_PROPERTIES

EDGE_PROPERTIES = ("P31", "P279")  # instance of, subclass of: followed downwards
COUNTRY_PROPERTIES = ("P495", "P17")  # country of origin, country: make a node an artifact


@dataclass(frozen=True, order=True)
class Edge:
    child: str
    parent: str
    prop: str  # P31 or P279


@dataclass
class Details:
    """The fields of an artifact row that come from its own entity."""

    name: str | None = None
    description: str | None = None
    aliases: list[str] = field(default_factory=list)
    sitelinks: int = 0
    image: str | None = None
    commons_category: str | None = None  # P373
    inception_year: int | None = None
    time_period: list[str] = field(default_factory=list)
    claims: dict[str, list[str]] = field(default_factory=lambda: {p: [] for p in WIKIDATA_PROPERTIES})


class KnowledgeBase(Protocol):
    def children(self, parents: Iterable[str]) -> list[Edge]:
        """Every non-deprecated P31/P279 edge pointing at one of ``parents``."""

    def countries(self, qids: Iterable[str]) -> dict[str, list[tuple[str, str]]]:
        """For each qid that has any, its non-deprecated (P495|P17, country QID) claims."""

    def details(self, qids: Iterable[str]) -> dict[str, Details]:
        """Labels, aliases, sitelinks count, image and the recorded claims of artifacts."""

    def labels(self, qids: Iterable[str]) -> dict[str, str]:
        """English labels of arbitrary entities (the classes artifacts were found under)."""

    def start_years(self, qids: Iterable[str]) -> dict[str, int]:
        """Start year (P580) of time periods, to give an era to artifacts that only have P2348."""

    def native_labels(self, qids: Iterable[str], languages: Iterable[str]) -> dict[str, dict[str, str]]:
        """For each artifact (a candidate whose details are known) with any, its labels in the BCP 47
        ``languages``: {qid: {tag: label}}, chosen by :func:`pick_labels`."""


def label_codes(tag: str) -> tuple[str, ...]:
    """The Wikidata label languages that may hold a label in BCP 47 ``tag``, best first: the tag in lower
    case, then its language subtag alone (``pt-BR``: ``pt-br``, then ``pt``)."""
    full, primary = tag.lower(), tag.split("-")[0].lower()
    return (full,) if full == primary else (full, primary)


def pick_labels(found: dict[str, str], tags: Iterable[str]) -> dict[str, str]:
    """{tag: label} for each BCP 47 tag of ``tags`` that has a label among ``found`` (Wikidata language code ->
    label), the first of :func:`label_codes` that has one."""
    out = {}
    for tag in tags:
        label = next((found[code] for code in label_codes(tag) if found.get(code)), None)
        if label:
            out[tag] = label
    return out


_YEAR = re.compile(r"^([+-]?)0*(\d+)-")


def year_of(time_value: str) -> int | None:
    """The year of a Wikidata time (``+1889-03-31T00:00:00Z``) or an xsd:dateTime (``-0500-01-01T...``)."""
    m = _YEAR.match(time_value)
    if not m:
        return None
    year = int(m.group(2))
    return -year if m.group(1) == "-" else year


def qid_number(qid: str) -> int:
    return int(qid[1:])
