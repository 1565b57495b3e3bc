"""From artifact space to benchmark selection: popularity-weighted stratified sampling, then the
human-editable curation file.

Popularity is the Wikidata sitelinks count, a reproducible stand-in for CUBE's local search counts.
Each (country, concept) stratum is sampled to its target size (CUBE-1K sizes: CUBE Table 7) without
replacement, with probability proportional to popularity + 1 (Efraimidis-Spirakis keys
``u ** (1 / w)`` from a generator seeded by the build seed and the stratum), so the same inputs and
seed give the same selection. The curation file is applied last, so reviewers fix errors by pull
request:

.. code-block:: yaml

    exclude:                      # drop, optionally only for one country
      - {qid: Q123, country: IT, reason: "not an Italian dish"}
    include:                      # force in, from the artifact space ...
      - {qid: Q456}
      - {qid: "manual:pane-carasau", name: Pane carasau, country: IT, concept: cuisine}   # ... or by hand
    rename:
      - {qid: Q789, name: "Better name"}   # the old name is kept as an alias
"""

from __future__ import annotations

import zlib
from collections import defaultdict
from pathlib import Path

import numpy as np

from cultureboard.countries import load_countries
from cultureboard.errors import CultureboardError
from cultureboard.text import NAME, check_text

from .yaml_file import load_yaml

#: CUBE-1K artifacts per (country, concept), CUBE Table 7.
CUBE_1K_SIZES = {
    "BR": {"cuisine": 58, "landmarks": 33, "art": 27},
    "IN": {"cuisine": 73, "landmarks": 40, "art": 27},
    "JP": {"cuisine": 62, "landmarks": 41, "art": 26},
    "NG": {"cuisine": 61, "landmarks": 25, "art": 22},
    "TR": {"cuisine": 63, "landmarks": 39, "art": 26},
    "IT": {"cuisine": 77, "landmarks": 36, "art": 22},
    "US": {"cuisine": 56, "landmarks": 44, "art": 22},
    "FR": {"cuisine": 67, "landmarks": 37, "art": 21},
}
#: Target size for a stratum that CUBE does not cover (its mean stratum size, rounded).
DEFAULT_SIZE = 42


def target_size(country: str, concept: str, sizes: dict | None = None) -> int:
    sizes = CUBE_1K_SIZES if sizes is None else sizes
    return sizes.get(country, {}).get(concept, DEFAULT_SIZE)


def stratified_sample(artifacts: list[dict], seed: int = 0, sizes: dict | None = None) -> list[dict]:
    """Sample each (country, concept) stratum to its target size, weighted by popularity."""
    strata: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for a in artifacts:
        strata[(a["country"], a["concept"])].append(a)
    chosen = []
    for (country, concept), rows in sorted(strata.items()):
        rows = sorted(rows, key=lambda r: r["qid"])
        n = target_size(country, concept, sizes)
        if len(rows) > n:
            rng = np.random.default_rng([seed, zlib.crc32(f"{country}/{concept}".encode())])
            weights = np.array([(r["popularity"] or 0) + 1 for r in rows], dtype=float)
            keys = rng.random(len(rows)) ** (1.0 / weights)
            keep = set(np.argsort(-keys, kind="stable")[:n].tolist())
            rows = [r for i, r in enumerate(rows) if i in keep]
        chosen.extend(rows)
    return chosen


#: The fields each kind of curation entry may have (``manual:`` includes add the fields of a new artifact).
ENTRY_FIELDS = {
    "exclude": {"qid", "country", "reason"},
    "include": {"qid", "country", "reason"},
    "rename": {"qid", "country", "name", "reason"},
}
MANUAL_FIELDS = {"name", "concept", "category", "subcategory", "era", "description"}
_FORMAT = "write YAML with optional lists include / exclude / rename of {qid: ...} entries (see the README)"


def load_curation(path: str | Path, concepts: list[str] | None = None) -> dict:
    """The curation file, checked: only ``include``, ``exclude`` and ``rename`` lists of entries whose
    fields are strings; every entry has a qid; ``country`` is a known country (stored as its ISO
    code); a ``manual:`` include names one of ``concepts`` (the build's, when given). YAML aliases and
    deep nesting are refused (``load_yaml``)."""
    data = load_yaml(path, "a curation file", _FORMAT)
    data = {} if data is None else data
    if not isinstance(data, dict) or set(data) - set(ENTRY_FIELDS):
        raise CultureboardError(path, "must be a mapping with only the keys include, exclude and rename",
                                "see the curation file format in the README")
    table = load_countries()
    for key in ENTRY_FIELDS:
        entries = data.get(key) or []
        if not isinstance(entries, list) or not all(isinstance(e, dict) and e.get("qid") for e in entries):
            raise CultureboardError(path, f"'{key}' must be a list of entries that each have a qid",
                                    f"write {key}: [{{qid: Q...}}, ...]")
        for i, e in enumerate(entries, 1):
            where = f"{path} ({key} entry {i}, qid {str(e['qid'])[:40]})"
            manual = key == "include" and isinstance(e["qid"], str) and e["qid"].startswith("manual:")
            unknown = set(e) - ENTRY_FIELDS[key] - (MANUAL_FIELDS if manual else set())
            if unknown:
                raise CultureboardError(where, f"has unknown field(s) {', '.join(sorted(map(str, unknown)))}",
                                        f"use only {', '.join(sorted(ENTRY_FIELDS[key] | (MANUAL_FIELDS if manual else set())))}"
                                        + ("" if manual else "; fields of a new artifact go on a manual:NAME include"))
            for field, value in e.items():
                if value is not None and not isinstance(value, str):
                    shown = str(value).lower() if isinstance(value, bool) else f"{value!r}"[:40]
                    raise CultureboardError(where, f"{field} is {shown}, not a string",
                                            f"quote it: {field}: \"...\" (YAML reads NO, yes, 1.0 as other types)")
                if field == "name" and value is not None:
                    check_text(value, NAME, f"{where}, name", "write the name as one line of visible text, without "
                               "control, bidirectional or invisible format characters")
            if e.get("country") is not None:
                country = table.lookup(e["country"])
                if country is None:
                    raise CultureboardError(where, f"country {e['country']!r} is not in the country table",
                                            "use an ISO 3166-1 alpha-2 code such as IT")
                e["country"] = country.iso2
            if manual:
                missing = [k for k in ("name", "country", "concept") if not e.get(k)]
                if missing:
                    raise CultureboardError(where, f"manual include lacks {', '.join(missing)}",
                                            "give name, country (ISO code) and concept for artifacts added by hand")
                if concepts is not None and e["concept"] not in concepts:
                    raise CultureboardError(where, f"concept {e['concept']!r} is not one of this build's concepts "
                                            f"({', '.join(concepts)})", "use one of them, or add the concept to --concepts")
        data[key] = entries
    for i, e in enumerate(data["rename"], 1):
        if not e.get("name"):
            raise CultureboardError(f"{path} (rename entry {i}, qid {e['qid']})", "has no new name", "add name: <new name>")
    return data


def apply_curation(selected: list[dict], space: list[dict], curation: dict, source: str) -> tuple[list[dict], dict]:
    """Apply exclude, include and rename (in that order) to ``selected``; returns rows and a report."""
    report = {"excluded": 0, "included": 0, "renamed": 0, "unused": []}

    def matches(row, entry):
        return row["qid"] == entry["qid"] and entry.get("country") in (None, row["country"])

    out = []
    for row in selected:
        if any(matches(row, e) for e in curation["exclude"]):
            report["excluded"] += 1
        else:
            out.append(row)
    present = {(r["qid"], r["country"]) for r in out}
    for entry in curation["include"]:
        if entry["qid"].startswith("manual:"):
            rows = [_manual_row(entry)]
        else:
            rows = [r for r in space if matches(r, entry)]
            if not rows:
                raise CultureboardError(source, f"include {entry['qid']} is not in the artifact space",
                                        "check the QID (and country), or add it as a manual: artifact with its fields")
        for row in rows:
            if (row["qid"], row["country"]) not in present:
                out.append(row)
                present.add((row["qid"], row["country"]))
                report["included"] += 1
    for entry in curation["rename"]:
        hits = [r for r in out if matches(r, entry)]
        if not hits:
            report["unused"].append(entry["qid"])
        for i, row in enumerate(out):
            if matches(row, entry):
                aliases = sorted(set(row["aliases"] or []) | {row["name"]})
                out[i] = {**row, "name": entry["name"], "aliases": aliases}
                report["renamed"] += 1
    report["unused"] += [e["qid"] for e in curation["exclude"] if not any(matches(r, e) for r in selected)]
    return out, report


def _manual_row(entry: dict) -> dict:
    from cultureboard.records import ARTIFACT_SCHEMA, WIKIDATA_PROPERTIES

    row = {name: None for name in ARTIFACT_SCHEMA.names}
    row.update({p: [] for p in WIKIDATA_PROPERTIES})
    row.update(aliases=[], time_period=[], source="manual", category=entry["concept"])
    for key in ("qid", "name", "country", "concept", "category", "subcategory", "era", "description"):
        if entry.get(key) is not None:
            row[key] = entry[key]  # strings, and country an ISO code: checked by load_curation
    return row
