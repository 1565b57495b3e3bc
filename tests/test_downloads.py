"""Every CSV/JSON download (site/write.py Site.table) carries stand_in, control, badges and metric_version, so a
downloaded table cannot be taken for real scores; site/load.py gives each summary entry what they read."""

from __future__ import annotations

import csv
import gzip
import json

import pytest

from cultureboard.site.load import load_results
from cultureboard.site.write import Column, Site
from results_factory import evaluate_all, make_dataset, make_submission

EXTRA = ["stand_in", "control", "badges", "metric_version", "generated_by", "scored_by", "superseded_by"]


def entry(metric: str, value: float, standin: bool, version) -> dict:
    return {"metric": metric, "slice_type": "overall", "slice": "all", "value": value, "ci_low": value - 0.1,
            "ci_high": value + 0.1, "n_images": 8, "n_prompts": 4, "coverage": 1.0, "standin": standin,
            "metric_version": version}


def download(tmp_path, banner, columns, rows):
    table = Site(tmp_path, {"banner": banner}).table("leaderboard/x.html", "t", columns, rows)
    with (tmp_path / table.csv).open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh)), json.loads((tmp_path / table.json).read_text(encoding="utf-8"))


SCORES = [Column("submission", "Submission", "text"), Column("a.m", "M", "score"), Column("a.n", "N", "score")]


def test_score_rows_carry_stand_in_control_badges_and_metric_versions(tmp_path):
    rows = [{"submission": "real", "a.m": entry("a.m", 0.5, False, 2), "a.n": entry("a.n", 0.4, False, "2+max")},
            {"submission": "fake", "a.m": entry("a.m", 0.9, True, 3), "a.n": None, "_control": "text-only",
             "_marks": {"submission": [{"label": "control: text-only", "title": "t"}],
                        "a.m": [{"label": "entangled", "title": "e"}]}}]
    downloaded, data = download(tmp_path, None, SCORES, rows)
    assert data["columns"][-7:] == EXTRA and list(downloaded[0])[-7:] == EXTRA
    assert [[r[k] for k in EXTRA[:4]] for r in downloaded] == [
        ["False", "", "", "a.m=2; a.n=2+max"], ["True", "text-only", "entangled; control: text-only", "a.m=3"]]
    assert [[r[k] for k in EXTRA[:4]] for r in data["rows"]] == [
        [False, "", "", "a.m=2; a.n=2+max"], [True, "text-only", "entangled; control: text-only", "a.m=3"]]


def test_one_stand_in_score_makes_the_row_stand_in(tmp_path):
    rows = [{"submission": "mixed", "a.m": entry("a.m", 0.5, False, 1), "a.n": entry("a.n", 0.4, True, 1)}]
    assert download(tmp_path, None, SCORES, rows)[1]["rows"][0]["stand_in"] is True


@pytest.mark.parametrize("banner, expected", [(None, False), ({"count": 1}, True)])
def test_a_row_without_scores_says_whether_the_build_has_stand_ins(tmp_path, banner, expected):
    downloaded, data = download(tmp_path, banner, [Column("gap", "Gap", "num")], [{"gap": 0.1}])
    assert data["rows"] == [{"gap": 0.1, "stand_in": expected, "control": "", "badges": "", "metric_version": "",
                             "generated_by": "", "scored_by": "", "superseded_by": ""}]


def test_an_empty_table_still_names_the_columns(tmp_path):
    downloaded, data = download(tmp_path, None, SCORES, [])
    assert data == {"page": "leaderboard/x.html", "table": "t", "columns": ["submission", "a.m", "a.n", *EXTRA],
                    "rows": []}


def test_loaded_entries_carry_stand_in_and_the_recorded_metric_version(tmp_path):
    dataset = make_dataset(tmp_path / "dataset")
    folder = make_submission(tmp_path / "submissions", dataset, "cube-awareness")
    results = evaluate_all([folder], dataset, tmp_path / "results", tmp_path / "work")
    path = results / folder.name / "summary.json"
    summary = json.loads(path.read_text())
    metric = sorted(summary["provenance"]["metrics"])[0]
    summary["provenance"]["metrics"][metric] = "7+variant"  # the provenance's version wins over the card's
    path.write_text(json.dumps(summary))
    (result,), skipped = load_results(results, tmp_path / "submissions")
    assert not skipped and result.standin
    versions = {e["metric"]: e["metric_version"] for e in result.summary["metrics"]}
    assert versions[metric] == "7+variant"
    assert versions == {m: summary["provenance"]["metrics"].get(m, versions[m]) for m in versions}
    assert all(e["standin"] is True for e in result.entries.values())


def test_rows_say_who_made_them_and_a_superseded_row_is_shown_unranked(tmp_path):
    """Two runs of one model version for one prompt set, the second superseding the first, scored by the evaluate
    workflow (its review.json): the old row is on the leaderboard, marked, muted, without a rank, and never among the
    ranked results; every row's download says who generated and who scored it, and what replaced it."""
    from cultureboard.site.board import Board
    from cultureboard.site.leaderboards import leaderboard
    from cultureboard.evaluators.results.made import LEADERBOARD_CI, NOT_CI

    dataset = make_dataset(tmp_path / "dataset")
    old = make_submission(tmp_path / "submissions", dataset, "cube-awareness")
    new = make_submission(tmp_path / "submissions", dataset, "cube-awareness", tag="rerun",
                          spec={"supersedes": {"submission": old.name, "reason": "the fixed VAE"}})
    other = make_submission(tmp_path / "submissions", dataset, "cube-awareness", model="other")
    results = evaluate_all([old, new, other], dataset, tmp_path / "results", tmp_path / "work")
    (results / new.name / "review.json").write_text(json.dumps({"scored_by": "the evaluate workflow",
                                                                "generation": "generation verified"}))
    (results / other.name / "review.json").write_text(json.dumps({"generation": "not verified"}))  # never shown
    loaded, _ = load_results(results, tmp_path / "submissions")
    by = {r.sid: r for r in loaded}
    assert (by[old.name].superseded_by, by[old.name].superseded_why) == (new.name, "the fixed VAE")
    assert by[new.name].superseded_by is None and by[other.name].superseded_by is None
    assert [by[s].scored_by for s in (old.name, new.name)] == [NOT_CI, LEADERBOARD_CI]
    assert [by[s].generated_by for s in (old.name, new.name, other.name)] == [
        "the team (not audited)", "the team (generation verified)", "the team (not audited)"]
    board = Board(by, {})
    [group] = board.groups["cube-awareness"]
    assert sorted(r.sid for r in group.results) == sorted([new.name, other.name])
    assert [r.sid for r in group.superseded] == [old.name]
    table = leaderboard(Site(tmp_path / "site", {}), board, "leaderboard/cube-awareness.html", group, "overall", "all")
    rows = {row["submission"]["href"]: row for row in table.rows}
    mine = rows[f"model/{old.name}.html"]
    assert mine["rank"] is None and mine["_muted"] and mine["_marks"]["submission"][0]["label"] == f"superseded by {new.name}"
    assert list(rows)[-1] == f"model/{old.name}.html"  # after every ranked row
    data = json.loads((tmp_path / "site" / table.json).read_text(encoding="utf-8"))
    made = {r["submission"]: (r["generated_by"], r["scored_by"], r["superseded_by"]) for r in data["rows"]}
    assert made[by[old.name].display] == ("the team (not audited)", NOT_CI, new.name)
    assert made[by[new.name].display] == ("the team (generation verified)", LEADERBOARD_CI, "")


#: A value whose interval is narrower than the pages' three decimals: 0.340 [0.340, 0.340] would hide it.
NARROW = {"value": 0.3401, "ci_low": 0.3398, "ci_high": 0.3404}


def test_every_download_prints_values_at_the_precision_of_their_interval(tmp_path):
    """Table downloads (CSV, JSON) and the flat file (data/scores.csv.gz, .parquet) write each number whole (its
    shortest round-trip text), so an interval's bounds always print apart; a control's standing in a badge's
    text prints its value with its interval at the interval's precision (cells.at_precision, as the cells do)."""
    from pathlib import Path

    import pandas as pd

    from cultureboard.site.board import Board
    from cultureboard.site.flat_file import CSV, PARQUET, write_flat_file
    from cultureboard.site.gaming import Standing
    from cultureboard.site.load import Result

    standing = Standing("control__t", "text-only", 0.3401, beats=2, models=2, rank=1, low=0.3398, high=0.3404)
    assert standing.text == ("control__t (text-only) scores 0.3401 [0.3398, 0.3404]: beats 2 of 2 model(s), would "
                             "rank 1 of 3")
    assert Standing("c", "unedited", 0.0, beats=0, models=1, rank=2).text.startswith("c (unedited) scores 0.000:")
    rows = [{"submission": "real", "a.m": {**entry("a.m", 0, False, 1), **NARROW}, "a.n": None,
             "_marks": {"a.m": [{"label": "would rank 1 of 3", "title": standing.text}]}}]
    downloaded, data = download(tmp_path, None, SCORES, rows)
    assert [downloaded[0][k] for k in ("a.m", "a.m_ci_low", "a.m_ci_high")] == ["0.3401", "0.3398", "0.3404"]
    assert [data["rows"][0][k] for k in ("a.m", "a.m_ci_low", "a.m_ci_high")] == [0.3401, 0.3398, 0.3404]
    assert "scores 0.3401 [0.3398, 0.3404]" in downloaded[0]["a.m_badges"]

    card = {"name": "a.m", "title": "M", "direction": "higher", "target": None, "family": "a", "unit": "image",
            "version": 1, "scorers": []}
    prov = {"prompt_set": "toy-set", "dataset": {"revision": "r1"}, "dtype": "fp32", "scorers": [],
            "metrics": {"a.m": 1}, "options": {}, "settings": {}, "code": {"cultureboard": "0", "git": {"commit": "abc"}}}
    near = 0.1 + 0.2  # 0.30000000000000004: its every digit is kept, never rounded away
    result = Result("lab__m", {"provenance": prov, "metrics_info": [card]}, pd.DataFrame(), {"organization": "lab"},
                    Path("lab__m"), [], {("a.m", "overall", "all"): {**NARROW, "n_images": 8, "n_prompts": 8},
                                         ("a.m", "country", "IT"): {"value": near, "ci_low": near - 1e-9,
                                                                     "ci_high": near + 1e-9, "n_prompts": 8}},
                    display="lab / m")
    site = Site(tmp_path / "flat", {"banner": None})
    write_flat_file(site, Board({result.sid: result}, {}))
    with gzip.open(tmp_path / "flat" / CSV, "rt", encoding="utf-8") as fh:
        flat = {r["slice"]: r for r in csv.DictReader(fh)}
    assert [flat["all"][k] for k in ("value", "ci_low", "ci_high")] == ["0.3401", "0.3398", "0.3404"]
    assert [float(flat["IT"][k]) for k in ("value", "ci_low", "ci_high")] == [near, near - 1e-9, near + 1e-9]
    assert flat["IT"]["ci_low"] != flat["IT"]["ci_high"]
    parquet = pd.read_parquet(tmp_path / "flat" / PARQUET).set_index("slice")
    assert parquet.loc["IT", "ci_high"] - parquet.loc["IT", "ci_low"] == pytest.approx(2e-9)
