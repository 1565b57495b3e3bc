"""Card-stated gates (evaluators/results/gates.py, applied by site.board.Board): CuRe's Delta phi_PS ranks only
jointly with a name-knowledge score, ECB's headline only over chains whose edits changed the image. Each gate is
tested on its control: with the card's tier forced to a ranked one, the cheat tops every model until the gate
removes it, and stripping the gate (breaking it on purpose) brings the cheat back on top."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cultureboard.evaluators.engine.registry import metric_cards
from cultureboard.evaluators.results.gates import (
    admitted,
    clears_joint,
    gate_problem,
    joint_floor,
    last_values,
    units_floor,
)
from cultureboard.evaluators.results.stats import bounded_ci
from cultureboard.evaluators.results.tiers import record_problem
from cultureboard.site.board import Board
from cultureboard.site.gaming import cheats_on_top
from cultureboard.site.load import Result

PS, GT, ITA = "cure.ps_delta.c", "cure.gt", "cure.ita.cr"
ACC, DREAM = "ecb.culture.accuracy_last", "ecb.dreamsim.base"
SETTINGS = {"n_boot": 200, "seed": 0, "ci_level": 0.95}


def _card(name: str, ranked: bool = True, gate: bool = True) -> dict:
    card = metric_cards()[name].to_dict()
    if ranked:  # force a ranked tier: the gate, not the tier, must keep the cheat off the top
        card["tier"] = "validated"
    if not gate:
        card["gate"] = None
    return card


def _entry(value, low=None, high=None, n=8):
    return {"value": value, "ci_low": low, "ci_high": high, "n_images": n, "n_prompts": n, "coverage": 1.0,
            "complete": True}


def _result(sid, prompt_set, cards, entries, scores=None, control=None) -> Result:
    summary = {"provenance": {"prompt_set": prompt_set, "dataset": {"revision": "r1"}, "dtype": "fp32",
                              "scorers": [], "metrics": {c["name"]: c["version"] for c in cards}, "options": {},
                              "settings": SETTINGS},
               "metrics": [], "metrics_info": cards}
    keyed = {(m, "overall", "all"): e for m, e in entries.items()}
    return Result(sid, summary, pd.DataFrame(scores or [], columns=_COLUMNS), {"organization": "lab", "model": {
        "name": sid}}, Path(sid), [], keyed, display=sid, control=control)


_COLUMNS = ["metric", "unit_id", "prompt_id", "sample_idx", "file_name", "value", "detail", "flag", "edit_step"]


# --- CuRe: Delta phi_PS jointly with a name-knowledge score

#: (ps_delta, phi_GT, phi_ITA) entries. The category-images control scores exactly 0 (the target) on Delta phi_PS;
#: its phi_GT is 0.30 and phi_ITA 0.20. Model a clears the control on phi_GT (0.42 - 0.30 >= 0.01), model b
#: only on phi_ITA (0.25 - 0.20), model c on neither (its lower ends 0.305 and 0.205 are within 0.01).
CURE = {
    "lab__a": (_entry(0.06, 0.04, 0.08), _entry(0.45, 0.42, 0.48), _entry(0.21, 0.19, 0.23)),
    "lab__b": (_entry(-0.10, -0.13, -0.07), _entry(0.31, 0.29, 0.33), _entry(0.27, 0.25, 0.29)),
    "lab__c": (_entry(0.02, 0.01, 0.03), _entry(0.32, 0.305, 0.34), _entry(0.22, 0.205, 0.24)),
}
CATEGORY = (_entry(0.0), _entry(0.30, 0.28, 0.32), _entry(0.20, 0.18, 0.22))


def _cure_board(gate: bool = True, control: bool = True, ranked: bool = True) -> Board:
    cards = [_card(PS, ranked, gate), _card(GT, ranked=False), _card(ITA, ranked=False)]
    members = dict(CURE) | ({"control__category": CATEGORY} if control else {})
    results = [_result(sid, "cure-ladder", cards, dict(zip((PS, GT, ITA), e)),
                       control="category-images" if sid.startswith("control") else None)
               for sid, e in members.items()]
    return Board({r.sid: r for r in results}, {})


def test_delta_ps_ranks_only_jointly_with_name_knowledge():
    board = _cure_board()
    (group,) = board.groups["cure-ladder"]
    gated = board.gated(group, PS, "overall", "all")
    assert {sid for sid, e in gated.items() if e} == {"lab__a", "lab__b"}  # c, and the control, take no part
    assert cheats_on_top(board, group, PS) == [] and board.unranked(group, PS, "overall", "all") == ""
    ranks = board.ranks(group, PS, "overall", "all")
    assert sorted(ranks) == ["lab__a", "lab__b"]
    assert ranks["lab__a"]["rank"] == 1 and ranks["lab__b"]["rank"] == 2  # |0.06| is closer to 0 than |-0.10|


def test_without_its_gate_the_category_images_cheat_tops_delta_ps():
    board = _cure_board(gate=False)  # the gate broken on purpose: the cheat is back on top
    (group,) = board.groups["cure-ladder"]
    (cheat,) = cheats_on_top(board, group, PS)
    assert (cheat.control, cheat.value) == ("control__category", 0.0)
    assert board.unranked(group, PS, "overall", "all").startswith("not ranked: a cheat tops every model")
    assert board.ranks(group, PS, "overall", "all") == {}


def test_a_gate_without_its_control_cannot_be_tested():
    board = _cure_board(control=False)
    (group,) = board.groups["cure-ladder"]
    assert board.unranked(group, PS, "overall", "all") == (
        "not ranked: its gate needs the category-images control on the board to be tested")
    assert board.ranks(group, PS, "overall", "all") == {}
    assert set(board.gated(group, PS, "overall", "all").values()) == {None}  # no floor: nobody clears it


def test_the_card_tier_still_decides_first():
    board = _cure_board(ranked=False)  # Delta phi_PS is "arrow only": shown, never ranked, gate or not
    (group,) = board.groups["cure-ladder"]
    assert board.unranked(group, PS, "overall", "all") == "not ranked: arrow only (the evidence page says why)"


def test_joint_floor_and_clearance_by_hand():
    assert joint_floor([0.30, None, 0.25], "higher") == 0.30
    assert joint_floor([None], "higher") is None
    assert joint_floor([0.3, -0.1], "target", 0.0) == pytest.approx(-0.1)  # the best: closest to the target
    assert clears_joint(_entry(0.45, 0.42, 0.48), 0.30, "higher", smallest=0.01)
    assert not clears_joint(_entry(0.32, 0.305, 0.34), 0.30, "higher", smallest=0.01)
    assert clears_joint(_entry(0.32, 0.305, 0.34), 0.30, "higher", smallest=0.0)
    assert not clears_joint(_entry(0.45), 0.30, "higher")  # no interval: never clears
    assert not clears_joint(CATEGORY[1], 0.30, "higher")  # the control on its own value
    # a lower-is-better score: the pessimistic end is the upper one
    assert clears_joint(_entry(0.10, 0.05, 0.18), -0.20, "lower", smallest=0.01)
    assert not clears_joint(_entry(0.10, 0.05, 0.195), -0.20, "lower", smallest=0.01)


# --- ECB: the headline over chains whose edits changed the image

CHAINS = [f"ecb/c{k}" for k in range(8)]


def _ecb_scores(accuracy: list[float], last_distance: list[float]) -> list[dict]:
    """One accuracy_last row per chain (sample 0, in its detail) and the chain's DreamSim distances from the base
    at steps 1..5, the last one ``last_distance`` (steps before it: half of it)."""
    rows = []
    for chain, acc, dist in zip(CHAINS, accuracy, last_distance):
        rows.append({"metric": ACC, "unit_id": chain, "prompt_id": None, "sample_idx": None, "file_name": None,
                     "value": acc, "detail": json.dumps({"images": 6, "sample_idx": 0, "last_step": 5}), "flag": None,
                     "edit_step": None})
        for step in range(1, 6):
            rows.append({"metric": DREAM, "unit_id": chain, "prompt_id": f"{chain}/edit/{step}", "sample_idx": 0,
                         "file_name": f"{chain}-{step}.png", "value": dist if step == 5 else dist / 2,
                         "detail": json.dumps({"images": 1}), "flag": None, "edit_step": step})
    return rows


#: (accuracy per chain, last-step DreamSim distance per chain). Model a edits every chain; model b leaves three
#: chains unchanged (distance 0), and those keep a perfect accuracy; the unedited control changes nothing and keeps
#: its base's accuracy everywhere (0.75: the best value on the board).
ECB = {
    "lab__a": ([0.5, 0.5, 0.75, 0.5, 0.25, 0.5, 0.75, 0.5], [0.3] * 8),
    "lab__b": ([0.25, 0.5, 0.25, 0.5, 0.25, 1.0, 1.0, 1.0], [0.2] * 5 + [0.0] * 3),
    "control__unedited": ([0.75] * 8, [0.0] * 8),
}


def _ecb_board(gate: bool = True) -> Board:
    cards = [_card(ACC, gate=gate), _card(DREAM, ranked=False)]
    results = []
    for sid, (acc, dist) in ECB.items():
        entry = _entry(float(np.mean(acc)), *bounded_ci([[a] for a in acc], (0.0, 1.0))[1:])
        results.append(_result(sid, "ecb", cards, {ACC: entry}, _ecb_scores(acc, dist),
                               control="unedited" if sid.startswith("control") else None))
    return Board({r.sid: r for r in results}, {})


def test_ecb_headline_ranks_only_chains_whose_edits_changed_the_image():
    board = _ecb_board()
    (group,) = board.groups["ecb"]
    gated = board.gated(group, ACC, "overall", "all")
    assert gated["control__unedited"] is None  # no chain of the control moved from its base
    a, b = gated["lab__a"], gated["lab__b"]
    assert (a["value"], a["n_prompts"]) == (0.53125, 8)  # every chain changed: the entry as scored
    assert (b["value"], b["n_prompts"]) == (0.35, 5)  # (0.25 + 0.5 + 0.25 + 0.5 + 0.25) / 5: its edited chains
    ci = bounded_ci([[0.25], [0.5], [0.25], [0.5], [0.25]], (0.0, 1.0))
    assert (b["ci_low"], b["ci_high"]) == pytest.approx((ci.low, ci.high))  # the Wilson interval of those chains
    assert cheats_on_top(board, group, ACC) == [] and board.unranked(group, ACC, "overall", "all") == ""
    ranks = board.ranks(group, ACC, "overall", "all")
    assert sorted(ranks) == ["lab__a", "lab__b"] and (ranks["lab__a"]["rank"], ranks["lab__b"]["rank"]) == (1, 2)
    # as scored, b's unchanged chains lift it above a (0.59375 > 0.53125): the gate reverses that order
    assert board.results["lab__b"].entries[(ACC, "overall", "all")]["value"] == 0.59375


def test_without_its_gate_the_unedited_cheat_tops_ecb():
    board = _ecb_board(gate=False)
    (group,) = board.groups["ecb"]
    (cheat,) = cheats_on_top(board, group, ACC)
    assert (cheat.control, cheat.value) == ("control__unedited", 0.75)
    assert board.ranks(group, ACC, "overall", "all") == {}


def test_last_values_and_the_floor_by_hand():
    rows = pd.DataFrame(_ecb_scores([0.5] * 8, [0.1 * k for k in range(8)]), columns=_COLUMNS)
    last = last_values(rows[rows["metric"] == DREAM])
    assert last[("ecb/c3", 0)] == pytest.approx(0.3)  # step 5's distance, not step 1-4's (0.15)
    assert units_floor([{("x", 0): 0.0, ("y", 0): 0.02}, {}]) == 0.02 and units_floor([{}]) is None
    assert admitted(last, 0.25) == {(f"ecb/c{k}", 0) for k in (3, 4, 5, 6, 7)}  # strictly above


def test_gates_are_data_on_the_cards():
    cards = metric_cards()
    assert cards[PS].to_dict()["gate"]["with"] == [GT, ITA]
    assert {n for n, c in cards.items() if (c.to_dict()["gate"] or {}).get("control") == "category-images"} == {
        f"cure.ps_delta.{a}{e}" for a in ("c", "cr") for e in ("", ".dinov2", ".aimv2")}
    assert cards[ACC].to_dict()["gate"] == {**cards[ACC].to_dict()["gate"], "kind": "units", "by": DREAM,
                                            "control": "unedited"}
    assert cards[GT].to_dict()["gate"] is None
    base = {"evidence": "arrow", "source": "s", "smallest_difference": {"value": 0.01, "reason": "r"}}
    assert record_problem({**base, "gate": {"kind": "joint", "with": [GT], "control": "x", "reason": "r"}}) is None
    assert record_problem({**base, "gate": {"kind": "joint", "with": [], "control": "x", "reason": "r"}}) == (
        "a joint gate's with is a non-empty list of metric names")
    assert gate_problem({"kind": "units", "with": [GT], "control": "x", "reason": "r"}) == (
        "a units gate has exactly the keys by, control, kind, reason")
    assert gate_problem({"kind": "pass"}).startswith("gate must be a mapping whose kind is one of joint, units")
