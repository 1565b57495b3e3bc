"""``cultureboard evaluate``: score a valid submission and write its results with full provenance.

The engine knows no family: the submission's prompt set names a registered family (:mod:`.registry`), whose
typed options, scoring function, units and metric cards it uses. ``RESULTS/<submission id>/scores.parquet``
holds one row per image x metric (or per unit of images x metric: a diversity pool, an edit chain, a ladder),
with the prompt id, slice fields and a flag where the family could not score the row; ``summary.json`` holds
``provenance``, the metric cards, the family's notes and one entry per metric x slice (see
:mod:`..results.aggregate`), the written-answers check (``written``) and the near-reference check of the
similarity-to-reference metrics (``near_reference``, :mod:`.near_reference`).

Model outputs go through the on-disk cache, so a run killed at any point (even SIGKILL) resumes from it and
gives identical results, and a rerun of an unchanged submission loads no model; outputs are written to a
temporary folder and renamed. With ``shard=(i, n)`` only the i-th of n parts of the prompt set's shard units
is scored, into ``RESULTS/<id>.shards/<i>-of-<n>``; :func:`merge_shards` joins them into exactly the
unsharded result.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any, Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from cultureboard import progress
from cultureboard.atomic import atomic_dir, check_replaceable, check_writable, output_lock
from cultureboard.dataset_folder import local_revision, read_prompt_set, references_revision
from cultureboard.device import choose_device, choose_dtype
from cultureboard.naming import path_component
from cultureboard.errors import CultureboardError
from cultureboard.images import require_image
from cultureboard.provenance import code_provenance

from ..results.aggregate import CI_METHOD, SLICE_TYPES, summarize, unit_values
from ..results.tiers import RULE_VERSION as VALIDITY_RULE
from ..submission.format import (METADATA, SUBMISSION_YAML, fetch_hub_images, get, parse_location, read_metadata, read_spec,
                                 submission_id)
from ..submission.validate import validate
from .batching import FORWARD_PASSES
from .cache import Cache
from .context import SLICE_FIELDS, Context, Image
from .parity import is_parity
from .registry import Family, PromptSetSpec, family_of, options_dict, parse_options
from .scorers import Scorers
from . import near_reference, written

BASE_COLUMNS = [("metric", pa.string()), ("unit_id", pa.string()), ("prompt_id", pa.string()),
                ("sample_idx", pa.int64()), ("file_name", pa.string()), ("sha256", pa.string()),
                ("value", pa.float64()), ("detail", pa.string()), ("flag", pa.string())]
#: The columns every scores.parquet has (a prompt set adds its own slice columns after them).
SCORES_SCHEMA = pa.schema(BASE_COLUMNS + [(f, pa.string()) for f in SLICE_FIELDS])
PACKAGES = ("torch", "transformers", "open_clip_torch", "lpips", "numpy", "pandas", "pyarrow", "scipy")


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
             cache: str | Path | None = None, seed: int = 0, n_boot: int = 1000,
             options: Mapping[str, Any] | None = None, option_overrides: tuple[str, ...] | list[str] = (),
             models: dict | None = None, read_text: bool = True) -> Path:
    """Score ``submission`` against ``dataset``; returns the results (or shard) folder written.

    ``read_text`` (default) reads every image's text with the OCR (:mod:`.written`) when the extra is installed;
    False (``--no-read-text``) records every image "not checked".

    ``options`` (Python values) and ``option_overrides`` (``key=value`` strings, ``--option``) set the
    family's typed options; both are validated before any work and recorded in provenance. ``models``, a dict
    kept by the caller, holds the models loaded by this run for the next ones (an executor's worker, which scores
    unit after unit, loads each model once); it changes no value.
    """
    submission, dataset, out = Path(submission), Path(dataset), Path(out)
    device = choose_device(device, defer=True)  # checked with torch when a model loads (scorers._build)
    dtype = choose_dtype(device, dtype)
    cache_dir = Path(cache) if cache is not None else default_cache_dir()
    pool = Scorers(scorers, device, dtype, state=cache_dir / "scorer-state", models=models)
    _preflight(submission, pool, options, tuple(option_overrides))
    progress.say(f"validating {submission}")
    report = validate(submission, dataset)
    if not report.valid:
        first = report.errors[0]
        raise CultureboardError(submission, f"is not a valid submission ({len(report.errors)} errors; first: "
                                f"{first.file}: {first.message})",
                                f"run `cultureboard validate {submission} --dataset {dataset}` and fix every error")
    spec = read_spec(submission / SUBMISSION_YAML)
    name = get(spec, "prompt_set.name")
    family, pspec = family_of(name)
    chosen = parse_options(family, options, overrides=tuple(option_overrides))
    sid = submission_id(spec)
    target = out / (f"{sid}.shards/{shard[0]}-of-{shard[1]}" if shard else sid)
    # before the work: the output may be replaced and is ours while we score, the cache is writable
    check_replaceable(target, kind="shard" if shard else "results")
    check_writable(cache_dir, f"--cache {cache_dir}")
    target.parent.mkdir(parents=True, exist_ok=True)
    inputs = inputs_sha256(submission, dataset, pool.registry, device, dtype, seed, n_boot, options,
                           option_overrides, shard)
    with output_lock(target):
        return _score(submission, dataset, spec, family, pspec, chosen, target, shard, device, dtype,
                      pool, Cache(cache_dir), seed, n_boot, inputs, read_text)


def inputs_sha256(submission: Path, dataset: Path, registry: Mapping, device: str, dtype: str, seed: int, n_boot: int,
                  options: Mapping | None, overrides, shard: tuple[int, int] | None, read_text: bool = True) -> str:
    """The digest of what a run's output is a function of: the submission (:func:`_submission_hash`), the dataset
    revision, the scorer registry as configured, device kind, dtype, seed, bootstrap size, options, the shard, whether
    the OCR reads the images' text and the code's version. A shard records it (``inputs_sha256``), so an executor skips a unit already done with the same
    inputs (:func:`finished_shard`)."""
    record = {"submission": _submission_hash(submission), "dataset": local_revision(dataset),
              "scorers": registry, "device": device.split(":")[0], "dtype": dtype, "seed": seed, "n_boot": n_boot,
              "options": dict(options or {}), "overrides": list(overrides), "shard": list(shard or ()),
              "read_text": read_text, "code": code_provenance(PACKAGES)}
    return hashlib.sha256(json.dumps(record, sort_keys=True, default=str).encode()).hexdigest()


def finished_shard(folder: Path, inputs: str) -> bool:
    """Whether ``folder`` holds a complete shard (:func:`_read_shard`: its rows match their digest) computed from
    inputs of digest ``inputs``."""
    try:
        record = json.loads((folder / "shard.json").read_text(encoding="utf-8"))
        if record.get("inputs_sha256") != inputs:
            return False
        _read_shard(folder)
    except (OSError, ValueError, AttributeError, CultureboardError):
        return False
    return True


def _preflight(submission: Path, pool: Scorers, options: Mapping | None, overrides: tuple[str, ...]) -> None:
    """Offline, a scorer the run will read whose weights are not on this machine is an error before any work
    (:meth:`.Scorers.preflight`); so are bad options. A spec too broken to name its prompt set is left to
    validation, which reports it."""
    try:
        family, pspec = family_of(get(read_spec(submission / SUBMISSION_YAML), "prompt_set.name"))
    except (CultureboardError, KeyError, TypeError):
        return
    chosen = parse_options(family, options, overrides=overrides)
    pool.preflight(scorers_in_use(family, pspec, chosen, pool.registry))


def scorers_in_use(family: Family, pspec: PromptSetSpec, chosen: Any, registry: Mapping) -> set[str]:
    """The scorers the cards of ``pspec`` read, where an option whose default names one of them (a family's
    ``extractor: str = "qwen2.5-vl-7b"``) replaces it with the scorer the run chose."""
    names = {s for m in pspec.metrics for s in family.card(m).scorers}
    choices = [f for f in dataclasses.fields(chosen) if isinstance(f.default, str) and f.default in names]
    chosen_names = {getattr(chosen, f.name) for f in choices}
    return (names - {f.default for f in choices}) | {n for n in chosen_names if n in registry}


def _score(submission: Path, dataset: Path, spec: dict, family: Family, pspec: PromptSetSpec, chosen: Any,
           target: Path, shard: tuple[int, int] | None, device: str, dtype: str, pool: Scorers, cache: Cache,
           seed: int, n_boot: int, inputs: str, read_text: bool = True) -> Path:
    name = pspec.name
    prompts = {r["prompt_id"]: r for r in read_prompt_set(dataset, name)}
    everything, refused = _images(submission, spec, prompts)
    images = everything
    if shard:
        mine = _shard_units(pspec, prompts, shard)
        images = [im for im in images if pspec.shard_unit(im.prompt) in mine]
        refused = [r for r in refused if pspec.shard_unit(r["prompt"]) in mine]
    ctx = Context(images, prompts, dataset, cache, pool, chosen, seed, refused, shard, everything, spec.get("control"))
    progress.say(f"scoring {len(images)} images of {name} ({family.name}: {len(pspec.metrics)} metrics)")
    rows = pspec.score(ctx) if images or refused else []
    text_check = {**_read_written(images, prompts, dataset, cache, read_text),
                  "reads_text": sorted(m for m in pspec.metrics if _reads_text(family, pspec, chosen, pool, m))}
    table = _table(rows, pspec)
    metrics = sorted(set(table.column("metric").to_pylist()))
    provenance = {
        "code": code_provenance(PACKAGES),
        "family": family.name,
        "prompt_set": name,
        "metrics": {m: family.recorded_version(m, ctx.options) for m in metrics},
        "options": options_dict(ctx.options),  # as the family resolved them (e.g. an "auto" choice)
        "scorers": pool.used(),
        "device": device, "dtype": dtype,
        "dataset": {"folder": dataset.name, "revision": local_revision(dataset),
                    "references_revision": references_revision(dataset) if ctx.used_references else None},
        "submission": {"id": submission_id(spec), "sha256": _submission_hash(submission),
                       "model": get(spec, "model.id"), "model_revision": get(spec, "model.revision")},
        # forward_passes: the rule (each scorer's entry records which way its outputs were computed); values differ
        # in the last bits from the one-input-a-pass runs of earlier versions, so those are never ranked with these:
        # the site compares every setting
        "settings": {"seed": seed, "n_boot": n_boot, "ci_level": 0.95, "ci_method": CI_METHOD,
                     "forward_passes": FORWARD_PASSES, "validity_rule": VALIDITY_RULE},
        "notes": ctx.notes,
        "refused": sorted([r["prompt_id"], r["sample_idx"], r["reason"]] for r in refused),
        "written": text_check,
    }
    if shard:
        with atomic_dir(target, kind="shard") as tmp:
            pq.write_table(table, tmp / "scores.parquet")
            digest = hashlib.sha256((tmp / "scores.parquet").read_bytes()).hexdigest()
            record = {"provenance": provenance, "shard": list(shard), "rows": table.num_rows, "rows_sha256": digest,
                      "inputs_sha256": inputs}
            (tmp / "shard.json").write_text(json.dumps(record, indent=2, sort_keys=True))
        return target
    return _write_results(target, table, provenance, family, pspec, prompts)


def _read_written(images: list[Image], prompts: dict, dataset: Path, cache: Cache, read_text: bool) -> dict:
    """The ``written`` block of provenance (:mod:`.written`): every image's recognised text and whether it spells
    its prompt's names; without the OCR extra (or with ``read_text`` False) every image is "not checked", and the
    run says so."""
    reader = written.Reader(cache) if read_text and written.available() else None
    if reader is None:
        why = written.NOT_INSTALLED if read_text else written.SWITCHED_OFF
        progress.say(f"written answers not checked: {why}")
        return {**written.record(written.check_images(images, {}, None), None), "why": why}
    elif images:
        progress.say(f"reading the text of {len(images)} images (OCR {written.PACKAGE} {reader.identity['version']})")
    names = written.dataset_names(dataset, prompts.values()) if reader else {}
    return written.record(written.check_images(images, names, reader), reader.identity if reader else None)


#: Scorer backends that read text drawn in an image: dual encoders with a text tower (CLIP, SigLIP); every judge
#: (a vision-language model) reads it too.
TEXT_READING_BACKENDS = ("transformers-dual-encoder", "open_clip")


def _reads_text(family: Family, pspec: PromptSetSpec, chosen: Any, pool: Scorers, metric: str) -> bool:
    """Whether one of the scorers ``metric`` reads (its card's, with an option's choice) reads text in images."""
    names = scorers_in_use(family, dataclasses.replace(pspec, metrics=(metric,)), chosen, pool.registry)
    return any(pool.registry[n].get("backend") in TEXT_READING_BACKENDS or pool.kind(n) == "judge"
               for n in names if n in pool.registry)


def slice_columns(pspec: PromptSetSpec) -> tuple[str, ...]:
    """The slice fields every score row of ``pspec`` carries: the standard ones, the prompt set's own, and one
    ``<a>_x_<b>`` column per crossed pair."""
    own = tuple(f for f in pspec.slice_fields if f not in SLICE_FIELDS)
    return SLICE_FIELDS + own + tuple(f"{a}_x_{b}" for a, b in pspec.cross_slices)


def _slice_values(fields: Mapping, pspec: PromptSetSpec) -> dict:
    """A row's (or prompt's) slice values as strings, the crossed pairs included."""
    out = {f: None if fields.get(f) is None else str(fields[f]) for f in SLICE_FIELDS + pspec.slice_fields}
    for a, b in pspec.cross_slices:
        out[f"{a}_x_{b}"] = f"{out[a]} x {out[b]}" if out.get(a) is not None and out.get(b) is not None else None
    return out


def _table(rows: list[dict], pspec: PromptSetSpec) -> pa.Table:
    """Score rows as a table: the base columns and the prompt set's slice columns (as strings)."""
    unknown = sorted({r["metric"] for r in rows} - set(pspec.metrics))
    if unknown:
        raise AssertionError(f"prompt set {pspec.name} produced metrics it does not list: {unknown}")
    columns = slice_columns(pspec)
    flat = [{**{k: r[k] for k, _ in BASE_COLUMNS}, **_slice_values(r["slices"], pspec)} for r in rows]
    schema = pa.schema(BASE_COLUMNS + [(f, pa.string()) for f in columns])
    return pa.Table.from_pylist([{k: row.get(k) for k in schema.names} for row in flat], schema=schema)


def merge_shards(out: str | Path, submission_id: str, dataset: str | Path) -> Path:
    """Join ``out/<id>.shards/*`` into ``out/<id>``: exactly the result of an unsharded run. The shards' notes
    about a metric must agree, except ``counts`` (a {name: number of images} tally over the shard's own images),
    which are summed. ``submission_id`` must be one safe path component
    (:func:`~cultureboard.naming.path_component`): a ``../`` id never steers the write outside ``out``."""
    path_component(submission_id, f"merge-shards {submission_id!r}",
                   "pass the submission id, the name of the results folder's <id>.shards folder")
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
    infos, tables = zip(*(_read_shard(p) for p in parts))
    per_shard = ("scorers", "metrics", "notes", "refused", "written")
    base = {k: v for k, v in infos[0].items() if k not in per_shard}
    for p, info in zip(parts, infos):
        if {k: v for k, v in info.items() if k not in per_shard} != base:
            raise CultureboardError(p, "was scored with other code, settings, dataset or submission than shard 0",
                                    "rerun every shard with the same evaluator version and options")
    if local_revision(dataset) != base["dataset"]["revision"]:
        raise CultureboardError(f"--dataset {dataset}", f"is not the dataset the shards were scored against "
                                f"({base['dataset']['revision']})", "pass the same dataset folder as to evaluate")
    family, pspec = family_of(base["prompt_set"])
    prompts = {r["prompt_id"]: r for r in read_prompt_set(dataset, base["prompt_set"])}
    for p, table in zip(parts, tables):
        i = int(p.name.split("-of-")[0])
        mine = _shard_units(pspec, prompts, (i, n))
        named = {pid for pid in table.column("prompt_id").to_pylist() if pid is not None}
        if any(pid not in prompts or pspec.shard_unit(prompts[pid]) not in mine for pid in named):
            raise CultureboardError(p, f"holds rows of prompts that are not part {i} of {n} (another shard's rows?)",
                                    "delete it and rerun that shard")
    scorers, metrics, notes, counts = {}, {}, {}, {}
    for p, info in zip(parts, infos):
        for s in info["scorers"]:
            if scorers.setdefault(s["name"], s) != s:
                raise CultureboardError(p, f"used another checkpoint of scorer {s['name']} than an earlier shard",
                                        "rerun every shard with the same scorer config")
        metrics.update(info["metrics"])
        for metric, facts in info["notes"].items():
            shared = {k: v for k, v in facts.items() if k != "counts"}
            if notes.setdefault(metric, shared) != shared:
                raise CultureboardError(p, f"disagrees with an earlier shard about {metric}", "rerun every shard")
            if "counts" in facts:
                counts.setdefault(metric, Counter()).update(facts["counts"])
    for metric, tally in counts.items():
        notes[metric] = {**notes[metric], "counts": dict(sorted(tally.items()))}
    if len({json.dumps(info["written"]["ocr"], sort_keys=True) for info in infos}) != 1:
        raise CultureboardError(shards_dir, "holds shards read by different OCR versions (or with and without OCR)",
                                "rerun every shard with the same installation")
    provenance = {**base, "scorers": [scorers[k] for k in sorted(scorers)], "metrics": dict(sorted(metrics.items())),
                  "notes": dict(sorted(notes.items())), "refused": sorted(r for info in infos for r in info["refused"]),
                  "written": {**written.record({k: v for info in infos for k, v in info["written"]["images"].items()},
                                               infos[0]["written"]["ocr"]),
                              "reads_text": infos[0]["written"]["reads_text"]}}
    try:
        table = pa.concat_tables(tables)
    except pa.ArrowException:
        raise CultureboardError(shards_dir, "holds shards with different columns", "rerun every shard") from None
    result = _write_results(Path(out) / submission_id, table, provenance, family, pspec, prompts)
    shutil.rmtree(shards_dir)
    return result


def _shard_units(pspec: PromptSetSpec, prompts: dict, shard: tuple[int, int]) -> set:
    """The shard units of part ``i`` of ``n`` (``shard``): every n-th of the prompt set's sorted units from the i-th."""
    units = sorted({pspec.shard_unit(p) for p in prompts.values()})
    return {u for k, u in enumerate(units) if k % shard[1] == shard[0]}


def _read_shard(folder: Path) -> tuple[dict, pa.Table]:
    """A finished shard's provenance and scores. A scores.parquet whose sha256 or row count is not the one shard.json
    records, or without rows, is refused; so is a shard.json that is not JSON, belongs to another i-of-n or has
    another shape than :func:`_score` writes (what :func:`merge_shards` and :func:`_write_results` read: the
    dataset revision, prompt set, settings, scorers, metrics, notes and [prompt_id, sample_idx, reason]
    refusals), or a scores.parquet that cannot be read, is one error naming the shard."""
    def shaped(info: dict) -> bool:
        prov = info["provenance"]
        return (info["shard"] == [int(x) for x in folder.name.split("-of-")]
                and isinstance(prov["dataset"]["revision"], str) and isinstance(prov["prompt_set"], str)
                and isinstance(prov["settings"]["seed"], int) and isinstance(prov["settings"]["n_boot"], int)
                and all(isinstance(s, dict) and isinstance(s["name"], str) for s in prov["scorers"])
                and isinstance(prov["metrics"], dict) and isinstance(prov["written"]["images"], dict)
                and isinstance(prov["written"]["reads_text"], list)
                and all(isinstance(facts, dict) and all(isinstance(n, int) for n in facts.get("counts", {}).values())
                        for facts in prov["notes"].values())
                and all(isinstance(pid, str) and isinstance(k, int) and isinstance(why, str)
                        for pid, k, why in prov["refused"]))

    try:
        info = json.loads((folder / "shard.json").read_text(encoding="utf-8"))
        if shaped(info) and isinstance(info["rows_sha256"], str) and type(info["rows"]) is int:
            data = (folder / "scores.parquet").read_bytes()
            table = pq.read_table(pa.BufferReader(data))
            if hashlib.sha256(data).hexdigest() != info["rows_sha256"] or table.num_rows != info["rows"]:
                raise CultureboardError(folder, "holds other rows than it recorded (the digest of its scores.parquet "
                                        "differs from shard.json's)", "delete it and rerun that shard")
            if not table.num_rows or "prompt_id" not in table.column_names:
                raise CultureboardError(folder, "holds no rows", "delete it and rerun that shard")
            return info["provenance"], table
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError, pa.ArrowException):
        pass
    raise CultureboardError(folder, "is not a complete shard result (shard.json and scores.parquet for this i-of-n)",
                            "delete it and rerun that shard")


def _write_results(target: Path, table: pa.Table, provenance: dict, family: Family, pspec: PromptSetSpec,
                   prompts: dict) -> Path:
    table = table.sort_by([(k, "ascending") for k in ("metric", "unit_id", "sample_idx", "file_name")])
    scores = table.to_pandas()
    metrics = sorted(set(scores["metric"]))
    units = {m: family.card(m).unit for m in metrics}
    counted = {pid: sum(1 for r in provenance["refused"] if r[0] == pid) for pid, _, _ in provenance["refused"]}
    fully_refused = {pid for pid, n in counted.items() if n >= prompts[pid]["images_per_prompt"]}
    expected, refused, members_of = {}, {}, {}
    for kind in set(units.values()):
        members: dict[str, list[dict]] = members_of.setdefault(kind, {})
        for p in prompts.values():
            unit = pspec.unit_of(kind, p)
            if unit is not None:
                members.setdefault(unit, []).append(p)
        # a unit counts in each slice any of its prompts belongs to (a chain spans several edit steps)
        expected[kind] = {u: unit_values([_slice_values(p, pspec) for p in ps]) for u, ps in members.items()}
        refused[kind] = {u for u, ps in members.items() if all(p["prompt_id"] in fully_refused for p in ps)}
    # a card's cluster field: each unit's value of it (its prompts' one value, or the tuple of those they take)
    clusters = {m: {u: unit_values([{field: p.get(field)} for p in ps])[field]
                    for u, ps in members_of[units[m]].items()}
                for m in metrics if (field := family.card(m).cluster)}
    settings = provenance["settings"]
    progress.say(f"summarising {len(metrics)} metrics with {settings['n_boot']} bootstrap samples")
    slice_types = (SLICE_TYPES + tuple(f for f in pspec.slice_fields if f not in SLICE_TYPES)
                   + tuple(f"{a}_x_{b}" for a, b in pspec.cross_slices))
    summary = {
        "provenance": provenance,
        "metrics_info": [family.card(m).to_dict() for m in metrics],
        "metrics": summarize(scores, units, expected, slice_types, seed=settings["seed"], n_boot=settings["n_boot"],
                             refused=refused, clusters=clusters,
                             tested={m: family.card(m).target for m in metrics if is_parity(m)},
                             bounded={m: b for m in metrics if (b := family.card(m).bounded)}) if len(scores) else [],
    }
    summary["written"] = _without_written(scores, provenance["written"], units, expected, settings, refused, clusters)
    summary["near_reference"] = near_reference.summary_block(provenance["notes"])
    progress.say(f"writing {target}")
    with atomic_dir(target, kind="results") as tmp:
        pq.write_table(table, tmp / "scores.parquet")
        (tmp / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True, allow_nan=False) + "\n",
                                          encoding="utf-8")
    return target


def _without_written(scores, check: dict, units: dict, expected: dict, settings: dict, refused: dict,
                     clusters: dict) -> dict:
    """The share of images that spell their prompt (:func:`.written.tally`), and for every metric whose scorer reads
    text (``reads_text``) its overall entry without the rows of those images ("without"; the same as the overall
    entry when none spells). A row over a unit of several images (a pool, a chain) carries no file and is kept."""
    spelling = sorted(k for k, v in check["images"].items() if v["result"] == written.SPELLS)
    without = {}
    for metric in sorted(set(check["reads_text"]) & set(units)):
        rows = scores[(scores["metric"] == metric) & ~scores["file_name"].isin(spelling)]
        entry = summarize(rows, units, expected, ("overall",), seed=settings["seed"], n_boot=settings["n_boot"],
                          refused=refused, clusters=clusters)[:1] if len(rows) else []
        without[metric] = {k: v for k, v in entry[0].items() if k not in ("metric", "slice_type", "slice")} if entry \
            else None
    return {"share": check["share"], "checked": check["checked"], "counts": check["counts"], "spelling": spelling,
            "ocr": check["ocr"], "without": without}


def _images(submission: Path, spec: dict, prompts: dict) -> tuple[list[Image], list[dict]]:
    """The submitted images, and the declared refusals ({prompt_id, sample_idx, reason, prompt}: a closed model
    that refused a prompt; no file)."""
    lines = read_metadata(submission / METADATA)
    refused = [{"prompt_id": m["prompt_id"], "sample_idx": m["sample_idx"], "reason": m.get("reason") or "",
                "prompt": prompts[m["prompt_id"]]} for m in lines if m.get("refused") is True]
    lines = [m for m in lines if m.get("refused") is not True]
    location = parse_location(get(spec, "images.location"))
    # file_name is relative to the submission folder (images/ included), or to the Hub repository's root
    if location.kind == "hub":
        root = fetch_hub_images(location, [m["file_name"] for m in lines])
        _verify_downloaded(root, lines, location, (get(spec, "generation.width"), get(spec, "generation.height")))
    else:
        root = submission
    images = [Image(m["file_name"], root / m["file_name"], m["sha256"], m["prompt_id"], m["sample_idx"],
                    prompts[m["prompt_id"]], m.get("edit_step")) for m in lines]
    return images, refused


def _verify_downloaded(root: Path, lines: list[dict], location, size: tuple[int, int]) -> None:
    """Images fetched from the Hub are checked before any scoring, as ``validate`` checks local ones: the
    declared sha256 (which keys the shared cache, so a mismatch could reuse or poison another submission's
    entries), and the same format, size and decompression limits."""
    for m in lines:
        where = f"hf://datasets/{location.path}@{location.revision}/{m['file_name']}"
        info = require_image(root / m["file_name"], name=where, size=size)
        if info.sha256 != m["sha256"]:
            raise CultureboardError(where, "differs from the sha256 metadata.jsonl declares",
                                    "upload the images the metadata describes, or fix the metadata, and pin the "
                                    "new revision")


def _submission_hash(submission: Path) -> str:
    """sha256 over submission.yaml and metadata.jsonl (which holds every image's sha256)."""
    h = hashlib.sha256()
    for name in (SUBMISSION_YAML, METADATA):
        h.update(name.encode() + b"\0" + (submission / name).read_bytes())
    return h.hexdigest()
