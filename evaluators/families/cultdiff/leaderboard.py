"""CultDiff's leaderboard views of one results folder (one model): CultDiff ranks models per country and category.

* :func:`country_category` -- every metric per (country, category) cell: the engine's own summary entries of
  the prompt set's crossed slice ``country_x_category`` ("ES x food": mean over prompts, 95% bootstrap CI over
  prompts, n, coverage, flags);
* :func:`underrepresented` -- per metric, each country's gap to the model's own mean over all its prompts, with a
  paired stratified bootstrap CI and Benjamini-Hochberg adjusted p-value (``results.disparity``); a country is
  ``under_represented`` by the one rule the site uses (``results.disparity.under_represented``): its BH q is
  below 0.05 and its gap lies on the worse side of zero (below it for a similarity, above it for a distance).
  The site's model page marks the same countries (``site.board.Board.under_represented``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from cultureboard.errors import CultureboardError

from ...results.disparity import disparity, under_represented

CELL = "country_x_category"


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


def country_category(results: str | Path) -> list[dict]:
    """The summary entries (``aggregate.summarize``'s fields) of every metric per ``country_x_category`` cell."""
    _, summary = _read(results)
    return [e for e in summary["metrics"] if e["slice_type"] == CELL]


def underrepresented(results: str | Path, n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> list[dict]:
    """``results.disparity.disparity`` of the scored (unflagged) rows, per metric, with ``direction`` and
    ``under_represented`` (module doc)."""
    scores, summary = _read(results)
    directions = {m["name"]: m["direction"] for m in summary["metrics_info"]}
    good = scores[scores["flag"].isna() & scores["value"].notna()]
    rows = disparity(good, n_boot=n_boot, level=level, seed=seed) if len(good) else []
    out = []
    for row in rows:
        direction = directions[row["metric"]]
        out.append({**row, "direction": direction,
                    "under_represented": under_represented(row["kind"], row["value"], row["p_adjusted"], direction)})
    return out
