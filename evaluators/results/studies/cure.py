"""CuRe's user study (Rege et al. 2025, section 3 and appendix D): per artifact and rater, three 1-5 Likert
judgements, imported into the common ratings format, and the Spearman correlation of every CuRe scorer with each
of them, in the form of CuRe Tables 1-3 (and 15), with bootstrap CIs, sign-normalised (the paper's sign kept
beside it), and the trust map of each metric against the judgement it stands for (:func:`correlations`).

A ratings file (CSV with a header, or JSONL) has one row per rater, artifact (and rated submission):

==============  ========  ===========================================================================
column          required  meaning
==============  ========  ===========================================================================
rater           yes       the rater's id
artifact        yes       the artifact: its id in the prompt set (``artifact_id``) or its exact name
cure            one of    phi*_CuRe, Q3a: "How likely can the item in this image be found in your country?"
gt              one of    phi*_GT, Q3b: "How likely is this an image of {n}?"
ps              one of    phi*_PS, Q1a: how similar the image of P(n) is to the real photographs
rater_country   no        the rater's country (ISO 3166-1 alpha-2); CuRe's raters share the artifact's
submission      no        the cultureboard submission id whose images were rated (needed for correlations
                          when a file rates several submissions)
model           no        the generator's name
comment         no        the rater's free text (kept on the ``cure`` row)
==============  ========  ===========================================================================

Each answer is an integer 1-5 (empty: not asked). In the common format an item is the artifact's ladder
(``item_id`` = the ladder the CuRe family scores, ``prompt_id`` = its P(n) prompt, whose image CuRe's raters
judged) with the artifact's ``country`` and ``category``; questions ``cure``, ``gt``, ``ps`` on ``likert:1..5``.
The notes leave open how raters reduce to a gold score (ambiguity 7): here phi*(a) is the mean over the
artifact's raters, per submission, as ``trust.human_means`` computes it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from cultureboard.atomic import atomic_dir, check_replaceable
from cultureboard.countries import load_countries
from cultureboard.dataset_folder import local_revision, read_prompt_set
from cultureboard.errors import CultureboardError
from cultureboard.provenance import code_provenance, file_sha256

from ..agreement import agreement
from ..ratings_files import read_records
from ..ratings_format import to_table
from ..stats import goodness
from ..trust import human_means, rated_results, trust_map, usable_scores, with_region_group
from . import import_study, register_study

STUDY = "cure"
SCALE = "likert:1..5"
#: question -> the gold score it is in CuRe's tables
QUESTIONS = {"cure": "phi*_CuRe", "gt": "phi*_GT", "ps": "phi*_PS"}
COLUMNS = ("rater", "artifact", *QUESTIONS, "rater_country", "submission", "model", "comment")


@register_study(
    STUDY, title="CuRe user study (Rege et al. 2025, section 3, appendix D)", url="https://arxiv.org/abs/2506.08071",
    licence=None, writer="cultureboard.evaluators.results.studies.cure:import_cure_ratings",
    note="CuRe has not released its ratings (user_study/ is 'Coming Soon' in aniketrege/cure-bench): a file in "
         "this layout is its collector's data, published under the collector's licence.",
)
def import_cure(path: str | Path, prompts: list[dict] | None = None) -> list[dict]:
    """Rows of the common format from a CuRe-layout file (module docstring); ``prompts``: the cure-ladder rows,
    which name the artifacts. Every problem is reported at once, one line each; nothing is imported then."""
    from ...families.cure import ladder_id

    path = Path(path)
    if not prompts:
        raise CultureboardError(path, "cannot be imported without the rated prompt set",
                                "pass the cure-ladder prompt rows (--dataset and --prompt-set)")
    by_key: dict[str, list[dict]] = {}
    for p in prompts:
        if p.get("level") == "n":
            for key in {p["artifact_id"], p["artifact_name"].casefold()}:
                by_key.setdefault(key, []).append(p)
    countries = load_countries()
    rows, seen = [], {}
    records, problems = read_records(path, COLUMNS, ("rater", "artifact"))
    for line, raw in records:
        def bad(column, value, problem, fix, line=line):
            problems.append(f"{path}:{line}: {column} {value!r}: {problem} (fix: {fix})")

        before = len(problems)
        text = {k: (str(raw[k]).strip() or None) if raw.get(k) is not None else None for k in COLUMNS}
        if text["rater"] is None:
            bad("rater", raw.get("rater"), "is missing", "give every row the rater's id")
        matches = by_key.get(text["artifact"] or "") or by_key.get((text["artifact"] or "").casefold(), [])
        if len(matches) != 1:
            bad("artifact", raw.get("artifact"), "is not an artifact of the prompt set" if not matches else
                f"names {len(matches)} artifacts", "give the artifact's artifact_id from the cure-ladder prompt set")
        country = None
        if text["rater_country"] is not None:
            found = countries.lookup(text["rater_country"])
            country = found and found.iso2
            if country is None:
                bad("rater_country", raw.get("rater_country"), "is not in the country table",
                    "give the rater's ISO 3166-1 alpha-2 code, e.g. GH")
        answers = {}
        for question in QUESTIONS:
            value = raw.get(question)
            if value is None or (isinstance(value, str) and not value.strip()):
                continue
            try:
                number = float(value)
            except (TypeError, ValueError):
                number = float("nan")
            if not (number.is_integer() and 1 <= number <= 5) or isinstance(value, bool):
                bad(question, value, "is not an integer from 1 to 5", "rate 1 to 5, or leave the cell empty")
            answers[question] = number
        if not answers:
            bad("cure", None, "the row has no answer (cure, gt and ps are all empty)", "give at least one answer")
        if len(problems) > before:
            continue
        [prompt] = matches
        key = (text["rater"], text["submission"], text["model"], prompt["artifact_id"])
        if key in seen:
            bad("rater", text["rater"], f"rated this artifact twice (first at line {seen[key]})",
                "keep one row per rater and artifact")
            continue
        seen[key] = line
        base = {"study": STUDY, "rater": text["rater"], "rater_country": country, "submission": text["submission"],
                "model": text["model"], "prompt_id": prompt["prompt_id"], "item_id": ladder_id(prompt),
                "country": prompt.get("country"), "category": prompt.get("category"), "scale": SCALE}
        rows += [{**base, "question": q, "value": v, "comment": text["comment"] if q == "cure" else None}
                 for q, v in answers.items()]
    if not problems and not rows:
        problems.append(f"{path}: has no ratings (fix: add one row per rater and artifact)")
    if problems:
        raise CultureboardError(path, f"{len(problems)} problem(s) in the ratings:\n  " + "\n  ".join(problems),
                                "correct every row listed above; nothing was imported")
    return rows

def table_of(metric: str) -> tuple[str, str] | None:
    """(CuRe table, scorer) in whose form ``metric``'s correlations are shown; None for cure.acceptance."""
    from ...families.cure.encoders import ENTANGLEMENT, IMAGE_ENCODERS

    titles = {"": "SigLIP 2", ".dinov2": "DINOv2", ".aimv2": "AIMV2"}
    for base in ("cure.ps_delta.cr", "cure.ps_delta.c", "cure.gt", "cure.ps"):
        for suffix in IMAGE_ENCODERS:
            if metric == base + suffix:
                return "Table 1", titles[suffix]
    if metric in ("cure.ita.c", "cure.ita.r", "cure.ita.cr"):
        return "Table 2", "SigLIP 2"
    for suffix, (_, data) in ENTANGLEMENT.items():
        if metric == "cure.ita.cr" + suffix:
            return "Table 15", f"OpenCLIP {data}"
    if metric in ("cure.div", "cure.div_delta"):
        return "Table 3", "LPIPS AlexNet"
    return None


def stands_for(card: dict) -> str | None:
    """The question (``cure``, ``gt`` or ``ps``) whose gold score ``card``'s ``proxy_for`` names first
    ("phi*_PS: ..."), or None (cure.div, cure.div_delta, cure.acceptance stand for no rated question)."""
    proxy = card.get("proxy_for") or ""
    return next((q for q, gold in QUESTIONS.items() if proxy.startswith(gold + ":")), None)


def correlations(rows: pd.DataFrame, results: str | Path, n_boot: int = 1000, seed: int = 0) -> dict[str, list[dict]]:
    """Spearman's rho of every CuRe metric of each rated submission's ``results/<submission>/scores.parquet``
    with each gold score phi*(a) = the mean of the artifact's raters (per submission), as ``trust.trust_map``
    computes it: a percentile bootstrap CI over artifacts (``stats.spearman_ci``), **sign-normalised** by the
    metric card's direction (a lower-is-better or target metric is negated first, so rho > 0 always means "agrees
    with the raters" and ``trust.TRUST_RHO`` means the same for every metric). Flagged rows (e.g. no reference
    photographs) are left out.

    Returns ``{"correlations": [...], "trust": [...]}``:

    * ``correlations``: CuRe Tables 1-3 (and 15) reproduced, one row per table, scorer, metric, submission and
      gold, overall: ``n`` (artifacts with both values), ``rho``, ``low``, ``high`` (sign-normalised; null with
      fewer than 3 artifacts or a constant side), ``sign`` (-1 for a lower-is-better or target metric, else 1) and
      ``rho_as_printed`` = sign * rho, in the paper's sign (CuRe prints the raw Spearman: its divergences and
      Delta metrics come out negative when they agree with the raters; the printed CI is sign * [low, high]);
    * ``trust``: the trust map (``trust.trust_map``: overall and per country, region group and category, with
      the diagnostic flag) of each ranked metric, as the board ranks it (a target metric by its distance
      |value - target|, lower better), against the one gold its card stands for
      (:func:`stands_for`), as {submission, metric, human (the gold), slice_type, slice, n, rho, rho_low,
      rho_high, diagnostic, reason}.
    """
    rows, folders = rated_results(rows, results)
    found, trust = [], []
    for question, gold in QUESTIONS.items():
        if not (rows["question"] == question).any():
            continue
        humans = with_region_group(human_means(rows, question))
        for sid in sorted(rows["submission"].unique()):
            scores, cards = usable_scores(folders[sid])
            summary = json.loads((folders[sid] / "summary.json").read_text(encoding="utf-8"))
            model = summary["provenance"]["submission"].get("model")
            mine = humans[humans["submission"] == sid]
            for metric, part in scores.groupby("metric", sort=True):
                where = table_of(metric)
                if where is None:
                    continue
                card = cards.get(metric, {})
                # CuRe's sign convention: a divergence (lower, or closer to a target) agrees when rho < 0
                sign = -1 if card.get("direction") in ("lower", "target") else 1
                pairs = mine.merge(part[["unit_id", "value"]].rename(columns={"value": "metric"}),
                                   left_on="item_id", right_on="unit_id")
                judged = trust_map(pairs, higher_is_better=sign == 1, n_boot=n_boot, seed=seed)
                overall = judged[0]
                found.append({"table": where[0], "scorer": where[1], "metric": metric, "submission": sid,
                              "model": model, "gold": gold, "question": question, "n": overall["n"],
                              "rho": overall["rho"], "low": overall["rho_low"], "high": overall["rho_high"],
                              "sign": sign, "rho_as_printed": None if overall["rho"] is None else sign * overall["rho"]})
                if card.get("direction") == "target":  # the board ranks |value - target|: judge that
                    judged = trust_map(pairs.assign(metric=goodness(pairs["metric"], "target", card["target"])),
                                       n_boot=n_boot, seed=seed)
                if card.get("direction", "none") != "none" and stands_for(card) == question:
                    trust += [{"submission": sid, "metric": metric, "human": gold, **row} for row in judged]
    return {"correlations": sorted(found, key=lambda r: (r["table"], r["scorer"], r["metric"], r["submission"],
                                                         r["question"])),
            "trust": sorted(trust, key=lambda r: (r["metric"], r["submission"]))}


def import_cure_ratings(path: str | Path, dataset: str | Path, out: str | Path, results: str | Path | None = None,
                        prompt_set: str = "cure-ladder", n_boot: int = 1000, seed: int = 0) -> dict:
    """Import a CuRe-layout ratings file against ``prompt_set`` of ``dataset`` and write, atomically, to ``out``:
    ``ratings.parquet`` (common format), ``agreement.json`` (Krippendorff's alpha and Fleiss' kappa per question
    and slice) and, with ``results`` (a results folder holding the rated submissions), ``correlations.json``
    (:func:`correlations`: the paper's tables and the trust map); the JSON files carry a provenance block. Returns a summary of what was written."""
    path, out = Path(path), Path(out)
    check_replaceable(out, kind="ratings")  # before the work
    rows = import_study(STUDY, path, prompts=read_prompt_set(dataset, prompt_set), rated_in={"results": results})
    provenance = {"ratings": path.name, "ratings_sha256": file_sha256(path), "prompt_set": prompt_set,
                  "dataset_revision": local_revision(dataset), "settings": {"n_boot": n_boot, "seed": seed},
                  **code_provenance(("numpy", "pandas", "scipy"))}
    reports = {"agreement.json": {"agreement": agreement(rows), "provenance": provenance}}
    if results is not None:
        reports["correlations.json"] = {**correlations(rows, results, n_boot, seed), "provenance": provenance}
    with atomic_dir(out, kind="ratings") as tmp:
        pq.write_table(to_table(rows), tmp / "ratings.parquet")
        for name, report in reports.items():
            (tmp / name).write_text(json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n",
                                    encoding="utf-8")
    return {"out": str(out), "rows": len(rows), "raters": int(rows["rater"].nunique()),
            "artifacts": int(rows["item_id"].nunique()), "files": sorted(["ratings.parquet", *reports])}
