"""The country table covers every country of the five papers, under every spelling their data uses."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from cultureboard.countries import load_countries
from cultureboard.errors import CultureboardError

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference"
CURE_CSVS = REFERENCE / "cure" / "prepare_data" / "cure_dataset_csv"
CUBE_1K = REFERENCE / "cube" / "dataset" / "cube_1k.json"

CONTINENTS = {"Africa", "Asia", "Europe", "North America", "South America", "Oceania"}

#: Country lists and keys as the papers and their released data spell them.
CULTDIFF = ["Azerbaijan", "China", "Ethiopia", "Indonesia", "Mexico", "Pakistan", "South Korea", "Spain",
            "United Kingdom", "United States"]
CULTIVATE = {  # repo key -> GN/GS as the paper splits them
    "USA": "GN", "SPAIN": "GN", "ITALY": "GN", "GERMANY": "GN", "FRANCE": "GN",
    "IRAN": "GS", "TURKEY": "GS", "CHINA": "GS", "INDIA": "GS", "INDONESIA": "GS", "PHILIPPINES": "GS",
    "NEPAL": "GS", "NIGERIA": "GS", "SOUTH_AFRICA": "GS", "BRAZIL": "GS", "MEXICO": "GS",
}
ECB = {"china": "CN", "india": "IN", "kenya": "KE", "korea": "KR", "south_korea": "KR", "nigeria": "NG",
       "united_states": "US"}
COMMON = {"USA": "US", "US": "US", "UK": "GB", "Türkiye": "TR", "Czechia": "CZ", "Korea": "KR",
          "Czech Republic": "CZ", "the Netherlands": "NL", "S. Korea": "KR"}


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"official reference data not found at {path} (the shared/ folder beside the repo)")
    return path


def _cure_regions() -> dict[str, set[str]]:
    regions: dict[str, set[str]] = {}
    for path in sorted(_need(CURE_CSVS).glob("*.csv")):
        with path.open(encoding="utf-8") as f:
            for row in csv.DictReader(f):
                regions.setdefault(row["Region"], set()).add(row["Global North/South"])
    return regions


def test_every_cure_region_resolves_with_its_region_group():
    table = load_countries()
    regions = _cure_regions()
    assert len(regions) == 64
    for region, groups in regions.items():
        country = table.lookup(region)
        assert country is not None, f"CuRe region {region!r} is not in countries.csv"
        assert len(groups) == 1, f"CuRe labels {region!r} both ways: {groups}"
        expected = {"Global North": "GN", "Global South": "GS"}[groups.pop()]
        assert country.region_group == expected, f"{region}: {country.region_group} != CuRe's {expected}"


def test_every_cube_1k_country_resolves():
    rows = json.loads(_need(CUBE_1K).read_text(encoding="utf-8"))
    names = {row["country"] for row in rows}
    assert len(names) == 8
    missing = sorted(n for n in names if load_countries().lookup(n) is None)
    assert not missing, f"CUBE-1K countries not in countries.csv: {missing}"


def test_cultdiff_countries_resolve():
    table = load_countries()
    assert [table.lookup(n).name for n in CULTDIFF] == CULTDIFF


def test_cultivate_keys_resolve_with_the_papers_split():
    table = load_countries()
    got = {key: table.lookup(key).region_group for key in CULTIVATE}
    assert got == CULTIVATE


@pytest.mark.parametrize("spelling,iso2", [*ECB.items(), *COMMON.items()])
def test_known_spellings_resolve(spelling, iso2):
    country = load_countries().lookup(spelling)
    assert country is not None and country.iso2 == iso2, f"{spelling!r} should resolve to {iso2}"


def test_codes_are_unique_and_well_formed():
    table = load_countries()
    isos = [c.iso2 for c in table]
    qids = [c.qid for c in table]
    assert len(set(isos)) == len(isos), "duplicate iso2"
    assert len(set(qids)) == len(qids), "duplicate qid"
    assert all(re.fullmatch(r"[A-Z]{2}", i) for i in isos), isos
    assert all(re.fullmatch(r"Q[1-9][0-9]*", q) for q in qids), qids


def test_known_qids():
    table = load_countries()
    known = {"IT": "Q38", "JP": "Q17", "US": "Q30", "KR": "Q884", "PR": "Q1183", "GB": "Q145", "CN": "Q148"}
    assert {iso: table.by_iso(iso).qid for iso in known} == known


def test_slice_fields_take_known_values():
    for c in load_countries():
        assert c.region_group in {"GN", "GS"}, f"{c.iso2}: region_group {c.region_group!r}"
        assert c.continent in CONTINENTS, f"{c.iso2}: continent {c.continent!r}"
        assert c.name and c.name_in_sentence and c.adjective, f"{c.iso2}: empty name field"


def test_no_name_belongs_to_two_countries():
    owners: dict[str, set[str]] = {}
    for c in load_countries():
        for key in {c.iso2, c.name, c.name_in_sentence, *c.aliases}:
            owners.setdefault(key.casefold(), set()).add(c.iso2)
    shared = {key: isos for key, isos in owners.items() if len(isos) > 1}
    assert not shared, f"names shared by several countries: {shared}"


def test_sentence_forms_and_continents():
    table = load_countries()
    assert table.by_iso("US").name_in_sentence == "the United States"
    assert table.by_iso("PH").name_in_sentence == "the Philippines"
    assert table.by_iso("BR").name_in_sentence == "Brazil"
    assert {table.by_iso(i).continent for i in ("MX", "CR", "PR")} == {"North America"}
    assert table.by_iso("TR").continent == "Asia" and table.by_iso("RU").continent == "Europe"


def test_resolve_accepts_codes_in_any_case():
    assert [c.iso2 for c in load_countries().resolve(["IT", "jp"])] == ["IT", "JP"]


def test_resolve_rejects_an_unknown_code_by_name():
    with pytest.raises(CultureboardError, match="XX"):
        load_countries().resolve(["IT", "XX"])
