"""ECB's expert survey (Seo et al. 2025, section 3.4, appendix B): per rater and image of a multi-loop chain (steps
0, 1, 3, 5 shown side by side), Image Quality and Cultural Representation on 1-5, and the best and the worst of
the four images; imported into the common ratings format, with HQS, agreement, the best / worst agreement of a
metric beside the positional baseline, and the Spearman correlation of every ECB chain metric with HQS.

Input: the survey app's ``step_responses`` documents (``ecb-human-survey``, Firestore) as JSONL or CSV, one row
per rater and image, with the fields ``user_id, model, country, category, sub_category, variant, step`` ("step0"
.. "step5"), ``image_quality, cultural_representative`` (1-5), ``is_best, is_worst`` (true / false) and optionally
``comments`` (the app's other fields are read and ignored); or the app's admin CSV export (header ``User ID,
User Name, User Email, Country, Model, Image ID, Step, Image Quality (1-5), ...``), whose rows of type "step" are
read by their ``Image ID`` (``{model}_{country}_{category}_{sub}_{variant}::step{k}``); names and e-mail
addresses are dropped. ECB's country slugs (``korea``, ``united_states``) and subcategory slugs map to the ``ecb``
prompt set's ISO codes and prompt ids (image of step k: the base prompt for k = 0, else ``.../edit/k``); India's
landscape rows tagged ``general`` in some released CSVs are read as the landscape's single variant. ECB released
no ratings (the paper's 17 raters' data stayed private): a file in this layout is its collector's data.

Common rows: questions ``image_quality`` and ``cultural_representation`` (``likert:1..5``), ``best`` and ``worst``
(``nominal:no=0,yes=1``); the item is the rated step's ``prompt_id`` with ``model`` = ECB's model slug and
``submission`` from the ``submissions`` mapping (model slug -> the cultureboard submission holding those images);
``rater_country`` is the item's country (ECB's raters rated only their own country, appendix B.3). Note of the
source: the app stored 3 for an image the rater left unrated, so such defaults cannot be told apart.

HQS (section 3.4) of an image = the mean over its raters of (image quality + cultural representation) / 2.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from cultureboard.builder.prompt_common import make_prompt_id
from cultureboard.builder.prompts_ecb import load_schema

from cultureboard.atomic import atomic_dir, check_replaceable
from cultureboard.dataset_folder import local_revision, read_prompt_set
from cultureboard.errors import CultureboardError
from cultureboard.provenance import code_provenance, file_sha256

from ...families.ecb.core import extreme_steps, pick_agreement
from ...families.ecb.final import FINAL_METRICS
from ..agreement import agreement
from ..ratings_files import read_records
from ..ratings_format import ITEM, to_table
from ..stats import bootstrap_ci
from ..trust import pair_with_scores, rated_results, trust_map, usable_scores
from . import import_study, register_study

STUDY = "ecb"
LIKERT, CHOICE = "likert:1..5", "nominal:no=0,yes=1"
FIELDS = ("user_id", "model", "country", "category", "sub_category", "variant", "step", "image_quality",
          "cultural_representative", "is_best", "is_worst")
#: The admin CSV export's columns -> the step_responses fields they hold.
ADMIN = {"User ID": "user_id", "Country": "country", "Model": "model", "Image ID": "uid", "Step": "step",
         "Image Quality (1-5)": "image_quality", "Cultural Representation (1-5)": "cultural_representative",
         "Best Image": "best_image", "Worst Image": "worst_image", "Response Type": "response_type"}
#: The chain metrics compared with HQS (per step image).
CHAIN_METRIC = re.compile(r"^ecb\.(attribute\.)?(clipscore|aesthetic|dreamsim|culture)")


@register_study(
    STUDY, title="ECB expert survey (Seo et al. 2025, section 3.4, appendix B)", url="https://arxiv.org/abs/2510.20042",
    licence=None, writer="cultureboard.evaluators.results.studies.ecb:import_ecb_ratings",
    note="ECB released no ratings: a file in the survey app's layout is its collector's data, published under the "
         "collector's licence.",
)
def import_ecb(path: str | Path, prompts: list[dict] | None = None, submissions: dict[str, str] | None = None) -> list[dict]:
    """Common-format rows of a survey export (module docstring); ``prompts`` (the ``ecb`` prompt set's rows)
    checks that every rated image is one of its prompts; ``submissions`` maps ECB model slugs to submission ids.
    Every bad row is reported at once."""
    path = Path(path)
    problems: list[str] = []
    known = {p["prompt_id"]: p for p in prompts} if prompts is not None else None
    rows = []
    for where, raw in _records(path, problems):
        record = _parse(raw, where, problems)
        if record is None:
            continue
        pid, iso, category = record["prompt_id"], record["country"], record["category"]
        if known is not None and pid not in known:
            problems.append(f"{where}: rates {pid}, which is not in the ecb prompt set (fix: rate images of its prompts)")
            continue
        item = {"study": STUDY, "rater": record["rater"], "rater_country": iso, "prompt_id": pid, "sample_idx": 0,
                "country": iso, "category": category, "model": record["model"],
                "submission": (submissions or {}).get(record["model"])}
        rows += [{**item, "question": "image_quality", "value": record["iq"], "scale": LIKERT},
                 {**item, "question": "cultural_representation", "value": record["cr"], "scale": LIKERT,
                  "comment": record["comment"]},
                 {**item, "question": "best", "value": float(record["best"]), "scale": CHOICE},
                 {**item, "question": "worst", "value": float(record["worst"]), "scale": CHOICE}]
    if problems:
        raise CultureboardError(path, f"{len(problems)} problem(s) in the ratings:\n  " + "\n  ".join(problems),
                                "correct every row listed above; nothing was imported")
    return rows


def _records(path: Path, problems: list[str]) -> list[tuple[str, dict]]:
    """(FILE:LINE, row) of every rating of the export, read by ``ratings_files.read_records`` (so a missing file,
    another format or a non-UTF-8 file is one CultureboardError line); an admin CSV's rows are renamed to the
    step_responses fields (:data:`ADMIN`) and only its "step" rows are kept. Rows that are not rows are added to
    ``problems``."""
    records, bad = read_records(path, None, required=())
    problems += bad
    if not records and not bad:
        raise CultureboardError(path, "has no ratings", "pass the survey export, one row per rater and image")
    admin = False
    if records and path.suffix.lower() == ".csv":  # a CSV row has every column of the header
        header = set(records[0][1])
        admin = "Image ID" in header
        absent = [c for c in (("User ID", "Image ID", "Response Type") if admin else FIELDS) if c not in header]
        if absent:
            raise CultureboardError(path, f"lacks the columns {absent}",
                                    f"export the step_responses fields {', '.join(FIELDS)}, or the admin CSV")
    out = []
    for line, raw in records:
        row = {ADMIN.get(k, k): v for k, v in raw.items()} if admin else raw
        if admin and row.get("response_type") != "step":
            continue  # the attribute-addition rows of the admin export carry no step ratings
        out.append((f"{path}:{line}", row))
    return out


def _parse(raw: dict, where: str, problems: list[str]) -> dict | None:
    """One rating as {rater, model, prompt_id, country, category, iq, cr, best, worst, comment}, or None after
    adding its problems."""
    before = len(problems)
    fields = dict(raw)
    if "uid" in fields and not fields.get("category"):
        fields.update(_split_uid(str(fields["uid"]), where, problems))
        fields["is_best"] = bool(fields.get("best_image"))
        fields["is_worst"] = bool(fields.get("worst_image"))
    absent = [f for f in FIELDS if fields.get(f) in (None, "") and f != "variant"] + \
        (["variant"] if "variant" not in fields else [])  # "" is the variant of landscape and people
    if absent:
        problems.append(f"{where}: lacks {', '.join(absent)} (fix: export every field of step_responses)")
        return None
    schema = load_schema()
    slugs = {spec["slug"]: iso for iso, spec in schema["countries"].items()}
    iso = slugs.get(str(fields["country"]).strip().lower())
    category, sub = str(fields["category"]).strip().lower(), str(fields["sub_category"]).strip().lower()
    spec = schema["categories"].get(category)
    variant = str(fields["variant"] or "").strip().lower()
    step = re.fullmatch(r"(?:step)?([0-5])", str(fields["step"]).strip().lower())
    if iso is None:
        problems.append(f"{where}: country {fields['country']!r} is not one of ECB's {sorted(slugs)} (fix: use its slug)")
    if spec is None or sub not in spec["subcategories"]:
        problems.append(f"{where}: {category}/{sub} is not an ECB subcategory (fix: use the released slugs)")
    else:
        variants = schema["grammars"][spec["grammar"]]["variants"]
        if variant not in variants and variant == "general" and "" in variants:
            variant = ""  # the released CSVs' India landscape quirk
        if variant not in variants:
            problems.append(f"{where}: variant {variant!r} is not one of {sorted(variants)} for {category}")
    if step is None:
        problems.append(f"{where}: step {fields['step']!r} is not step0..step5")
    values = {k: _likert(fields[k]) for k in ("image_quality", "cultural_representative")}
    problems += [f"{where}: {k} {fields[k]!r} is not an integer 1-5" for k, v in values.items() if v is None]
    flags = {k: _flag(fields[k]) for k in ("is_best", "is_worst")}
    problems += [f"{where}: {k} {fields[k]!r} is not true or false" for k, v in flags.items() if v is None]
    if len(problems) > before:
        return None
    k = int(step.group(1))
    pid = make_prompt_id("ecb", iso, category, sub, variant or None, *(("edit", k) if k else ()))
    return {"rater": str(fields["user_id"]), "model": str(fields["model"]), "prompt_id": pid, "country": iso,
            "category": category, "iq": values["image_quality"], "cr": values["cultural_representative"],
            "best": flags["is_best"], "worst": flags["is_worst"], "comment": fields.get("comments") or None}


def _split_uid(uid: str, where: str, problems: list[str]) -> dict:
    """The fields of an ``Image ID`` ``{model}_{country}_{category}_{sub}_{variant}::step{k}`` (slugs may hold
    underscores: they are matched against ECB's)."""
    schema = load_schema()
    countries = sorted((s["slug"] for s in schema["countries"].values()), key=len, reverse=True)
    group, _, step = uid.partition("::")
    match = re.fullmatch(rf"([^_]+)_({'|'.join(countries)})_({'|'.join(schema['categories'])})_(.+)", group)
    if match is None:
        problems.append(f"{where}: Image ID {uid!r} is not {{model}}_{{country}}_{{category}}_{{sub}}_{{variant}}::stepK")
        return {}
    model, country, category, rest = match.groups()
    for sub in sorted(schema["categories"][category]["subcategories"], key=len, reverse=True):
        if rest == sub or rest.startswith(sub + "_"):
            return {"model": model, "country": country, "category": category, "sub_category": sub,
                    "variant": rest[len(sub) + 1:], "step": step}
    problems.append(f"{where}: Image ID {uid!r} names no {category} subcategory of ECB")
    return {}


def _likert(value) -> int | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if number.is_integer() and 1 <= number <= 5 else None


def _flag(value) -> bool | None:
    if isinstance(value, bool):
        return value
    return {"true": True, "false": False, "1": True, "0": False}.get(str(value).strip().lower())


# ---------------------------------------------------------------------------------------------- analyses


def _step(prompt_id: str) -> int:
    match = re.search(r"/edit/(\d+)$", prompt_id)
    return int(match.group(1)) if match else 0


def _chain(prompt_id: str) -> str:
    return re.sub(r"/edit/\d+$", "", prompt_id)


def hqs(rows: pd.DataFrame) -> pd.DataFrame:
    """HQS per rated image: the item columns (``ratings_format.ITEM``), ``country``, ``category``, ``step``,
    ``chain``, ``human`` (mean over raters of (image_quality + cultural_representation) / 2) and ``n_raters``."""
    likert = rows[rows["question"].isin(["image_quality", "cultural_representation"])]
    per_rater = (likert.groupby(ITEM + ["rater"], dropna=False, sort=True)
                 .agg(country=("country", "first"), category=("category", "first"), score=("value", "mean"),
                      answers=("value", "size")).reset_index())
    per_rater = per_rater[per_rater["answers"] == 2]  # a rater who answered one of the two gives no HQS
    items = (per_rater.groupby(ITEM, dropna=False, sort=True)
             .agg(country=("country", "first"), category=("category", "first"), human=("score", "mean"),
                  n_raters=("rater", "nunique")).reset_index())
    return items.assign(step=items["prompt_id"].map(_step), chain=items["prompt_id"].map(_chain))


def hqs_by_step(items: pd.DataFrame, n_boot: int = 1000, seed: int = 0) -> list[dict]:
    """Mean HQS per model and step, overall and per country, with a percentile bootstrap CI over chains: the
    human side of the per-step curves (ECB Table 6: base -> step 5)."""
    out = []
    for by in ((), ("country",)):
        for key, part in items.groupby(["model", *by, "step"], dropna=False, sort=True):
            key = key if isinstance(key, tuple) else (key,)
            ci = bootstrap_ci({c: g["human"].to_numpy(float) for c, g in part.groupby("chain")}, n_boot=n_boot,
                              seed=seed)
            out.append({"model": key[0], "country": key[1] if by else None, "step": int(key[-1]), "hqs": ci.value,
                        "low": ci.low, "high": ci.high, "n_chains": int(part["chain"].nunique())})
    return out


def best_worst_agreement(rows: pd.DataFrame, scores: pd.DataFrame, metric: str = "ecb.culture.f1",
                         higher_is_better: bool = True, n_boot: int = 1000, seed: int = 0) -> list[dict]:
    """How often a metric's best and worst step of a chain match each rater's choice, beside the positional
    baseline (best = the first shown step, the base; worst = the last shown step), overall and per country.

    Per rater and chain, among the steps the rater saw: the metric's picks are the steps with its highest and
    lowest value (:func:`..families.ecb.core.extreme_steps`, ties kept; mirrored when lower is better), and a
    pick agrees with the rater by :func:`..families.ecb.core.pick_agreement` (1 / number of tied steps when the
    rater's choice is among them). Values are means over raters and chains with a bootstrap CI over chains.
    ``scores``: one submission's scores.parquet rows. Raters who chose no best (or worst) image are left out.
    """
    values = scores[(scores["metric"] == metric) & scores["flag"].isna()]
    by_image = dict(zip(values["prompt_id"], values["value"].astype(float)))
    choices = rows[rows["question"].isin(["best", "worst"])].assign(chain=lambda f: f["prompt_id"].map(_chain),
                                                                   step=lambda f: f["prompt_id"].map(_step))
    records = []
    for (chain, rater), part in choices.groupby(["chain", "rater"], sort=True):
        shown = sorted(set(part["step"]))
        if not all(f"{chain}/edit/{s}" in by_image or (s == 0 and chain in by_image) for s in shown):
            continue
        metric_values = {s: by_image[chain if s == 0 else f"{chain}/edit/{s}"] for s in shown}
        signed = metric_values if higher_is_better else {s: -v for s, v in metric_values.items()}
        best, worst = extreme_steps(signed)
        for kind, picks, position in (("best", best, shown[0]), ("worst", worst, shown[-1])):
            chosen = part[(part["question"] == kind) & (part["value"] == 1)]["step"].tolist()
            if len(chosen) == 1:
                records.append({"kind": kind, "chain": chain, "country": part["country"].iloc[0],
                                "metric": pick_agreement(picks, chosen[0]), "positional": float(chosen[0] == position)})
    frame = pd.DataFrame(records, columns=["kind", "chain", "country", "metric", "positional"])
    out = []
    for by in ((), ("country",)):
        for key, part in frame.groupby(["kind", *by], sort=True):
            key = key if isinstance(key, tuple) else (key,)
            entry = {"choice": key[0], "country": key[1] if by else None, "metric": metric,
                     "n_choices": len(part), "n_chains": int(part["chain"].nunique())}
            for side in ("metric", "positional"):
                ci = bootstrap_ci({c: g[side].to_numpy(float) for c, g in part.groupby("chain")}, n_boot=n_boot,
                                  seed=seed)
                entry[f"{side}_agreement"] = {"value": ci.value, "low": ci.low, "high": ci.high}
            out.append(entry)
    return out


def correlations(rows: pd.DataFrame, results: str | Path, n_boot: int = 1000, seed: int = 0) -> dict:
    """For each rated submission in ``results`` (``results/<submission>/``): Spearman's rho of every ECB chain
    metric with HQS per rated image (the per-chain ``FINAL_METRICS`` left out), per slice, with the trust map's
    diagnostic flag (``trust.trust_map``; rho is sign-normalised for lower-is-better metrics, raw for descriptive
    ones), the best / worst agreement of the culture metric beside the
    positional baseline, and HQS by step. Ratings without a submission are an error when ``results`` holds
    several submissions."""
    rows, folders = rated_results(rows, results)
    items = hqs(rows)
    out = {"hqs_by_step": hqs_by_step(items, n_boot, seed), "correlations": [], "best_worst": []}
    for sid in sorted(rows["submission"].unique()):
        scores, cards = usable_scores(folders[sid])
        mine = items[items["submission"] == sid]
        per_image = [m for m in scores["metric"].unique() if CHAIN_METRIC.match(m) and m not in FINAL_METRICS]
        for metric in sorted(per_image):
            pairs = pair_with_scores(mine, scores, metric)
            higher = cards[metric]["direction"] != "lower"  # a descriptive metric's rho keeps its sign
            for entry in trust_map(pairs, higher_is_better=higher, n_boot=n_boot, seed=seed):
                out["correlations"].append({"submission": sid, "metric": metric, "human": "hqs", **entry})
        if "ecb.culture.f1" in set(scores["metric"]):
            for entry in best_worst_agreement(rows[rows["submission"] == sid], scores, n_boot=n_boot, seed=seed):
                out["best_worst"].append({"submission": sid, **entry})
    return out


def import_ecb_ratings(path: str | Path, dataset: str | Path, out: str | Path, results: str | Path | None = None,
                       submissions: dict[str, str] | None = None, prompt_set: str = "ecb", n_boot: int = 1000,
                       seed: int = 0) -> dict:
    """Import a survey export against ``prompt_set`` of ``dataset`` and write, atomically, to ``out``:
    ``ratings.parquet`` (common format), ``agreement.json`` (Krippendorff's alpha and Fleiss' kappa per question
    and slice) and, with ``results`` (a results folder holding the rated submissions), ``validity.json``
    (:func:`correlations`); the JSON files carry a provenance block."""
    path, out = Path(path), Path(out)
    check_replaceable(out, kind="ratings")  # before the work
    rows = import_study(STUDY, path, prompts=read_prompt_set(dataset, prompt_set), submissions=submissions,
                        rated_in={"results": results})
    provenance = {"ratings": path.name, "ratings_sha256": file_sha256(path), "prompt_set": prompt_set,
                  "dataset_revision": local_revision(dataset), "submissions": submissions or {},
                  "settings": {"n_boot": n_boot, "seed": seed}, **code_provenance(("numpy", "pandas", "scipy"))}
    reports = {"agreement.json": {"agreement": agreement(rows), "provenance": provenance}}
    if results is not None:
        reports["validity.json"] = {**correlations(rows, results, n_boot, seed), "provenance": provenance}
    with atomic_dir(out, kind="ratings") as tmp:
        pq.write_table(to_table(rows), tmp / "ratings.parquet")
        for name, report in reports.items():
            (tmp / name).write_text(json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False,
                                               default=_plain) + "\n", encoding="utf-8")
    return {"out": str(out), "rows": len(rows), "raters": int(rows["rater"].nunique()),
            "images": int(rows["prompt_id"].nunique()), "files": sorted(["ratings.parquet", *reports])}


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
