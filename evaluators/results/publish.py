"""``cultureboard publish results``: push the leaderboard's per-image scores to a Hub dataset repository.

The results folder (``results/``, written only by the evaluator) holds one folder per submission with
``scores.parquet`` and ``summary.json``. Publishing stages a folder in Hub layout and uploads it as one
commit:

* ``data/<split>.parquet``: one split per submission, named after its id made a valid split name
  (``[A-Za-z0-9_]`` words joined by dots: every other character becomes ``_``, so
  ``acme-ai__imagen-x`` is the split ``acme_ai__imagen_x``);
* ``data/latest.parquet``: the ``latest`` split, every submission's rows concatenated (sorted by id);
* ``summaries/<split>.json``: each submission's ``summary.json`` (aggregates, CIs and provenance);
* ``README.md``: a dataset card whose YAML ``configs`` lists the data file of every split, so that
  ``datasets.load_dataset("ORG/NAME", split="latest")`` works.

Every split has the same columns: ``submission`` (the original id), ``generated_by`` and ``scored_by``
(:mod:`.made`: the team or the leaderboard for a control, from the id; the leaderboard's CI when the result's
``review.json`` says the evaluate workflow scored it) followed by the evaluator's score columns (the union over submissions, missing ones null), so ``datasets`` can read all splits with one
set of features. Every submission under the results folder is staged on every upload: the card,
``latest`` and the splits then always agree, and the Hub drops files that did not change from the
commit. The token comes from ``HF_TOKEN`` or the huggingface_hub login.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from cultureboard.errors import CultureboardError
from cultureboard.hub import check_repo_id, upload_folder

from .made import generated_by, scored_by

LATEST = "latest"
#: The columns before the score columns: the submission, who generated its images and who scored them (:mod:`.made`).
MADE = ("submission", "generated_by", "scored_by")
#: A control's folder name starts so (its organization is ``control``).
CONTROL_PREFIX = "control__"
SCORES = "scores.parquet"
SUMMARY = "summary.json"
#: datasets' rule for split names (``datasets.naming._split_re``).
SPLIT_RE = re.compile(r"^\w+(\.\w+)*$", re.ASCII)
#: Split names that ``datasets`` gives a meaning of its own, besides ours.
RESERVED = {LATEST, "all", "train", "test", "validation"}


def split_name(submission_id: str) -> str:
    """The split name of a submission: every character other than ASCII letters, digits and ``_``
    becomes ``_`` (submission ids are lower-case ``[a-z0-9-]`` parts joined by ``__``, so distinct ids
    give distinct names)."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", submission_id)
    if not SPLIT_RE.match(name):  # only an empty id gets here
        raise CultureboardError(f"submission {submission_id!r}", "has no usable split name",
                                "name the results folder after the submission id, e.g. acme-ai__imagen-x")
    return name


def find_submissions(results_dir: str | Path) -> dict[str, Path]:
    """Submission id -> results folder, for every ``RESULTS/<id>/scores.parquet`` (shard folders
    ``<id>.shards`` and temporary folders are left out)."""
    root = Path(results_dir)
    return {p.name: p for p in sorted(root.iterdir())
            if p.is_dir() and not p.name.startswith(".") and not p.name.endswith(".shards") and (p / SCORES).is_file()}


def stage_results(results_dir: str | Path, out: str | Path) -> dict[str, str]:
    """Write the Hub layout of ``results_dir`` into the empty folder ``out``; returns split -> submission id."""
    results_dir, out = Path(results_dir), Path(out)
    found = find_submissions(results_dir)
    if not found:
        raise CultureboardError(results_dir, f"holds no submission results (no */{SCORES})",
                                "pass the --out folder of `cultureboard evaluate` (results/)", exit_code=2)
    splits: dict[str, str] = {}
    for sid in found:
        name = split_name(sid)
        if name in splits or name in RESERVED:
            other = splits.get(name, "a split name that datasets or cultureboard reserves")
            raise CultureboardError(results_dir / sid, f"gives the split name {name!r}, as does {other}",
                                    "rename one submission so that the ids differ in more than punctuation", exit_code=2)
        splits[name] = sid

    tables = {}
    for name, sid in splits.items():
        try:
            table = pq.read_table(found[sid] / SCORES)
        except (OSError, pa.ArrowException) as exc:
            raise CultureboardError(found[sid] / SCORES, f"cannot be read as parquet ({exc.__class__.__name__}: {exc})",
                                    f"re-run `cultureboard evaluate` for {sid}", exit_code=2) from None
        table = table.drop_columns([c for c in MADE if c in table.column_names])
        made = {"submission": sid, "generated_by": generated_by(sid.startswith(CONTROL_PREFIX), found[sid]),
                "scored_by": scored_by(found[sid])}
        for k, (column, value) in enumerate(made.items()):
            table = table.add_column(k, column, pa.array([value] * len(table), pa.string()))
        tables[name] = table
    try:
        latest = pa.concat_tables(list(tables.values()), promote_options="default")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise CultureboardError(results_dir, f"holds score tables whose columns disagree ({exc})",
                                "re-run `cultureboard evaluate` with one evaluator version for every submission",
                                exit_code=2) from None

    (out / "data").mkdir(parents=True)
    (out / "summaries").mkdir()
    pq.write_table(latest, out / "data" / f"{LATEST}.parquet")
    for name, table in tables.items():
        pq.write_table(_conform(table, latest.schema), out / "data" / f"{name}.parquet")
        summary = found[splits[name]] / SUMMARY
        if summary.is_file():
            shutil.copyfile(summary, out / "summaries" / f"{name}.json")
    (out / "README.md").write_text(card(splits, latest.num_rows), encoding="utf-8")
    return splits


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with exactly ``schema``'s columns, in its order (null columns where it lacks one)."""
    columns = [table.column(f.name).cast(f.type) if f.name in table.column_names else pa.nulls(len(table), f.type)
               for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)


def card(splits: dict[str, str], latest_rows: int) -> str:
    """The dataset card: YAML ``configs`` with one data file per split, then what the columns mean."""
    files = [{"split": LATEST, "path": f"data/{LATEST}.parquet"}]
    files += [{"split": name, "path": f"data/{name}.parquet"} for name in splits]
    header = yaml.safe_dump({"pretty_name": "cultureboard results", "tags": ["cultureboard", "leaderboard", "text-to-image"],
                             "configs": [{"config_name": "default", "data_files": files, "default": True}]},
                            sort_keys=False, allow_unicode=True)
    rows = "\n".join(f"| `{name}` | `{sid}` |" for name, sid in splits.items())
    return f"""---
{header}---

# cultureboard results

Per-image scores of every submission on the cultureboard leaderboard, written by `cultureboard evaluate`
and uploaded by `cultureboard publish results`. One row per image x metric (or per pool x metric for
diversity metrics), with the prompt id, the image's sha256 and the prompt's slice fields (country,
continent, region group, category, era).

The split `{LATEST}` ({latest_rows:,} rows) concatenates every submission; the column `submission`
says whose row it is. Each submission also has a split of its own:

| split | submission |
|---|---|
{rows}

```python
import datasets
scores = datasets.load_dataset("ORG/NAME", split="{LATEST}")
```

`summaries/<split>.json` holds each submission's aggregates (value, 95% bootstrap CI over prompts,
n_images, n_prompts, coverage per metric and slice) and the provenance of its scores: evaluator
version and git hash, package versions, scorer checkpoints and their resolved revisions, device,
dtype, dataset revision and the submission's hash. Scores made with different scorer checkpoints or
dataset revisions are not comparable; check the provenance before ranking.
"""


def publish_results(results_dir: str | Path, repo: str, submission: str | None = None, api=None) -> dict:
    """Upload the results folder to the Hub dataset ``repo``; returns {commit, splits, url}.

    ``submission``: the submission this upload is for (as after an evaluation); it must have results
    in ``results_dir`` and names the commit. Every submission is staged either way (see the module).
    """
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise CultureboardError(results_dir, "is not a folder", "pass the results folder (results/) that "
                                "`cultureboard evaluate --out` wrote", exit_code=2)
    check_repo_id(repo)
    if submission is not None and submission not in find_submissions(results_dir):
        raise CultureboardError(results_dir / submission, f"has no {SCORES}",
                                f"run `cultureboard evaluate submissions/{submission} --out {results_dir}` first "
                                "(and `cultureboard merge-shards` after a sharded run)", exit_code=2)
    with tempfile.TemporaryDirectory(prefix="cultureboard-results-") as tmp:
        staged = Path(tmp) / "staged"
        splits = stage_results(results_dir, staged)
        message = f"cultureboard results: {submission}" if submission else f"cultureboard results ({len(splits)} submissions)"
        info = upload_folder(repo, staged, message, api=api)
    return {"commit": info.oid, "splits": splits, "url": getattr(info, "commit_url", None)}

