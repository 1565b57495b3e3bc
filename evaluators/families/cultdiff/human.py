"""CultDiff's human study, analysed: agreement per country and how well each automatic metric tracks it.

* :func:`similarity_rows` -- CultDiff's image-image similarity score as derived rows (question
  :data:`SIMILARITY`): per annotator and image, the mean of its Q1.1-Q1.4 answers;
* :func:`agreement_by_country` -- Krippendorff's alpha and Fleiss' kappa (``results.agreement``) per question,
  overall and per country (CultDiff Table 3 reports Fleiss' kappa per country);
* :func:`metric_validity` -- for every CultDiff metric of a results folder's scores: Spearman's rho with the
  similarity score, with a bootstrap CI over images, overall and per country / region group / category
  (``results.trust``, with the diagnostic-only rule), in CuRe's sign convention (``results/studies/cure.py``):
  ``rho`` is sign-normalised (a lower-is-better metric is negated first, so rho > 0 means agreement for LPIPS
  too), ``sign`` is -1 for a lower-is-better metric, else 1, and ``rho_as_printed`` = sign * rho is the raw
  Spearman, in the sign the paper prints (Table 2's LPIPS is negative); beside what the paper reports for it
  (``validity.yaml``, as reported). Flagged rows never count: CultDiff-S rows of artifacts its model was
  trained on are flagged "in training set", so its validity uses held-out items only;
* :func:`import_study` -- all of it written as a ratings folder.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from cultureboard.atomic import atomic_dir, check_replaceable
from cultureboard.dataset_folder import local_revision, read_prompt_set
from cultureboard.provenance import code_provenance, file_sha256

from ...engine.registry import metric_cards
from ...results.agreement import agreement
from ...results.rated_items import require_shared
from ...results.ratings_format import ITEM, to_table
from ...results.studies import import_study as run_importer
from ...results.trust import human_means, pair_with_scores, trust_map
from .reported import reported
from .train import SIMILARITY_QUESTIONS

#: The derived question: CultDiff's image-image similarity score (mean of Q1.1-Q1.4), the metrics' target.
SIMILARITY = "similarity"


def similarity_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per annotator and item with ``question`` = :data:`SIMILARITY` and ``value`` = the mean of that
    annotator's Q1.1-Q1.4 answers about the item (items as ``ratings_format.ITEM``)."""
    q1 = rows[rows["question"].isin(SIMILARITY_QUESTIONS)]
    if q1.empty:
        raise ValueError("no answers to the similarity questions q1_1-q1_4")
    keys = [*ITEM, "rater", "rater_country", "country", "category"]
    out = q1.groupby(keys, dropna=False, sort=True)["value"].mean().reset_index()
    return out.assign(question=SIMILARITY, scale="interval:1..5")


def agreement_by_country(rows: pd.DataFrame) -> list[dict]:
    """``results.agreement.agreement`` of the six questions, overall and per item country."""
    return agreement(rows, groupings=((), ("country",)))


def metric_validity(rows: pd.DataFrame, scores: pd.DataFrame, n_boot: int = 1000, seed: int = 0) -> list[dict]:
    """One row per CultDiff metric in ``scores`` (an evaluator's scores.parquet) and slice: ``metric``, ``human``,
    the trust-map fields (n, rho with its CI, diagnostic, reason; unflagged rows only), ``sign``,
    ``rho_as_printed`` (module doc) and ``reported`` (the paper's value and source, or null)."""
    humans = human_means(similarity_rows(rows), SIMILARITY)
    cards = metric_cards()
    out = []
    for metric in sorted(m for m in scores["metric"].unique() if m.startswith("cultdiff.")):
        good = scores[(scores["metric"] == metric) & scores["flag"].isna()]
        pairs = pair_with_scores(humans, good, metric)
        row = reported().get(metric)
        paper = None if row is None else {"value": row["value"], "printed": row["printed"], "statistic": row["statistic"],
                                          "human": row["human"], "source": f"{row['paper']}, {row['source']}"}
        sign = -1 if cards[metric].direction == "lower" else 1
        for entry in trust_map(pairs, higher_is_better=sign == 1, n_boot=n_boot, seed=seed):
            out.append({"metric": metric, "human": "image-image similarity (mean of Q1.1-Q1.4)", **entry, "sign": sign,
                        "rho_as_printed": None if entry["rho"] is None else sign * entry["rho"], "reported": paper})
    return out


def consensus(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per rated image: its item columns, country, category, the number of annotators and the mean answer
    to each question (and to :data:`SIMILARITY`)."""
    both = pd.concat([rows, similarity_rows(rows)], ignore_index=True)
    wide = both.pivot_table(index=ITEM, columns="question", values="value", aggfunc="mean", dropna=False)
    meta = rows.groupby(ITEM, dropna=False, sort=True).agg(country=("country", "first"), category=("category", "first"),
                                                           annotators=("rater", "nunique"))
    return meta.join(wide).reset_index()


def import_study(path: str | Path, dataset: str | Path, out: str | Path, *, prompt_set: str = "cultdiff",
                 scores: str | Path | None = None, submissions: str | Path | None = None, n_boot: int = 1000,
                 seed: int = 0) -> dict:
    """Import CultDiff-layout ratings (``results/studies/cultdiff.py``) against ``prompt_set`` of ``dataset`` and
    write the folder ``out`` atomically: ``ratings.parquet`` (common format), ``consensus.parquet``,
    ``agreement.json`` (:func:`agreement_by_country`) and, with ``scores`` (a scores.parquet of the prompt set),
    ``validity.json`` (:func:`metric_validity`); each JSON carries a provenance block. Returns counts."""
    path, out = Path(path), Path(out)
    check_replaceable(out, kind="ratings")
    rows = run_importer("cultdiff", path, prompts=read_prompt_set(dataset, prompt_set), submissions=submissions,
                        rated_in={"submissions": submissions})
    provenance = {"ratings": path.name, "ratings_sha256": file_sha256(path), "prompt_set": prompt_set,
                  "dataset_revision": local_revision(dataset), **code_provenance(("numpy", "pandas", "scipy"))}
    reports = {"agreement.json": {"agreement": agreement_by_country(rows), "provenance": provenance}}
    if scores is not None:
        table = pq.read_table(scores).to_pandas()
        found = metric_validity(rows, table, n_boot, seed)
        require_shared(max((e["n"] for e in found if e["slice_type"] == "overall"), default=0),
                       int(rows.groupby(ITEM, dropna=False).ngroups), scores)
        reports["validity.json"] = {"validity": found, "provenance": {**provenance, "scores_sha256": file_sha256(scores)}}
    with atomic_dir(out, kind="ratings") as tmp:
        pq.write_table(to_table(rows), tmp / "ratings.parquet")
        consensus(rows).to_parquet(tmp / "consensus.parquet", index=False)
        for name, report in reports.items():
            (tmp / name).write_text(json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n",
                                    encoding="utf-8")
    return {"out": str(out), "rows": len(rows), "images": int(rows.groupby(ITEM, dropna=False).ngroups),
            "annotators": int(rows["rater"].nunique()), "files": sorted(["ratings.parquet", "consensus.parquet", *reports])}
