"""CultDiff's leaderboard views of one results folder (one model): CultDiff ranks models per country and category.

* :func:`country_category` -- every metric per (country, category) cell, with the engine's own summary
  (``results.aggregate.summarize``: mean over prompts, 95% bootstrap CI over prompts, n, coverage, flags) over
  a derived ``country_category`` slice ("ES/food");
* :func:`underrepresented` -- per metric, each country's gap to the model's own mean over all its prompts, with a
  paired stratified bootstrap CI and Benjamini-Hochberg adjusted p-value (``results.disparity``); a country is
  ``under_represented`` when the whole CI lies on the worse side of zero (below it for a similarity, above it for
  a distance);
* :func:`leaderboard` -- both, for the site.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from cultureboard.errors import CultureboardError

from ...engine.registry import IMAGE_UNIT
from ...results.aggregate import summarize
from ...results.disparity import disparity

CELL = "country_category"


def _read(results: str | Path) -> tuple[pd.DataFrame, dict]:
    results = Path(results)
    try:
        scores = pq.read_table(results / "scores.parquet").to_pandas()
        summary = json.loads((results / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CultureboardError(results, f"is not a results folder ({type(exc).__name__})",
                                "pass RESULTS/<submission id> as `cultureboard evaluate` wrote it") from None
    if summary["provenance"].get("family") != "cultdiff":
        raise CultureboardError(results, f"holds results of family {summary['provenance'].get('family')!r}",
                                "pass the results of a cultdiff submission")
    return scores, summary


def _cell(frame: pd.DataFrame) -> pd.Series:
    known = frame["country"].notna() & frame["category"].notna()
    return (frame["country"].astype(str) + "/" + frame["category"].astype(str)).where(known)


def country_category(results: str | Path, prompts: list[dict] | None = None, n_boot: int = 1000,
                     seed: int = 0) -> list[dict]:
    """Summary entries (``aggregate.summarize``'s fields) of every metric per ``country_category`` cell.
    ``prompts`` (the prompt set's rows) gives each cell's coverage; without it coverage counts the prompts
    that have rows."""
    scores, summary = _read(results)
    scores = scores.assign(**{CELL: _cell(scores)})
    units = {m["name"]: m["unit"] for m in summary["metrics_info"]}
    if any(u != IMAGE_UNIT for u in units.values()):
        raise CultureboardError(results, "has metrics of units other than images", "pass cultdiff results")
    if prompts is None:
        prompts = scores.drop_duplicates("prompt_id")[["prompt_id", "country", "category"]].to_dict("records")
    expected = {IMAGE_UNIT: {p["prompt_id"]: {CELL: None if not (p.get("country") and p.get("category"))
                                              else f"{p['country']}/{p['category']}"} for p in prompts}}
    return summarize(scores, units, expected, (CELL,), seed=seed, n_boot=n_boot)


def underrepresented(results: str | Path, n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> list[dict]:
    """``results.disparity.disparity`` of the scored (unflagged) rows, per metric, with ``direction`` and
    ``under_represented`` (module doc)."""
    scores, summary = _read(results)
    directions = {m["name"]: m["direction"] for m in summary["metrics_info"]}
    good = scores[scores["flag"].isna() & scores["value"].notna()]
    rows = disparity(good, n_boot=n_boot, level=level, seed=seed) if len(good) else []
    out = []
    for row in rows:
        lower_is_better = directions[row["metric"]] == "lower"
        worse = row["low"] > 0 if lower_is_better else row["high"] < 0
        out.append({**row, "direction": directions[row["metric"]],
                    "under_represented": bool(row["kind"] == "country" and worse)})
    return out


def leaderboard(results: str | Path, prompts: list[dict] | None = None, n_boot: int = 1000, seed: int = 0) -> dict:
    """{"model", "country_category": :func:`country_category`, "countries": :func:`underrepresented`}."""
    _, summary = _read(results)
    return {"model": summary["provenance"]["submission"]["model"],
            "country_category": country_category(results, prompts, n_boot, seed),
            "countries": underrepresented(results, n_boot, seed=seed)}
