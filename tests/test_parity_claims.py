"""A language-parity gap is claimed only where its base metric is above chance (issue 33): a model that draws the
same picture whatever the prompt has a zero-shot country probability at chance (1 / number of countries) and a
perfect gap of 0; neither it nor a model at chance with a "significant" gap gets the "language gap" badge, both
are marked "base at chance", and a model above chance with the same gap is badged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cultureboard.evaluators.results.aggregate import summarize
from cultureboard.evaluators.results.disparity import base_at_chance
from cultureboard.site import leaderboards
from cultureboard.site.board import Board
from cultureboard.site.load import Result
from cultureboard.site.models import _language_table

PS = "cube-awareness-native"
BASE, GAP = "cube.cultural_relevance", "cube.cultural_relevance.parity"
COUNTRIES = ["ES", "NG", "JP"]
#: One picture for every prompt: the zero-shot classifier gives it these probabilities of the three countries, so
#: the mean over balanced prompts of p(prompt's country) is (0.5 + 0.3 + 0.2) / 3 = 1/3, the chance level.
SAME_PICTURE = {"ES": 0.5, "NG": 0.3, "JP": 0.2}


def _card(name: str) -> dict:
    gap = name == GAP
    return {"name": name, "title": name, "direction": "target" if gap else "higher", "target": 0.0 if gap else None,
            "family": "cube", "unit": "pair" if gap else "image", "formula": "", "range": "[0, 1]", "source": "",
            "scorers": [], "version": 1, "validity": [], "chance": "1 / number of countries of the prompt set",
            "proxy_for": None, "tier": "validated", "smallest_difference": 0.01}


def _entries(metric: str, unit: str, values: dict[str, list[float]], tested: bool = False) -> dict:
    """Overall and language entries of ``metric`` from :func:`summarize` over one unit per value."""
    rows = [{"metric": metric, "unit_id": f"{lang}{i}", "sample_idx": None, "file_name": None, "value": v,
             "detail": None, "flag": None, "language": lang} for lang, vs in values.items() for i, v in enumerate(vs)]
    expected = {unit: {r["unit_id"]: {"language": r["language"]} for r in rows}}
    out = summarize(pd.DataFrame(rows), {metric: unit}, expected, ("overall", "language"), n_boot=2000,
                    tested={metric: 0.0} if tested else None)
    return {(metric, e["slice_type"], e["slice"]): e for e in out}


def _result(model: str, base: dict[str, list[float]], gap: dict[str, list[float]]) -> Result:
    entries = _entries(BASE, "image", base) | _entries(GAP, "pair", gap, tested=True)
    summary = {"provenance": {"prompt_set": PS, "dataset": {"revision": "r1"}, "dtype": "fp32", "scorers": [],
                              "metrics": {BASE: 1, GAP: 102}, "options": {}, "settings": {},
                              "notes": {BASE: {"chance": 1 / len(COUNTRIES)}}},
               "metrics": list(entries.values()), "metrics_info": [_card(BASE), _card(GAP)]}
    spec = {"organization": "lab", "model": {"name": model}}
    return Result(f"lab__{model}", summary, pd.DataFrame(columns=["metric", "value"]), spec, Path(model), [], entries,
                  display=model)


#: Each language's eight prompts: in yo (the native language) the model scores 0.1 lower than in en.
SHIFTED = {"yo": [-0.1, -0.12, -0.08, -0.11, -0.09, -0.1, -0.13, -0.07]}
#: The same picture for every prompt, eight per country, in both languages: the base at chance and no gap at all.
SAME = [SAME_PICTURE[c] for c in COUNTRIES for _ in range(8)]


@pytest.fixture(scope="module")
def board() -> Board:
    one_picture = _result("one-picture", {"en": SAME, "yo": SAME}, {"yo": [0.0] * 8})
    noise = _result("noise", {"en": SAME, "yo": SAME}, SHIFTED)  # at chance, yet a "significant" gap
    skilled = _result("skilled", {"en": [0.8, 0.7, 0.9, 0.75] * 6, "yo": [0.7, 0.6, 0.8, 0.65] * 6}, SHIFTED)
    return Board({r.sid: r for r in (one_picture, noise, skilled)}, {})


def _labels(board: Board, sid: str, slice_type: str = "overall", slice_: str = "all") -> list[str]:
    marks = leaderboards.marks(board, board.results[sid], [BASE, GAP], slice_type, slice_)
    return [m["label"] for m in marks.get(GAP, [])]


def test_the_same_picture_whatever_the_prompt_is_at_chance_and_claims_no_gap(board):
    r = board.results["lab__one-picture"]
    base = r.entries[(BASE, "overall", "all")]
    assert base["value"] == pytest.approx(1 / 3) and base["ci_low"] < 1 / 3  # the premise, from the summary
    assert r.entries[(GAP, "overall", "all")]["value"] == 0.0  # the perfect gap a ranking by |gap| would reward
    assert board.chance(r, BASE) == pytest.approx(1 / 3)
    assert board.base_at_chance(r, GAP, "overall", "all") and _labels(board, r.sid) == ["base at chance"]


def test_a_significant_gap_is_claimed_only_above_chance(board):
    for sid in ("lab__noise", "lab__skilled"):  # the premise: both gaps would be badged on their own
        gap = board.results[sid].entries[(GAP, "overall", "all")]
        assert gap["p_adjusted"] < 0.05 and gap["ci_high"] < -0.01
        assert [b["label"] for b in leaderboards.gap_badge(gap, 0.01)] == ["language gap"]
    assert _labels(board, "lab__noise") == ["base at chance"]
    assert _labels(board, "lab__skilled") == ["language gap"]
    assert not board.base_at_chance(board.results["lab__skilled"], GAP, "overall", "all")
    assert not board.base_at_chance(board.results["lab__skilled"], BASE, "overall", "all")  # not a gap


def test_the_model_page_language_table_follows_the_same_rule(board):
    _, rows = _language_table(board, [board.results["lab__noise"], board.results["lab__skilled"]])
    found = {r["submission"]["text"]: [m["label"] for m in r.get("_marks", {}).get("gap", [])] for r in rows
             if r["language"] == "yo"}
    assert found == {"lab__noise": ["base at chance"], "lab__skilled": ["language gap"]}


def test_base_at_chance_by_hand():
    assert base_at_chance({"value": 0.4, "ci_low": 0.3, "ci_high": 0.5}, 1 / 3)  # the interval reaches chance
    assert not base_at_chance({"value": 0.4, "ci_low": 0.34, "ci_high": 0.5}, 1 / 3)
    assert base_at_chance({"value": 0.25, "ci_low": None, "ci_high": None}, 0.25)  # no interval: its value
    assert not base_at_chance({"value": 0.2, "ci_low": 0.1, "ci_high": 0.3}, None)  # no chance level known
    assert not base_at_chance({"value": 0.2, "ci_low": 0.1, "ci_high": 0.3}, "1 / number of countries")
    assert not base_at_chance(None, 0.25) and not base_at_chance({"value": None}, 0.25)
    assert np.isclose(np.mean(SAME), 1 / 3)
