"""The site's disparity ranking (site/figures.py) with untested gaps: a submission whose Global North - South gap
has too few prompts is listed after the ranked ones with a "too few prompts" badge, no CI, no q and no rank, is
left out of the frontier plot, and its untested country gaps never count as served worse."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from cultureboard.evaluators.results.disparity import gaps
from cultureboard.site import board as board_module
from cultureboard.site import figures
from cultureboard.site.load import Result
from cultureboard.site.write import Site

METRIC = "m.score"


def result(sid: str, value: float) -> SimpleNamespace:
    entry = {"value": value, "ci_low": value - 0.1, "ci_high": value + 0.1, "n_images": 10, "n_prompts": 5,
             "coverage": 1.0, "complete": True}
    return SimpleNamespace(sid=sid, display=sid, label=sid, standin=False, entries={(METRIC, "overall", "all"): entry})


@pytest.fixture(scope="module")
def board():
    # "few": one prompt per country (the audit's example); "wide" and "narrow": 30 noisy prompts per country
    few = gaps([0.50, 0.52, 0.49], ["ES", "MX", "NG"], ["GN", "GS", "GS"])
    wide = gaps([0.9 + 0.01 * (i % 7) for i in range(30)] + [0.1 + 0.01 * (i % 5) for i in range(30)],
                ["IT"] * 30 + ["NG"] * 30, ["GN"] * 30 + ["GS"] * 30)
    narrow = gaps([0.5 + 0.01 * (i % 7) for i in range(30)] + [0.5 + 0.01 * (i % 5) for i in range(30)],
                  ["IT"] * 30 + ["NG"] * 30, ["GN"] * 30 + ["GS"] * 30)
    found = {"few": few, "wide": wide, "narrow": narrow}
    results = [result("few", 0.5), result("wide", 0.6), result("narrow", 0.4)]
    group = SimpleNamespace(name="g1", metrics=[METRIC], results=results)
    return SimpleNamespace(cards={METRIC: {"direction": "higher", "title": "Score"}}, group=group,
                           gaps=lambda r, metric: found[r.sid], ranks=lambda *a: {r.sid: None for r in results})


def test_an_untested_gap_is_listed_last_unranked_and_never_significant(board):
    rows = figures.disparity_rows(board, board.group)
    assert [x["result"].sid for x in rows] == ["narrow", "wide", "few"]
    assert [x["rank"] and (x["rank"]["best"], x["rank"]["worst"]) for x in rows] == [(1, 1), (2, 2), None]
    few = rows[-1]
    assert few["n_worse"] == 0 and few["worst"] is None  # MX and NG are below the mean but untested
    assert rows[1]["n_worse"] == 1 and rows[1]["worst"].name == "NG"


def test_the_table_marks_the_untested_gap_and_its_downloads_hold_null(board, tmp_path):
    table = figures.disparity_table(Site(tmp_path), board, "leaderboard/x.html", board.group)
    few = table.rows[-1]
    assert few["_marks"] == {"gap": [figures.UNTESTED]} and few["q"] is None and few["rank"] is None
    assert few["gap"]["value"] == pytest.approx(0.50 - 0.505) and few["gap"]["ci_low"] is None
    assert all(not x["_marks"] for x in table.rows[:-1])
    data = json.loads((tmp_path / table.json).read_text())
    shown = dict(zip(data["columns"], data["rows"][-1].values()))
    assert shown["gap_ci_low"] is None and shown["q"] is None and "Too few prompts" in shown["gap_badges"]


def test_the_frontier_leaves_the_untested_gap_out(board):
    svg = figures._frontier(board, board.group, METRIC, "Score")
    assert svg is not None and "wide" in svg and "narrow" in svg and "few" not in svg


def scored(rows: list[tuple]) -> Result:
    """A result of metric METRIC (and one other) from (metric, unit, value, flag, country) rows."""
    scores = pd.DataFrame(rows, columns=["metric", "unit_id", "value", "flag", "country"]).astype(
        {"metric": "str", "unit_id": "str", "flag": "str", "country": "str"})
    summary = {"provenance": {"settings": {"n_boot": 50, "seed": 3, "ci_level": 0.9}}}
    return Result("s", summary, scores, {}, Path("s"), [], {})


def test_the_board_gives_each_unit_its_mean_over_its_usable_rows(monkeypatch):
    """Board gaps take per unit (units in sorted order) the mean of its rows with a value, a country, a unit and
    no flag, of the metric asked for only; a unit whose rows name two countries is left out; the evaluator's
    bootstrap settings are passed on."""
    nan = float("nan")
    rows = [(METRIC, "u3", 1.0, None, "NG"), (METRIC, "u1", 2.0, None, "IT"), (METRIC, "u1", 4.0, None, "IT"),
            (METRIC, "u1", 100.0, "no reference", "IT"), (METRIC, "u1", nan, None, "IT"),
            (METRIC, "u2", 8.0, None, "NG"), (METRIC, "u2", 5.0, None, None), (METRIC, None, 7.0, None, "NG"),
            (METRIC, "u4", 1.0, None, "IT"), (METRIC, "u4", 9.0, None, "NG"),  # two countries: left out
            ("m.other", "u1", 50.0, None, "IT"), (METRIC, "u0", 3.0, None, "FR"), (METRIC, "u3", 2.0, None, "NG")]
    seen = {}
    monkeypatch.setattr(board_module, "gaps", lambda *a, **k: seen.update(args=a, kwargs=k) or ["found"])
    assert board_module._gaps(scored(rows), METRIC) == ["found"]
    means, countries, regions = seen["args"]
    assert means.tolist() == [3.0, 3.0, 8.0, 1.5] and countries.tolist() == ["FR", "IT", "NG", "NG"]
    assert regions == ["GN", "GN", "GS", "GS"] and seen["kwargs"] == {"n_boot": 50, "level": 0.9, "seed": 3}


def test_the_board_has_no_gaps_with_one_country_or_none_usable(monkeypatch):
    monkeypatch.setattr(board_module, "gaps", lambda *a, **k: pytest.fail("no gaps expected"))
    one = [(METRIC, "u1", 1.0, None, "IT"), (METRIC, "u2", 2.0, None, "IT"), (METRIC, "u3", 2.0, None, "NG"),
           (METRIC, "u3", 2.0, None, "FR")]
    assert board_module._gaps(scored(one), METRIC) is None
    assert board_module._gaps(scored([(METRIC, "u1", 1.0, "flagged", "IT")]), METRIC) is None
    assert board_module._gaps(scored(one), "m.absent") is None
