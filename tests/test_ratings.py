"""Human ratings: consensus, CUBE's tables (3, 10/12, 11), the validity report, and bad files.

The hand-made set (submission ``a``), with every number below computed by hand:

=================  ============  =====================  ==========  ===========  =======
image              raters        relevance              consensus   faithful.    realism
=================  ============  =====================  ==========  ===========  =======
jp/sushi   (JP)    j1 j2 j3      yes yes maybe          yes         5 4 3 -> 4   4 4 2 -> 10/3
jp/torii   (JP)    j1 j2 j3      yes no maybe           no consensus 2 - 4 -> 3  1 - 3 -> 2
it/pizza#0 (IT)    i1 i2 i3      no no yes              no          - - 1 -> 1   - - 1 -> 1
it/pizza#1 (IT)    i1 i2 i3      yes yes yes            yes         5 5 5 -> 5   5 5 5 -> 5
=================  ============  =====================  ==========  ===========  =======
"""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pandas as pd
import pytest
from tiny_dataset import write_tiny_dataset

from cultureboard.dataset_folder import read_prompt_set
from cultureboard.errors import CultureboardError
from cultureboard.evaluators.engine.registry import metric_cards
from cultureboard.evaluators.results.ratings import (
    NO_CONSENSUS,
    TARGETS,
    VALIDITY,
    consensus,
    from_common,
    import_ratings,
    load_ratings,
    tables,
    to_common,
    validity,
)
from cultureboard.evaluators.results.ratings_format import COLUMNS, read_ratings, validate_rows
from cultureboard.evaluators.results.stats import krippendorff_alpha
from cultureboard.evaluators.results.studies import import_study
from cultureboard.site.trust import evidence, load_trust


SET = "tiny-cube"
SUSHI, TORII, PIZZA = f"{SET}/jp/sushi", f"{SET}/jp/torii", f"{SET}/it/pizza"
FIELDS = ["rater", "rater_country", "submission", "prompt_id", "sample_idx", "relevance", "faithfulness", "realism"]
RATINGS = [
    ("j1", "JP", "a", SUSHI, "", "yes", 5, 4), ("j2", "JP", "a", SUSHI, "", "yes", 4, 4),
    ("j3", "JP", "a", SUSHI, "", "maybe", 3, 2),
    ("j1", "JP", "a", TORII, "", "yes", 2, 1), ("j2", "JP", "a", TORII, "", "no", "", ""),
    ("j3", "JP", "a", TORII, "", "maybe", 4, 3),
    ("i1", "IT", "a", PIZZA, 0, "no", "", ""), ("i2", "IT", "a", PIZZA, 0, "No", "", ""),
    ("i3", "Italy", "a", PIZZA, 0, "yes", 1, 1),
    ("i1", "IT", "a", PIZZA, 1, "yes", 5, 5), ("i2", "IT", "a", PIZZA, 1, "yes", 5, 5),
    ("i3", "IT", "a", PIZZA, 1, "yes", 5, 5),
]


def _prompt(pid: str, country: str, category: str, n: int = 1) -> dict:
    return {"prompt_id": f"{SET}/{pid}", "prompt_set": SET, "text": pid, "country": country, "category": category,
            "kind": "t2i", "images_per_prompt": n, "seeds": list(range(n)), "seed_scheme": "consecutive"}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    prompts = [_prompt("jp/sushi", "JP", "cuisine"), _prompt("jp/torii", "JP", "landmarks"),
               _prompt("it/pizza", "IT", "cuisine", n=2)]
    return write_tiny_dataset(tmp_path_factory.mktemp("data") / "dataset", {SET: prompts})


@pytest.fixture(scope="module")
def prompts(dataset):
    return read_prompt_set(dataset, SET)


def write_csv(path, rows, fields=FIELDS):
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(fields)
        writer.writerows(rows)
    return path


def write_jsonl(path, rows, fields=FIELDS):
    lines = [json.dumps({k: v for k, v in zip(fields, row) if v != ""}) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def ratings(tmp_path, prompts):
    return load_ratings(write_csv(tmp_path / "ratings.csv", RATINGS), prompts)


def by_prompt(frame: pd.DataFrame) -> dict:
    return {(r.prompt_id, r.sample_idx): r for r in frame.itertuples()}


def test_consensus_labels_and_means(ratings):
    items = by_prompt(consensus(ratings))
    assert len(items) == 4
    assert [items[k].relevance for k in [(SUSHI, 0), (TORII, 0), (PIZZA, 0), (PIZZA, 1)]] == \
        ["yes", NO_CONSENSUS, "no", "yes"]
    assert items[SUSHI, 0].faithfulness == 4 and items[SUSHI, 0].realism == pytest.approx(10 / 3)
    assert items[TORII, 0].faithfulness == 3 and items[TORII, 0].n_faithfulness == 2 and items[TORII, 0].n_raters == 3
    assert items[PIZZA, 0].faithfulness == 1 and items[PIZZA, 0].n_realism == 1
    assert items[SUSHI, 0].relevance_score == pytest.approx(2.5 / 3)
    assert items[TORII, 0].relevance_score == pytest.approx(0.5)
    assert (items[SUSHI, 0].country, items[SUSHI, 0].category) == ("JP", "cuisine")


def test_two_raters_who_disagree_have_no_consensus(ratings):
    two = ratings[~((ratings["rater"] == "j1") & (ratings["prompt_id"] == SUSHI))]
    [sushi] = consensus(two).query("prompt_id == @SUSHI").itertuples()
    assert (sushi.relevance, sushi.n_raters) == (NO_CONSENSUS, 2)  # yes vs maybe: no strict majority


def test_table3_means_and_stds(ratings):
    rows = {(r["country"], r["concept"]): r for r in tables(ratings)["consensus_scores"]}
    assert set(rows) == {("JP", "cuisine"), ("JP", "landmarks"), ("IT", "cuisine")}
    it = rows["IT", "cuisine"]  # consensus faithfulness 1 and 5
    assert (it["faithfulness_mean"], it["faithfulness_std"], it["faithfulness_n"]) == (3, pytest.approx(math.sqrt(8)), 2)
    assert (it["realism_mean"], it["realism_std"]) == (3, pytest.approx(math.sqrt(8)))
    jp = rows["JP", "cuisine"]  # one image: the standard deviation is undefined
    assert (jp["faithfulness_mean"], jp["faithfulness_std"], jp["n_items"]) == (4, None, 1)
    assert rows["JP", "landmarks"]["realism_mean"] == 2 and jp["submission"] == "a"


def test_tables_10_and_12_relevance_rates(ratings):
    rows = {r["country"]: r for r in tables(ratings)["relevance_rates"]}
    assert rows["JP"] == {"submission": "a", "country": "JP", "n_items": 2,
                          "yes": 50.0, "maybe": 0.0, "no": 0.0, NO_CONSENSUS: 50.0}
    assert (rows["IT"]["yes"], rows["IT"]["no"], rows["IT"][NO_CONSENSUS]) == (50.0, 50.0, 0.0)


def test_table11_agreement_and_alpha(ratings):
    rows = {r["rater_country"]: r for r in tables(ratings)["agreement"]}
    assert rows["JP"]["majority_agreement"] == 50.0 and rows["IT"]["majority_agreement"] == 100.0
    assert rows["JP"]["n_raters"] == 3 and rows["JP"]["n_items"] == 2
    nan = np.nan
    assert rows["JP"]["faithfulness_alpha"] == krippendorff_alpha(np.array([[5, 4, 3], [2, nan, 4]]), "ordinal")
    assert rows["JP"]["realism_alpha"] == krippendorff_alpha(np.array([[4, 4, 2], [1, nan, 3]]), "ordinal")
    # Italy: the only image with two scores has all 5s, so alpha is 0/0: reported as null, not a number
    assert rows["IT"]["faithfulness_alpha"] is None and rows["IT"]["realism_alpha"] is None


def test_perfect_agreement_gives_alpha_one(tmp_path, prompts):
    rows = [(r, "JP", "a", pid, "", "yes", f, f) for pid, f in ((SUSHI, 5), (TORII, 2)) for r in ("j1", "j2", "j3")]
    [jp] = tables(load_ratings(write_csv(tmp_path / "r.csv", rows), prompts))["agreement"]
    assert jp["faithfulness_alpha"] == jp["realism_alpha"] == 1.0 and jp["majority_agreement"] == 100.0


def scores_frame(values: dict, metric: str = "clip") -> pd.DataFrame:
    return pd.DataFrame([{"prompt_id": p, "sample_idx": k, "metric": metric, "value": v} for (p, k), v in values.items()])


def test_validity_monotone_metric(ratings):
    faithfulness = {(SUSHI, 0): 0.4, (TORII, 0): 0.3, (PIZZA, 0): 0.1, (PIZZA, 1): 0.5}  # 4, 3, 1, 5 exactly x10
    scores = pd.concat([scores_frame(faithfulness), scores_frame({k: -v for k, v in faithfulness.items()}, "neg")])
    report = validity(consensus(ratings), scores)
    rows = {(r["metric"], r["target"], r["country"]): r for r in report["correlations"]}
    assert report["n_items"] == 4 and report["n_items_without_scores"] == 0
    assert rows["clip", "faithfulness", None]["spearman"] == pytest.approx(1.0)
    assert rows["clip", "faithfulness", None]["pearson"] == pytest.approx(1.0)
    assert rows["neg", "faithfulness", None]["spearman"] == pytest.approx(-1.0)
    assert rows["clip", "faithfulness", None]["n"] == 4
    # relevance scores 5/6, 1/2, 1/3, 1 rank the images as the metric does
    assert rows["clip", "relevance", None]["spearman"] == pytest.approx(1.0)
    jp = rows["clip", "faithfulness", "JP"]  # two images: too few for a correlation
    assert (jp["n"], jp["spearman"], jp["pearson"]) == (2, None, None)


def test_validity_judges_each_metric_only_against_its_own_question(ratings, tmp_path):
    """Trust-map rows pair each metric with the CUBE question it stands for (VALIDITY), with a CI; every slice of
    4 items is a diagnostic (too few items); the other pairs stay in ``correlations`` only, so the site's evidence
    for a metric is its own question's row."""
    faithfulness = {(SUSHI, 0): 0.4, (TORII, 0): 0.3, (PIZZA, 0): 0.1, (PIZZA, 1): 0.5}
    metrics = ["cube.faithfulness", "cube.cultural_relevance", "cube.country_top1", "cube.quality", "cube.retrieval",
               "cultdiff.lpips", "clip"]  # retrieval and lpips stand for no CUBE question; clip is unregistered
    scores = pd.concat([scores_frame(faithfulness, m) for m in metrics])
    report = validity(consensus(ratings), scores, n_boot=50)
    rows = {(r["metric"], r["human"], r["slice_type"], r["slice"]): r for r in report["trust"]}
    assert {(m, h) for m, h, *_ in rows} == {("cube.faithfulness", "faithfulness"), ("cube.quality", "realism"),
                                             ("cube.cultural_relevance", "relevance"), ("cube.country_top1", "relevance")}
    # ranked ones enter as "higher is better"; descriptive ones (faithfulness, top-1) as they are: here the same
    assert all(metric_cards()[m].direction in ("higher", "none") for names in VALIDITY.values() for m in names)
    overall = rows["cube.faithfulness", "faithfulness", "overall", "all"]
    assert overall["rho"] == pytest.approx(1.0) and overall["n"] == 4 and overall["rho_low"] <= 1.0
    assert overall["diagnostic"] and "too few rated items" in overall["reason"]
    assert {s for (m, h, t, s) in rows if t == "country"} == {"JP", "IT"}
    assert {(r["metric"], r["target"]) for r in report["correlations"]} == {(m, t) for m in metrics for t in TARGETS}
    assert report["trust_settings"] == {"n_boot": 50, "seed": 0}
    (tmp_path / "validity.json").write_text(json.dumps(report))
    shown = evidence(load_trust([tmp_path]))
    assert shown["cube.cultural_relevance", "overall", "all"]["human"] == "relevance"
    assert shown["cube.faithfulness", "country", "JP"]["human"] == "faithfulness"


def test_validity_joins_on_submission_when_both_name_it(ratings):
    scores = scores_frame({(SUSHI, 0): 1.0})
    two = pd.concat([ratings, ratings.assign(submission="b")])
    with pytest.raises(CultureboardError, match="cannot tell the ratings' submissions apart"):
        validity(consensus(two), scores)
    assert validity(consensus(two), scores.assign(submission="b"))["n_items"] == 1
    assert validity(consensus(ratings.assign(submission=None)), scores.assign(submission="a"))["n_items"] == 1
    with pytest.raises(CultureboardError, match="more than one value for an image and metric"):
        validity(consensus(ratings.assign(submission=None)), pd.concat([scores.assign(submission="a"),
                                                                        scores.assign(submission="b")]))


def test_csv_and_jsonl_give_the_same_ratings(tmp_path, prompts):
    from_csv = load_ratings(write_csv(tmp_path / "r.csv", RATINGS), prompts)
    from_jsonl = load_ratings(write_jsonl(tmp_path / "r.jsonl", RATINGS), prompts)
    pd.testing.assert_frame_equal(from_csv.drop(columns="line"), from_jsonl.drop(columns="line"))
    assert from_jsonl["line"].tolist() == list(range(1, 13)) and from_csv["line"].tolist() == list(range(2, 14))
    assert set(from_csv["rater_country"]) == {"JP", "IT"} and set(from_csv["relevance"]) == {"yes", "no", "maybe"}


BAD = [
    ("j1", "JP", "a", SUSHI, "", "yes!", 5, 4),  # line 2: unknown relevance
    ("j2", "JP", "a", SUSHI, "", "yes", 6, 4),  # line 3: Likert out of range
    ("", "JP", "a", SUSHI, "", "yes", 4, 4),  # line 4: missing rater
    ("j3", "JP", "a", "", "", "yes", 4, 4),  # line 5: no image, no prompt id
    ("j4", "JP", "a", SUSHI, "", "yes", 4, 4),
    ("j4", "JP", "a", SUSHI, 0, "yes", 3, 4),  # line 7: duplicate of line 6 (sample_idx 0 is implied)
    ("j5", "Atlantis", "a", SUSHI, "", "yes", 3, 3.5),  # line 8: unknown country, realism not an integer
    ("j6", "JP", "a", f"{SET}/jp/ramen", "", "yes", 3, 3),  # line 9: unknown prompt
    ("i1", "IT", "a", PIZZA, "", "yes", 3, 3),  # line 10: pizza has 2 images: which one?
]


def test_bad_file_reports_every_problem_at_once(tmp_path, prompts):
    with pytest.raises(CultureboardError) as err:
        load_ratings(write_csv(tmp_path / "bad.csv", BAD), prompts)
    problem = err.value.problem
    assert problem.startswith("9 problem(s)")
    for expected in ["bad.csv:2: relevance 'yes!': is not yes, maybe or no",
                     "bad.csv:3: faithfulness '6': is not an integer from 1 to 5",
                     "bad.csv:4: rater '': is missing",
                     "bad.csv:5: image None: is missing, and so is prompt_id",
                     "bad.csv:7: rater 'j4': rated this image twice (first at line 6)",
                     "bad.csv:8: rater_country 'Atlantis': is missing or not in the country table",
                     "bad.csv:8: realism '3.5': is not an integer from 1 to 5",
                     "bad.csv:9: prompt_id 'tiny-cube/jp/ramen': is not in the prompt set",
                     "bad.csv:10: sample_idx None: does not pick one of the prompt's 2 images"]:
        assert expected in problem
    assert "(fix: " in problem and err.value.fix


def test_bad_jsonl_lines(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"rater": "j1", "rater_country": "JP", "prompt_id": "x", "relevance": "yes", "faithfulness": true}\n'
                    "not json\n[1, 2]\n"
                    '{"rater": "j1", "rater_country": "JP", "prompt_id": "x", "relevance": "no", "faithfullness": 3}\n')
    with pytest.raises(CultureboardError) as err:
        load_ratings(path)
    assert err.value.problem.startswith("4 problem(s)")
    for expected in ["bad.jsonl:1: faithfulness True", "bad.jsonl:2: is not valid JSON", "bad.jsonl:3: is not a JSON object",
                     "bad.jsonl:4: unknown keys ['faithfullness']"]:
        assert expected in err.value.problem


def test_bad_csv_header(tmp_path):
    path = write_csv(tmp_path / "r.csv", [], ["rater", "relevance", "faithfullness"])
    with pytest.raises(CultureboardError, match=r"missing columns \['rater_country', 'image or prompt_id'\], "
                                                r"unknown columns \['faithfullness'\]"):
        load_ratings(path)


def test_bad_file_writes_nothing(tmp_path, dataset):
    out = tmp_path / "out"
    with pytest.raises(CultureboardError):
        import_ratings(write_csv(tmp_path / "bad.csv", BAD), dataset, SET, out)
    # nothing is left beside the input but, possibly, the writer's lock file (cultureboard.atomic may keep it)
    assert not out.exists() and {p.name for p in tmp_path.iterdir()} - {".out.lock"} == {"bad.csv"}


def test_images_by_file_name_or_sha256(tmp_path, prompts):
    sub = tmp_path / "submissions" / "a"
    sub.mkdir(parents=True)
    meta = [{"file_name": f"images/{k}.png", "prompt_id": PIZZA, "sample_idx": k, "seed": k, "sha256": f"{k}" * 64}
            for k in (0, 1)]
    (sub / "metadata.jsonl").write_text("".join(json.dumps(m) + "\n" for m in meta))
    fields = ["rater", "rater_country", "submission", "image", "prompt_id", "sample_idx", "relevance"]
    rows = [("i1", "IT", "a", "images/0.png", "", "", "yes"), ("i2", "IT", "a", "0" * 64, "", "", "yes"),
            ("i3", "IT", "a", "", PIZZA, 0, "no")]
    ratings = load_ratings(write_csv(tmp_path / "r.csv", rows, fields), prompts, tmp_path / "submissions")
    [item] = consensus(ratings).itertuples()  # three references, one image
    assert (item.prompt_id, item.sample_idx, item.image, item.n_raters, item.relevance) == \
        (PIZZA, 0, "images/0.png", 3, "yes")
    # the same image rated twice by one rater through two references is a duplicate
    rows += [("i1", "IT", "a", "", PIZZA, 0, "yes"), ("i1", "IT", "b", "images/0.png", "", "", "yes")]
    with pytest.raises(CultureboardError) as err:
        load_ratings(write_csv(tmp_path / "r.csv", rows, fields), prompts, tmp_path / "submissions")
    assert "r.csv:5: rater 'i1': rated this image twice (first at line 2)" in err.value.problem
    assert "r.csv:6: submission 'b': has no" in err.value.problem
    # the scores of one submission may name images by file_name
    scores = pd.DataFrame({"file_name": ["images/0.png"], "metric": ["clip"], "value": [0.3]})
    assert validity(consensus(ratings), scores)["n_items"] == 1


def test_import_ratings_writes_everything(tmp_path, dataset):
    scores = tmp_path / "scores.parquet"
    scores_frame({(SUSHI, 0): 0.4, (TORII, 0): 0.3, (PIZZA, 0): 0.1}).to_parquet(scores)
    out = tmp_path / "out"
    summary = import_ratings(write_csv(tmp_path / "r.csv", RATINGS), dataset, SET, out, scores=scores)
    assert summary["ratings"] == 12 and summary["raters"] == 6 and summary["items"] == 4
    assert summary["rater_countries"] == ["IT", "JP"]
    assert summary["files"] == ["agreement.json", "consensus.parquet", "ratings.parquet", "tables.json", "validity.json"]
    # ratings.parquet is in the common format: 12 relevance answers + 9 faithfulness + 9 realism scores
    common = read_ratings(out / "ratings.parquet")
    assert summary["rows"] == len(common) == 30 and set(common["study"]) == {"cube"}
    assert common.groupby("question").size().to_dict() == {"faithfulness": 9, "realism": 9, "relevance": 12}
    assert common["in_country"].all()  # every rater rated their own country's prompts
    assert len(pd.read_parquet(out / "consensus.parquet")) == 4
    agreement = {(r["question"], r["by"], r["country"]): r for r in json.loads((out / "agreement.json").read_text())["agreement"]}
    jp = agreement["faithfulness", "country", "JP"]
    assert jp["alpha"] == krippendorff_alpha(np.array([[5, 4, 3], [2, np.nan, 4]]), "ordinal")
    # Fleiss by hand: sushi (5, 4, 3) and torii (2, 4) have no agreeing pair: P-bar = 0; rates of the 5 ratings
    # 2: 1, 3: 1, 4: 2, 5: 1 -> P-bar_e = 7/25 -> kappa = -(7/25) / (18/25) = -7/18
    assert jp["kappa"] == pytest.approx(-7 / 18)
    # relevance over all four images: P_i = 1/3, 0, 1/3, 1 -> P-bar = 5/12; no 3, maybe 2, yes 7 of 12 -> 62/144
    assert agreement["relevance", "all", None]["kappa"] == pytest.approx((5 / 12 - 62 / 144) / (1 - 62 / 144))
    report = json.loads((out / "tables.json").read_text())
    assert set(report) == {"consensus_scores", "relevance_rates", "agreement", "provenance"}
    assert report["provenance"]["prompt_set"] == SET and report["provenance"]["dataset_revision"].startswith("sha256:")
    validity_report = json.loads((out / "validity.json").read_text())
    assert validity_report["n_items"] == 3 and validity_report["n_items_without_scores"] == 1


def test_cube_import_goes_through_the_common_format(tmp_path, prompts):
    path = write_csv(tmp_path / "r.csv", RATINGS + [("j4", "JP", "a", SUSHI, "", "no", "", "")])
    wide = load_ratings(path, prompts)
    rows = import_study("cube", path, prompts=prompts)
    pd.testing.assert_frame_equal(rows, validate_rows(to_common(wide)))
    assert list(rows.columns) == list(COLUMNS)
    sushi_j1 = rows[(rows["rater"] == "j1") & (rows["prompt_id"] == SUSHI)].set_index("question")
    assert sushi_j1["value"].to_dict() == {"relevance": 1.0, "faithfulness": 5.0, "realism": 4.0}
    assert sushi_j1.loc["relevance", "scale"] == "ordinal:no=0,maybe=0.5,yes=1"
    assert sushi_j1.loc["faithfulness", "scale"] == "likert:1..5" and sushi_j1.loc["relevance", "country"] == "JP"
    assert rows[rows["rater"] == "j4"]["question"].tolist() == ["relevance"]  # not asked Q2 and Q3
    back = from_common(rows)
    columns = ["rater", "rater_country", "submission", "image", "prompt_id", "sample_idx", "relevance", "faithfulness",
               "realism", "comment", "country", "category"]
    order = ["rater", "prompt_id", "sample_idx"]
    pd.testing.assert_frame_equal(back[columns].sort_values(order).reset_index(drop=True),
                                  wide[columns].sort_values(order).reset_index(drop=True))
    pd.testing.assert_frame_equal(consensus(back), consensus(wide))


def test_from_common_rejects_other_questions_and_missing_relevance(prompts, tmp_path):
    rows = import_study("cube", write_csv(tmp_path / "r.csv", RATINGS), prompts=prompts)
    with pytest.raises(CultureboardError, match="'overall': is not one of CUBE's questions"):
        from_common(rows.assign(question=rows["question"].replace("realism", "overall")))
    with pytest.raises(CultureboardError, match="gave no relevance answer for 1 image"):
        from_common(rows.drop(index=rows.index[0]))


def test_ratings_of_prompts_without_a_country_are_one_line_through_the_cli(tmp_path, capsys):
    """CUBE's tables are per country: ratings of a prompt set whose prompts name none (a global diversity prompt)
    are refused in one line naming the file, not a traceback, and nothing is written."""
    from cultureboard.cli import main

    prompts = [{**_prompt(pid, "JP", "cuisine"), "country": None} for pid in ("jp/sushi", "jp/torii")]
    prompts.append({**_prompt("it/pizza", "IT", "cuisine", n=2), "country": None})
    dataset = write_tiny_dataset(tmp_path / "dataset", {SET: prompts})
    ratings = write_csv(tmp_path / "r.csv", RATINGS)
    code = main(["import", "ratings", str(ratings), "--study", "cube", "--dataset", str(dataset), "--prompt-set", SET,
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code != 0 and "r.csv: rates images of prompt set 'tiny-cube', whose prompts name no country" in err, err
    assert "Traceback" not in err and not (tmp_path / "out").exists()
