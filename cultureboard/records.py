"""The shared record types: artifacts and prompts, as ordered column schemas.

Every stage reads and writes these tables as parquet with exactly these columns and types, so a
prompt set from any of the five benchmark families can be sliced the same way (country, continent,
region group, category, subcategory, era).
"""

from __future__ import annotations

from typing import Any, Iterable

import pyarrow as pa

_str = pa.string()
_strs = pa.list_(pa.string())
_int = pa.int64()
_float = pa.float64()

#: Wikidata properties recorded for every artifact (the ones CUBE's extraction is defined by).
WIKIDATA_PROPERTIES = ("P31", "P279", "P495", "P17", "P2012", "P361")

ARTIFACT_SCHEMA = pa.schema(
    [
        ("qid", _str),  # Wikidata QID, or an ``llm:``/``manual:``/``cube-1k:``/``cure:`` slug
        ("name", _str),
        ("aliases", _strs),
        ("description", _str),
        ("country", _str),  # ISO 3166-1 alpha-2
        ("concept", _str),  # cuisine | landmarks | art (CUBE concept), or another family's axis
        ("category", _str),
        ("subcategory", _str),
        ("era", _str),
        ("inception_year", _int),
        ("time_period", _strs),  # P2348 values
        ("source", _str),  # wikidata | llm | manual | cube-1k | cure
        ("popularity", _int),  # Wikidata sitelinks count
        ("image", _str),  # P18 file name on Wikimedia Commons
        ("image_license", _str),
        ("commons_category", _str),  # P373: the Wikimedia Commons category of the artifact, without "Category:"
        ("hop", _int),
        ("root", _str),
        ("parent", _str),  # the class through which the traversal reached it (e.g. bread for Filone)
        ("parent_name", _str),
        ("found_via", _str),  # P31 or P279: the edge by which the traversal reached it
        ("country_property", _str),  # P495 or P17: the property that made it an artifact
        *[(p, _strs) for p in WIKIDATA_PROPERTIES],
    ]
)

PROMPT_SCHEMA = pa.schema(
    [
        ("prompt_id", _str),  # stable across rebuilds: derived from the row's meaning, never its position
        ("prompt_set", _str),
        ("text", _str),
        ("negative_prompt", _str),
        ("artifact_id", _str),
        ("artifact_name", _str),
        ("country", _str),
        ("country_name", _str),
        ("continent", _str),
        ("region_group", _str),  # GN | GS (UNCTAD developed / developing)
        ("category", _str),
        ("subcategory", _str),
        ("era", _str),
        ("level", _str),  # CuRe ladder level, ECB chain step, CUBE diversity scope, ...
        ("kind", _str),  # t2i | i2i
        ("edit_step", _int),  # I2I chains: 1..5; null for text-to-image prompts
        ("source_prompt_id", _str),  # I2I chains: the prompt whose image this step edits
        ("template", _str),  # the template the text was rendered from
        ("images_per_prompt", _int),
        ("seeds", pa.list_(_int)),
        ("seed_scheme", _str),
        ("language", _str),
        ("translation_of", _str),
        ("translation_check", _float),
        ("translation_source", _str),
    ]
)


def table_from_rows(rows: Iterable[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """Build a table with exactly ``schema``'s columns; missing keys become nulls, extra keys are an error."""
    rows = list(rows)
    names = set(schema.names)
    for row in rows:
        extra = set(row) - names
        if extra:
            raise ValueError(f"unknown columns {sorted(extra)}; the schema has {schema.names}")
    columns = {name: [row.get(name) for row in rows] for name in schema.names}
    return pa.table(columns, schema=schema)
