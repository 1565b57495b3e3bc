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

