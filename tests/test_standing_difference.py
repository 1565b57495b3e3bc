"""The paired difference of the scores comment (site/standing.py) never claims certainty it lacks: a bounded and
discrete headline gets the Wilson interval on [-W, W], and units that all differ by one amount get no CI."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from cultureboard.evaluators.results.stats import wilson_interval
from cultureboard.site.load import Result
from cultureboard.site.standing import _difference, _difference_bounds

METRIC = "toy.acc"


def _result(sid: str, values: dict[str, float]) -> Result:
    scores = pd.DataFrame([{"metric": METRIC, "unit_id": u, "value": v} for u, v in values.items()])
    return Result(sid, {}, scores, {}, Path(sid), [], {})


def _card(**kw) -> dict:
    return {"name": METRIC, "direction": "higher", "target": None, "bounded": None} | kw


def test_four_units_each_one_better_are_not_certain():
    """A 0/1 accuracy where the new model gets all four units right and the other none: every d_u is 1. The
    bootstrap would give [1, 1]; the Wilson interval on [-1, 1] is 2 x [4 / (4 + z^2), 1] - 1, still above 0."""
    new, other = _result("new", dict.fromkeys("abcd", 1.0)), _result("other", dict.fromkeys("abcd", 0.0))
    d = _difference(new, other, METRIC, _card(bounded=[0.0, 1.0]), n_boot=200, seed=0)
    low, high = wilson_interval(1.0, 4)
    assert (d["value"], d["ci_low"], d["ci_high"]) == pytest.approx((1.0, 2 * low - 1, 2 * high - 1))
    assert d["verdict"] == "better" and d["ci_low"] < d["ci_high"]
    unbounded = _difference(new, other, METRIC, _card(), n_boot=200, seed=0)
    assert (unbounded["ci_low"], unbounded["ci_high"], unbounded["verdict"]) == (None, None, "no spread to test")


def test_the_bounds_of_a_difference_of_goodness():
    assert _difference_bounds(_card()) is None
    assert _difference_bounds(_card(bounded=[0.0, 1.0], direction="lower")) == (-1.0, 1.0)
    assert _difference_bounds(_card(bounded=[-2.0, 2.0], direction="target", target=0.5)) == (-2.5, 2.5)
