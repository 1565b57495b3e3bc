"""Badges need the Benjamini-Hochberg q, not the marginal p: on the site, a country whose gap has p < 0.05 but
q >= 0.05 (one of ten countries tested) gets no "under-represented" badge (Board, the submission page's gap table,
the disparity ranking, the model page's country table), and a language gap with p < 0.05 but q >= 0.05 across
five countries gets no "language gap" badge. The same country alone (q = p) is badged, so the test can fail.

The numbers come from the real code paths (:func:`disparity.gaps` through :class:`Board`, :func:`summarize` for
the parity entries), never typed in; each premise (p < 0.05 <= q) is asserted before the badge is."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from cultureboard.evaluators.engine.registry import IMAGE_UNIT
from cultureboard.evaluators.results.aggregate import summarize
from cultureboard.evaluators.results.disparity import SIGNIFICANT
from cultureboard.site import details, figures
from cultureboard.site.board import Board
from cultureboard.site.leaderboards import gap_badge
from cultureboard.site.load import Result

METRIC = "toy.score"
COUNTRIES = ["DE", "EG", "ES", "FR", "GH", "IN", "IT", "JP", "KE", "NG"]
#: Nigeria's prompts score this much below the others' (each country has the same eight values, permuted): its
#: gap is -0.0108, permutation p 0.027, BH q over the ten countries and the GN - GS gap 0.3, and its marginal 95% CI
#: lies below zero.
SHIFT = 0.012


def _card() -> dict:
    return {"name": METRIC, "title": "Score", "direction": "higher", "family": "toy", "unit": IMAGE_UNIT,
            "formula": "", "range": "[0, 1]", "source": "", "scorers": [], "version": 1, "validity": [],
            "chance": None, "proxy_for": None}


def _result(countries: list[str], shift: float = SHIFT) -> Result:
    rows = [{"metric": METRIC, "unit_id": f"{c}{i}", "prompt_id": f"{c}{i}", "flag": None, "country": c,
             "value": 0.5 + 0.05 * ((i * 7 + COUNTRIES.index(c) * 3) % 8) / 8 - (shift if c == "NG" else 0)}
            for c in countries for i in range(8)]
    spec = {"organization": "lab", "model": {"name": "m", "id": "lab/m"}}
    entries = {(METRIC, t, s): {"value": 0.5, "ci_low": 0.49, "ci_high": 0.51, "n_images": 8, "n_prompts": 8,
                                "coverage": 1.0, "complete": True}
               for t, s in [("overall", "all")] + [("country", c) for c in countries]}
    summary = {"provenance": {"prompt_set": "toy-set", "dataset": {"revision": "r1"}, "dtype": "fp32", "scorers": [],
                              "metrics": {METRIC: 1}, "options": {}, "settings": {"n_boot": 1000, "seed": 0,
                                                                                  "ci_level": 0.95}},
               "metrics": [], "metrics_info": [_card()]}
    return Result("lab__m__toy-set", summary, pd.DataFrame(rows), spec, Path("lab__m__toy-set"), [], entries,
                  display="lab / m")


@pytest.fixture(scope="module")
def boards():
    """(Nigeria :data:`SHIFT` below, Nigeria 0.03 below) among ten countries, on real boards."""
    return tuple(Board({r.sid: r}, {}) for r in (_result(COUNTRIES), _result(COUNTRIES, 0.03)))


def _nigeria(board: Board):
    (r,) = board.results.values()
    return r, next(g for g in board.gaps(r, METRIC) if g.name == "NG")


def test_a_significant_p_that_bh_does_not_keep_badges_no_country(boards):
    many, clear = boards
    r, ng = _nigeria(many)
    assert ng.p < SIGNIFICANT <= ng.p_adjusted and ng.high < 0  # the premise: p, and the marginal CI, say "worse"
    assert many.under_represented(r, METRIC) == []
    rows = details._gap_rows(many, r, [METRIC])
    assert len(rows) == len(COUNTRIES) + 1 and not any("_marks" in row for row in rows)  # + the GN - GS gap
    (group,) = many.groups["toy-set"]
    (row,) = figures.disparity_rows(many, group)
    assert row["n_worse"] == 0
    # the control: a gap BH keeps (p 0.001, q 0.011) is badged on every one of those pages
    r2, ng2 = _nigeria(clear)
    assert ng2.p_adjusted < SIGNIFICANT and clear.under_represented(r2, METRIC) == ["NG"]
    assert [row["kind"] for row in details._gap_rows(clear, r2, [METRIC]) if "_marks" in row] == ["Nigeria (NG)"]
    (group,) = clear.groups["toy-set"]
    assert figures.disparity_rows(clear, group)[0]["n_worse"] == 1


def _parity_entries(countries: int) -> dict[str, dict]:
    """Parity-like entries from :func:`summarize` (tested against 0): Spain's seven pairs all above 0 (sign flip
    p = 2 / 2^7 = 1/64), each other country's pairs symmetric about 0 (p = 1)."""
    gaps = {"ES": [0.1, 0.2, 0.3, 0.15, 0.25, 0.05, 0.12]}
    for c in ["FR", "IT", "JP", "NG"][:countries - 1]:
        gaps[c] = [0.1, -0.1, 0.2, -0.2, 0.05, -0.05]
    rows = [{"metric": "toy.score.parity", "unit_id": f"{c}{i}", "sample_idx": None, "file_name": None, "value": v,
             "detail": None, "flag": None, "country": c} for c, vs in gaps.items() for i, v in enumerate(vs)]
    expected = {"pair": {f"{c}{i}": {"country": c} for c, vs in gaps.items() for i in range(len(vs))}}
    out = summarize(pd.DataFrame(rows), {"toy.score.parity": "pair"}, expected, ("country",), n_boot=4000,
                    tested={"toy.score.parity": 0.0})
    return {e["slice"]: e for e in out}


def test_a_language_gap_with_p_below_005_but_q_above_is_not_badged():
    spain = _parity_entries(5)["ES"]
    assert spain["p"] == pytest.approx(1 / 64, abs=0.006) and spain["p"] < SIGNIFICANT <= spain["p_adjusted"]
    assert gap_badge(spain) == []
    alone = _parity_entries(1)["ES"]  # one country: q = p
    assert alone["p_adjusted"] == alone["p"] < SIGNIFICANT and [b["label"] for b in gap_badge(alone)] == [
        "language gap"]
