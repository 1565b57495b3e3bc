"""Build small Wikidata JSON dumps in the official format for tests."""

from __future__ import annotations

import bz2
import gzip
import json
from pathlib import Path


def item_claim(prop: str, qid: str, rank: str = "normal") -> dict:
    return {
        "mainsnak": {
            "snaktype": "value", "property": prop, "datatype": "wikibase-item",
            "datavalue": {"value": {"entity-type": "item", "numeric-id": int(qid[1:]), "id": qid}, "type": "wikibase-entityid"},
        },
        "type": "statement", "rank": rank,
    }


def time_claim(prop: str, time: str, precision: int = 9) -> dict:
    return {
        "mainsnak": {
            "snaktype": "value", "property": prop, "datatype": "time",
            "datavalue": {"value": {"time": time, "timezone": 0, "before": 0, "after": 0, "precision": precision,
                                    "calendarmodel": "http://www.wikidata.org/entity/Q1985727"}, "type": "time"},
        },
        "type": "statement", "rank": "normal",
    }


def entity(qid: str, label: str, *, claims: dict[str, list] | None = None, sitelinks: int = 0,
           description: str | None = None, aliases: tuple[str, ...] = (), image: str | None = None,
           inception: str | None = None, commons_category: str | None = None) -> dict:
    """``claims`` maps a property to QIDs, or to (QID, rank) pairs."""
    out_claims: dict[str, list] = {}
    for prop, values in (claims or {}).items():
        out_claims[prop] = [item_claim(prop, *(v if isinstance(v, tuple) else (v,))) for v in values]
    if image:
        out_claims["P18"] = [{"mainsnak": {"snaktype": "value", "property": "P18", "datatype": "commonsMedia",
                                           "datavalue": {"value": image, "type": "string"}}, "type": "statement", "rank": "normal"}]
    if commons_category:
        out_claims["P373"] = [{"mainsnak": {"snaktype": "value", "property": "P373", "datatype": "string",
                                            "datavalue": {"value": commons_category, "type": "string"}},
                               "type": "statement", "rank": "normal"}]
    if inception:
        out_claims["P571"] = [time_claim("P571", inception)]
    e = {"type": "item", "id": qid, "labels": {"en": {"language": "en", "value": label}},
         "descriptions": {"en": {"language": "en", "value": description}} if description else {},
         "aliases": {"en": [{"language": "en", "value": a} for a in aliases]} if aliases else {},
         "claims": out_claims,
         "sitelinks": {f"wiki{i}": {"site": f"wiki{i}", "title": label, "badges": []} for i in range(sitelinks)}}
    return e


def write_dump(path: Path, entities: list[dict], extra_lines: tuple[str, ...] = ()) -> Path:
    """Write the official layout: ``[``, one entity per line with trailing commas, ``]``.
    Compression follows the suffix (.gz, .bz2)."""
    body = [json.dumps(e, ensure_ascii=False) for e in entities] + list(extra_lines)
    text = "[\n" + ",\n".join(body) + "\n]\n"
    data = text.encode("utf-8")
    if path.suffix == ".gz":
        data = gzip.compress(data)
    elif path.suffix == ".bz2":
        data = bz2.compress(data)
    path.write_bytes(data)
    return path
