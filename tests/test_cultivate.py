"""AHEaD's maths (evaluators/families/cultivate/core.py) and explanations (explain.py) on hand-computed values,
the paper's Table 1 FAITH recomputed from its ALIGN / HAL / EXAG rows, and the family's options and cards."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from cultureboard.evaluators.engine.context import Context
from cultureboard.evaluators.engine.registry import family_of, parse_options
from cultureboard.evaluators.families import cultivate
from cultureboard.evaluators.families.cultivate import CultivateOptions, core, explain
from cultureboard.evaluators.results.reported import load_reported

from cultureboard.errors import CultureboardError

TAU = 0.52
# two predictions x four references: per-reference maxima [.90, .60, .52, .51]
P12 = np.array([[.90, .10, .52, .30], [.20, .60, .40, .51]])
P3 = np.array([[.10, .20, .30, .52]])


def test_align_counts_references_matched_strictly_above_tau():
    value, per = core.align({"objects": P12}, TAU)
    assert value == 0.5 and per == {"objects": 0.5}  # .52 is not > .52 (the released code's >= would give 0.75)


def test_align_is_a_mean_over_dimensions_not_a_pooled_ratio():
    hit = np.array([[0.9]])
    miss = np.full((1, 9), 0.1)
    value, per = core.align({"setting": hit, "objects": miss, "attire": np.zeros((3, 0))}, TAU)
    assert value == pytest.approx(0.5) and set(per) == {"setting", "objects"}  # pooled would be 1/10
    value, per = core.align({"setting": hit, "objects": np.zeros((0, 4))}, TAU)
    assert value == pytest.approx(0.5) and per["objects"] == 0.0  # references, no prediction: nothing aligned


def test_hal_counts_predictions_at_or_below_tau():
    value, _ = core.hal({"objects": np.vstack([P12, P3])}, TAU)
    assert value == pytest.approx(1 / 3)  # p3's best is .52 <= tau: hallucinated (the released code's < would give 0)
    value, per = core.hal({"objects": P12, "spatial": np.array([[0.1], [0.2]])}, TAU)
    assert value == pytest.approx(0.5) and per == {"objects": 0.0, "spatial": 1.0}


def test_hal_leaves_out_dimensions_without_predictions_and_is_none_without_any():
    value, per = core.hal({"objects": np.array([[0.1, 0.9]]), "attire": np.zeros((0, 3))}, TAU)
    assert value == 0.0 and per == {"objects": 0.0}
    assert core.hal({"objects": np.zeros((0, 3))}, TAU) == (None, {})
    assert core.align({"objects": np.zeros((2, 0))}, TAU) == (None, {})


def test_exag_paper_max_and_released_mean():
    baseline = np.array([.30, .50])
    scores = np.array([[.45, .40], [.20, .70]])
    assert core.exag(scores, baseline, "max") == pytest.approx(0.175)  # per image .15 and .20
    assert core.exag(scores, baseline, "mean") == pytest.approx(0.0875)  # per candidate .075 and .10
    assert core.exag(scores[0], baseline, "mean") == pytest.approx(0.075)
    assert core.exag(scores[1], baseline, "max") == pytest.approx(0.20)
    below = np.array([[.1, .2], [.3, .5]])
    assert core.exag(below, baseline, "max") == 0.0 == core.exag(below, baseline, "mean")
    with pytest.raises(ValueError):
        core.exag(scores, baseline, "median")


def test_faith_is_the_mean_of_align_and_the_complements():
    assert core.faith(0.36, 0.51, 0.06) == pytest.approx(0.5967, abs=5e-5)
    assert core.faith(1.0, 0.0, 0.0) == 1.0 and core.faith(0.0, 1.0, 1.0) == 0.0


def _images_covering(counts_per_image: list[list[bool]]) -> list[dict]:
    """One image per entry: a prediction row per reference it matches (similarity 1), else one that matches none."""
    images = []
    for row in counts_per_image:
        n = len(row)
        hits = [np.eye(n)[j] for j, hit in enumerate(row) if hit]
        images.append({"objects": np.array(hits) if hits else np.zeros((1, n))})
    return images


@pytest.mark.parametrize("coverage, expected", [
    ([[1, 1, 0, 0]] * 3, 0.5),  # counts [3, 3, 0, 0]: ln 2 / ln 4
    ([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], 1.0),  # counts [1, 1, 1, 1]
    ([[1, 0, 0, 0]] * 3, 0.0),  # counts [3, 0, 0, 0]
    ([[0, 0, 0, 0]] * 3, 0.0),  # nothing matched
    ([[1]] * 3, 0.0),  # one reference: no entropy to normalise by
])
def test_ddiv(coverage, expected):
    value, _ = core.ddiv(_images_covering(coverage), TAU)
    assert value == pytest.approx(expected)


def test_ddiv_of_unequal_counts():
    value, _ = core.ddiv(_images_covering([[1, 1, 0], [1, 0, 0]]), TAU)  # counts [2, 1, 0]: q = 2/3, 1/3
    assert value == pytest.approx(-(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3)) / math.log(3))


def test_ddiv_counts_images_not_matching_predictions():
    """An image listing two paraphrases of one reference counts once for it: counts [2, 1], not [3, 1]."""
    paraphrases = {"objects": np.array([[0.9, 0.0], [0.8, 0.1]])}  # both predictions match reference 0
    other = {"objects": np.array([[0.9, 0.95]])}  # one prediction matching both references
    value, per = core.ddiv([paraphrases, other], TAU)
    expected = -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3)) / math.log(2)
    assert value == pytest.approx(expected) and per == {"objects": pytest.approx(expected)}


def test_sdiv():
    value, per = core.sdiv(_images_covering([[1, 0], [0, 1]]), TAU)
    assert value == pytest.approx(0.5) and per == {"objects": pytest.approx(0.5)}  # pooled 1.0 - mean(.5, .5)
    assert core.sdiv(_images_covering([[1, 0], [1, 0]]), TAU)[0] == 0.0
    # singles of different coverage: pooled 2/3 minus the MEAN single ALIGN (2/3 + 1/3) / 2 = 1/6
    assert core.sdiv(_images_covering([[1, 1, 0], [1, 0, 0]]), TAU)[0] == pytest.approx(1 / 6)


def test_diversity_needs_two_images():
    for fn in (core.ddiv, core.sdiv):
        with pytest.raises(ValueError, match="at least 2 images"):
            fn(_images_covering([[1, 0]]), TAU)


def test_sdiv_is_never_negative():
    rng = np.random.default_rng(7)
    for _ in range(50):
        images = [{"objects": rng.uniform(-1, 1, (rng.integers(0, 4), 5)), "attire": rng.uniform(-1, 1, (2, 3))}
                  for _ in range(rng.integers(2, 5))]
        assert core.sdiv(images, 0.3)[0] >= 0


def test_tau_is_the_third_quartile_with_linear_interpolation():
    assert core.quartiles([.1, .2, .3, .4, .5]) == pytest.approx((0.2, 0.3, 0.4))
    assert core.quartiles([.5, .1]) == pytest.approx((0.2, 0.3, 0.4))
    with pytest.raises(ValueError):
        core.quartiles([])
    assert core.best_matches(P12).tolist() == [.90, .60, .52, .51]
    assert core.best_matches(np.zeros((0, 3))).size == 0


def test_table1_faith_from_align_hal_exag():
    """Every FAITH of the paper's Table 1 (12 model x region rows) is the mean of its ALIGN, 1 - HAL, 1 - EXAG
    (rounded as printed) within 0.007."""
    [table] = [t for t in load_reported("cultivate") if t.table == "Table 1"]
    cells = {(r["model"], r["region"], r["metric"]): r["value"] for r in table.rows}
    groups = sorted({(m, g) for m, g, _ in cells})
    assert len(groups) == 12
    for model, region in groups:
        recomputed = core.faith(*(cells[(model, region, k)] for k in ("ALIGN", "HAL", "EXAG")))
        assert abs(recomputed - cells[(model, region, "FAITH")]) <= 0.007, (model, region, recomputed)


# ------------------------------------------------------------------------------------------ explanations

REFS = {"setting": ["temple interior", "street"], "objects": ["samovar"], "attire": []}
PREDS = {"setting": ["temple hall", "neon sign"], "objects": [], "attire": ["tuxedo"]}
SIMS = {"setting": np.array([[0.8, 0.1], [0.2, 0.3]]), "objects": np.zeros((0, 1)), "attire": np.zeros((1, 0))}


def test_matches_lists_aligned_missing_and_hallucinated():
    lists = explain.matches(PREDS, REFS, SIMS, 0.5)
    assert lists["aligned"] == [{"dimension": "setting", "reference": "temple interior", "nearest": "temple hall",
                                 "similarity": 0.8}]
    assert lists["missing"] == [
        {"dimension": "setting", "reference": "street", "nearest": "neon sign", "similarity": 0.3},
        {"dimension": "objects", "reference": "samovar", "nearest": None, "similarity": None}]
    assert lists["hallucinated"] == [{"dimension": "setting", "descriptor": "neon sign", "nearest": "street",
                                      "similarity": 0.3}]  # tuxedo: no attire references, not judged


def test_explanations_use_the_strict_threshold_of_align():
    """At similarity exactly tau a reference is missing (ALIGN: > tau) and the prediction hallucinated (HAL: <= tau),
    in the lists as in the metrics."""
    sims = {"setting": np.array([[0.5, 0.2], [0.1, 0.5000001]])}
    refs, preds = {"setting": ["a", "b"]}, {"setting": ["x", "y"]}
    lists = explain.matches(preds, refs, sims, 0.5)
    assert [e["reference"] for e in lists["aligned"]] == ["b"] and [e["reference"] for e in lists["missing"]] == ["a"]
    assert [e["descriptor"] for e in lists["hallucinated"]] == ["x"]
    assert core.align(sims, 0.5)[0] == 0.5 and core.hal(sims, 0.5)[0] == 0.5


def test_exaggerated_lists_positive_excess_largest_first():
    got = explain.exaggerated(["flags", "rugs", "domes"], np.array([.5, .9, .1]), np.array([.4, .3, .2]), shown=5)
    assert [e["candidate"] for e in got] == ["rugs", "flags"]
    assert got[0] == {"candidate": "rugs", "score": 0.9, "baseline": 0.3, "excess": 0.6}
    assert len(explain.exaggerated(["flags", "rugs"], np.array([.5, .9]), np.array([.4, .3]), shown=1)) == 1


def test_edit_instruction_follows_the_explanation():
    lists = {"aligned": [{"dimension": "objects", "reference": "samovar"}],
             "missing": [{"dimension": "attire", "reference": a} for a in ("chador", "suit", "scarf", "tie")]
             + [{"dimension": "setting", "reference": "sofreh on the floor"}],
             "hallucinated": [{"dimension": "attire", "descriptor": "kimono"}]}
    text = explain.edit_instruction("a family eating", "Iran", lists, [{"candidate": "giant domes"}])
    assert text.splitlines() == [
        "Edit the image so that it correctly shows a family eating in Iran.",
        "Remove: kimono; giant domes; anything from another culture, period or activity.",
        "Keep: samovar.",
        "Add: chador; suit; scarf.",  # attire has a hallucination: up to 3 of its missing; setting has none
    ]
    # the correct interaction is added whether or not the image hallucinated one (Table 32)
    lists["missing"] += [{"dimension": "interaction", "reference": r} for r in ("pouring tea", "passing bread")]
    text = explain.edit_instruction("a family eating", "Iran", lists)
    assert text.splitlines()[-1] == "Add: pouring tea; chador; suit; scarf."


# ------------------------------------------------------------------------------------------ options and cards

def test_options_and_cards():
    family, spec = family_of("cultivate")
    assert family.primary("cultivate") == "cultivate.faith"
    assert {family.card(m).unit for m in spec.metrics} == {"image", "prompt"}
    assert parse_options(family, overrides=["tau=0.6"]).tau == 0.6
    for bad in (["tau=2"], ["tau_from=option"], ["exag_variant=median"], ["retries=-1"], ["tau_min_similarities=0"]):
        with pytest.raises(Exception, match="options of cultivate"):
            parse_options(family, overrides=bad)
    faith_card = family.card("cultivate.faith")
    reported = {round(e.value, 2) for e in faith_card.validity}
    assert reported == {0.47, 0.42, 0.58} and all(e.reported for e in faith_card.validity)
    judge_yes = family.card("cultivate.judge_yes")  # the judge VLM's P(yes), not the paper's CLIP-FlanT5 VQAScore
    assert judge_yes.validity == () and not judge_yes.ranked
    assert family.card("cultivate.exag").validity == (), "Table 9 measured EXAG with CLIP-FlanT5 as f, not this judge"
    for name in spec.metrics:
        card = family.card(name)
        assert not card.ranked or card.direction_evidence, name
    assert "0.25" in family.card("cultivate.align").formula, "a real photograph's ALIGN at tau = Q3"
    assert "max" in family.card("cultivate.exag").formula and "mean" in family.card("cultivate.exag").formula


def _ctx(tmp_path, **options):
    return SimpleNamespace(dataset=tmp_path, options=CultivateOptions(**options))


def test_tau_resolution_without_photographs(tmp_path):
    ctx = _ctx(tmp_path)
    note = cultivate._resolve_tau(ctx, {}, [], {}, None)
    assert (ctx.options.tau, ctx.options.tau_from) == (0.67, "paper") and note["from"] == "paper"
    ctx = _ctx(tmp_path, tau=0.5)
    cultivate._resolve_tau(ctx, {}, [], {}, None)
    assert (ctx.options.tau, ctx.options.tau_from) == (0.5, "option")
    ctx = _ctx(tmp_path, tau=0.67, tau_from="paper")  # a recorded run's options reproduce it
    cultivate._resolve_tau(ctx, {}, [], {}, None)
    assert ctx.options.tau_from == "paper"
    with pytest.raises(CultureboardError, match="is not the paper's tau"):
        cultivate._resolve_tau(_ctx(tmp_path, tau=0.5, tau_from="paper"), {}, [], {}, None)
    with pytest.raises(CultureboardError, match="tau_from=references calibrates on"):
        cultivate._resolve_tau(_ctx(tmp_path, tau_from="references"), {}, [], {}, None)
    with pytest.raises(CultureboardError, match="has no paper tau"):
        cultivate._resolve_tau(_ctx(tmp_path, extractor="other-judge"), {}, [], {}, None)
    with pytest.raises(CultureboardError, match="paper's per-dimension prompts only"):  # the paper's tau, its prompts
        cultivate._resolve_tau(_ctx(tmp_path, extraction="single"), {}, [], {}, None)


def test_single_extraction_is_another_metric_version():
    assert cultivate.variant_versions(CultivateOptions()) == {}
    single = cultivate.variant_versions(CultivateOptions(extraction="single", exag_variant="mean"))
    assert single == {"cultivate.faith": "2+mean+single", "cultivate.exag": "2+mean", "cultivate.align": "3+single",
                      "cultivate.hal": "3+single", "cultivate.ddiv": "2+single", "cultivate.sdiv": "2+single"}
    asked = cultivate.extraction_questions("per-dimension")
    assert [d for d, _ in asked] == list(cultivate.DIMENSIONS) and len({q for _, q in asked}) == 5
    assert [d for d, _ in cultivate.extraction_questions("single")] == [None]


class _FiveSimilarities:
    """A matcher whose one photograph matches five reference descriptors at 0.1 .. 0.5."""

    def sims(self, predicted, refs):
        return {"setting": np.array([[0.1, 0.2, 0.3, 0.4, 0.5]])}


def test_tau_needs_enough_reference_similarities(tmp_path):
    calibration = [("p", SimpleNamespace(sha256="s"))]
    args = ({"p": {"refs": {}}}, calibration, {"s": SimpleNamespace(descriptors={"setting": ["x"]})}, _FiveSimilarities())
    ctx = _ctx(tmp_path, tau_min_similarities=5)
    note = cultivate._resolve_tau(ctx, *args)
    assert (ctx.options.tau, note["from"], note["similarities"]) == (0.4, "references", 5)  # Q3 of 0.1 .. 0.5
    ctx = _ctx(tmp_path)  # the default minimum, 200: the paper's tau, and why
    note = cultivate._resolve_tau(ctx, *args)
    assert (ctx.options.tau, ctx.options.tau_from) == (0.67, "paper") and "5 reference similarities" in note["why_paper"]
    with pytest.raises(CultureboardError, match="gives 5 reference similarities.*fewer than the 6"):
        cultivate._resolve_tau(_ctx(tmp_path, tau_from="references", tau_min_similarities=6), *args)
    with pytest.raises(CultureboardError, match="has no paper tau.*5 similarities"):
        cultivate._resolve_tau(_ctx(tmp_path, extractor="other-judge"), *args)


def test_a_dataset_without_descriptors_is_one_clear_error(tmp_path):
    ctx = Context([], {}, tmp_path, None, None)
    with pytest.raises(CultureboardError, match="has no cultivate-descriptors config"):
        cultivate.read_descriptors(ctx)
