"""CULTIVate's human ratings (GT-FAITH / GT-HAL / GT-EXAG / GT-REALISM) into the common ratings format, with every
problem of a file reported at once."""

from __future__ import annotations

import json

import pytest

from cultureboard.errors import CultureboardError
from cultureboard.evaluators.results.studies import get_study, import_study

PROMPTS = [{"prompt_id": "cultivate/ir/eating/eating", "country": "IR", "category": "eating"},
           {"prompt_id": "cultivate/fr/greeting/cheek-kiss", "country": "FR", "category": "greeting"}]
SHA = "ab" * 32


def test_a_wide_file_becomes_one_row_per_answer(tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text(
        "rater,rater_country,prompt_id,sample_idx,model,gt_faith,gt_hal,gt_exag,gt_realism,comment\n"
        "r1,IR,cultivate/ir/eating/eating,0,flux,4,2,1,5,sofreh is right\n"
        "r2,IR,cultivate/ir/eating/eating,0,flux,3,,2,,\n"
        "r1,FR,cultivate/fr/greeting/cheek-kiss,1,flux,2.0,4,4,3,\n", encoding="utf-8")
    rows = import_study("cultivate", path, prompts=PROMPTS)
    assert len(rows) == 4 + 2 + 4
    first = rows[(rows.rater == "r1") & (rows.prompt_id == PROMPTS[0]["prompt_id"])]
    assert dict(zip(first.question, first.value)) == {"GT-FAITH": 4, "GT-HAL": 2, "GT-EXAG": 1, "GT-REALISM": 5}
    assert set(rows.scale) == {"likert:1..5"} and set(rows.study) == {"cultivate"}
    assert set(first.comment) == {"sofreh is right"} and set(first.country) == {"IR"}
    assert rows.in_country.all()  # the raters' country is the image's, filled by the common format
    assert rows[(rows.rater == "r1") & (rows.country == "FR")].category.iloc[0] == "greeting"
    assert get_study("cultivate").licence is None


def test_jsonl_by_image_sha256(tmp_path):
    path = tmp_path / "ratings.jsonl"
    path.write_text(json.dumps({"rater": "a", "image_sha256": SHA, "gt_faith": 5}) + "\n\n", encoding="utf-8")
    rows = import_study("cultivate", path)
    assert rows.image_sha256.tolist() == [SHA] and rows.question.tolist() == ["GT-FAITH"]


def test_every_problem_at_once(tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text(
        "rater,prompt_id,gt_faith,gt_hal,sample_idx\n"
        ",cultivate/ir/eating/eating,4,,0\n"
        "r1,,3,,0\n"
        "r2,cultivate/ir/eating/eating,6,2.5,0\n"
        "r3,cultivate/xx/none,3,,-1\n"
        "r4,cultivate/ir/eating/eating,,,0\n", encoding="utf-8")
    with pytest.raises(CultureboardError) as err:
        import_study("cultivate", path, prompts=PROMPTS)
    text = str(err.value)
    for where, what in ((2, "rater '': is missing"), (3, "the row names no image"),
                        (4, "gt_faith '6': is not an integer from 1 to 5"), (4, "gt_hal '2.5'"),
                        (5, "prompt_id 'cultivate/xx/none': is not in the prompt set"),
                        (5, "sample_idx '-1'"), (6, "give at least one rating")):
        assert f"ratings.csv:{where}: " in text and what in text, what
    assert "7 problem(s)" in text


def test_bad_layouts(tmp_path):
    (tmp_path / "a.csv").write_text("rater,gt_faith,stars\nr,3,5\n", encoding="utf-8")
    with pytest.raises(CultureboardError, match="unknown columns \\['stars'\\]"):
        import_study("cultivate", tmp_path / "a.csv")
    (tmp_path / "b.txt").write_text("", encoding="utf-8")
    with pytest.raises(CultureboardError, match="extension"):
        import_study("cultivate", tmp_path / "b.txt")
    (tmp_path / "c.jsonl").write_text('{"rater": "r", "gt_faith": 3, "prompt_id": "p", "x": 1}\nnot json\n',
                                      encoding="utf-8")
    with pytest.raises(CultureboardError, match="unknown keys \\['x'\\].*\n.*not valid JSON"):
        import_study("cultivate", tmp_path / "c.jsonl")



def test_validity_is_a_trust_map_sign_normalised_by_question_and_card(tmp_path):
    """FAITH rises with GT-FAITH and HAL (lower is better) with GT-HAL (higher is worse): both agree with the
    raters, rho = +1; a flagged row is left out; the folder gets validity.json beside the common format."""
    import pandas as pd
    from cultureboard.evaluators.results.studies.cultivate import validity

    ids = [f"cultivate/ir/eating/p{k}" for k in range(4)]
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("rater,submission,prompt_id,sample_idx,gt_faith,gt_hal\n" + "".join(
        f"r{r},lab__m,{pid},0,{k + 1},{4 - k}\n" for k, pid in enumerate(ids) for r in (1, 2)), encoding="utf-8")
    folder = tmp_path / "results" / "lab__m"
    folder.mkdir(parents=True)
    rows = [{"metric": "cultivate.faith", "prompt_id": pid, "sample_idx": 0, "value": 0.1 * (k + 1), "flag": None}
            for k, pid in enumerate(ids)]
    rows += [{"metric": "cultivate.hal", "prompt_id": pid, "sample_idx": 0, "value": 0.1 * (4 - k), "flag": None}
             for k, pid in enumerate(ids)]
    rows.append({"metric": "cultivate.faith", "prompt_id": ids[0], "sample_idx": 0, "value": 0.9, "flag": "no answer"})
    pd.DataFrame(rows).to_parquet(folder / "scores.parquet")
    (folder / "summary.json").write_text(json.dumps({"metrics_info": [
        {"name": "cultivate.faith", "direction": "higher"}, {"name": "cultivate.hal", "direction": "lower"}]}))
    found = validity(import_study("cultivate", ratings), tmp_path / "results", n_boot=50)
    by = {(r["metric"], r["human"], r["slice_type"]): r for r in found}
    assert set(by) == {("cultivate.faith", "GT-FAITH", "overall"), ("cultivate.hal", "GT-HAL", "overall")}
    for row in by.values():
        assert row["rho"] == pytest.approx(1.0) and row["n"] == 4 and row["submission"] == "lab__m"
        assert row["diagnostic"] and "too few rated items" in row["reason"]
    with pytest.raises(CultureboardError, match="has no scores of the rated submission other"):
        validity(import_study("cultivate", ratings).assign(submission="other"), tmp_path / "results")


@pytest.fixture()
def by_file_name(tmp_path):
    """A one-prompt-set dataset, a result of submission lab__m whose scores name 4 images by file_name (and
    prompt_id + sample_idx), and a ratings file naming them by file_name only."""
    import pandas as pd
    from tiny_dataset import _row, write_tiny_dataset

    ids = [f"ir/eating/p{k}" for k in range(4)]
    dataset = write_tiny_dataset(tmp_path / "dataset", {"cultivate": [_row("cultivate", pid, pid) for pid in ids]})
    folder = tmp_path / "results" / "lab__m"
    folder.mkdir(parents=True)
    pd.DataFrame([{"metric": "cultivate.faith", "prompt_id": f"cultivate/{pid}", "sample_idx": 0,
                   "file_name": f"images/{k}.png", "value": 0.1 * (k + 1), "flag": None}
                  for k, pid in enumerate(ids)]).to_parquet(folder / "scores.parquet")
    (folder / "summary.json").write_text(json.dumps({"metrics_info": [{"name": "cultivate.faith",
                                                                        "direction": "higher"}]}))
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("rater,submission,file_name,gt_faith\n" + "".join(
        f"r1,lab__m,images/{k}.png,{k + 1}\n" for k in range(4)), encoding="utf-8")
    return {"dataset": dataset, "results": tmp_path / "results", "ratings": ratings, "root": tmp_path}


def cli(capsys, *args) -> tuple[int, str]:
    """``cultureboard ARGS`` in this process: (exit code, stderr)."""
    from cultureboard.cli import main

    code = main([str(a) for a in args])
    return code, capsys.readouterr().err


def test_ratings_by_file_name_join_the_scores_on_file_name(by_file_name, capsys):
    w = by_file_name
    code, err = cli(capsys, "import", "ratings", w["ratings"], "--study", "cultivate", "--dataset", w["dataset"],
                       "--out", w["root"] / "rated", "--results", w["results"])
    assert code == 0, err
    trust = json.loads((w["root"] / "rated" / "validity.json").read_text())["trust"]
    [overall] = [r for r in trust if r["slice_type"] == "overall"]
    assert (overall["metric"], overall["n"], overall["rho"]) == ("cultivate.faith", 4, pytest.approx(1.0))


def test_ratings_sharing_no_key_with_the_scores_are_one_line(by_file_name, capsys):
    """Half the rows name the image by file_name and half by prompt_id: no key covers every rated image."""
    w = by_file_name
    mixed = w["root"] / "mixed.csv"
    mixed.write_text("rater,submission,file_name,prompt_id,sample_idx,gt_faith\n"
                     "r1,lab__m,images/0.png,,,1\nr1,lab__m,images/1.png,,,2\n"
                     "r1,lab__m,,cultivate/ir/eating/p2,0,3\n", encoding="utf-8")
    code, err = cli(capsys, "import", "ratings", mixed, "--study", "cultivate", "--dataset", w["dataset"],
                       "--out", w["root"] / "rated", "--results", w["results"])
    assert code == 1 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert err.startswith("error: ratings: name rated images by prompt_id / file_name") and "(fix: name every" in err
    assert not (w["root"] / "rated").exists()
