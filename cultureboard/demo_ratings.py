"""Synthetic human ratings for the demo: one small file per study, in that study's own layout, imported by the study's
own importer (``cultureboard import ratings``) so that the demo site shows the trust view (the trust map, the
validity tables, the per-country reliability) that real ratings would fill.

**They are not human judgements.** Each answer is a noisy function of an automatic score of the rated image (or
artifact): the item's rank among the rated items on the question's anchor metric (:data:`ANCHORS`), ``u`` in [0,
1], gives the Likert answer ``clip(round(1 + 4 u + e), 1, 5)`` with ``e ~ Normal(0, NOISE)`` drawn per rater and
item from a fixed seed (CUBE's relevance: yes where ``u + e / 4 > 0.6``, maybe above 0.3, else no). So a metric
"tracks" these ratings because the ratings were made from it (or from a metric it correlates with): the
correlations on the demo site show what the page looks like, never how good a metric is. Every ratings folder the
demo writes holds :data:`MARKER`, which the site reads (``site/trust.py``) to say so on every page and on the
trust page.

Three raters of the item's own country rate every item (so agreement per country has a panel to measure). ECB's
survey layout (its app's model and country slugs and step ids) has no synthetic file here: the demo's trust view
covers CUBE, CuRe, CultDiff and CULTIVate.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd

from .atomic import atomic_write_text

#: Written into each synthetic ratings folder; its ``note`` is what the site shows.
MARKER = "synthetic.json"
SEED = 0
#: Standard deviation of the noise added to ``1 + 4 u`` (in Likert points).
NOISE = 0.9
RATERS_PER_ITEM = 3
#: Bootstrap replicates of the correlations' CIs (the studies' default is 1000; fewer keep the demo quick, and
#: these CIs bound nothing real).
N_BOOT = 200
#: study -> (prompt set rated, layout column -> the metric whose rank makes its answer). One submission is rated
#: per study: the demo's first of that prompt set (:func:`write_synthetic_ratings`).
ANCHORS = {
    "cube": ("cube-awareness", {"relevance": "cube.cultural_relevance", "faithfulness": "cube.faithfulness",
                                "realism": "cube.quality"}),
    "cultdiff": ("cultdiff", {q: "cultdiff.learned" for q in ("q1_1", "q1_2", "q1_3", "q1_4", "q2", "q3")}),
    "cultivate": ("cultivate", {"gt_faith": "cultivate.faith", "gt_hal": "cultivate.hal", "gt_exag": "cultivate.exag"}),
    "cure": ("cure-ladder", {"cure": "cure.ita.cr", "gt": "cure.gt", "ps": "cure.ps"}),
}
NOTE = ("Synthetic ratings made by the demo, not human judgements: each answer is the rated item's rank on an "
        "automatic metric plus random noise (seed {seed}), so the correlations below show what this view looks like "
        "with ratings, never whether a metric tracks people.")


def likert(u: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """``clip(round(1 + 4 u + noise), 1, 5)``: ranks ``u`` in [0, 1] as integer answers 1-5."""
    return np.clip(np.rint(1 + 4 * u + noise), 1, 5).astype(int)


def relevance(u: np.ndarray, noise: np.ndarray) -> list[str]:
    """CUBE's relevance answer: yes where ``u + noise / 4 > 0.6``, maybe above 0.3, else no."""
    t = u + noise / 4
    return ["yes" if x > 0.6 else "maybe" if x > 0.3 else "no" for x in t]


def ranks(values: pd.Series) -> np.ndarray:
    """Each value's rank among ``values`` scaled to [0, 1] (ties: their mean rank; one item: 0.5)."""
    if len(values) < 2:
        return np.full(len(values), 0.5)
    return ((values.rank(method="average") - 1) / (len(values) - 1)).to_numpy()


def synthetic_rows(study: str, sid: str, scores: pd.DataFrame, rng: np.random.Generator) -> list[dict]:
    """The rows of ``study``'s ratings file (its own layout) for submission ``sid`` from its per-image scores."""
    _, anchors = ANCHORS[study]
    unit = "unit_id" if study == "cure" else "file_name"
    keys = [unit, "prompt_id", "sample_idx", "country"]
    items = scores.drop_duplicates(unit)[keys].set_index(unit)
    answers = {}
    for column, metric in anchors.items():
        values = scores[scores["metric"] == metric].dropna(subset=["value"]).drop_duplicates(unit).set_index(unit)["value"]
        items = items.loc[items.index.intersection(values.index)]
        answers[column] = pd.Series(ranks(values), index=values.index)
    rows = []
    for key, item in items.sort_index().iterrows():
        for k in range(1, RATERS_PER_ITEM + 1):
            row = {"rater": f"synthetic-{item['country'].lower()}-{k}", "rater_country": item["country"],
                   "submission": sid}
            if study == "cure":
                row["artifact"] = key[len("cure-ladder/"):].rsplit("/", 1)[0]
            elif study == "cultdiff":
                row.update(prompt_id=item["prompt_id"], file_name=key)
            else:
                row.update(prompt_id=item["prompt_id"], sample_idx=int(item["sample_idx"]))
            for column, u in answers.items():
                noise = rng.normal(0, NOISE, 1)
                row[column] = (relevance(np.array([u[key]]), noise) if column == "relevance"
                               else likert(np.array([u[key]]), noise).tolist())[0]
            rows.append(row)
    return rows


def write_synthetic_ratings(dataset: Path, submissions: Path, results: Path, out: Path,
                            rated: dict[str, str]) -> list[Path]:
    """For each study of :data:`ANCHORS` whose prompt set has a submission in ``rated`` (prompt set -> submission
    id), write ``out/<study>.csv`` and import it into the ratings folder ``out/<study>/`` with the study's writer,
    adding :data:`MARKER`. Returns the ratings folders, for ``build_site(ratings=...)``."""
    from .evaluators.results.studies import write_study

    rng = np.random.default_rng(SEED)
    folders = []
    out.mkdir(parents=True, exist_ok=True)
    for study, (prompt_set, anchors) in ANCHORS.items():
        sid = rated.get(prompt_set)
        if sid is None:
            continue
        rows = synthetic_rows(study, sid, pd.read_parquet(results / sid / "scores.parquet"), rng)
        if not rows:
            continue
        file = out / f"{study}.csv"
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        atomic_write_text(file, text.getvalue())
        options = ({"scores": str(results / sid / "scores.parquet"), "submissions": str(submissions)}
                   if study in ("cube", "cultdiff") else {"results": str(results)})
        if study != "cube":  # CUBE's writer keeps its own 1000
            options["n_boot"] = N_BOOT
        folder = out / study
        write_study(study, file, dataset, folder, prompt_set=prompt_set, **options)
        atomic_write_text(folder / MARKER, json.dumps({
            "synthetic": True, "note": NOTE.format(seed=SEED), "study": study, "submission": sid, "seed": SEED,
            "noise": NOISE, "raters_per_item": RATERS_PER_ITEM, "n_boot": N_BOOT, "anchors": anchors}, indent=2) + "\n")
        folders.append(folder)
    return folders
