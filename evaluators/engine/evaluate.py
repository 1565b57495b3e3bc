"""``cultureboard evaluate``: score a valid submission and write its results with full provenance.

``RESULTS/<submission id>/scores.parquet`` holds one row per image x metric (or per pool x metric for
diversity), with the prompt id and slice fields; ``summary.json`` holds ``provenance`` and
``metrics`` (one entry per metric x slice: value, 95% bootstrap CI over prompts, n_images,
n_prompts, coverage; see ``aggregate.py``). Adding a benchmark family is one module exposing
``FAMILIES`` (prompt set -> scoring function, shard unit) and ``METRICS`` (the metric cards).

Embeddings go through the on-disk cache, so a run killed at any point (even SIGKILL) resumes from
it and gives identical results; outputs are written to a temporary folder and renamed. With
``shard=(i, n)`` only the i-th of n parts of the prompt set is scored, into
``RESULTS/<id>.shards/<i>-of-<n>``; :func:`merge_shards` joins them into exactly the unsharded result.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from cultureboard.atomic import atomic_dir, check_replaceable
from cultureboard.dataset_folder import local_revision, read_prompt_set
from cultureboard.errors import CultureboardError
from cultureboard.images import IMAGE_SUFFIXES
from cultureboard.provenance import code_provenance, folder_sha256

from ..families import cube as metrics_cube
from ..results.aggregate import summarize
from ..submission.format import (
    METADATA,
    SUBMISSION_YAML,
    fetch_hub_images,
    get,
    parse_location,
    submission_id,
)
from ..submission.validate import validate
from .cache import EmbeddingCache
from .context import SLICE_FIELDS, Context, Image
from .scorers import choose_device, choose_dtype, load_scorer

FAMILY_MODULES = (metrics_cube,)
FAMILIES = {name: entry for module in FAMILY_MODULES for name, entry in module.FAMILIES.items()}
METRICS = {m.name: m for module in FAMILY_MODULES for m in module.METRICS}

SCORES_SCHEMA = pa.schema(
    [("metric", pa.string()), ("unit_id", pa.string()), ("prompt_id", pa.string()), ("sample_idx", pa.int64()),
     ("file_name", pa.string()), ("sha256", pa.string()), ("value", pa.float64()), ("detail", pa.string())]
    + [(f, pa.string()) for f in SLICE_FIELDS]
)


def default_cache_dir() -> Path:
    return Path(os.environ.get("CULTUREBOARD_CACHE", Path.home() / ".cache" / "cultureboard")) / "embeddings"


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``"i/n"`` with 0 <= i < n."""
    if not text:
        return None
    try:
        i, n = (int(x) for x in text.split("/"))
        assert 0 <= i < n
    except (ValueError, AssertionError):
        raise CultureboardError(f"--shard {text}", "is not i/n with 0 <= i < n", "e.g. --shard 0/4 ... --shard 3/4",
                                exit_code=2) from None
    return i, n


def evaluate(submission: str | Path, dataset: str | Path, out: str | Path, *, scorers: str | Path | dict | None = None,
             shard: tuple[int, int] | None = None, device: str | None = None, dtype: str | None = None,
             cache: str | Path | None = None, seed: int = 0, n_boot: int = 1000, repetitions: int = 50,
             references: str | Path | None = None) -> Path:
    """Score ``submission`` against ``dataset``; returns the results (or shard) folder written."""
    submission, dataset = Path(submission), Path(dataset)
    if references is not None and not Path(references).is_dir():
        raise CultureboardError(f"--references {references}", "is not a folder",
                                "pass a folder of reference images named <qid>.jpg / .png / .webp", exit_code=2)
    report = validate(submission, dataset)
    if not report.valid:
        first = report.errors[0]
        raise CultureboardError(submission, f"is not a valid submission ({len(report.errors)} errors; first: "
                                f"{first.file}: {first.message})",
                                f"run `cultureboard validate {submission} --dataset {dataset}` and fix every error")
    spec = yaml.safe_load((submission / SUBMISSION_YAML).read_text(encoding="utf-8"))
    name = get(spec, "prompt_set.name")
    if name not in FAMILIES:
        raise CultureboardError(f"prompt set {name}", "has no metrics in this version of the evaluator",
                                f"evaluate a submission for one of {', '.join(sorted(FAMILIES))}")
    score, unit_of = FAMILIES[name]
    sid = submission_id(spec)
    check_replaceable(Path(out) / (f"{sid}.shards/{shard[0]}-of-{shard[1]}" if shard else sid),
                      kind="shard" if shard else "results")  # before the work
    prompts = {r["prompt_id"]: r for r in read_prompt_set(dataset, name)}
    images = _images(submission, spec, prompts)
    if shard:
        units = sorted({unit_of(p) for p in prompts.values()})
        mine = {u for k, u in enumerate(units) if k % shard[1] == shard[0]}
        images = [im for im in images if unit_of(im.prompt) in mine]

    device = choose_device(device)
    dtype = choose_dtype(device, dtype)
    loaded: dict[str, object] = {}

    @functools.cache
    def load(scorer_name: str):
        loaded[scorer_name] = load_scorer(scorer_name, config=scorers, device=device, dtype=dtype)
        return loaded[scorer_name]

    ctx = Context(images, prompts, dataset, EmbeddingCache(cache or default_cache_dir()), load, seed,
                  {"repetitions": repetitions, "references": references})
    rows = score(ctx) if images else []
    table = pa.Table.from_pylist(rows, schema=SCORES_SCHEMA)
    provenance = {
        "code": code_provenance(("torch", "transformers", "open_clip_torch", "numpy", "pandas", "pyarrow", "scipy")),
        "scorers": sorted((s.provenance() for s in loaded.values()), key=lambda p: p["name"]),
        "device": device, "dtype": dtype,
        "dataset": {"folder": dataset.name, "revision": local_revision(dataset)},
        "prompt_set": name,
        "submission": {"id": submission_id(spec), "sha256": _submission_hash(submission),
                       "model": get(spec, "model.id"), "model_revision": get(spec, "model.revision")},
        "settings": {"seed": seed, "n_boot": n_boot, "repetitions": repetitions, "ci_level": 0.95,
                     "references": folder_sha256(references, IMAGE_SUFFIXES) if references else None},
    }
    out = Path(out)
    if shard:
        target = out / f"{sid}.shards" / f"{shard[0]}-of-{shard[1]}"
        with atomic_dir(target, kind="shard") as tmp:
            pq.write_table(table, tmp / "scores.parquet")
            (tmp / "shard.json").write_text(json.dumps({"provenance": provenance, "shard": list(shard)}, indent=2))
        return target
    return _write_results(out / sid, table, provenance, prompts, unit_of, seed, n_boot)


def merge_shards(out: str | Path, submission_id: str, dataset: str | Path) -> Path:
    """Join ``out/<id>.shards/*`` into ``out/<id>``: exactly the result of an unsharded run."""
    shards_dir = Path(out) / f"{submission_id}.shards"
    # only finished shards: atomic_dir's hidden temporary folders of a killed run are left out
    parts = sorted(p for p in shards_dir.iterdir() if re.fullmatch(r"\d+-of-\d+", p.name)) if shards_dir.is_dir() else []
    if not parts:
        raise CultureboardError(shards_dir, "holds no shard results", "run cultureboard evaluate --shard i/n first")
    n = int(parts[0].name.split("-of-")[1])
    names = {p.name for p in parts}
    missing = [f"{i}-of-{n}" for i in range(n) if f"{i}-of-{n}" not in names]
    if missing or len(names) != n:
        raise CultureboardError(shards_dir, f"lacks shards {missing} (or mixes shard counts: {sorted(names)})",
                                "rerun the missing shards with the same --shard count")
    infos = []
    for p in parts:
        try:
            info = json.loads((p / "shard.json").read_text())
            assert info["shard"] == [int(x) for x in p.name.split("-of-")] and (p / "scores.parquet").is_file()
        except (OSError, ValueError, KeyError, AssertionError):
            raise CultureboardError(p, "is not a complete shard result (shard.json and scores.parquet for this i-of-n)",
                                    "delete it and rerun that shard") from None
        infos.append(info["provenance"])
    base = {k: v for k, v in infos[0].items() if k != "scorers"}
    for p, info in zip(parts, infos):
        if {k: v for k, v in info.items() if k != "scorers"} != base:
            raise CultureboardError(p, "was scored with other code, settings, dataset or submission than shard 0",
                                    "rerun every shard with the same evaluator version and options")
    if local_revision(dataset) != base["dataset"]["revision"]:
        raise CultureboardError(f"--dataset {dataset}", f"is not the dataset the shards were scored against "
                                f"({base['dataset']['revision']})", "pass the same dataset folder as to evaluate")
    scorers = {s["name"]: s for info in infos for s in info["scorers"]}
    provenance = {**base, "scorers": [scorers[k] for k in sorted(scorers)]}
    table = pa.concat_tables([pq.read_table(p / "scores.parquet") for p in parts])
    prompts = {r["prompt_id"]: r for r in read_prompt_set(dataset, base["prompt_set"])}
    _, unit_of = FAMILIES[base["prompt_set"]]
    result = _write_results(Path(out) / submission_id, table, provenance, prompts, unit_of,
                            base["settings"]["seed"], base["settings"]["n_boot"])
    shutil.rmtree(shards_dir)
    return result


def _write_results(target: Path, table: pa.Table, provenance: dict, prompts: dict, unit_of, seed: int,
                   n_boot: int) -> Path:
    keys = ["metric", "unit_id", "sample_idx", "file_name"]
    table = table.sort_by([(k, "ascending") for k in keys])
    expected = {"image": {p["prompt_id"]: p for p in prompts.values()},
                "pool": {unit_of(p): p for p in prompts.values()}}
    scores = table.to_pandas()
    metrics = summarize(scores, expected, seed=seed, n_boot=n_boot) if len(scores) else []
    summary = {
        "provenance": provenance,
        "metrics_info": [dataclasses.asdict(METRICS[m]) for m in sorted(set(scores["metric"])) if m in METRICS],
        "metrics": metrics,
    }
    with atomic_dir(target, kind="results") as tmp:
        pq.write_table(table, tmp / "scores.parquet")
        (tmp / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True, allow_nan=False) + "\n",
                                          encoding="utf-8")
    return target


def _images(submission: Path, spec: dict, prompts: dict) -> list[Image]:
    lines = [json.loads(line) for line in (submission / METADATA).read_text(encoding="utf-8").splitlines() if line.strip()]
    location = parse_location(get(spec, "images.location"))
    # file_name is relative to the submission folder (images/ included), or to the Hub repository's root
    root = fetch_hub_images(location, [m["file_name"] for m in lines]) if location.kind == "hub" else submission
    return [Image(m["file_name"], root / m["file_name"], m["sha256"], m["prompt_id"], m["sample_idx"],
                  prompts[m["prompt_id"]]) for m in lines]


def _submission_hash(submission: Path) -> str:
    """sha256 over submission.yaml and metadata.jsonl (which holds every image's sha256)."""
    h = hashlib.sha256()
    for name in (SUBMISSION_YAML, METADATA):
        h.update(name.encode() + b"\0" + (submission / name).read_bytes())
    return h.hexdigest()
