"""One flat file of every score the site shows, for readers who analyse: ``data/scores.csv.gz`` (gzip, as
pandas, R and spreadsheets read it; about a twentieth of the plain CSV, which at 1,000 submissions would be most of
the site) and ``data/scores.parquet``, linked from the home page.

One row per (submission, metric, slice) that a board reads (each result's entries): who (model key, organisation,
model, submission id and its display name, tag, open or closed weights, release date and parameter count where
declared, who generated the images and who scored them), what (prompt
set, family, comparability group, slice type and slice, metric, its version and direction), the value with its 95%
CI, n images and prompts, coverage and the number of refused prompts, on a similarity-to-reference metric's row over
all prompts the images its near-reference check left out (empty where it was not checked), the flags (control kind, tiny random
stand-in scorers, a text-only control scoring high, a caveat such as "2 prompts: not ranked"), and the provenance
(cultureboard version and git commit, dataset revision, the scorers' model ids and resolved revisions, device and
dtype, the submission's sha256). Rows are ordered by prompt set, submission id, metric, slice type, slice; the two
files hold the same rows (the CSV writes a missing value as an empty field).
"""

from __future__ import annotations

import csv
import gzip
import io

import pyarrow as pa
import pyarrow.parquet as pq

from cultureboard.evaluators.submission.format import model_key

from .board import Board
from .leaderboards import filter_fields
from .names import caveat, get
from .write import Site, csv_cell

#: The files, site-relative.
CSV, PARQUET = "data/scores.csv.gz", "data/scores.parquet"
#: The columns, in order, with their Arrow types.
SCHEMA = pa.schema([
    ("model_key", pa.string()), ("organization", pa.string()), ("model", pa.string()), ("submission", pa.string()),
    ("display_name", pa.string()), ("tag", pa.string()), ("weights", pa.string()), ("release_date", pa.string()),
    ("parameters", pa.float64()), ("generated_by", pa.string()), ("scored_by", pa.string()),
    ("prompt_set", pa.string()), ("family", pa.string()), ("group", pa.string()),
    ("slice_type", pa.string()), ("slice", pa.string()), ("metric", pa.string()), ("metric_version", pa.string()),
    ("direction", pa.string()), ("value", pa.float64()), ("ci_low", pa.float64()), ("ci_high", pa.float64()),
    ("n_images", pa.int64()), ("n_prompts", pa.int64()), ("coverage", pa.float64()), ("n_refused", pa.int64()),
    ("near_reference_left_out", pa.int64()),
    ("control", pa.string()), ("stand_in", pa.bool_()), ("caveat", pa.string()), ("cultureboard", pa.string()),
    ("git_commit", pa.string()), ("dataset_revision", pa.string()), ("scorers", pa.string()), ("device", pa.string()),
    ("dtype", pa.string()), ("submission_sha256", pa.string()),
])


def _text(value) -> str | None:
    return None if value is None else str(value)


def flat_rows(board: Board) -> list[dict]:
    """Every (submission, metric, slice) entry of the board as one row of :data:`SCHEMA`'s columns."""
    groups = {r.sid: g.name for gs in board.groups.values() for g in gs for r in g.everyone}
    rows = []
    for r in sorted(board.results.values(), key=lambda r: (r.prompt_set, r.sid)):
        p = r.summary["provenance"]
        scorers = "; ".join(f"{s.get('name')}={s.get('model_id')}@{s.get('revision')}" for s in p.get("scorers", []))
        who = {"model_key": model_key(r.spec), "organization": _text(get(r.spec, "organization")),
               "model": _text(get(r.spec, "model.name")), "submission": r.sid, "display_name": r.display,
               "tag": _text(get(r.spec, "tag")), **filter_fields(r.spec),
               "generated_by": r.generated_by or None, "scored_by": r.scored_by or None,
               "prompt_set": r.prompt_set,
               "family": _text(p.get("family")), "group": groups.get(r.sid)}
        made = {"control": r.control or None, "stand_in": r.sid in board.standin,
                "cultureboard": p["code"]["cultureboard"], "git_commit": p["code"]["git"].get("commit"),
                "dataset_revision": p["dataset"]["revision"], "scorers": scorers, "device": p.get("device"),
                "dtype": p.get("dtype"), "submission_sha256": (p.get("submission") or {}).get("sha256")}
        near = r.summary.get("near_reference") or {}
        for (metric, slice_type, slice_), e in sorted(r.entries.items()):
            card = board.cards.get(metric, {})
            checked = near.get(metric) if slice_type == "overall" else None
            note = caveat(e)
            rows.append(who | {"slice_type": slice_type, "slice": slice_, "metric": metric,
                               "metric_version": _text(card.get("version")), "direction": card.get("direction"),
                               "value": e.get("value"), "ci_low": e.get("ci_low"), "ci_high": e.get("ci_high"),
                               "n_images": e.get("n_images"), "n_prompts": e.get("n_prompts"),
                               "coverage": e.get("coverage"), "n_refused": e.get("n_refused"),
                               "near_reference_left_out": checked["left_out"] if checked and
                               checked["threshold"] is not None else None,
                               "caveat": note["label"] if note else None} | made)
    return rows


def write_flat_file(site: Site, board: Board) -> dict:
    """Write :data:`CSV` (gzip with no file name or time in its header, so the same rows give the same bytes; text that a spreadsheet would run as a formula gets a leading apostrophe, as in every
    download: :func:`.write.csv_cell`) and :data:`PARQUET` (the values as they are); returns {csv, parquet, rows}
    (the home page links both)."""
    rows = flat_rows(board)
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=SCHEMA.names, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: "" if v is None else csv_cell(v) for k, v in row.items()} for row in rows)
    site.write_bytes(CSV, gzip.compress(text.getvalue().encode("utf-8"), mtime=0))
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), buffer)
    site.write_bytes(PARQUET, buffer.getvalue())
    return {"csv": CSV, "parquet": PARQUET, "rows": len(rows)}
