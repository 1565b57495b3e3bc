"""agreement.html: Kendall's tau between two families' rankings of the same models (site/agreement_page.py).

Fast: hand-made per-prompt scores on a real :class:`Board` (cube-awareness and cure-ladder, whose headlines are
CUBE and CURE), the page written by the real :class:`Site`; tau checked by hand, its bootstrap CI by its properties.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cultureboard.builder.dataset import prompt_config, write_dataset
from cultureboard.builder.prompt_sets import PromptSet
from cultureboard.evaluators import evaluate
from cultureboard.evaluators.engine.context import score_row
from cultureboard.evaluators.engine.registry import Family, MetricCard, PromptSetSpec, register, unregister
from cultureboard.site.agreement_page import (
    Ranking,
    agreement,
    agreement_page,
    kendall_tau,
    pairs,
    permutation_p,
    rankings,
    verdict,
)
from cultureboard.site.board import Board
from cultureboard.site.load import Result
from cultureboard.site.names import display_name
from cultureboard.site.render import build_site
from cultureboard.site.write import Site
from PIL import Image as PILImage
from results_factory import make_submission
from scipy.stats import kendalltau

CUBE, CURE = "cube.cultural_relevance", "cure.ita.cr"
PROMPTS = 6  # prompts a country


def card(name: str, direction: str = "higher") -> dict:
    return {"name": name, "title": name.upper(), "direction": direction, "family": name.split(".")[0], "unit": "",
            "formula": "", "range": "[0, 1]", "source": "", "scorers": [], "version": 1, "validity": [],
            "chance": None, "proxy_for": None}


def result(model: str, prompt_set: str, metric: str, means: dict[str, float], control: str | None = None) -> Result:
    """lab / ``model`` on ``prompt_set``: on each country of ``means`` :data:`PROMPTS` prompts, two images each,
    scoring the country's mean, and one flagged image of value 99 (left out)."""
    spec = {"organization": "lab", "model": {"name": model, "id": f"lab/{model}"}}
    sid = f"lab__{model}__{prompt_set}"
    rows = [{"metric": metric, "unit_id": f"{c}{p}", "prompt_id": f"{c}{p}", "value": v, "country": c, "flag": None}
            for c, v in means.items() for p in range(PROMPTS) for _ in range(2)]
    rows.append({"metric": metric, "unit_id": "IT0", "prompt_id": "IT0", "value": 99.0, "country": "IT",
                 "flag": "unreadable"})
    entries = {(metric, t, s): {"value": 0.5} for t, s in [("overall", "all")] + [("country", c) for c in means]}
    summary = {"provenance": {"prompt_set": prompt_set, "dataset": {"revision": "r1"}, "dtype": "fp32", "scorers": [],
                              "metrics": {metric: 1}, "options": {}, "settings": {}},
               "metrics": [], "metrics_info": [card(metric)]}
    return Result(sid, summary, pd.DataFrame(rows), spec, Path(sid), [], entries, display=display_name(spec, sid),
                  control=control)


def board(cube: dict[str, dict], cure: dict[str, dict], control: dict | None = None) -> Board:
    """Models (name -> country -> mean) on cube-awareness and cure-ladder; ``control``: a text-only control of
    cube-awareness with these means."""
    found = [result(m, "cube-awareness", CUBE, v) for m, v in cube.items()]
    found += [result(m, "cure-ladder", CURE, v) for m, v in cure.items()]
    if control:
        found.append(result("text", "cube-awareness", CUBE, control, control="text-only"))
    return Board({r.sid: r for r in found}, {})


def blank_site(root: Path) -> Site:
    return Site(root, {"skipped": [], "footer": {"built": "2026-01-01", "site_code": "x", "results": 8, "code": [],
                                                  "datasets": [], "devices": [], "min_prompts": 5,
                                                  "order": "the point value"},
                       "banner": None, "trust_page": False, "galleries": {}})


def ranking(means: list[list[float]], family: str = "f") -> Ranking:
    """Models m0, m1, ... with these per-prompt means, every prompt of Italy."""
    means = np.array(means, float)
    return Ranking(family, family, [f"m{i}" for i in range(len(means))], means, np.full(means.shape[1], "IT", object))


# ------------------------------------------------------------------------------------------ tau by hand

def test_kendall_tau_by_hand():
    up = np.array([1.0, 2.0, 3.0, 4.0])
    assert kendall_tau(up, up * 10)[0] == 1.0
    assert kendall_tau(up, -up)[0] == -1.0
    # one of the 6 pairs swapped: (5 - 1) / 6
    assert kendall_tau(up, np.array([1.0, 2.0, 4.0, 3.0]))[0] == pytest.approx(4 / 6)
    # a tie in b: tau-b = (4 - 1) / sqrt(6 * 5)
    assert kendall_tau(up, np.array([1.0, 1.0, 3.0, 2.0]))[0] == pytest.approx(4 / np.sqrt(30) - 1 / np.sqrt(30))
    assert np.isnan(kendall_tau(up, np.ones(4))[0])
    assert np.isnan(kendall_tau(up, np.array([1.0, np.nan, 3.0, 4.0]))[0])


def test_headlines_are_weighted_means_over_each_models_scored_prompts():
    r = ranking([[1.0, np.nan, 3.0], [2.0, 4.0, 6.0]])
    assert r.headlines(np.ones((1, 3))).tolist() == [[2.0, 4.0]]
    # prompt 0 drawn twice, prompt 1 once, prompt 2 never
    assert r.headlines(np.array([[2.0, 1.0, 0.0]])).tolist() == [[1.0, 8 / 3]]


def test_kendall_tau_matches_scipy_row_by_row():
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 4, (20, 7)).astype(float), rng.integers(0, 4, (20, 7)).astype(float)
    ours = kendall_tau(a, b)
    for k in range(20):
        expected = kendalltau(a[k], b[k]).statistic
        assert ours[k] == pytest.approx(expected, nan_ok=True)


# ------------------------------------------------------------------------------------------ the bootstrap CI

def test_same_order_agrees_and_reversed_disagrees():
    """Five models: of the 120 pairings 2 have |tau| = 1, so p = 1/60 < 0.05 and the verdict stands."""
    x = ranking([[1, 1.1], [2, 2.1], [3, 3.1], [4, 4.1], [5, 5.1]])
    same = agreement(x, ranking([[5, 5], [6, 6], [7, 7], [8, 8], [9, 9]], "g"), n_boot=200)
    assert [same[k] for k in ("shared", "tau", "ci_low", "ci_high", "verdict")] == [5, 1.0, 1.0, 1.0, "agree"]
    assert same["p"] == pytest.approx(1 / 60)
    rev = agreement(x, ranking([[9, 9], [8, 8], [7, 7], [6, 6], [5, 5]], "g"), n_boot=200)
    assert (rev["tau"], rev["ci_high"], rev["p"], rev["verdict"]) == (-1.0, -1.0, pytest.approx(1 / 60), "disagree")


def test_three_models_ordered_alike_get_a_tau_but_no_verdict():
    """The issue's case: three models in one order on both sides, a [1, 1] CI over prompts, yet one pairing in
    three is as extreme by chance (tau +1 or -1: 2 of 3! = 6). Four models get no verdict either."""
    x, y = ranking([[1, 1], [2, 2], [3, 3]]), ranking([[4, 4], [5, 5], [6, 6]], "g")
    a = agreement(x, y, n_boot=100)
    assert (a["tau"], a["ci_low"], a["ci_high"], a["p"]) == (1.0, 1.0, 1.0, pytest.approx(1 / 3))
    assert a["verdict"] == "no verdict: fewer than 5 shared models"
    four = agreement(ranking([[1], [2], [3], [4]]), ranking([[1], [2], [4], [3]], "g"), n_boot=50)
    # tau 4/6; |tau| >= 2/3 for the pairings with at most 1 or at least 5 of the 6 pairs inverted: 1 + 3 + 3 + 1 of 24
    assert (four["tau"], four["p"], four["verdict"]) == (pytest.approx(4 / 6), pytest.approx(8 / 24),
                                                        "no verdict: fewer than 5 shared models")


def test_the_permutation_p_counts_every_pairing_or_draws_them():
    rng = np.random.default_rng(0)
    up = np.arange(5.0)
    assert permutation_p(up, up, rng) == pytest.approx(2 / 120)
    assert permutation_p(up, np.array([0.0, 1, 2, 4, 3]), rng) == pytest.approx(
        (1 + 4 + 4 + 1) / 120)  # tau 0.8: at most one inversion or at least 9 of 10 (Mahonian counts 1, 4 ... 4, 1)
    nine = np.arange(9.0)  # above EXACT_UP_TO: the observed pairing and N_PERM random ones (2 in 9! are as extreme)
    p = permutation_p(nine, nine, np.random.default_rng(1))
    assert 1 / 10001 <= p < 5 / 10001 and p == permutation_p(nine, nine, np.random.default_rng(1))


def test_models_are_compared_on_the_prompts_every_one_of_them_scored():
    """m0 has no score on prompt 0 of x, the hard prompt where m1 and m2 score -9: prompt 0 is left out for every
    model of x, so on prompts 1 and 2 x orders m0 < m1 < m2 as y does (tau 1). Each model on its own prompts would
    put m0 on top (1 > -1 > -5/3): one concordant pair of three, tau -1/3."""
    x = ranking([[np.nan, 1.0, 1.0], [-9.0, 2.0, 2.0], [-9.0, 3.0, 3.0]])
    y = ranking([[1.0], [2.0], [3.0]], "g")
    a = agreement(x, y, n_boot=50)
    assert (a["prompts_a"], a["prompts_b"], a["tau"]) == (2, 1, 1.0)
    assert kendall_tau(x.headlines(np.ones((1, 3)))[0], y.headlines(np.ones((1, 1)))[0])[0] == pytest.approx(-1 / 3)
    none = agreement(ranking([[np.nan, 1.0], [2.0, np.nan], [3.0, 3.0]]), y, n_boot=50)
    assert (none["prompts_a"], none["tau"], none["verdict"]) == (0, None, "no prompt that every shared model scored")


def test_ci_holds_the_estimate_widens_with_noise_and_repeats():
    rng = np.random.default_rng(0)
    base = np.arange(8.0)[:, None]

    def noisy(scale, family):
        return ranking(base + scale * rng.normal(size=(8, 30)), family)

    x = noisy(0.3, "f")
    calm, wild = agreement(x, noisy(0.3, "g"), n_boot=300), agreement(x, noisy(30.0, "g"), n_boot=300)
    for a in (calm, wild):
        assert -1 <= a["ci_low"] <= a["tau"] <= a["ci_high"] <= 1
    assert calm["ci_high"] - calm["ci_low"] < wild["ci_high"] - wild["ci_low"]
    assert calm["verdict"] == "agree" and wild["verdict"] == "do not clearly agree"
    assert wild["ci_low"] < 0 < wild["ci_high"]
    y = noisy(30.0, "g")
    assert agreement(x, y, seed=3) == agreement(x, y, seed=3)
    for one_noisy_side in (agreement(y, x, n_boot=300), agreement(x, y, n_boot=300)):  # each side is resampled
        assert one_noisy_side["ci_high"] - one_noisy_side["ci_low"] > 0.5


def test_verdict_needs_the_whole_ci_on_one_side_of_zero_and_a_small_p():
    assert [verdict(0.01, 1, 0.01), verdict(0, 0.5, 0.01), verdict(-0.5, 0, 0.01), verdict(-1, -0.01, 0.01)] == [
        "agree", "do not clearly agree", "do not clearly agree", "disagree"]
    assert verdict(0.5, 1, 0.05) == verdict(-1, -0.5, 0.06) == "do not clearly agree"  # a chance order


def test_resampling_is_over_prompts_not_models():
    """Every prompt ranks the models the same way on both sides: whatever prompts are drawn, tau stays 1."""
    x = ranking([[0, 5, 1], [1, 6, 2], [2, 7, 3]])
    assert agreement(x, ranking([[0, 9], [3, 10], [4, 11]], "g"), n_boot=500)["ci_low"] == 1.0


def test_models_are_matched_by_name_not_position():
    """The other family lists the models in reverse, with one more: the same order is still tau 1."""
    y = Ranking("g", "g", ["m3", "m2", "m1", "m0", "other"], np.array([[4.0], [3.0], [2.0], [1.0], [9.0]]),
                np.array(["IT"], object))
    assert agreement(ranking([[1], [2], [3], [4]]), y, n_boot=50)["tau"] == 1.0


def test_an_all_tied_side_has_no_tau():
    """Tied over all prompts, though not on most resamples of them: still no tau."""
    tied = agreement(ranking([[1, 1], [2, 2], [3, 3]]), ranking([[5, 6], [6, 5], [5.5, 5.5]], "g"), n_boot=50)
    assert (tied["tau"], tied["verdict"]) == (None, "tau undefined: every shared model tied on one side")


def test_too_few_shared_models():
    x = ranking([[1], [2], [3]])
    y = Ranking("g", "g", ["m0", "m1", "other"], np.array([[1.0], [2.0], [3.0]]), np.array(["IT"], object))
    assert agreement(x, y) == {"shared": 2, "prompts_a": 1, "prompts_b": 1, "tau": None, "ci_low": None,
                               "ci_high": None, "p": None, "verdict": "too few shared models"}


# ------------------------------------------------------------------------------------------ on a board

FOUR = {"a": 0.1, "b": 0.2, "c": 0.3, "d": 0.4}
FIVE = FOUR | {"e": 0.5}


def test_rankings_group_by_model_leave_out_controls_and_flagged_rows():
    b = board({m: {"IT": v} for m, v in FOUR.items()}, {m: {"IT": v} for m, v in FOUR.items()}, control={"IT": 9.0})
    cube = next(r for r in rankings(b) if r.family == "cube")
    assert cube.models == ["lab__a", "lab__b", "lab__c", "lab__d"]  # no control
    assert cube.means.shape == (4, PROMPTS) and np.allclose(cube.means[:, 0], list(FOUR.values()))  # no flagged 99


def test_a_headline_scored_per_ladder_or_chain_ranks_by_its_units():
    """CuRe's ladders and ECB's chains are rows with a unit id and no prompt id: they rank by unit, as prompts do."""
    found = [result(m, "cure-ladder", CURE, {"IT": v}) for m, v in FOUR.items()]
    for r in found:
        r.scores["prompt_id"] = None
    (cure,) = rankings(Board({r.sid: r for r in found}, {}))
    assert cure.means.shape == (4, PROMPTS) and np.allclose(cure.means[:, 0], list(FOUR.values()))


def test_pairs_are_of_two_families():
    """cube-awareness and cube-diversity are both CUBE: only their pairs with CuRe are compared."""
    found = [result(m, ps, metric, {"IT": v}) for m, v in FOUR.items()
             for ps, metric in (("cube-awareness", CUBE), ("cube-diversity", "cube.qvs.uniform"), ("cure-ladder", CURE))]
    assert [(r["a"][:4], r["b"][:4]) for r in pairs(rankings(Board({r.sid: r for r in found}, {})))] == [("cube", "cure")] * 2


def test_a_model_counts_once_by_its_first_submission():
    """Two submissions of lab / a in one group (a tagged variant): the first by submission id counts."""
    b = board({m: {"IT": v} for m, v in FOUR.items()}, {})
    variant = replace(result("a", "cube-awareness", CUBE, {"IT": 9.0}), sid="lab__a__zz")
    b = Board({**b.results, variant.sid: variant}, {})
    (cube,) = rankings(b)
    assert cube.models == ["lab__a", "lab__b", "lab__c", "lab__d"] and cube.means[0, 0] == 0.1


def test_the_page_says_too_few_shared_models(tmp_path):
    """Two models on both families: no tau, and the page says why."""
    site = blank_site(tmp_path)
    two = {m: {"IT": v} for m, v in FOUR.items() if m in "ab"}
    agreement_page(site, board(two, two))
    (row,) = json.loads((tmp_path / "data/agreement-overall.json").read_text())["rows"]
    assert (row["shared"], row["tau"], row["verdict"]) == (2, None, "too few shared models")
    assert "Too few shared models" in (tmp_path / "agreement.html").read_text()


def test_lower_is_better_turns_the_order():
    b = board({m: {"IT": v} for m, v in FIVE.items()}, {m: {"IT": v} for m, v in FIVE.items()})
    b.cards[CURE]["direction"] = "lower"
    (row,) = pairs(rankings(b))
    assert (row["tau"], row["verdict"]) == (-1.0, "disagree")


@pytest.mark.parametrize("target, tau", [(0.0, -1.0), (1.0, 1.0)])
def test_closer_to_target_is_better(target, tau):
    b = board({m: {"IT": v} for m, v in FOUR.items()}, {m: {"IT": v} for m, v in FOUR.items()})
    b.cards[CURE] |= {"direction": "target", "target": target}
    assert pairs(rankings(b))[0]["tau"] == tau


@pytest.fixture
def written(tmp_path) -> Site:
    """agreement.html written by the real :class:`Site` (no site build: fast)."""
    # Five models on both families: the same order on Italy, reversed on Nigeria; Spain only on CUBE (reversed
    # there); two models on Kenya on both (its prompts, which the others lack, are compared on no overall row); a
    # control that would otherwise be a sixth shared model. Four models on Ghana: a tau without a verdict.
    cube = {m: {"IT": v, "NG": v, "ES": 1 - v, "GH": v, **({"KE": 1 - v} if m in "ab" else {})}
            for m, v in FIVE.items()}
    cure = {m: {"IT": v, "NG": 0.5 - v / 2, **({"GH": v} if m != "e" else {}), **({"KE": 1 - v} if m in "ab" else {})}
            for m, v in FIVE.items()}
    site = blank_site(tmp_path)
    agreement_page(site, board(cube, cure, control={"IT": 9.0, "NG": 9.0}))
    return site


def test_page_tables_overall_and_per_country(written):
    overall = json.loads((written.root / "data/agreement-overall.json").read_text())["rows"]
    assert [(r["a"], r["b"], r["shared"]) for r in overall] == [
        ("cube: cube-awareness, CUBE.CULTURAL_RELEVANCE", "cure: cure-ladder, CURE.ITA.CR", 5)]
    # on the prompts all five scored (Kenya's and, in CuRe, Ghana's left out): CUBE (3v + 1 - v) / 4 and CuRe
    # (v + 0.5 - v / 2) / 2 both rise with v (tau 1); on every model's own prompts CUBE's a and b would fall behind
    assert (overall[0]["prompts_a"], overall[0]["prompts_b"]) == (4 * PROMPTS, 2 * PROMPTS)
    assert overall[0]["tau"] == 1.0 and overall[0]["p"] == pytest.approx(1 / 60)
    rows = json.loads((written.root / "data/agreement-countries.json").read_text())["rows"]
    assert [(r["country"][-3:], r["shared"], r["tau"], r["verdict"]) for r in rows] == [
        ("GH)", 4, 1.0, "no verdict: fewer than 5 shared models"), ("IT)", 5, 1.0, "agree"),
        ("NG)", 5, -1.0, "disagree")]  # Kenya: 2 shared models, Spain: one family


def test_page_states_disagreement_plainly(written):
    html = (written.root / "agreement.html").read_text()
    assert "Do the benchmarks agree?" in html and "Per country" in html
    assert "disagree" in html and "Nigeria" in html and "text-only" not in html


# ------------------------------------------------------------------------------------------ through build_site

@dataclass(frozen=True)
class NoOptions:
    pass


def _family(name: str) -> Family:
    """A family of one prompt set (``<name>-set``) scoring each image's brightness, only in these tests."""
    metric = f"{name}.brightness"

    def score(ctx):
        return [score_row(metric, float(np.asarray(PILImage.open(im.path)).mean() / 255), im) for im in ctx.images]

    return Family(name=name, title=name, description="Brightness, only in these tests.", papers={},
                  prompt_sets=(PromptSetSpec(f"{name}-set", score, (metric,), shard_unit=lambda p: p["prompt_id"]),),
                  metrics=(MetricCard(metric, name, "Brightness", "mean pixel / 255", "higher", "[0, 1]", (),
                                      "these tests", version=1, primary=True, direction_evidence="a test family"),),
                  options=NoOptions)


@pytest.mark.slow
def test_build_site_writes_the_agreement_page(tmp_path):
    """Three models (folders tagged by prompt set) on two one-prompt-set families: the built site
    has agreement.html with one pair of three shared models."""
    families = [_family("dua"), _family("dub")]
    for f in families:
        register(f)
    try:
        sets = [f"{f.name}-set" for f in families]
        configs = [prompt_config(PromptSet(ps, "1", "t", "t", [
            {"prompt_id": f"{ps}/{k}", "prompt_set": ps, "text": f"a photo number {k}", "negative_prompt": "",
             "kind": "t2i", "images_per_prompt": 1, "seeds": [0], "seed_scheme": "consecutive", "country": c,
             "continent": "Europe" if c == "IT" else "Africa", "region_group": "GN" if c == "IT" else "GS",
             "category": "cuisine"} for k, c in enumerate(["IT", "NG"] * 3)])) for ps in sets]
        dataset = write_dataset(tmp_path / "dataset", configs, {})
        for ps in sets:
            for model in ("alpha", "beta", "gamma"):
                folder = make_submission(tmp_path / "submissions", dataset, ps, model=model, tag=ps)
                evaluate(folder, dataset, tmp_path / "results", device="cpu", n_boot=20, cache=tmp_path / "cache")
        build_site(tmp_path / "results", dataset, tmp_path / "submissions", tmp_path / "site", workers=1)
    finally:
        for f in families:
            unregister(f.name)
    (row,) = json.loads((tmp_path / "site/data/agreement-overall.json").read_text())["rows"]
    assert (row["a"], row["b"], row["shared"]) == ("dua: dua-set, Brightness", "dub: dub-set, Brightness", 3)
    assert -1 <= row["ci_low"] <= row["tau"] <= row["ci_high"] <= 1
    assert "Do the benchmarks agree?" in (tmp_path / "site/agreement.html").read_text()
