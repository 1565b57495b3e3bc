"""The country table: ISO code, Wikidata QID, names, adjective, continent and Global North / South.

``data/countries.csv`` covers every country of the five papers (CUBE, CuRe, CultDiff, CULTIVate,
ECB). ``region_group`` follows UNCTAD's developed (GN) / developing (GS) split, as CuRe and
CULTIVate use it. ``name_in_sentence`` is the form used after a preposition ("in the United
States"); ``adjective`` the demonym ("Brazilian cuisine").
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from importlib import resources

from .errors import CultureboardError


@dataclass(frozen=True)
class Country:
    iso2: str
    qid: str
    name: str
    name_in_sentence: str
    adjective: str
    continent: str
    region_group: str
    aliases: tuple[str, ...]


class CountryTable:
    def __init__(self, countries: list[Country]):
        self.countries = countries
        self._by_iso = {c.iso2: c for c in countries}
        self._by_qid = {c.qid: c for c in countries}
        self._by_name: dict[str, Country] = {}
        for c in countries:
            for key in (c.iso2, c.name, c.name_in_sentence, *c.aliases):
                self._by_name.setdefault(key.casefold(), c)

    def __iter__(self):
        return iter(self.countries)

    def __len__(self) -> int:
        return len(self.countries)

    def by_iso(self, code: str) -> Country:
        try:
            return self._by_iso[code.upper()]
        except KeyError:
            raise CultureboardError(
                f"country {code!r}", "is not an ISO 3166-1 alpha-2 code in the country table",
                f"use one of {', '.join(sorted(self._by_iso))}, or add a row to cultureboard/data/countries.csv",
            ) from None

    def by_qid(self, qid: str) -> Country | None:
        return self._by_qid.get(qid)

    def lookup(self, name_or_code: str) -> Country | None:
        """Find a country by ISO code, English name or a known alias (case-insensitive)."""
        return self._by_name.get(name_or_code.strip().casefold())

    def resolve(self, codes: list[str]) -> list[Country]:
        """Resolve ISO codes (or names) given on a command line; an unknown one is a user error."""
        out = []
        for code in codes:
            country = self.lookup(code)
            if country is None:
                self.by_iso(code)  # raises the error naming the valid codes
            out.append(country)
        return out


@functools.cache
def load_countries() -> CountryTable:
    text = resources.files("cultureboard").joinpath("data/countries.csv").read_text(encoding="utf-8")
    rows = csv.DictReader(text.splitlines())
    return CountryTable(
        [
            Country(
                iso2=r["iso2"], qid=r["qid"], name=r["name"], name_in_sentence=r["name_in_sentence"],
                adjective=r["adjective"], continent=r["continent"], region_group=r["region_group"],
                aliases=tuple(a for a in r["aliases"].split(";") if a),
            )
            for r in rows
        ]
    )
