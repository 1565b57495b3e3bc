"""``cultureboard export-prompts``: a prompt set as one table a generator in any language can read.

One row per image to make: a prompt x sample (``sample_idx`` 0 .. ``images_per_prompt`` - 1) with its ``seed``
(the prompt set's ``seeds[sample_idx]``), the ``text`` and ``negative_prompt``, ``images_per_prompt``, the edit
chain fields of I2I prompts (``kind``, ``edit_step``, ``source_prompt_id``: a step edits the image of its source
prompt's same sample), the native-language fields (``language``, ``translation_of``), and where the rows came from
(``prompt_set``, ``dataset``, ``revision``: :func:`cultureboard.dataset_folder.pin`, the Hub id and commit of a
Hub download). CSV (lists never occur: one seed a row), JSON Lines or parquet.

The table is also a mapping for ``package``: add a ``file`` column (the image's path; or ``refused`` true and a
``reason`` on a sample the model refused) and pass it as ``--mapping``; package checks that its ``seed`` is the
prompt set's, and that its ``dataset`` and ``revision`` are the pin of ``--dataset``, so the submission pins the
commit the prompts were exported from. With ``revision``, the official Hub dataset's prompt set is first
downloaded at that revision (a tag or a commit) into the dataset folder, as ``hf download`` would.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from cultureboard.atomic import atomic_write_bytes
from cultureboard.dataset_folder import pin, read_prompt_set
from cultureboard.errors import CultureboardError
from cultureboard.hub import OFFICIAL_DATASET

#: The columns of an export, in order.
COLUMNS = ("prompt_id", "sample_idx", "seed", "text", "negative_prompt", "images_per_prompt", "kind", "edit_step",
           "source_prompt_id", "language", "translation_of", "prompt_set", "dataset", "revision")
FORMATS = ("csv", "jsonl", "parquet")
_SCHEMA = pa.schema([(c, pa.int64() if c in ("sample_idx", "seed", "images_per_prompt", "edit_step") else pa.string())
                     for c in COLUMNS])


def export_rows(dataset: str | Path, prompt_set: str) -> list[dict]:
    """The export's rows of ``prompt_set`` in ``dataset``: one per prompt x sample, in the prompt set's order."""
    where = pin(dataset)
    rows = []
    for p in read_prompt_set(dataset, prompt_set):
        for k in range(p["images_per_prompt"] or 0):
            rows.append({"prompt_id": p["prompt_id"], "sample_idx": k, "seed": p["seeds"][k], "text": p["text"],
                         "negative_prompt": p.get("negative_prompt") or "", "images_per_prompt": p["images_per_prompt"],
                         "kind": p.get("kind") or "t2i", "edit_step": p.get("edit_step"),
                         "source_prompt_id": p.get("source_prompt_id"), "language": p.get("language"),
                         "translation_of": p.get("translation_of"), "prompt_set": prompt_set,
                         "dataset": where["dataset"], "revision": where["revision"]})
    return rows


def encode(rows: list[dict], fmt: str) -> bytes:
    """``rows`` as the bytes of a CSV (header; empty cells for nulls), JSON Lines or parquet file."""
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: "" if v is None else v for k, v in row.items()} for row in rows)
        return buffer.getvalue().encode("utf-8")
    if fmt == "jsonl":
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist(rows, schema=_SCHEMA), sink)
    return sink.getvalue().to_pybytes()


def download_prompt_set(dataset: str | Path, prompt_set: str, revision: str) -> None:
    """Download the official Hub dataset's ``prompt_set`` (and its card) at ``revision`` into ``dataset``, recording
    the commit of each file as ``hf download --local-dir`` does (so package and validate pin it)."""
    from huggingface_hub import snapshot_download

    try:
        snapshot_download(OFFICIAL_DATASET, repo_type="dataset", revision=revision, local_dir=str(dataset),
                          allow_patterns=[f"data/{prompt_set}/*", "README.md"])
    except Exception as exc:  # offline mode, a missing repository or revision, the network
        raise CultureboardError(f"{OFFICIAL_DATASET}@{revision}", f"cannot be downloaded ({exc.__class__.__name__}: "
                                f"{str(exc)[:200]})", "check the revision (a tag such as v1.0, or a commit) and that "
                                "this machine reaches the Hub; or pass --dataset with a downloaded folder and no "
                                "--revision") from None


def export_prompts(prompt_set: str, out: str | Path, *, dataset: str | Path = "dataset", revision: str | None = None,
                   fmt: str | None = None) -> dict:
    """Write ``prompt_set`` of ``dataset`` (downloaded from the official Hub dataset at ``revision`` first, when
    given) to ``out`` as ``fmt`` (default: from ``out``'s extension, else CSV); returns {out, format, rows,
    prompts, dataset, revision, hub}."""
    out = Path(out)
    fmt = fmt or (out.suffix.lower().lstrip(".") if out.suffix.lower().lstrip(".") in FORMATS else "csv")
    if fmt not in FORMATS:
        raise CultureboardError(f"--format {fmt}", "is not a format of export-prompts", f"use one of {', '.join(FORMATS)}",
                                exit_code=2)
    if revision is not None:
        download_prompt_set(dataset, prompt_set, revision)
    rows = export_rows(dataset, prompt_set)
    atomic_write_bytes(out, encode(rows, fmt))
    where = pin(dataset)
    return {"out": str(out), "format": fmt, "rows": len(rows), "prompts": len({r["prompt_id"] for r in rows}),
            "prompt_set": prompt_set, **where}
