"""CuRe's user-study ratings: import into the common format, and Spearman of the CuRe scorers with phi*_CuRe,
phi*_GT and phi*_PS on hand-computed values, through the function and `cultureboard ratings import --study cure`."""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cultureboard.builder.dataset import prompt_config, write_dataset
from cultureboard.builder.prompts_cure import build_ladder
from cultureboard.evaluators.engine.registry import metric_cards
from cultureboard.evaluators.results.ratings_format import validate_rows
from cultureboard.evaluators.results.studies import import_study
from cultureboard.evaluators.results.stats import spearman_ci
from cultureboard.evaluators.results.studies.cure import correlations, import_cure_ratings, table_of

from cultureboard.cli import main
from cultureboard.countries import load_countries
from cultureboard.dataset_folder import read_prompt_set
from cultureboard.errors import CultureboardError
from cultureboard.site.trust import load_trust

NAMES = ["banku", "jiaozi", "modak", "pierogi", "momo"]
COUNTRIES = ["GH", "CN", "IN", "PL", "NP"]
LADDERS = [f"cure-ladder/cure:food-{n}/{c}" for n, c in zip(NAMES, COUNTRIES)]
CURE = {"banku": (1, 1), "jiaozi": (2, 2), "modak": (3, 3), "pierogi": (5, 5), "momo": (4, 4)}  # two raters
GT = {"banku": 5, "jiaozi": 4, "modak": 3, "pierogi": 2, "momo": 1}  # rater r1 only
PS = {"banku": 1, "jiaozi": 1, "modak": 2, "pierogi": 2, "momo": 3}  # rater r1 only, with ties


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("cure-ratings")
    artifacts = [{"qid": f"cure:food-{n}", "name": n, "country": c, "concept": "food", "category": "food",
                  "subcategory": "dumpling", "source": "cure", "era": None} for n, c in zip(NAMES, COUNTRIES)]
    ladder = build_ladder(artifacts, load_countries(), images_per_prompt=1, category_images=1)
    dataset = write_dataset(root / "dataset", [prompt_config(ladder)], {})
    ratings = root / "ratings.csv"
    with open(ratings, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["rater", "rater_country", "artifact", "cure", "gt", "ps", "submission", "comment"])
        for name in NAMES:
            w.writerow(["r1", "", f"cure:food-{name}", CURE[name][0], GT[name], PS[name], "lab__a", f"about {name}"])
            w.writerow(["r2", "GH", name.upper(), CURE[name][1], "", "", "lab__a", ""])  # names match case-free
    results = root / "results"
    metrics = {"cure.ps": [0.1, 0.2, 0.3, 0.4, 0.5], "cure.gt": [0.5, 0.4, 0.3, 0.2, None],
               "cure.ps_delta.cr": [0.5, 0.4, 0.3, 0.2, 0.1],
               "cure.div_delta": [0.2] * 5, "cure.ita.cr.laion2b": [0.1, 0.2, 0.3, 0.4, 0.5],
               "cure.acceptance": [1.0] * 5}
    rows = [{"metric": m, "unit_id": lid, "value": v, "flag": None if v is not None else "no reference photographs"}
            for m, values in metrics.items() for lid, v in zip(LADDERS, values)]
    write_result(results / "lab__a", rows, "lab/a")
    return {"root": root, "dataset": dataset, "ratings": ratings, "results": results}


def write_result(folder, rows, model):
    """A results folder of one submission: its scores and a summary with the metrics' registered cards."""
    cards = metric_cards()
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / "scores.parquet")
    (folder / "summary.json").write_text(json.dumps({
        "provenance": {"submission": {"model": model}},
        "metrics_info": [cards[m].to_dict() for m in sorted({r["metric"] for r in rows})]}))


def test_import_gives_common_rows_per_artifact_and_question(world):
    prompts = [r for r in pq.read_table(next((world["dataset"] / "data" / "cure-ladder").glob("*.parquet"))).to_pylist()]
    rows = import_study("cure", world["ratings"], prompts=prompts)
    assert len(rows) == 5 * 2 + 5 + 5  # cure by both raters, gt and ps by r1
    banku = rows[(rows["item_id"] == LADDERS[0]) & (rows["rater"] == "r1")].set_index("question")
    assert banku.loc["cure", "prompt_id"] == "cure-ladder/cure-food-banku/gh/n"
    assert (banku.loc["cure", "country"], banku.loc["cure", "category"]) == ("GH", "food")
    assert banku.loc["gt", "value"] == 5 and banku.loc["ps", "scale"] == "likert:1..5"
    assert banku.loc["cure", "comment"] == "about banku" and pd.isna(banku.loc["gt", "comment"])
    r2 = rows[rows["rater"] == "r2"]
    assert set(r2["question"]) == {"cure"} and set(r2["rater_country"]) == {"GH"}
    # r2 is from the artifact's country only for banku
    assert r2.set_index("item_id")["in_country"].to_dict()[LADDERS[0]] is True
    assert len(validate_rows(rows)) == len(rows)


def test_spearman_tables_by_hand(world):
    rows = import_cure_ratings(world["ratings"], world["dataset"], world["root"] / "out-fn", results=world["results"],
                               n_boot=200)
    assert rows["artifacts"] == 5 and rows["raters"] == 2
    report = json.loads((world["root"] / "out-fn" / "correlations.json").read_text())
    by = {(r["metric"], r["gold"]): r for r in report["correlations"]}
    # phi*_CuRe means 1, 2, 3, 5, 4 against 0.1 .. 0.5: one adjacent swap, 1 - 6 * 2 / (5 * 24) = 0.9
    ps = by[("cure.ps", "phi*_CuRe")]
    assert (ps["table"], ps["scorer"], ps["n"], ps["model"]) == ("Table 1", "SigLIP 2", 5, "lab/a")
    assert ps["rho"] == pytest.approx(0.9) and ps["low"] <= ps["rho"] <= ps["high"]
    assert by[("cure.ps", "phi*_GT")]["rho"] == pytest.approx(-1.0)
    # phi*_PS 1, 1, 2, 2, 3 (ties take average ranks): 9 / sqrt(10 * 9)
    assert by[("cure.ps", "phi*_PS")]["rho"] == pytest.approx(9 / math.sqrt(90))
    assert (ps["sign"], ps["rho_as_printed"]) == (1, ps["rho"])
    # cure.ps_delta.cr is lower-is-better: rho is sign-normalised (agreeing = positive), the paper's sign kept aside
    delta = by[("cure.ps_delta.cr", "phi*_PS")]
    assert delta["rho"] == pytest.approx(9 / math.sqrt(90)) and delta["low"] <= delta["rho"] <= delta["high"]
    assert (delta["sign"], delta["rho_as_printed"]) == (-1, pytest.approx(-9 / math.sqrt(90)))
    # the flagged (no photographs) artifact is left out, not scored as zero: 0.5 .. 0.2 against 1, 2, 3, 5
    gt = by[("cure.gt", "phi*_CuRe")]
    assert gt["n"] == 4 and gt["rho"] == pytest.approx(-1.0)
    # a constant metric has no rho; the entanglement backbones are shown as Table 15; acceptance is no scorer
    assert by[("cure.div_delta", "phi*_CuRe")]["rho"] is None
    assert by[("cure.ita.cr.laion2b", "phi*_CuRe")]["table"] == "Table 15"
    assert not any(r["metric"] == "cure.acceptance" for r in report["correlations"])
    assert report["provenance"]["settings"] == {"n_boot": 200, "seed": 0}
    agreement = json.loads((world["root"] / "out-fn" / "agreement.json").read_text())["agreement"]
    [overall] = [a for a in agreement if a["question"] == "cure" and a["by"] == "all"]
    assert overall["alpha"] == pytest.approx(1.0) and overall["n_items"] == 5


def test_tables_follow_the_paper():
    assert table_of("cure.ps_delta.c.dinov2") == ("Table 1", "DINOv2")
    assert table_of("cure.gt.aimv2") == ("Table 1", "AIMV2")
    assert table_of("cure.ita.r") == ("Table 2", "SigLIP 2")
    assert table_of("cure.ita.cr.wit") == ("Table 15", "OpenCLIP OpenAI WIT")
    assert table_of("cure.div") == ("Table 3", "LPIPS AlexNet")
    assert table_of("cure.acceptance") is None


def test_cli_imports_cure_ratings(world):
    out = world["root"] / "out-cli"
    stdout = io.StringIO()
    with redirect_stdout(stdout):
        code = main(["ratings", "import", str(world["ratings"]), "--study", "cure", "--dataset", str(world["dataset"]),
                     "--prompt-set", "cure-ladder", "--out", str(out), "--results", str(world["results"])])
    assert code == 0 and "20 ratings of 5 artifacts by 2 raters" in stdout.getvalue()
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "agreement.json", "correlations.json", "ratings.parquet"]
    assert len(pq.read_table(out / "ratings.parquet")) == 20


def test_bad_rows_are_all_reported_and_nothing_is_written(world, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([
        json.dumps({"rater": "r1", "artifact": "cure:food-banku", "cure": 6}),
        json.dumps({"rater": "r1", "artifact": "no such dish", "cure": 3}),
        json.dumps({"rater": "r1", "artifact": "jiaozi", "cure": 2.5, "gt": True}),
        json.dumps({"rater": "r1", "artifact": "modak"}),
        json.dumps({"rater": "r1", "artifact": "pierogi", "cure": 3}),
        json.dumps({"rater": "r1", "artifact": "pierogi", "cure": 4}),
        json.dumps({"rater": "r1", "artifact": "momo", "cure": 4, "stars": 5}),
    ]) + "\n")
    with pytest.raises(CultureboardError) as info:
        import_cure_ratings(bad, world["dataset"], tmp_path / "out")
    message = str(info.value)
    for expected in (":1: cure 6: is not an integer from 1 to 5", ":2: artifact 'no such dish': is not an artifact",
                     ":3: cure 2.5:", ":3: gt True:", ":4: cure None: the row has no answer",
                     ":6: rater 'r1': rated this artifact twice (first at line 5)", ":7: unknown keys ['stars']"):
        assert expected in message, expected
    assert not (tmp_path / "out").exists()
    stderr = io.StringIO()
    with redirect_stderr(stderr):
        code = main(["ratings", "import", str(bad), "--study", "cure", "--dataset", str(world["dataset"]),
                     "--prompt-set", "cure-ladder", "--out", str(tmp_path / "out")])
    assert code != 0 and stderr.getvalue().startswith("error: ")


def test_ratings_of_an_unevaluated_submission_are_an_error(world, tmp_path):
    rows = import_study("cure", world["ratings"], prompts=[
        r for r in pq.read_table(next((world["dataset"] / "data" / "cure-ladder").glob("*.parquet"))).to_pylist()])
    with pytest.raises(CultureboardError, match="no scores of the rated submission"):
        correlations(rows.assign(submission="lab__b"), world["results"])


def test_trust_rows_judge_each_metric_against_the_gold_it_stands_for(world):
    rows = import_study("cure", world["ratings"], prompts=read_prompt_set(world["dataset"], "cure-ladder"))
    trust = correlations(rows, world["results"], n_boot=100)["trust"]
    # the cards' proxy_for: ps, gt and ps_delta stand for phi*_PS, ita for phi*_CuRe; div_delta for none
    assert {(r["metric"], r["human"]) for r in trust} == {
        ("cure.ps", "phi*_PS"), ("cure.gt", "phi*_PS"), ("cure.ps_delta.cr", "phi*_PS"),
        ("cure.ita.cr.laion2b", "phi*_CuRe")}
    delta = {(r["slice_type"], r["slice"]): r for r in trust if r["metric"] == "cure.ps_delta.cr"}
    # five artifacts from five countries: one item per country; only PL is in the Global North
    assert set(delta) == {("overall", "all"), *(("country", c) for c in COUNTRIES), ("region_group", "GN"),
                          ("region_group", "GS"), ("category", "food")}
    assert delta["overall", "all"]["rho"] == pytest.approx(9 / math.sqrt(90)) and delta["overall", "all"]["diagnostic"]
    assert (delta["region_group", "GN"]["n"], delta["region_group", "GS"]["n"]) == (1, 4) and delta["country", "GH"]["reason"] == "too few rated items (1 < 20)"


@pytest.fixture(scope="module")
def forty(tmp_path_factory):
    """40 artifacts (20 GH, 20 PL), one rater each; cure.ps_delta.cr (closer to zero is better) falls as phi*_PS
    rises, with noise: Spearman about -0.6 as CuRe prints it."""
    root = tmp_path_factory.mktemp("cure-forty")
    names = [f"dish{i}" for i in range(40)]
    countries = ["GH", "PL"] * 20
    artifacts = [{"qid": f"cure:food-{n}", "name": n, "country": c, "concept": "food", "category": "food",
                  "subcategory": "dumpling", "source": "cure", "era": None} for n, c in zip(names, countries)]
    ladder = build_ladder(artifacts, load_countries(), images_per_prompt=1, category_images=1)
    dataset = write_dataset(root / "dataset", [prompt_config(ladder)], {})
    rng = np.random.default_rng(3)
    ps = rng.integers(1, 6, 40)
    ratings = root / "ratings.csv"
    with open(ratings, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["rater", "artifact", "ps", "submission"])
        w.writerows(["r1", f"cure:food-{n}", int(v), "lab__a"] for n, v in zip(names, ps))
    delta = 3 - ps + rng.normal(0, 1.2, 40)  # both signs: the board ranks |delta| (closer to zero is better)
    rows = [{"metric": "cure.ps_delta.cr", "unit_id": f"cure-ladder/cure:food-{n}/{c}", "value": float(v), "flag": None}
            for n, c, v in zip(names, countries, delta)]
    write_result(root / "results" / "lab__a", rows, "lab/a")
    return {"root": root, "dataset": dataset, "ratings": ratings, "results": root / "results", "ps": ps, "delta": delta}


def test_a_target_metric_is_judged_by_its_distance_on_the_site(forty):
    out = forty["root"] / "out"
    import_cure_ratings(forty["ratings"], forty["dataset"], out, results=forty["results"], n_boot=300)
    [printed] = json.loads((out / "correlations.json").read_text())["correlations"]
    order = np.argsort([f"dish{i}" for i in range(40)])  # the pairs in item order, as the bootstrap draws them
    raw = spearman_ci(forty["delta"][order], forty["ps"][order], n_boot=300)
    assert printed["rho_as_printed"] == pytest.approx(raw.value) and raw.value < -0.4  # the paper's sign
    assert (printed["rho"], printed["low"], printed["high"]) == pytest.approx((-raw.value, -raw.high, -raw.low))
    shown = {(r["slice_type"], r["slice"]): r for r in load_trust([out])}
    overall = shown["overall", "all"]
    assert (overall["metric"], overall["human"], overall["n"]) == ("cure.ps_delta.cr", "phi*_PS", 40)
    # the trust map judges what the board ranks, the distance from zero: |delta| against phi*_PS, negated
    distance = spearman_ci(np.abs(forty["delta"][order]), forty["ps"][order], n_boot=300)
    assert (forty["delta"] < 0).any() and distance.value != pytest.approx(raw.value)
    assert overall["rho"] == pytest.approx(-distance.value) and overall["diagnostic"] is False
    assert {k for k in shown if k[0] == "country"} == {("country", "GH"), ("country", "PL")}
    assert shown["country", "GH"]["n"] == 20 and shown["region_group", "GS"]["n"] == 20


def test_a_leftover_work_folder_is_not_a_submission(forty, tmp_path):
    """A killed writer's hidden work folder (.<name>.tmp-<token>) beside the only submission is skipped, so
    ratings that name no submission are still that submission's."""
    results = tmp_path / "results"
    shutil.copytree(forty["results"] / "lab__a", results / "lab__a")
    shutil.copytree(forty["results"] / "lab__a", results / ".lab__b.tmp-abc123")
    rows = import_study("cure", forty["ratings"], prompts=read_prompt_set(forty["dataset"], "cure-ladder"))
    found = correlations(rows.assign(submission=None), results, n_boot=50)
    assert {r["submission"] for r in found["correlations"]} == {"lab__a"}
