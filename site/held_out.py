"""The held-out split on the site: a column beside the headline of every board with held-out results, the gap on
the model page, and held-out.html, which explains the split, its custody, its fingerprint and how to check it.

Only records of the dataset's current split (its release and fingerprint, from the dataset's build.json) are shown
as values; a record of another split is named as such and never compared (held-out values of two splits are
different prompts). A closed API is shown "not held-out tested".
"""

from __future__ import annotations

import json
from pathlib import Path

from cultureboard.errors import CultureboardError

from .write import Column, Site

PAGE = "held-out.html"
NOT_TESTED = "not held-out tested"
TUNED = {"label": "tuned to public prompts", "title": "The public value beats the held-out one by more than the card's "
         "smallest meaningful difference: the whole 95% CI of the gap clears it (see held-out.html)"}


def load(folder: str | Path | None, dataset: str | Path) -> dict:
    """``{"split": the dataset's split or None, "records": {submission id: record}}`` (empty without ``folder``)."""
    split = None
    build = Path(dataset) / "build.json"
    if build.is_file():
        split = json.loads(build.read_text(encoding="utf-8")).get("held_out")
    records = {}
    if folder is not None:
        for path in sorted(Path(folder).glob("*.json")):
            try:
                records[path.stem] = json.loads(path.read_text(encoding="utf-8"))
            except ValueError:
                raise CultureboardError(path, "is not a held-out record (not JSON)", "restore it from the evaluate "
                                        "workflow's held-out artifact, or remove it") from None
    return {"split": split, "records": records}


def _current(held: dict, sid: str) -> dict | None:
    """The submission's record when it was scored on the dataset's current split."""
    record = held["records"].get(sid)
    split = held["split"]
    if record is None or record.get("status") != "tested" or split is None:
        return None
    return record if record["split"]["fingerprint"] == split["fingerprint"] else None


def _row(record: dict, metric: str) -> dict | None:
    return next((m for m in record["metrics"] if m["metric"] == metric), None)


def column(board, members: list, metric: str, slice_type: str) -> Column | None:
    """The held-out column of a board (overall slice only), when a member has a held-out value of ``metric``."""
    if slice_type != "overall" or not any(
            (rec := _current(board.held_out, r.sid)) and _row(rec, metric) for r in members):
        return None
    split = board.held_out["split"]
    return Column("held_out", "Held-out", "score", f"{board.cards[metric]['title']} on the private held-out prompts of "
                  f"split release {split['release']} (see {PAGE}); never compared across splits")


def cell(board, sid: str, metric: str) -> tuple[dict | None, list[dict]]:
    """A member's held-out value of ``metric`` and its badges: tuned, not held-out tested, or another split's."""
    record = board.held_out["records"].get(sid)
    if record is None or record.get("status") != "tested":
        return None, [{"label": NOT_TESTED, "title": (record or {}).get("reason", "no held-out run for this submission")}]
    current = _current(board.held_out, sid)
    if current is None:
        return None, [{"label": f"split release {record['split']['release']}", "title": "scored on another held-out "
                       "split: not compared with this one"}]
    row = _row(current, metric)
    if row is None:
        return None, []
    return row["held_out"] | {"metric": metric, "metric_version": row["version"]}, [TUNED] if row["tuned_to_public"] else []


def model_table(site: Site, board, page: str, sid: str):
    """The model page's held-out table: per metric, public, held-out and the gap with its CI (None without one)."""
    record = _current(board.held_out, sid)
    if record is None:
        return None
    columns = [Column("metric", "Metric", "text"), Column("public", "Public", "score"),
               Column("held_out", "Held-out", "score"),
               Column("gap", "Gap (public - held-out)", "score", "95% CI: the two intervals combined (MOVER); a gap on "
                      "the metric's better side whose CI clears the card's smallest meaningful difference is badged"),
               Column("threshold", "Threshold", "num", "The least advantage the badge needs")]
    rows = []
    for m in record["metrics"]:
        n = {k: m["public"].get(k) for k in ("n_images", "n_prompts", "coverage")}
        rows.append({"metric": board.cards.get(m["metric"], {}).get("title", m["metric"]),
                     "public": m["public"], "held_out": m["held_out"], "gap": m["gap"] | n,
                     "threshold": m["threshold"], "_marks": {"gap": [TUNED]} if m["tuned_to_public"] else {}})
    return site.table(page, "held-out", columns, rows)


def page(site: Site, board) -> None:
    """held-out.html: what the split is, who holds it, its fingerprint, how to verify it after a rotation."""
    split = board.held_out["split"]
    tested = sorted(sid for sid in board.held_out["records"] if _current(board.held_out, sid))
    site.page(PAGE, "held_out.html", "The held-out split", split=split, tested=tested,
              not_tested=sorted(sid for sid, rec in board.held_out["records"].items() if rec.get("status") != "tested"))
