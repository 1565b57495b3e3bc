"""The country table: ISO code, Wikidata QID, names, adjective, continent and Global North / South.

``data/countries.csv`` covers every country of the five papers (CUBE, CuRe, CultDiff, CULTIVate,
ECB). ``region_group`` follows UNCTAD's developed (GN) / developing (GS) split, as CuRe and
CULTIVate use it. ``name_in_sentence`` is the form used after a preposition ("in the United
States"); ``adjective`` the demonym ("Brazilian cuisine").

``languages`` lists, as BCP 47 tags separated by ``;``, the country's official or most spoken languages other
than English (the native-language prompt variants are made in each; an English-only country has none). The
facts are from the Unicode CLDR territory data (``supplementalData.xml``, ``territoryInfo``: languages with
``officialStatus`` official or de facto official) and, where English is the only official language, the most
spoken first languages named by the national constitution or census: Nigeria's 1999 Constitution (s. 55:
Hausa, Igbo, Yoruba), South Africa's Census 2022 (isiZulu, isiXhosa, Afrikaans), Ghana's 2021 census (Akan),
Zimbabwe's 2013 Constitution (Shona, Ndebele), New Zealand's Maori Language Act 2016. They were written from
these sources by the developer without an online check; a correction is a one-line pull request. Deliberate
choices: India lists Hindi only (the Union's official language besides English; its 22 scheduled languages
would multiply the prompts), Switzerland de, fr and it (not Romansh), Algeria and Morocco Arabic only,
Norway Bokmal (``nb``), China and Singapore Simplified Chinese (``zh-Hans``), Brazil ``pt-BR``.
"""

from __future__ import annotations

import csv
import functools
import re
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
    languages: tuple[str, ...] = ()  # BCP 47 tags, English omitted


#: A BCP 47 tag as this project writes them: a 2-3 letter language subtag in lower case, an optional script
#: (4 letters, title case) and an optional region (2 letters in upper case, or 3 digits): es, pt-BR, zh-Hans.
_BCP47 = re.compile(r"[a-z]{2,3}(?:-[A-Z][a-z]{3})?(?:-(?:[A-Z]{2}|[0-9]{3}))?")


def check_language_tag(tag, where: str) -> str:
    """``tag`` when it is a well-formed BCP 47 tag in canonical case (:data:`_BCP47`) of a language other than
    English; else a CultureboardError naming ``where`` (the file and entry) and the fix."""
    if isinstance(tag, str) and _BCP47.fullmatch(tag) and tag.split("-")[0] != "en":
        return tag
    raise CultureboardError(
        where, f"language {tag!r} is not a BCP 47 tag of a language other than English, as this project writes them",
        "write a language subtag in lower case, optionally a script and a region: es, yo, pt-BR, zh-Hans "
        "(English is never listed: it is the prompts' own language)")


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


COUNTRIES_FILE = "cultureboard/data/countries.csv"


@functools.cache
def load_countries() -> CountryTable:
    return parse_countries(resources.files("cultureboard").joinpath("data/countries.csv").read_text(encoding="utf-8"))


def parse_countries(text: str, source: str = COUNTRIES_FILE) -> CountryTable:
    """The country table of a CSV text in the layout of ``data/countries.csv``; a malformed language tag is a
    CultureboardError naming ``source``, the row and the fix."""
    rows = csv.DictReader(text.splitlines())
    return CountryTable(
        [
            Country(
                iso2=r["iso2"], qid=r["qid"], name=r["name"], name_in_sentence=r["name_in_sentence"],
                adjective=r["adjective"], continent=r["continent"], region_group=r["region_group"],
                aliases=tuple(a for a in r["aliases"].split(";") if a),
                languages=tuple(check_language_tag(t, f"{source} (row {r['iso2']}, languages)")
                                for t in (r.get("languages") or "").split(";") if t),
            )
            for r in rows
        ]
    )
