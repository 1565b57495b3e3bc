"""Where a control lands among the models, by the card's direction, and the "gameable" badge of a metric a cheat
tops (cultureboard.site.gaming), on hand-made values."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cultureboard.evaluators.results.stats import goodness as goodness_of
from cultureboard.site.gaming import CHEATS, badge, group_standings, marks, standings
from cultureboard.site.names import MIN_PROMPTS


def goodness(direction, target, value):
    """The site's one orientation rule (stats.goodness) for one value."""
    return float(goodness_of([value], direction, target)[0])


MODELS = [0.2, 0.5, 0.8]


def _where(direction, models, value, kind="text-only", target=None):
    [s] = standings({"direction": direction, "target": target}, models, [("control__x", kind, value)])
    return s.beats, s.rank, s.tops, s.gameable


@pytest.mark.parametrize("value, expected", [
    (0.9, (3, 1, True, True)),   # above every model: tops, a cheat makes the metric gameable
    (0.6, (2, 2, False, False)),  # beats 0.2 and 0.5; 0.8 is better
    (0.8, (2, 1, False, False)),  # a tie with the best model takes its rank but does not top it
    (0.5, (1, 2, False, False)),
    (0.1, (0, 4, False, False)),
])
def test_higher_is_better(value, expected):
    assert _where("higher", MODELS, value) == expected


@pytest.mark.parametrize("value, expected", [(0.1, (3, 1, True, True)), (0.6, (1, 3, False, False)),
                                             (0.9, (0, 4, False, False))])
def test_lower_is_better(value, expected):
    assert _where("lower", MODELS, value) == expected


@pytest.mark.parametrize("value, expected", [
    (-0.05, (3, 1, True, True)),  # |v| = 0.05: closest to the target
    (0.2, (2, 2, False, False)),  # |v| = 0.2 beats 0.3 and 0.4 (a signed "lower" would say it beats one)
    (-0.5, (0, 4, False, False)),  # the most negative: best under "lower", worst under target 0
])
def test_target_ranks_by_distance_to_the_target(value, expected):
    assert _where("target", [-0.3, 0.1, 0.4], value, target=0.0) == expected
    # the distance is to the card's target, not to zero
    assert _where("target", [1.7, 2.1, 2.4], value + 2, target=2.0) == expected


def test_goodness_is_larger_for_better():
    assert goodness("higher", None, 0.3) > goodness("higher", None, 0.2)
    assert goodness("lower", None, 0.2) > goodness("lower", None, 0.3)
    assert goodness("target", 1.0, 0.9) > goodness("target", 1.0, 1.2) == pytest.approx(-0.2)
    with pytest.raises(ValueError):
        goodness("none", None, 0.5)


def test_only_a_cheat_makes_a_metric_gameable():
    assert set(CHEATS) == {"text-only", "category-images", "unedited", "written-prompt"}
    for kind in CHEATS:
        assert _where("higher", MODELS, 0.9, kind=kind)[3]
    # the reference photographs are the ceiling: topping the models is expected of them
    assert _where("higher", MODELS, 0.9, kind="reference-photos") == (3, 1, True, False)


def test_nothing_to_place():
    card = {"direction": "higher", "target": None, "tier": "validated"}
    assert standings({"direction": "none", "target": None}, MODELS, [("c", "unedited", 0.9)]) == []  # never ranked
    assert standings(card, [None], [("c", "unedited", 0.9)]) == []  # no model to compare with
    assert standings(card, [None, 0.5], [("c", "unedited", None)]) == []  # the control has no value
    [s] = standings(card, [None, 0.5], [("c", "unedited", 0.4)])  # a model without a value is left out
    assert (s.beats, s.models, s.rank) == (0, 1, 2)
    assert s.text == "c (unedited) scores 0.400: beats 0 of 1 model(s), would rank 2 of 2"
    [s] = standings(dict(card, tier="diagnostic"), [None, 0.5], [("c", "unedited", 0.4)])  # a tier without ranks
    assert s.text == "c (unedited) scores 0.400: beats 0 of 1 model(s)" and not s.ranked


def _board(direction, models, controls, metric="m", target=None, tier="validated"):
    """A duck-typed board and group: results' and controls' overall entries of ``metric``, and one slice."""
    def result(sid, value, control=None):
        return SimpleNamespace(sid=sid, control=control, entries={
            (metric, "overall", "all"): {"value": value, "n_prompts": MIN_PROMPTS},
            (metric, "country", "IT"): {"value": -value, "n_prompts": MIN_PROMPTS},
            (metric, "country", "NG"): {"value": value, "n_prompts": MIN_PROMPTS - 1}})
    group = SimpleNamespace(results=[result(f"lab__m{k}", v) for k, v in enumerate(models)],
                            controls=[result(f"control__{kind}", v, kind) for kind, v in controls])
    return SimpleNamespace(cards={metric: {"direction": direction, "target": target, "tier": tier}}), group


def test_badge_and_marks_of_a_group():
    board, group = _board("lower", [0.3, 0.4], [("unedited", 0.0), ("reference-photos", 0.35)])
    found = {s.control: (s.beats, s.rank) for s in group_standings(board, group, "m")}
    assert found == {"control__unedited": (2, 1), "control__reference-photos": (1, 2)}
    b = badge(board, group, "m")
    assert b["label"] == "gameable" and "control__unedited (unedited) scores 0.000" in b["title"]
    assert "reference-photos" not in b["title"]
    assert marks(board, group, "control__unedited", "m", "overall", "all") == [
        {"label": "would rank 1 of 3, gameable", "title": "control__unedited (unedited) scores 0.000: beats 2 of 2 "
                                                          "model(s), would rank 1 of 3"}]
    # in another slice the values differ (negated here): the unedited control is then last
    assert marks(board, group, "control__unedited", "m", "country", "IT")[0]["label"] == "would rank 3 of 3"
    assert marks(board, group, "lab__m0", "m", "overall", "all") == []  # a model row has no such mark
    unranked, group_u = _board("lower", [0.3, 0.4], [("unedited", 0.0)], tier="diagnostic")
    assert marks(unranked, group_u, "control__unedited", "m", "overall", "all")[0]["label"] == "beats 2 of 2, gameable"
    assert marks(board, group, "control__unedited", "m", "country", "NG") == []  # too few prompts to rank
    board, group = _board("higher", [0.3, 0.4], [("unedited", 0.0), ("reference-photos", 0.9)])
    assert badge(board, group, "m") is None  # only the ceiling tops the models
    board, group = _board("none", [0.3, 0.4], [("unedited", 0.0)])
    assert badge(board, group, "m") is None and group_standings(board, group, "m") == []
