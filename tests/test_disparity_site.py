"""The site's disparity ranking (site/figures.py) with untested gaps: a submission whose Global North - South gap
has too few prompts is listed after the ranked ones with a "too few prompts" badge, no CI, no q and no rank, is
left out of the frontier plot, and its untested country gaps never count as served worse."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from cultureboard.evaluators.results.disparity import gaps
from cultureboard.site import figures
from cultureboard.site.write import Site

METRIC = "m.score"


def result(sid: str, value: float) -> SimpleNamespace:
    entry = {"value": value, "ci_low": value - 0.1, "ci_high": value + 0.1, "n_images": 10, "n_prompts": 5,
             "coverage": 1.0, "complete": True}
    return SimpleNamespace(sid=sid, display=sid, label=sid, entries={(METRIC, "overall", "all"): entry})


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
