"""A metric whose validity tier gets no ranks is shown with values and intervals, sortable, and nothing on its
board says who is first (issue 33): no rank number, no rank spread, no "would rank" for its controls, no "best",
"leader" or crown; the answer of a country page gives the tier as its reason; beside the board stand its chance
level (the number the evaluator recorded) and each control's value at its interval's precision. The board is
test_worldmap's hand-made one (cards with no tier recorded: never ranked), with a text-only control added."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from cultureboard.site import beside, cells, country_answer, leaderboards
from cultureboard.site.board import Board

from test_worldmap import HEAD, MAP_RESULTS, PS, map_result, map_site

BOASTS = re.compile(r"\b(best|leader|leading|winner|top model|crown)\b|\U0001f451", re.I)


@pytest.fixture()
def unranked(tmp_path):
    site, _ = map_site(tmp_path)
    results = [map_result(m, v) for m, v in MAP_RESULTS.items()]
    words = replace(map_result("words", MAP_RESULTS["steep"]), sid="control__words", control="text-only")
    words.entries[(HEAD, "overall", "all")] = dict(words.entries[(HEAD, "overall", "all")], value=0.55,
                                                  ci_low=0.5499, ci_high=0.5501)
    for r in results + [words]:
        r.summary["provenance"]["notes"] = {HEAD: {"chance": 1 / 3}}
    board = Board({r.sid: r for r in results + [words]}, {})
    return site, board, board.groups[PS][0]


def test_an_unranked_tier_has_values_and_intervals_but_no_rank_and_no_boast(unranked):
    site, board, group = unranked
    assert board.unranked(group, HEAD, "overall", "all").startswith("not ranked: no validity tier recorded")
    table = leaderboards.leaderboard(site, board, f"leaderboard/{PS}.html", group, "overall", "all")
    assert all(row["rank"] is None for row in table.rows) and "spread" not in [c.key for c in table.columns]
    html = cells.head(table.columns) + cells.body(table.columns, table.rows, "")
    assert not BOASTS.search(re.sub(r"<[^>]+>", " ", html)), "a board of an unranked metric names a best"
    assert 'data-better="higher"' in html  # still sortable in the card's direction
    control = next(row for row in table.rows if row.get("_control"))
    labels = [m["label"] for m in control["_marks"]["submission"]]
    assert labels[0] == "control: text-only" and not any("rank" in label for label in labels)
    answer = country_answer.slices_answer(board, [("country", "IT")])
    (ranking,) = answer.rankings
    assert ranking.rows == [] and ranking.unranked == [] and ranking.why.startswith("not ranked: no validity tier")


def test_beside_the_board_stand_the_chance_level_and_each_controls_value(unranked):
    _, board, group = unranked
    found = beside.context(board, group, HEAD)
    assert found["chance_value"] == pytest.approx(1 / 3)
    assert found["controls"] == [{"label": "lab / words", "kind": "text-only", "value": "0.5500 [0.5499, 0.5501]",
                                  "rank": "beats 7 of 7 models"}]  # above every model; no rank on this tier
    ranked = {**board.cards[HEAD], "tier": "validated"}
    board.cards[HEAD] = ranked
    assert beside.context(board, group, HEAD)["controls"][0]["rank"] == "would rank 1 of 8"
    for r in group.everyone[:1]:  # two results noting different chance levels: no number is drawn
        r.summary["provenance"]["notes"] = {HEAD: {"chance": 0.25}}
    assert beside.chance_value(group, HEAD) is None
