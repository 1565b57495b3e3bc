"""What the board claims, on hand-made values: ranks only for ranked tiers, none where a cheat tops the models,
distinct ranks and badges only beyond the smallest meaningful difference, headlines by tier, and values printed
at the precision of their interval."""

from __future__ import annotations

from types import SimpleNamespace

from cultureboard.evaluators.engine.registry import metric_cards
from cultureboard.evaluators.results.disparity import clears, under_represented
from cultureboard.site.board import Board, _metric_order
from cultureboard.site.cells import at_precision
from cultureboard.site.gaming import badge, cheats_on_top
from cultureboard.site.leaderboards import gap_badge, tier_badge
from cultureboard.site.names import MIN_PROMPTS

M = ("m", "overall", "all")


def _card(tier="validated", smallest=0.02, direction="higher"):
    return {"name": "m", "direction": direction, "target": None, "tier": tier, "tier_reason": "why",
            "smallest_difference": smallest}


def _board(card, models, controls=()):
    """A duck-typed board and group: each model's / control's (value, low, high) of ``m`` over all prompts."""
    def result(sid, v, control=None):
        return SimpleNamespace(sid=sid, control=control, entries={M: {
            "value": v[0], "ci_low": v[1], "ci_high": v[2], "n_prompts": MIN_PROMPTS}})
    group = SimpleNamespace(name="g", results=[result(f"lab__m{k}", v) for k, v in enumerate(models)],
                            controls=[result(f"control__{kind}", v, kind) for kind, v in controls])
    group.everyone = group.results + group.controls
    board = SimpleNamespace(cards={"m": card}, _ranks={}, _gated={}, order_by="value", diagnostic=lambda *a: None)
    for method in ("unranked", "gated", "_gate"):
        setattr(board, method, lambda *a, method=method: getattr(Board, method)(board, *a))
    return board, group


def ranks(board, group):
    got = Board.ranks(board, group, *M)
    return [(got[r.sid]["best"], got[r.sid]["worst"]) if r.sid in got else None for r in group.results]


def test_distinct_ranks_need_the_gap_between_cis_to_clear_the_smallest_difference():
    models = [(0.60, 0.58, 0.62), (0.55, 0.53, 0.565), (0.40, 0.38, 0.42)]  # gaps between CIs: 0.015, then 0.11
    board, group = _board(_card(smallest=0.02), models)
    assert ranks(board, group) == [(1, 2), (1, 2), (3, 3)]
    board, group = _board(_card(smallest=0.01), models)
    assert ranks(board, group) == [(1, 1), (2, 2), (3, 3)]


def test_only_validated_and_indicative_tiers_are_ranked():
    models = [(0.6, 0.58, 0.62), (0.4, 0.38, 0.42)]
    for tier, ranked in [("validated", True), ("indicative", True), ("arrow only", False), ("diagnostic", False),
                         ("own measure", False), (None, False)]:
        board, group = _board(_card(tier=tier), models)
        assert (ranks(board, group) == [(1, 1), (2, 2)]) == ranked, tier
        assert bool(Board.unranked(board, group, *M)) != ranked
    board, group = _board(_card(tier="arrow only"), models)
    assert Board.unranked(board, group, *M) == "not ranked: arrow only (the evidence page says why)"
    assert tier_badge(_card(tier="arrow only"))["label"] == "arrow only"
    assert "never ranked" in tier_badge(_card(tier="arrow only"))["title"]


def test_a_cheat_on_top_unranks_the_board_and_is_gameable_only_by_a_meaningful_margin():
    models = [(0.60, 0.58, 0.62), (0.40, 0.38, 0.42)]
    board, group = _board(_card(), models, [("unedited", (0.61, 0.60, 0.62))])
    assert [s.control for s in cheats_on_top(board, group, "m")] == ["control__unedited"]
    assert ranks(board, group) == [None, None]
    assert "a cheat tops every model (control__unedited, unedited)" in Board.unranked(board, group, *M)
    assert badge(board, group, "m") is None  # tops by 0.01 < 0.02: unranked, but not badged gameable
    board, group = _board(_card(), models, [("unedited", (0.63, 0.62, 0.64))])
    assert badge(board, group, "m")["label"] == "gameable"
    board, group = _board(_card(), models, [("reference-photos", (0.9, 0.89, 0.91)), ("text-only", (0.5, 0.49, 0.51))])
    assert ranks(board, group) == [(1, 1), (2, 2)]  # the ceiling tops, and a cheat below the best does not unrank


def test_the_headline_is_the_strongest_tier():
    cards = {n: c.to_dict() for n, c in metric_cards().items()}
    awareness = ["cube.country_top1", "cube.cultural_relevance", "cube.faithfulness", "cube.quality"]
    assert _metric_order("cube-awareness", awareness, cards)[0] == "cube.quality"  # arrow only beats diagnostic
    marked = {**cards, "cube.cultural_relevance": {**cards["cube.cultural_relevance"], "tier": "indicative"}}
    assert _metric_order("cube-awareness", awareness, marked)[0] == "cube.cultural_relevance"  # the primary, at it
    ladder = ["cure.ita.cr", "cure.ps", "cure.gt", "cure.gt.dinov2"]
    assert _metric_order("cure-ladder", ladder, cards)[0] == "cure.gt"  # validated; the primary ita.cr is indicative
    assert _metric_order("cultivate", ["cultivate.align", "cultivate.faith"], cards)[0] == "cultivate.faith"


def test_badges_need_the_interval_to_clear_the_smallest_difference():
    assert clears(0.03, 0.05, 0.02) and clears(-0.05, -0.03, 0.02)
    assert not clears(0.01, 0.05, 0.02) and not clears(-0.05, 0.03, 0.0) and not clears(float("nan"), 1, 0.0)
    entry = {"value": 0.02, "ci_low": 0.012, "ci_high": 0.028, "p_adjusted": 0.001}
    assert gap_badge(entry, 0.01) and not gap_badge(entry, 0.02)
    assert not gap_badge({"value": 0.0, "ci_low": 0.0, "ci_high": 0.0, "p_adjusted": 0.0}, 0.0)
    assert under_represented("country", -0.01, 0.001, "higher")  # significant, no threshold given
    assert not under_represented("country", -0.01, 0.001, "higher", -0.015, -0.005, 0.02)  # too small to matter
    assert under_represented("country", -0.05, 0.001, "higher", -0.07, -0.03, 0.02)


def test_values_print_at_the_precision_of_their_interval():
    assert at_precision(0.33954, 0.33951, 0.33958) == ("0.3395", "0.3395", "0.3396")  # not 0.340 [0.340, 0.340]
    assert at_precision(0.3395, 0.3391, 0.3399) == ("0.340", "0.339", "0.340")  # the bounds already differ
    assert at_precision(0.34, 0.30, 0.38) == ("0.340", "0.300", "0.380")
    assert at_precision(0.5, 0.5, 0.5) == ("0.500", "0.500", "0.500")  # a point stays at three decimals
    assert at_precision(0.333331, 0.3333305, 0.3333315) == ("0.333331", "0.333330", "0.333332")
