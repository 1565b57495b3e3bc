"""The answer a country page opens with (site/country_answer.py): per family the models ranked on the country by
the headline with rank ranges, and the overall order by the median of per-family ranks.

Hand-made results on a real :class:`Board` (no site build). On Nigeria, CIs are value +- 0.05:

=========  ==================  ==================  ====================  =====================  =====
model      CUBE (higher)       CuRe (higher)       CultDiff (lower)      family ranks           agree
=========  ==================  ==================  ====================  =====================  =====
alpha      0.80 -> 1 (1-1)     0.50 -> 2 (2-2)     0.20 -> 1 (1-1)       1, 2, 1: median 1      2
beta       0.60 -> 2 (2-3)     0.70 -> 1 (1-1)     0.60 -> 3 (3-3)       2, 1, 3: median 2      1
gamma      0.58 -> 3 (2-3)     0.30 -> 3 (3-3)     0.40 -> 2 (2-2)       3, 3, 2: median 3      2
=========  ==================  ==================  ====================  =====================  =====

delta has 2 Nigerian prompts on CUBE (not ranked); a text-only control scores 0.99 on CUBE (never ranked).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from cultureboard.site.board import Board
from cultureboard.site.country_answer import answer, slices_answer
from cultureboard.site.leaderboards import slice_pages
from cultureboard.site.load import Result
from cultureboard.site.write import Site

CUBE, CURE, CULTDIFF = "cube.cultural_relevance", "cure.ita.cr", "cultdiff.dino"
DIVERSITY = "cube.qvs.uniform"  # CUBE's second prompt set
SETS = {CUBE: "cube-awareness", DIVERSITY: "cube-diversity", CURE: "cure-ladder", CULTDIFF: "cultdiff"}


def card(name: str, direction: str, target: float | None = None) -> dict:
    return {"name": name, "title": name.upper(), "direction": direction, "target": target, "family": name.split(".")[0],
            "unit": "", "formula": "", "range": "[0, 1]", "source": "", "scorers": [], "version": 1, "validity": [],
            "chance": None, "proxy_for": None,
            "tier": "validated"}  # a toy metric ranked as a validated one


def result(model: str, metric: str, value: float, n_prompts: int = 8, direction: str = "higher",
           target: float | None = None, control: str | None = None) -> Result:
    """``lab / <model>``'s submission for ``metric``'s prompt set: ``value`` on Nigeria from ``n_prompts`` prompts."""
    prompt_set = SETS[metric]
    spec = {"organization": "lab", "model": {"name": model}, "tag": prompt_set}
    sid = f"lab__{model}__{prompt_set}"
    entries = {(metric, "country", "NG"): {"metric": metric, "slice_type": "country", "slice": "NG", "value": value,
                                           "ci_low": value - 0.05, "ci_high": value + 0.05, "n_images": 4 * n_prompts,
                                           "n_prompts": n_prompts, "coverage": 1.0, "complete": True}}
    summary = {"provenance": {"prompt_set": prompt_set, "dataset": {"revision": "r1"}, "dtype": "fp32", "scorers": [],
                              "metrics": {metric: 1}, "options": {}, "settings": {}},
               "metrics": list(entries.values()), "metrics_info": [card(metric, direction, target)]}
    return Result(sid, summary, pd.DataFrame(columns=["metric", "value"]), spec, Path(sid), [], entries,
                  display=f"lab / {model} ({prompt_set})", control=control)


def board_of(*results: Result) -> Board:
    return Board({r.sid: r for r in results}, {})


@pytest.fixture
def board() -> Board:
    return board_of(result("alpha", CUBE, 0.80), result("beta", CUBE, 0.60), result("gamma", CUBE, 0.58),
                    result("delta", CUBE, 0.95, n_prompts=2), result("words", CUBE, 0.79, control="text-only"),  # below the best: a cheat on top unranks
                    result("alpha", CURE, 0.50), result("beta", CURE, 0.70), result("gamma", CURE, 0.30),
                    *(result(m, CULTDIFF, v, direction="lower") for m, v in (("alpha", 0.2), ("beta", 0.6), ("gamma", 0.4))))


def ranked(ranking) -> list[tuple]:
    return [(row["key"], row["rank"], row["best"], row["worst"]) for row in ranking.rows]


def test_each_family_ranks_the_country_by_its_headline_with_rank_ranges(board):
    got = {k.family: k for k in answer(board, "NG").rankings}
    assert sorted(got) == ["cube", "cultdiff", "cure"]
    assert ranked(got["cube"]) == [("lab__alpha", 1, 1, 1), ("lab__beta", 2, 2, 3), ("lab__gamma", 3, 2, 3)]
    assert ranked(got["cure"]) == [("lab__beta", 1, 1, 1), ("lab__alpha", 2, 2, 2), ("lab__gamma", 3, 3, 3)]
    # lower is better on this card: the smallest value ranks first
    assert ranked(got["cultdiff"]) == [("lab__alpha", 1, 1, 1), ("lab__gamma", 2, 2, 2), ("lab__beta", 3, 3, 3)]
    assert got["cube"].rows[0]["href"] == "models/lab__alpha.html" and got["cube"].rows[0]["model"] == "lab / alpha"


def test_too_few_prompts_is_said_plainly_and_controls_are_never_ranked(board):
    cube = next(k for k in answer(board, "NG").rankings if k.family == "cube")
    assert [(row["key"], row["why"]) for row in cube.unranked] == [("lab__delta", "2 prompts: not ranked")]
    assert "lab__words" not in {row["key"] for row in cube.rows + cube.unranked}


def test_overall_order_is_the_median_family_rank_with_how_many_families_agree(board):
    overall = answer(board, "NG").overall
    assert [(row["key"], row["median"], row["families"], row["agree"]) for row in overall] == [
        ("lab__alpha", 1, 3, 2), ("lab__beta", 2, 3, 1), ("lab__gamma", 3, 3, 2)]
    assert overall[1]["ranks"] == {"cube": 2, "cure": 1, "cultdiff": 3}


def test_overall_median_of_two_families_and_none_with_one_family():
    two = board_of(result("alpha", CUBE, 0.8), result("beta", CUBE, 0.6), result("gamma", CUBE, 0.4),
                   result("alpha", CURE, 0.3), result("beta", CURE, 0.7))
    assert [(row["key"], row["median"], row["agree"]) for row in answer(two, "NG").overall] == [
        ("lab__alpha", 1.5, 0), ("lab__beta", 1.5, 0), ("lab__gamma", 3, 1)]  # a tie on the median: by name
    one = board_of(result("alpha", CUBE, 0.8), result("beta", CUBE, 0.6))
    assert answer(one, "NG").overall == [] and len(answer(one, "NG").rankings) == 1
    assert answer(one, "FR").rankings == []


def test_a_tied_median_puts_the_model_more_families_rank_first():
    tie = board_of(result("zed", CUBE, 0.8), result("zed", CURE, 0.8), result("bee", CULTDIFF, 0.2, direction="lower"))
    assert [(row["key"], row["median"], row["families"]) for row in answer(tie, "NG").overall] == [
        ("lab__zed", 1, 2), ("lab__bee", 1, 1)]


def test_a_family_with_two_prompt_sets_counts_once_at_its_median_rank():
    """x is 1st of 2 on cube-awareness and 3rd of 3 on cube-diversity: CUBE ranks it 2, once."""
    both = board_of(result("x", CUBE, 0.8), result("y", CUBE, 0.5), result("y", DIVERSITY, 0.9),
                    result("w", DIVERSITY, 0.6), result("x", DIVERSITY, 0.3), result("x", CURE, 0.8))
    x = next(row for row in answer(both, "NG").overall if row["key"] == "lab__x")
    assert (x["ranks"], x["median"], x["families"], x["agree"]) == ({"cube": 2, "cure": 1}, 1.5, 2, 0)


def test_target_ranks_by_distance_and_descriptive_ranks_nobody():
    target = board_of(*(result(m, CUBE, v, direction="target", target=0.5)
                        for m, v in (("far", 0.05), ("near", 0.52), ("mid", 0.75))))
    assert [row["key"] for row in answer(target, "NG").rankings[0].rows] == ["lab__near", "lab__mid", "lab__far"]
    descriptive = answer(board_of(result("a", CUBE, 0.8, direction="none"), result("b", CUBE, 0.2, n_prompts=2,
                                                                                   direction="none")), "NG")
    ranking = descriptive.rankings[0]
    assert (ranking.rows, ranking.unranked, ranking.why) == ([], [], "descriptive: never ranked")


def test_a_headline_only_diagnostic_on_the_country_ranks_nobody_there():
    rows = [{"metric": CUBE, "slice_type": "country", "slice": "NG", "n": 40, "diagnostic": True}]
    results = [result("a", CUBE, 0.8), result("b", CUBE, 0.2)]
    ranking = answer(Board({r.sid: r for r in results}, {}, trust_rows=rows), "NG").rankings[0]
    assert (ranking.rows, ranking.why) == ([], "not ranked: only a diagnostic here")  # the board's own reason


def test_country_page_opens_with_the_answer(tmp_path, board):
    site = Site(tmp_path, {"skipped": [], "footer": {"built": "2026-01-01", "site_code": "x", "results": 9, "code": [],
                                                      "datasets": [], "devices": [], "min_prompts": 5,
                                                      "order": "the point value"},
                           "banner": None, "trust_page": False, "galleries": {}})
    slice_pages(site, board)
    html = (tmp_path / "country/NG.html").read_text()
    top = html[html.index("Which model for this country?"):]
    assert top.index("Overall order") < top.index("Submissions ranked on the prompts of this slice")
    assert 'href="../models/lab__alpha.html">lab / alpha</a>: median rank 1 over 3 families; 2 of 3 agree (their rank range includes 1)' in top
    assert "2 prompts: not ranked" in top and "<strong>CuRe: cultural gaps in the long tail</strong>" in top


def on(r: Result, slice_type: str, slice_: str) -> Result:
    """``r`` with its one entry moved to another slice (a category, as a topic gathers them)."""
    r.entries = {(m, slice_type, slice_): {**e, "slice_type": slice_type, "slice": slice_} for (m, _, _), e in r.entries.items()}
    return r


def test_a_topic_ranks_each_category_and_a_family_on_two_counts_at_its_median():
    """CUBE ranks alpha 1st on cuisine and 2nd on art (median 1.5), beta 2nd and 1st (1.5); CultDiff (lower is
    better) ranks alpha 1st on food, beta 2nd. Overall medians: alpha 1.25, beta 1.75."""
    alpha_art, beta_art = on(result("alpha", CUBE, 0.3), "category", "art"), on(result("beta", CUBE, 0.9), "category", "art")
    results = [on(result("alpha", CUBE, 0.8), "category", "cuisine"), on(result("beta", CUBE, 0.6), "category", "cuisine"),
               *(on(result(m, CULTDIFF, v, direction="lower"), "category", "food") for m, v in (("alpha", 0.2), ("beta", 0.6)))]
    for r, art in zip(results[:2], (alpha_art, beta_art)):
        r.entries |= art.entries
    topic = board_of(*results)
    got = slices_answer(topic, [("category", "cuisine"), ("category", "art"), ("category", "food")])
    assert [(k.family, k.slice, [row["key"] for row in k.rows]) for k in got.rankings] == [
        ("cube", "cuisine", ["lab__alpha", "lab__beta"]), ("cube", "art", ["lab__beta", "lab__alpha"]),
        ("cultdiff", "food", ["lab__alpha", "lab__beta"])]
    assert [(row["key"], row["ranks"], row["median"]) for row in got.overall] == [
        ("lab__alpha", {"cube": 1.5, "cultdiff": 1}, 1.25), ("lab__beta", {"cube": 1.5, "cultdiff": 2}, 1.75)]
    assert slices_answer(topic, [("country", "NG")]).rankings == []
