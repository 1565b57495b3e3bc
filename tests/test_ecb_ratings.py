"""ECB's expert survey into the common ratings format: both export layouts, slugs to prompt ids (korea,
united_states, the India landscape quirk), every bad row at once; HQS, the best / worst agreement of a metric
beside the positional baseline and the metric-HQS correlations on hand-made results."""

from __future__ import annotations

import csv
import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cultureboard.builder.prompts_ecb import build_ecb
from cultureboard.evaluators.results.ratings_format import validate_rows
from cultureboard.evaluators.results.studies import ecb, import_study

from cultureboard.countries import load_countries
from cultureboard.errors import CultureboardError

PROMPTS = build_ecb([], load_countries()).rows
CHAIN = "ecb/kr/food/main-dish/traditional"


def response(user, step, iq, cr, best=False, worst=False, country="korea", category="food", sub="main_dish",
             variant="traditional", model="sd35"):
    return {"uid": f"{model}_{country}_{category}_{sub}_{variant}::step{step}", "user_id": user, "model": model,
            "country": country, "category": category, "sub_category": sub, "variant": variant, "step": f"step{step}",
            "image_quality": iq, "cultural_representative": cr, "is_best": best, "is_worst": worst,
            "comments": "", "completion_time_seconds": 40, "prompt": "...", "image_url": "https://example.org/x.png"}


def survey() -> list[dict]:
    """Two raters of Korea's traditional main dish chain (steps 0, 1, 3, 5) and one of a US house chain."""
    return [
        response("a", 0, 4, 2, best=True), response("a", 1, 3, 3), response("a", 3, 2, 2, worst=True),
        response("a", 5, 2, 1),
        response("b", 0, 5, 5), response("b", 1, 4, 4, best=True), response("b", 3, 3, 2), response("b", 5, 1, 1, worst=True),
        *(response("c", s, 3, 3, best=s == 0, worst=s == 5, country="united_states", category="architecture",
                   sub="house", variant="modern") for s in (0, 1, 3, 5)),
    ]


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_step_responses_become_common_rows(tmp_path):
    rows = import_study("ecb", write_jsonl(tmp_path / "s.jsonl", survey()), prompts=PROMPTS,
                        submissions={"sd35": "lab__sd35"})
    assert len(rows) == 12 * 4
    step3 = rows[(rows.prompt_id == f"{CHAIN}/edit/3") & (rows.rater == "a")].set_index("question")
    assert step3.loc["image_quality", "value"] == 2 and step3.loc["worst", "value"] == 1
    assert set(step3.scale) == {"likert:1..5", "nominal:no=0,yes=1"}
    assert (step3.country == "KR").all() and (step3.rater_country == "KR").all() and step3.in_country.all()
    assert set(rows.submission) == {"lab__sd35"} and set(rows.model) == {"sd35"}
    assert "ecb/us/architecture/house/modern/edit/5" in set(rows.prompt_id)


def test_admin_csv_export_is_read_by_its_image_ids(tmp_path):
    path = tmp_path / "admin.csv"
    header = list(ecb.ADMIN) + ["User Name", "User Email", "Timestamp", "Completion Time (seconds)"]
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, header)
        writer.writeheader()
        writer.writerow({"User ID": "u1", "User Name": "Jo", "User Email": "jo@example.org", "Country": "india",
                         "Model": "flux", "Image ID": "flux_india_landscape_city_general::step0", "Step": "step0",
                         "Image Quality (1-5)": 4, "Cultural Representation (1-5)": 5, "Best Image": "step0",
                         "Worst Image": "", "Response Type": "step"})
        writer.writerow({"User ID": "u1", "Country": "united_states", "Model": "flux",
                         "Image ID": "flux_united_states_food_staple_food_modern::step3", "Step": "step3",
                         "Image Quality (1-5)": 2, "Cultural Representation (1-5)": 1, "Best Image": "",
                         "Worst Image": "step3", "Response Type": "step"})
        writer.writerow({"User ID": "u1", "Response Type": "attribution", "Image ID": "x"})
    rows = import_study("ecb", path, prompts=PROMPTS)
    by = rows.set_index(["prompt_id", "question"])["value"]
    assert by[("ecb/in/landscape/city", "best")] == 1 and by[("ecb/in/landscape/city", "cultural_representation")] == 5
    assert by[("ecb/us/food/staple-food/modern/edit/3", "worst")] == 1
    assert "Jo" not in rows.to_string() and "jo@example.org" not in rows.to_string()


def test_every_bad_row_is_reported_at_once(tmp_path):
    bad = [response("a", 0, 6, 2), response("a", 1, 3, 3, country="south_korea"), response("a", 7, 3, 3),
           response("a", 0, 3, 3, sub="noodles"), {**response("a", 3, 3, 3), "is_best": "maybe"}]
    with pytest.raises(CultureboardError) as error:
        import_study("ecb", write_jsonl(tmp_path / "bad.jsonl", bad), prompts=PROMPTS)
    message = str(error.value)
    assert "5 problem(s)" in message
    for needle in ("image_quality 6", "'south_korea'", "step 'step7'", "food/noodles", "is_best 'maybe'"):
        assert needle in message


def test_hqs_is_the_raters_mean_of_quality_and_representation(tmp_path):
    rows = import_study("ecb", write_jsonl(tmp_path / "s.jsonl", survey()), prompts=PROMPTS)
    items = ecb.hqs(rows).set_index("prompt_id")
    assert items.loc[CHAIN, "human"] == pytest.approx(((4 + 2) / 2 + (5 + 5) / 2) / 2)  # raters a and b
    assert items.loc[f"{CHAIN}/edit/5", "human"] == pytest.approx(((2 + 1) / 2 + (1 + 1) / 2) / 2)
    assert items.loc[CHAIN, "n_raters"] == 2 and items.loc[f"{CHAIN}/edit/3", "step"] == 3
    steps = {(e["country"], e["step"]): e for e in ecb.hqs_by_step(ecb.hqs(rows), n_boot=50)}
    assert steps[("KR", 0)]["hqs"] == pytest.approx(4.0) and steps[(None, 0)]["hqs"] == pytest.approx((4.0 + 3.0) / 2)


def scores_frame(values: dict[str, float], metric="ecb.culture.f1") -> pd.DataFrame:
    prompts = {p["prompt_id"]: p for p in PROMPTS}
    return pd.DataFrame([{"metric": metric, "unit_id": ecb._chain(pid), "prompt_id": pid, "sample_idx": 0,
                          "sha256": None, "value": v, "flag": None, "detail": "{}", "file_name": None,
                          "country": prompts[pid]["country"], "region_group": prompts[pid]["region_group"],
                          "category": prompts[pid]["category"]} for pid, v in values.items()])


def test_best_worst_agreement_beside_the_positional_baseline(tmp_path):
    rows = import_study("ecb", write_jsonl(tmp_path / "s.jsonl", survey()), prompts=PROMPTS)
    us = "ecb/us/architecture/house/modern"
    f1 = {CHAIN: 0.8, f"{CHAIN}/edit/1": 0.5, f"{CHAIN}/edit/2": 0.0, f"{CHAIN}/edit/3": 0.5, f"{CHAIN}/edit/4": 0.9,
          f"{CHAIN}/edit/5": 0.2, us: 0.5, f"{us}/edit/1": 0.5, f"{us}/edit/3": 0.1, f"{us}/edit/5": 0.3}
    out = {(e["choice"], e["country"]): e for e in ecb.best_worst_agreement(rows, scores_frame(f1), n_boot=50)}
    # Korea, among steps 0 1 3 5 (steps 2 and 4 were not shown): metric best 0, worst 5.
    # a: best 0 (metric 1, positional 1), worst 3 (metric 0, positional 0);
    # b: best 1 (metric 0, positional 0), worst 5 (metric 1, positional 1).
    # US: metric best {0, 1} (tie), worst 3; c: best 0 (metric 1/2, positional 1), worst 5 (metric 0, positional 1).
    assert out[("best", "KR")]["metric_agreement"]["value"] == pytest.approx(0.5)
    assert out[("best", "US")]["metric_agreement"]["value"] == pytest.approx(0.5)
    assert out[("worst", "US")]["metric_agreement"]["value"] == 0.0
    assert out[("worst", "US")]["positional_agreement"]["value"] == 1.0
    assert out[("best", None)]["metric_agreement"]["value"] == pytest.approx((0.5 + 0.5) / 2)  # mean over chains
    assert out[("best", None)]["positional_agreement"]["value"] == pytest.approx((0.5 + 1.0) / 2)
    assert out[("worst", None)]["n_choices"] == 3 and out[("worst", None)]["n_chains"] == 2
    lower = ecb.best_worst_agreement(rows, scores_frame({k: -v for k, v in f1.items()}), higher_is_better=False,
                                     n_boot=50)
    assert [e["metric_agreement"] for e in lower] == [e["metric_agreement"] for e in out.values()]


def write_results(folder, sid: str, scores: pd.DataFrame, directions: dict[str, str]):
    (folder / sid).mkdir(parents=True)
    pq.write_table(pa.Table.from_pandas(scores, preserve_index=False), folder / sid / "scores.parquet")
    info = [{"name": m, "direction": d} for m, d in directions.items()]
    (folder / sid / "summary.json").write_text(json.dumps({"metrics_info": info}))


def test_metric_hqs_correlations_and_the_written_report(tmp_path):
    records = []
    rng = np.random.default_rng(0)
    for sub in ("house", "landmark"):
        for variant in ("traditional", "modern", "general"):
            for user in ("a", "b"):
                for step in (0, 1, 3, 5):
                    iq, cr = (int(v) for v in rng.integers(1, 6, 2))
                    records.append(response(user, step, iq, cr, best=step == 0, worst=step == 5, country="nigeria",
                                            category="architecture", sub=sub, variant=variant))
    rows = import_study("ecb", write_jsonl(tmp_path / "s.jsonl", records), prompts=PROMPTS,
                        submissions={"sd35": "lab__sd35"})
    items = ecb.hqs(rows)
    hqs = dict(zip(items.prompt_id, items.human))
    results = tmp_path / "results"
    scores = pd.concat([scores_frame({p: 3 * h + 1 for p, h in hqs.items()}, "ecb.aesthetic"),
                        scores_frame({p: -h for p, h in hqs.items()}, "ecb.dreamsim.base"),
                        scores_frame({p: -h for p, h in hqs.items()}, "ecb.dreamsim.prev"),
                        scores_frame({p: h / 5 for p, h in hqs.items()}, "ecb.culture.f1")])
    write_results(results, "lab__sd35", scores, {"ecb.aesthetic": "higher", "ecb.dreamsim.base": "lower",
                                                 "ecb.dreamsim.prev": "none", "ecb.culture.f1": "higher"})
    report = ecb.correlations(rows, results, n_boot=100)
    overall = {e["metric"]: e for e in report["correlations"] if e["slice_type"] == "overall"}
    assert overall["ecb.aesthetic"]["rho"] == pytest.approx(1.0) and overall["ecb.aesthetic"]["n"] == 24
    assert overall["ecb.dreamsim.base"]["rho"] == pytest.approx(1.0), "sign-normalised: lower is better"
    assert overall["ecb.dreamsim.prev"]["rho"] == pytest.approx(-1.0), "descriptive: the raw sign"
    assert report["best_worst"] and report["hqs_by_step"]
    dataset = tmp_path / "dataset"
    from cultureboard.builder.dataset import prompt_config, write_dataset
    from cultureboard.builder.prompt_sets import PromptSet

    write_dataset(dataset, [prompt_config(PromptSet("ecb", "1.0", "ecb", "the ecb set", PROMPTS))], {})
    done = ecb.import_ecb_ratings(tmp_path / "s.jsonl", dataset, tmp_path / "out", results=results,
                                  submissions={"sd35": "lab__sd35"}, n_boot=50)
    assert done["files"] == ["agreement.json", "ratings.parquet", "validity.json"] and done["raters"] == 2
    agreement = json.loads((tmp_path / "out" / "agreement.json").read_text())["agreement"]
    assert {a["question"] for a in agreement} == {"best", "cultural_representation", "image_quality", "worst"}
    validate_rows(pq.read_table(tmp_path / "out" / "ratings.parquet").to_pandas())
    validity = json.loads((tmp_path / "out" / "validity.json").read_text())
    assert validity["provenance"]["submissions"] == {"sd35": "lab__sd35"}


def test_a_file_that_is_not_utf8_is_one_line(tmp_path, capsys):
    """An Excel-saved (cp1252) export: `import ratings --study ecb` ends in one error line, no traceback."""
    from cultureboard.builder.dataset import prompt_config, write_dataset
    from cultureboard.cli import main

    dataset = write_dataset(tmp_path / "dataset", [prompt_config(build_ecb([], load_countries()))], {})
    path = tmp_path / "survey.csv"
    path.write_bytes((",".join(ecb.FIELDS) + "\nu1,sd35,korea,food,main_dish,traditional,step0,4,5,true,false,caf\xe9\n")
                     .encode("cp1252"))
    code = main(["import", "ratings", str(path), "--study", "ecb", "--dataset", str(dataset), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: {path}: cannot be read (UnicodeDecodeError) (fix: save it as UTF-8 text)")
    assert not (tmp_path / "o").exists()


def test_csv_layout_problems(tmp_path):
    short = tmp_path / "short.csv"
    short.write_text("user_id,model,step\nu1,sd35,step0\n", encoding="utf-8")
    with pytest.raises(CultureboardError, match=r"lacks the columns \['country', 'category'"):
        import_study("ecb", short, prompts=PROMPTS)
    extra = tmp_path / "extra.csv"
    extra.write_text(",".join(ecb.FIELDS) + "\nu1,sd35,korea,food,main_dish,traditional,step0,4,5,true,false,x\n",
                     encoding="utf-8")
    with pytest.raises(CultureboardError, match="extra.csv:2: has more cells than the header"):
        import_study("ecb", extra, prompts=PROMPTS)
    (tmp_path / "empty.csv").write_text(",".join(ecb.FIELDS) + "\n", encoding="utf-8")
    with pytest.raises(CultureboardError, match="has no ratings"):
        import_study("ecb", tmp_path / "empty.csv", prompts=PROMPTS)
