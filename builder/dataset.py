"""Write a dataset folder in Hugging Face Hub layout: one parquet shard per config, a README.md
dataset card whose YAML ``configs`` lets ``datasets.load_dataset(DIR, NAME)`` load each config,
and ``build.json`` with the build's provenance. The folder is written whole or not at all.

The ``datasets`` cache and the card: for a local folder whose card declares ``configs``, ``datasets``
keeps each config's ``data_files`` as the card's unresolved patterns (``data/NAME/*.parquet``) and
fingerprints the card's YAML only: the cache entry is ``{HF_DATASETS_CACHE}/{folder name}/{config}/
0.0.0/{hash of the card's configs}``. Neither the folder's path nor its files enter it, so two builds
into folders of the same name (or one folder rebuilt) would share an entry, and ``load_dataset``
would return the rows of whichever was loaded first. So each config entry of the card carries a
``description`` ending in the sha256 of its shard: a builder-config field that ``datasets`` hashes,
which keeps every build's entry apart. A config without rows is not written (``datasets`` cannot
load an empty parquet config); the card lists it and says why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from cultureboard.atomic import atomic_dir
from cultureboard.dataset_folder import prompt_text_problem
from cultureboard.errors import CultureboardError
from cultureboard.text import printable
from cultureboard.provenance import file_sha256
from cultureboard.records import ARTIFACT_SCHEMA, PROMPT_SCHEMA, table_from_rows

from .card import render_card
from .prompt_sets import PromptSet

SPLIT = "test"


@dataclass
class Config:
    """One loadable config of the dataset."""

    name: str
    table: pa.Table
    description: str
    license: str
    family: str | None = None
    version: str | None = None
    notes: tuple[str, ...] = ()


def artifact_config(name: str, rows: list[dict], description: str, license: str) -> Config:
    return Config(name, table_from_rows(rows, ARTIFACT_SCHEMA), description, license)


def prompt_config(ps: PromptSet) -> Config:
    """A prompt set as a config; its prompt ids must be unique, since submissions refer to them, and its texts
    must be ones a dataset may hold (:func:`cultureboard.dataset_folder.prompt_text_problem`)."""
    ids = [r["prompt_id"] for r in ps.rows]
    if len(set(ids)) != len(ids):
        dupes = sorted({i for i in ids if ids.count(i) > 1})[:5]
        raise ValueError(f"prompt set {ps.name} repeats prompt ids {dupes}: its builder must derive ids from more fields")
    for row in ps.rows:
        if problem := prompt_text_problem(row):
            raise CultureboardError(f"prompt set {ps.name}, prompt {printable(row['prompt_id'], 80)}", problem,
                                    "correct it where it comes from (the imported file, or the artifact's name with a "
                                    "curation file's rename), or exclude the artifact")
    return Config(ps.name, table_from_rows(ps.rows, PROMPT_SCHEMA), ps.description, ps.license, ps.family, ps.version, tuple(ps.notes))


def shard_path(name: str) -> str:
    return f"data/{name}/{SPLIT}-00000-of-00001.parquet"


def write_dataset(out: str | Path, configs: list[Config], provenance: dict, extra_files: dict[str, bytes] | None = None) -> Path:
    """Write ``out`` atomically: shards, card, ``build.json`` and any ``extra_files`` (relative path -> bytes).

    Configs without rows are left out (and listed in the card); a dataset none of whose configs has
    rows is an error."""
    out = Path(out)
    written = [c for c in configs if c.table.num_rows]
    empty = [c for c in configs if not c.table.num_rows]
    if not written:
        raise CultureboardError(out, f"would hold no rows (every config is empty: {', '.join(c.name for c in configs)})",
                                "check that the knowledge base has artifacts for the requested countries and concepts")
    with atomic_dir(out, kind="dataset") as tmp:
        fingerprints = {}
        for c in written:
            path = tmp / shard_path(c.name)
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(c.table, path, compression="zstd")
            fingerprints[c.name] = file_sha256(path)
        for rel, data in (extra_files or {}).items():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_bytes(data)
        (tmp / "build.json").write_text(json.dumps(provenance, indent=2, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
        card = render_card(written, provenance, card_yaml(written, fingerprints), absent=empty)
        (tmp / "README.md").write_text(card, encoding="utf-8")
    return out


def card_yaml(configs: list[Config], fingerprints: dict[str, str] | None = None) -> str:
    """The card's YAML header; ``fingerprints`` (config name -> sha256 of its shard) go into each
    config's ``description``, which keeps its ``datasets`` cache entry apart from other builds'."""
    fingerprints = fingerprints or {}
    licenses = sorted({c.license for c in configs})
    header = {
        "pretty_name": "cultureboard: cultural competence benchmarks for text-to-image models",
        "license": licenses[0].lower() if len(licenses) == 1 else "other",
        "task_categories": ["text-to-image"],
        "language": ["en"],
        "tags": ["culture", "benchmark", "text-to-image", "cube", "cure", "cultdiff", "cultivate", "ecb"],
        "configs": [
            {"config_name": c.name, "data_files": [{"split": SPLIT, "path": f"data/{c.name}/*.parquet"}]}
            | ({"description": f"{c.description} (data sha256:{fingerprints[c.name]})"} if c.name in fingerprints else {})
            for c in configs
        ],
    }
    if len(licenses) > 1:
        header["license_name"] = "mixed"
        header["license_details"] = "Each config carries its own licence: see the Licences section."
    return yaml.safe_dump(header, sort_keys=False, allow_unicode=True)
