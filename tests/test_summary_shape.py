"""What the site reads from an evaluator summary (site/load.py shape_problem): each scorer, metric entry and card
is checked field by field, whichever path (the fast one for the common well-formed item, or the full one) checks
it, and a card's direction is checked with its target. Fast: a hand-made summary."""

from __future__ import annotations

import copy

import pytest

from cultureboard.site.load import shape_problem

CARD = {"name": "m.a", "title": "A", "direction": "higher", "family": "f", "unit": "score", "formula": "mean",
        "range": "[0, 1]", "source": "paper", "scorers": ["clip"], "version": 1, "validity": [], "chance": None,
        "proxy_for": None}
SUMMARY = {
    "provenance": {"prompt_set": "ps", "dtype": "float32", "device": "cpu", "dataset": {"revision": "r", "folder": "d"},
                   "submission": {"sha256": "0" * 64}, "code": {"cultureboard": "0.1", "python": "3.11",
                   "git": {"commit": None, "dirty": False}, "packages": {}}, "settings": {}, "metrics": {},
                   "options": {}, "scorers": [{"name": "clip", "model_id": "openai/clip", "revision": "abc"}]},
    "metrics": [{"metric": "m.a", "slice_type": "overall", "slice": "all", "value": 0.5, "ci_low": 0.4,
                 "ci_high": 0.6, "n_images": 8, "n_prompts": 4, "coverage": 1.0}],
    "metrics_info": [CARD, {**CARD, "name": "m.t", "direction": "target", "target": 0.0}],
}


def changed(path: str, value) -> dict:
    summary = copy.deepcopy(SUMMARY)
    *parents, last = path.split(".")
    node = summary
    for key in parents:
        node = node[int(key)] if key.isdigit() else node[key]
    if value is KeyError:
        del node[last]
    else:
        node[last] = value
    return summary


def test_a_well_formed_summary_has_no_problem():
    assert shape_problem(SUMMARY) is None


@pytest.mark.parametrize(("path", "value", "problem"), [
    ("provenance.scorers.0.name", 1, "provenance.scorers[0] lacks a well-formed name"),
    ("provenance.scorers.0.revision", KeyError, "provenance.scorers[0] lacks a well-formed revision"),
    ("metrics_info.0.version", "1", "metrics_info[0] lacks a well-formed version"),
    ("metrics_info.0.version", True, "metrics_info[0] lacks a well-formed version"),
    ("metrics_info.1.scorers", "clip", "metrics_info[1] lacks a well-formed scorers"),
    ("metrics_info.0.chance", KeyError, "metrics_info[0] lacks a well-formed chance"),
    ("metrics_info.0.direction", "up", "metrics_info[0] has the direction 'up'"),
    ("metrics_info.1.target", None, "metrics_info[1] has the direction 'target' with the target None"),
    ("metrics_info.0.target", 0.5, "metrics_info[0] has the direction 'higher' with the target 0.5"),
    ("metrics.0.n_images", 8.0, "metrics[0] lacks a well-formed n_images"),
])
def test_each_bad_field_is_named(path, value, problem):
    assert problem in shape_problem(changed(path, value))


def test_a_card_of_a_subclass_of_its_kinds_goes_through_the_full_check():
    class Text(str):
        pass

    assert shape_problem(changed("metrics_info.0.title", Text("A"))) is None
