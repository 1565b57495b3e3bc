"""Read a dataset folder written by ``cultureboard build`` (or downloaded from the Hub): its configs,
a prompt set's rows, and the revision that submissions pin."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from .errors import CultureboardError
from .provenance import folder_sha256

#: The configs of real reference photographs (``cultureboard references``) and of the artifacts without one.
#: They are evaluation data, fingerprinted by :func:`references_revision`, and left out of the revision
#: that submissions pin, so adding or refreshing references does not invalidate a submission.
REFERENCE_CONFIGS = ("references", "references-missing")


def configs(folder: str | Path) -> list[str]:
    data = Path(folder) / "data"
    return sorted(p.name for p in data.iterdir() if p.is_dir()) if data.is_dir() else []


def local_revision(folder: str | Path) -> str:
    """``sha256:<hex>`` over every parquet data file (path and content) outside the reference configs: the
    same files give the same revision, so a folder downloaded from the Hub and the folder that was uploaded
    agree."""
    return "sha256:" + folder_sha256(Path(folder) / "data", {".parquet"}, exclude=frozenset(REFERENCE_CONFIGS))


def references_revision(folder: str | Path) -> str | None:
    """``sha256:<hex>`` over the parquet files of the reference configs alone (None when there are none):
    the fingerprint a result that used reference images records."""
    present = set(configs(folder))
    if not present & set(REFERENCE_CONFIGS):
        return None
    return "sha256:" + folder_sha256(Path(folder) / "data", {".parquet"}, exclude=frozenset(present - set(REFERENCE_CONFIGS)))


def _built_empty(folder: Path, name: str) -> bool:
    """Whether the folder's build.json records config ``name`` with no rows (so it was not written)."""
    try:
        rows = json.loads((folder / "build.json").read_text(encoding="utf-8")).get("rows", {})
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(rows, dict) and rows.get(name) == 0


def read_prompt_set(folder: str | Path, name: str) -> list[dict]:
    """The rows of prompt set ``name`` (columns of ``cultureboard.records.PROMPT_SCHEMA``)."""
    folder = Path(folder)
    if not (folder / "data").is_dir():
        raise CultureboardError(folder, "is not a cultureboard dataset folder (no data/ folder)",
                                "pass the --out folder of `cultureboard build`, or a download of the Hub dataset")
    shards = sorted((folder / "data" / name).glob("*.parquet"))
    if not shards:
        why = " (the build gave it no rows: see the card's Configs section)" if _built_empty(folder, name) else ""
        raise CultureboardError(folder, f"has no prompt set {name!r}{why}", f"use one of {', '.join(configs(folder))}")
    rows: list[dict] = []
    for shard in shards:
        rows.extend(pq.read_table(shard).to_pylist())
    if rows and "prompt_id" not in rows[0]:
        raise CultureboardError(folder / "data" / name, "is not a prompt set (no prompt_id column)",
                                "name a prompt-set config, not an artifact table")
    return rows


def read_references(folder: str | Path) -> tuple[dict[str, list[dict]], dict[str, str]]:
    """The dataset's reference photographs: ({artifact id: [{rank, sha256, data}, ...] best-ranked first},
    {artifact id: why it has none}); both empty without a references config. Each photograph's bytes are
    checked against its recorded sha256 (the key scorers cache it by)."""
    import hashlib

    folder = Path(folder)
    images: dict[str, list[dict]] = {}
    for shard in sorted((folder / "data" / REFERENCE_CONFIGS[0]).glob("*.parquet")):
        for batch in pq.ParquetFile(shard).iter_batches(batch_size=64, columns=["qid", "rank", "sha256", "image"]):
            for row in batch.to_pylist():
                data = (row["image"] or {}).get("bytes") or b""
                if hashlib.sha256(data).hexdigest() != row["sha256"]:
                    raise CultureboardError(shard, f"holds a reference photograph of {row['qid']} whose bytes do not "
                                            "match its sha256", "rebuild it: cultureboard fetch-references --dataset DIR")
                images.setdefault(row["qid"], []).append({"rank": row["rank"], "sha256": row["sha256"], "data": data})
    missing = {r["qid"]: r["reason"] for shard in sorted((folder / "data" / REFERENCE_CONFIGS[1]).glob("*.parquet"))
               for r in pq.read_table(shard, columns=["qid", "reason"]).to_pylist()}
    return {q: sorted(v, key=lambda r: r["rank"]) for q, v in images.items()}, missing
