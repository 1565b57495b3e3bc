"""Human scores per submission, from the imported ratings: where people rated a submission's images, their score is
the validated measure, and the board shows it before the automatic metrics (issue 33).

Every study's import (``cultureboard import ratings``, the studies' importers) writes ``ratings.parquet`` in the
common format (:mod:`~cultureboard.evaluators.results.ratings_format`: one row per rater x item x question). For
each (submission, study, question) of an ordered scale (Likert, ordinal, interval; a nominal answer such as "left
or right" has no "higher is better"):

* an item's score is the mean of its raters' answers (an item: the columns of ``ITEM``; raters are nested in it);
* the submission's score is the mean over its rated items, with the 95% interval of a bounded, discrete measure
  (:func:`~cultureboard.evaluators.results.stats.bounded_ci`: Wilson at the item level on the scale's bounds), so
  two or more items never give a point interval; one item gets no interval ("no CI: 1 item");
* ``n_items`` rated images, ``n_prompts`` the distinct prompts among them (items without a prompt count one each).

Rows without a ``submission`` are left out: their images cannot be placed on a board.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from cultureboard.evaluators.results.ratings_format import ITEM, parse_scale, read_ratings
from cultureboard.evaluators.results.stats import bounded_ci

FILE = "ratings.parquet"


def load_human(paths) -> dict[str, list[dict]]:
    """submission id -> its human scores (:func:`human_scores`) from the ``ratings.parquet`` of every ratings folder
    in ``paths`` that has one (a folder of correlations only adds none)."""
    frames = [read_ratings(Path(p) / FILE) for p in paths or () if (Path(p) / FILE).is_file()]
    if not frames:
        return {}
    return human_scores(pd.concat(frames, ignore_index=True))


def human_scores(ratings: pd.DataFrame) -> dict[str, list[dict]]:
    """submission id -> [{study, question, scale, value, ci_low, ci_high, ci_note, n_items, n_prompts, n_raters}]
    per (study, question, scale) of an ordered scale, sorted by study then question (module docstring)."""
    rated = ratings[ratings["submission"].notna()]
    out: dict[str, list[dict]] = {}
    for (submission, study, question, spec), rows in rated.groupby(["submission", "study", "question", "scale"],
                                                                    sort=True):
        scale = parse_scale(spec)
        if scale.level == "nominal":
            continue
        keys = [k for k in ITEM if rows[k].notna().any()]
        items = rows.groupby(keys, dropna=False, sort=True).agg(value=("value", "mean"), prompt=("prompt_id", "first"))
        value = float(items["value"].mean())
        low = high = None
        if len(items) >= 2:
            ci = bounded_ci([[v] for v in items["value"]], (scale.low, scale.high))
            low, high = float(ci.low), float(ci.high)
        prompts = int(items["prompt"].nunique() + items["prompt"].isna().sum())
        out.setdefault(str(submission), []).append({
            "study": study, "question": question, "scale": spec, "value": value, "ci_low": low, "ci_high": high,
            "ci_note": None if low is not None else "no CI: 1 item", "n_items": len(items), "n_prompts": prompts,
            "n_raters": int(rows["rater"].nunique())})
    return out
