"""The common ratings format (evaluators/results/ratings_format.py), the study registry and the Hub config."""

from __future__ import annotations

import csv
import json

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from cultureboard.errors import CultureboardError
from cultureboard.evaluators.results.ratings_format import (
    COLUMNS,
    SCHEMA,
    SHARD,
    parse_scale,
    ratings_card,
    read_ratings,
    validate_rows,
    write_ratings,
    write_ratings_config,
)
from cultureboard.evaluators.results.studies import get_study, import_study, register_study, studies


SHA = "ab" * 32


def rating(**fields) -> dict:
    return {"study": "cube", "rater": "r1", "rater_country": "JP", "prompt_id": "p1", "question": "faithfulness",
            "value": 4, "scale": "likert:1..5", **fields}


ROWS = [
    rating(),
    rating(rater="r2", rater_country="in", country="JP", value=2, comment="too glossy, like plastic"),
    rating(rater="r1", image_sha256=SHA.upper(), prompt_id=None, country="JP", question="relevance", value=0.5,
           scale="ordinal:no=0,maybe=0.5,yes=1", in_country=True, sample_idx=2, model="sdxl", submission="a"),
    rating(study="cultdiff", rater="k1", rater_country=None, rater_region="GS", prompt_id=None, item_id="pair-7",
           question="similarity", value=0.25, scale="interval:0..1"),
]


def test_scales():
    likert = parse_scale("likert:1..5")
    assert (likert.level, likert.categories, likert.accepts(3.0), likert.accepts(3.5)) == ("ordinal", (1, 2, 3, 4, 5), True, False)
    relevance = parse_scale("ordinal:no=0,maybe=0.5,yes=1")
    assert relevance.categories == (0, 0.5, 1) and relevance.label(0.5) == "maybe" and not relevance.accepts(0.25)
    assert parse_scale("nominal:left=1,right=0").level == "nominal"
    interval = parse_scale("interval:-1..1")
    assert (interval.level, interval.categories, interval.accepts(-0.3), interval.accepts(1.2)) == ("interval", None, True, False)
    for bad, message in [("likert:5..1", "LOW < HIGH"), ("likert:1..4.5", "integers"), ("ordinal:yes=1,no=0", "increase"),
                         ("nominal:a=1", "two distinct"), ("ordinal:a=1,a=2", "two distinct"), ("stars:5", "kinds are"),
                         ("interval:0-1", "LOW..HIGH")]:
        with pytest.raises(ValueError, match=message):
            parse_scale(bad)


def test_validate_normalises():
    frame = validate_rows(ROWS)
    assert list(frame.columns) == list(COLUMNS) and len(frame) == 4
    assert frame.loc[1, "rater_country"] == "IN" and frame.loc[1, "comment"] == "too glossy, like plastic"
    assert frame.loc[2, "image_sha256"] == SHA and frame.loc[2, "sample_idx"] == 2
    # in_country: derived where both countries are known and no flag is given, kept where given, else null
    assert frame["in_country"].tolist() == [pd.NA, False, True, pd.NA]
    assert str(frame["sample_idx"].dtype) == "Int64" and frame["value"].dtype == float


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_round_trip(tmp_path, suffix):
    path = write_ratings(ROWS, tmp_path / f"ratings{suffix}")
    back = read_ratings(path)
    pd.testing.assert_frame_equal(back, validate_rows(ROWS))
    if suffix == ".parquet":
        assert pq.read_schema(path).remove_metadata() == SCHEMA


def test_every_problem_is_one_line_with_row_and_fix(tmp_path):
    lines = [
        rating(rater=""),  # 2
        rating(rater_country="Japan"),  # 3
        rating(prompt_id=None),  # 4
        rating(image_sha256="xyz"),  # 5
        rating(value=6),  # 6
        rating(scale="stars:5"),  # 7
        rating(in_country=False, country="JP"),  # 8: JP rater on a JP item
        rating(value="high"),  # 9
        rating(sample_idx=-1),  # 10
        rating(),  # 11: same rater, item and question as line 12 ...
        rating(),  # 12
        rating(scale="likert:0..10", question="faithfulness", value=7),  # 13: second scale for one question
    ]
    path = tmp_path / "bad.csv"
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(lines)
    with pytest.raises(CultureboardError) as err:
        read_ratings(path)
    problem = err.value.problem
    assert problem.startswith("12 problem(s)")
    for expected in ["bad.csv:2: rater None: is missing (fix: give every row its rater)",
                     "bad.csv:3: rater_country 'Japan': is not an ISO 3166-1 alpha-2 code",
                     "bad.csv:4: image_sha256 None: is missing, and so are prompt_id, item_id and file_name",
                     "bad.csv:5: image_sha256 'xyz': is not 64 hexadecimal digits",
                     "bad.csv:6: value '6': is not allowed on likert:1..5 (fix: give one of 1, 2, 3, 4, 5)",
                     "bad.csv:7: scale 'stars:5': is not a scale: the kinds are",
                     "bad.csv:8: in_country 'False': contradicts rater_country JP and country JP",
                     "bad.csv:9: value 'high': is not a finite number",
                     "bad.csv:10: sample_idx '-1': is not a non-negative integer",
                     "bad.csv:12: rater 'r1': answered this question about this item twice (first at ",
                     "bad.csv:13: scale 'likert:0..10': differs from 'likert:1..5' of the same question at "]:
        assert expected in problem, expected
    assert all("(fix: " in line for line in problem.splitlines()[1:])


def test_layout_problems(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("study,rater,question,valeu,scale\ncube,r1,q,3,likert:1..5\n")
    with pytest.raises(CultureboardError, match=r"columns: missing \['value'\], unknown \['valeu'\]"):
        read_ratings(path)
    path = tmp_path / "r.jsonl"
    path.write_text('{"study": "cube", "rater": "r1", "prompt_id": "p", "question": "q", "scale": "likert:1..5"}\n'
                    'not json\n[1]\n')
    with pytest.raises(CultureboardError) as err:
        read_ratings(path)
    for expected in ["r.jsonl:1: value None: is not a finite number", "r.jsonl:2: is not valid JSON",
                     "r.jsonl:3: is not a JSON object"]:
        assert expected in err.value.problem
    path.write_text('{"study": "cube", "valeu": 3}\n')
    with pytest.raises(CultureboardError, match=r"unknown \['valeu'\]"):
        read_ratings(path)
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(CultureboardError, match="has no ratings"):
        read_ratings(tmp_path / "empty.jsonl")
    with pytest.raises(CultureboardError, match="extension '.xlsx'"):
        write_ratings(ROWS, tmp_path / "r.xlsx")
    with pytest.raises(CultureboardError, match="does not exist"):
        read_ratings(tmp_path / "missing.csv")


def test_bad_rows_write_nothing(tmp_path):
    with pytest.raises(CultureboardError):
        write_ratings([rating(value=9)], tmp_path / "r.parquet")
    assert list(tmp_path.iterdir()) == []


def test_registry_has_cube_and_checks_importers(tmp_path):
    assert "cube" in studies() and get_study("cube").licence is None and "collector" in get_study("cube").note
    with pytest.raises(CultureboardError, match="is not a registered ratings study"):
        get_study("nope")
    assert get_study("nope", required=False) is None

    @register_study("test-wrong", title="t", url="u", licence="CC0-1.0")
    def wrong(path):
        return [rating(study="cube")]

    @register_study("test-bad", title="t", url="u", licence="CC0-1.0")
    def bad(path):
        return [rating(study="test-bad", value=0)]

    try:
        with pytest.raises(CultureboardError, match=r"produced rows of studies \['cube'\]"):
            import_study("test-wrong", tmp_path / "x")
        with pytest.raises(CultureboardError, match=r"\(imported as test-bad\):row 1: value 0"):
            import_study("test-bad", tmp_path / "x")
        with pytest.raises(ValueError, match="registered twice"):
            register_study("test-bad", title="t", url="u", licence=None)(lambda path: [])
    finally:
        from cultureboard.evaluators.results import studies as registry
        registry._STUDIES.pop("test-wrong"), registry._STUDIES.pop("test-bad")


def test_hub_config_and_card(tmp_path):
    dataset = tmp_path / "dataset"
    (dataset / "data" / "cube-awareness").mkdir(parents=True)
    path = write_ratings_config(ROWS, dataset)
    assert path == dataset / SHARD
    table = pq.read_table(path)
    assert table.num_rows == 4 and table.schema.remove_metadata() == SCHEMA
    rows = validate_rows(ROWS)
    with pytest.raises(CultureboardError, match="study 'cube': has no licence"):
        ratings_card(rows)
    with pytest.raises(CultureboardError, match="study 'cultdiff': has no licence"):
        ratings_card(rows, {"cube": "CC-BY-4.0"})
    card = ratings_card(rows, {"cube": "CC-BY-4.0", "cultdiff": "CC-BY-NC-4.0"})
    assert card["config"] == {"config_name": "ratings", "data_files": [{"split": "test", "path": "data/ratings/*.parquet"}]}
    assert yaml.safe_load(yaml.safe_dump({"configs": [card["config"]]}))["configs"][0]["config_name"] == "ratings"
    assert card["licences"] == {"cube": "CC-BY-4.0", "cultdiff": "CC-BY-NC-4.0"}
    lines = card["markdown"].splitlines()
    assert "| cube | 3 | 2 | faithfulness (likert:1..5), relevance (ordinal:no=0,maybe=0.5,yes=1) | CC-BY-4.0 | " \
           "https://arxiv.org/abs/2407.06863 |" in lines
    from cultureboard.evaluators.results.studies import get_study

    study = get_study("cultdiff", required=False)  # registered by the cultdiff family
    url = study.url if study else "-"
    assert f"| cultdiff | 1 | 1 | similarity (interval:0..1) | CC-BY-NC-4.0 | {url} |" in lines
    with pytest.raises(CultureboardError, match="is not a dataset folder"):
        write_ratings_config(ROWS, tmp_path / "nothing")
    json.dumps(card)  # the card pieces are plain data
