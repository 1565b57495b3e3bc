"""Write a dataset folder in Hugging Face Hub layout: one parquet shard per config, a README.md
dataset card whose YAML ``configs`` lets ``datasets.load_dataset(DIR, NAME)`` load each config,
and ``build.json`` with the build's provenance. The folder is written whole or not at all."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from cultureboard.atomic import atomic_dir
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
    """A prompt set as a config; its prompt ids must be unique, since submissions refer to them."""
    ids = [r["prompt_id"] for r in ps.rows]
    if len(set(ids)) != len(ids):
        dupes = sorted({i for i in ids if ids.count(i) > 1})[:5]
        raise ValueError(f"prompt set {ps.name} repeats prompt ids {dupes}: its builder must derive ids from more fields")
    return Config(ps.name, table_from_rows(ps.rows, PROMPT_SCHEMA), ps.description, ps.license, ps.family, ps.version, tuple(ps.notes))


def shard_path(name: str) -> str:
    return f"data/{name}/{SPLIT}-00000-of-00001.parquet"


def write_dataset(out: str | Path, configs: list[Config], provenance: dict, extra_files: dict[str, bytes] | None = None) -> Path:
    """Write ``out`` atomically: shards, card, ``build.json`` and any ``extra_files`` (relative path -> bytes)."""
    out = Path(out)
    with atomic_dir(out) as tmp:
        for c in configs:
            path = tmp / shard_path(c.name)
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(c.table, path, compression="zstd")
        for rel, data in (extra_files or {}).items():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / rel).write_bytes(data)
        (tmp / "build.json").write_text(json.dumps(provenance, indent=2, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
        (tmp / "README.md").write_text(render_card(configs, provenance, card_yaml(configs)), encoding="utf-8")
    return out


def card_yaml(configs: list[Config]) -> str:
    licenses = sorted({c.license for c in configs})
    header = {
        "pretty_name": "cultureboard: cultural competence benchmarks for text-to-image models",
        "license": licenses[0].lower() if len(licenses) == 1 else "other",
        "task_categories": ["text-to-image"],
        "language": ["en"],
        "tags": ["culture", "benchmark", "text-to-image", "cube", "cure", "cultdiff", "cultivate", "ecb"],
        "configs": [
            {"config_name": c.name, "data_files": [{"split": SPLIT, "path": f"data/{c.name}/*.parquet"}]} for c in configs
        ],
    }
    if len(licenses) > 1:
        header["license_name"] = "mixed"
        header["license_details"] = "Each config carries its own licence: see the Licences section."
    return yaml.safe_dump(header, sort_keys=False, allow_unicode=True)
