"""CULTIVate's human study (Malakouti et al. 2025, section 4.1): native annotators rated each image on 1-5 Likert
scales for GT-FAITH ("How well does this image show {activity} in your country?", the gold label), GT-HAL ("How
incorrect?"), GT-EXAG ("How exaggerated?") and GT-REALISM, two annotators per form.

The authors released no annotations, so this imports a file in the layout such a study exports: one row per rater
and image (.csv with a header, or .jsonl), with the columns of :data:`COLUMNS`:

* ``rater`` (required), ``rater_country`` (ISO alpha-2; the paper's raters share the image's country);
* the image: ``image_sha256``, ``file_name`` or ``prompt_id`` (+ ``sample_idx``), and optionally ``submission``
  and ``model``;
* ``gt_faith``, ``gt_hal``, ``gt_exag``, ``gt_realism``: integers 1-5, empty where not asked (at least one given);
* optionally ``country``, ``category`` (taken from the prompt when ``prompts`` are given) and ``comment``.

Each answer becomes one common-format row (study ``cultivate``, question ``GT-FAITH`` / ``GT-HAL`` / ``GT-EXAG`` /
``GT-REALISM``, scale ``likert:1..5``). Problems are reported all at once, one line each, as
``FILE:LINE: COLUMN VALUE: problem (fix: ...)``.

With a results folder holding the rated submissions, :func:`write_cultivate_ratings` adds ``validity.json``: the
trust map (``trust.trust_map``) of each metric of :data:`VALIDITY` with the mean answer to its question, per
submission and slice. The paper's own numbers (Spearman with GT-FAITH: FAITH 0.47, VQAScore 0.14) are its
reported rows, not these.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from cultureboard.errors import CultureboardError

from ..ratings_files import integer, read_records, text
from ..trust import human_means, pair_with_scores, rated_results, trust_map, usable_scores
from . import register_study, write_ratings

QUESTIONS = {"gt_faith": "GT-FAITH", "gt_hal": "GT-HAL", "gt_exag": "GT-EXAG", "gt_realism": "GT-REALISM"}
SCALE = "likert:1..5"
ITEM_COLUMNS = ("image_sha256", "file_name", "prompt_id")
COLUMNS = ("rater", "rater_country", "submission", "model", *ITEM_COLUMNS, "sample_idx", "country", "category",
           *QUESTIONS, "comment")
_FIX_SCORE = "rate 1 to 5, or leave the cell empty where the rater was not asked"
#: The metrics each question stands for (the paper correlates FAITH and ALIGN with GT-FAITH; judge_yes, this judge's
#: P(yes), has no evidence of its own until a study like this one gives it).
VALIDITY = {"GT-FAITH": ("cultivate.faith", "cultivate.align", "cultivate.judge_yes"), "GT-HAL": ("cultivate.hal",),
            "GT-EXAG": ("cultivate.exag",)}
#: Questions whose larger answers are worse (more incorrect, more exaggerated): a metric where lower is better
#: agrees with them when the two rise together.
WORSE_WHEN_HIGHER = {"GT-HAL", "GT-EXAG"}


@register_study(
    "cultivate", title="CULTIVate human faithfulness, hallucination and exaggeration ratings (Malakouti et al. 2025, "
                       "section 4)",
    url="https://arxiv.org/abs/2511.05681", licence=None,
    writer="cultureboard.evaluators.results.studies.cultivate:write_cultivate_ratings",
    note="CULTIVate released no ratings: a file in this layout is its collector's data, published under the "
         "collector's licence.",
)
def import_cultivate(path: str | Path, prompts: list[dict] | None = None) -> list[dict]:
    """Common-format rows of a ratings file in the layout above; ``prompts`` (the rated prompt set's rows) checks
    each ``prompt_id`` and fills ``country`` and ``category`` from its prompt."""
    path = Path(path)
    by_id = None if prompts is None else {p["prompt_id"]: p for p in prompts}
    out = []
    records, problems = read_records(path, COLUMNS)
    if not records and not problems:
        problems.append(f"{path}: has no ratings (fix: add one row per rater and image)")
    for line, raw in records:
        def bad(column, problem, fix, line=line, raw=raw):
            problems.append(f"{path}:{line}: {column} {raw.get(column)!r}: {problem} (fix: {fix})")

        row = {k: text(raw.get(k)) for k in COLUMNS if k not in QUESTIONS and k != "sample_idx"}
        if row["rater"] is None:
            bad("rater", "is missing", "give every row the rater's id")
        if not any(row[k] for k in ITEM_COLUMNS):
            bad("prompt_id", "is missing, and so are image_sha256 and file_name: the row names no image",
                "name the image by its sha256, its file_name, or its prompt_id and sample_idx")
        try:
            row["sample_idx"] = integer(raw.get("sample_idx"), 0)
        except ValueError:
            bad("sample_idx", "is not a non-negative integer", "give the image's 0-based index among its prompt's")
        if by_id is not None and row["prompt_id"] is not None:
            prompt = by_id.get(row["prompt_id"])
            if prompt is None:
                bad("prompt_id", "is not in the prompt set", "use the prompt_id of the rated image's prompt")
            else:
                row["country"] = row["country"] or prompt.get("country")
                row["category"] = row["category"] or prompt.get("category")
        answers = {}
        for column, question in QUESTIONS.items():
            try:
                value = integer(raw.get(column), 1, 5)
            except ValueError:
                bad(column, "is not an integer from 1 to 5", _FIX_SCORE)
                continue
            if value is not None:
                answers[question] = value
        if not answers and all(text(raw.get(c)) is None for c in QUESTIONS):
            bad("gt_faith", "is missing, and so are gt_hal, gt_exag and gt_realism", "give at least one rating")
        comment = row.pop("comment")
        out += [{"study": "cultivate", **row, "question": question, "value": float(value), "scale": SCALE,
                 "comment": comment} for question, value in answers.items()]
    if problems:
        raise CultureboardError(path, f"{len(problems)} problem(s) in the ratings:\n  " + "\n  ".join(problems),
                                "correct every row listed above; nothing was imported")
    return out

def write_cultivate_ratings(path: str | Path, dataset: str | Path, out: str | Path, prompt_set: str = "cultivate",
                            results: Path | None = None, n_boot: int = 1000, seed: int = 0) -> dict:
    """The study's ratings folder (``studies.write_ratings``), with ``validity.json`` (:func:`validity`) when
    ``results`` holds the rated submissions."""
    reports = None if results is None else (
        lambda rows: {"validity.json": {"trust": validity(rows, results, n_boot, seed),
                                        "settings": {"n_boot": n_boot, "seed": seed}}})
    return write_ratings(path, dataset, out, study="cultivate", prompt_set=prompt_set, reports=reports,
                         results=results)


def validity(rows: pd.DataFrame, results: str | Path, n_boot: int = 1000, seed: int = 0) -> list[dict]:
    """Trust-map rows {submission, metric, human, slice_type, slice, n, rho, rho_low, rho_high, diagnostic,
    reason} of every metric of :data:`VALIDITY` the rated submissions have, against the mean answer per rated
    image to its question. rho is sign-normalised so that rho > 0 means "agrees with the raters": a metric is
    negated when its direction and the question's disagree (``cultivate.hal``, lower is better, with GT-HAL,
    higher is worse: not negated)."""
    rows, folders = rated_results(rows, results)
    out = []
    for sid in sorted(rows["submission"].unique()):
        scores, cards = usable_scores(folders[sid])
        mine = rows[rows["submission"] == sid]
        for question, metrics in VALIDITY.items():
            if not (mine["question"] == question).any():
                continue
            humans = human_means(mine, question)
            for metric in (m for m in metrics if m in cards and (scores["metric"] == m).any()):
                better = "lower" if question in WORSE_WHEN_HIGHER else "higher"
                pairs = pair_with_scores(humans, scores, metric)
                for entry in trust_map(pairs, higher_is_better=cards[metric]["direction"] == better,
                                       n_boot=n_boot, seed=seed):
                    out.append({"submission": sid, "metric": metric, "human": question, **entry})
    return out
