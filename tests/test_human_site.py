"""Imported human ratings give each rated submission a human score, shown first on its board as the validated
measure (issue 33): per item the mean of its raters, per submission the mean over items with a Wilson interval at
the item level; nominal answers and ratings of no submission are left out. Hand-computed values on the common
ratings format; the board is test_worldmap's hand-made one."""

from __future__ import annotations

import pytest

from cultureboard.evaluators.results.ratings_format import write_ratings
from cultureboard.evaluators.results.stats import wilson_interval
from cultureboard.site import human, leaderboards

from test_worldmap import PS, map_site


def rating(rater, prompt, value, submission="lab__steep", question="faithfulness", scale="likert:1..5", **more):
    return {"study": "cube", "rater": rater, "prompt_id": prompt, "question": question, "value": value,
            "scale": scale, "submission": submission, **more}


ROWS = [rating("r1", "p1", 5), rating("r2", "p1", 4),  # item p1: 4.5
        rating("r1", "p2", 2), rating("r2", "p2", 2),  # item p2: 2
        rating("r1", "p3", 3),  # item p3: 3 (one rater)
        rating("r1", "p1", 1, submission="lab__flat"),  # one item: no interval
        rating("r1", "p1", 1, question="side", scale="nominal:left=0,right=1"),  # unordered: no score
        rating("r1", "p9", 5, submission=None)]  # no submission: cannot be placed on a board


@pytest.fixture(scope="module")
def scores(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ratings")
    write_ratings(ROWS, folder / "ratings.parquet")
    return folder, human.load_human([folder, tmp_path_factory.mktemp("correlations-only")])


def test_a_submissions_human_score_is_the_mean_over_items_of_their_raters_mean(scores):
    _, found = scores
    assert set(found) == {"lab__steep", "lab__flat"}
    (steep,) = found["lab__steep"]  # the nominal question is left out
    assert (steep["question"], steep["n_items"], steep["n_prompts"], steep["n_raters"]) == ("faithfulness", 3, 3, 2)
    assert steep["value"] == pytest.approx((4.5 + 2 + 3) / 3)
    low, high = wilson_interval(((4.5 + 2 + 3) / 3 - 1) / 4, 3)  # on the scale's bounds 1..5, n = 3 items
    assert (steep["ci_low"], steep["ci_high"]) == pytest.approx((1 + 4 * low, 1 + 4 * high))
    (flat,) = found["lab__flat"]
    assert (flat["value"], flat["ci_low"], flat["ci_note"]) == (1.0, None, "no CI: 1 item")


def test_the_board_shows_the_human_score_first_labelled_as_the_validated_measure(scores, tmp_path):
    site, board = map_site(tmp_path)
    board.human = scores[1]
    group = board.groups[PS][0]
    table = leaderboards.leaderboard(site, board, f"leaderboard/{PS}.html", group, "overall", "all")
    keys = [c.key for c in table.columns]
    assert keys[:4] == ["rank", "submission", "human.cube.faithfulness", group.metrics[0]]  # before the automatic
    column = table.columns[2]
    assert column.label == "Human: faithfulness" and column.badges[0]["label"] == "validated measure"
    assert [c.key for c in table.columns if c.sticky] == ["submission", group.metrics[0]]  # the headline stays fixed
    by = {row["submission"]["text"]: row["human.cube.faithfulness"] for row in table.rows}
    assert by["lab / steep"]["value"] == pytest.approx(9.5 / 3) and by["lab / flat"]["value"] == 1.0
    assert by["lab / bare"] is None
    country = leaderboards.leaderboard(site, board, f"country/IT.html", group, "country", "IT")
    assert not any(c.key.startswith("human.") for c in country.columns)  # the ratings are over all prompts
    board.human = {}
    plain = leaderboards.leaderboard(site, board, f"leaderboard/{PS}.html", group, "overall", "all", name="plain")
    assert [c.key for c in plain.columns][:3] == ["rank", "submission", group.metrics[0]]
