"""The trust map (evaluators/results/trust.py): Spearman with bootstrap CIs per slice, and the diagnostic rule."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cultureboard.errors import CultureboardError
from cultureboard.evaluators.results.ratings_format import validate_rows
from cultureboard.evaluators.results.stats import spearman_ci
from cultureboard.evaluators.results.trust import (
    MIN_ITEMS,
    TRUST_RHO,
    human_means,
    pair_with_scores,
    trust_flag,
    trust_map,
)


def test_trust_flag_rule():
    assert trust_flag(MIN_ITEMS - 1, 0.9) == (True, f"too few rated items ({MIN_ITEMS - 1} < {MIN_ITEMS})")
    assert trust_flag(50, None).diagnostic and "undefined" in trust_flag(50, float("nan")).reason
    low = trust_flag(50, 0.29)
    assert low == (True, "upper 95% bound of Spearman's rho 0.29 < 0.3 (50 items)")
    assert trust_flag(50, TRUST_RHO) == (False, "upper 95% bound of Spearman's rho 0.30 >= 0.3 (50 items)")
    assert trust_flag(MIN_ITEMS, 0.8).diagnostic is False
    assert trust_flag(50, 0.35, threshold=0.4, min_items=10).diagnostic is True


@pytest.fixture(scope="module")
def pairs():
    """JP: metric tracks the humans (60 items); IT: metric is noise (300 items); food/dance categories; KE: 8 items."""
    rng = np.random.default_rng(0)
    human_jp = rng.uniform(1, 5, 60)
    human_it = rng.uniform(1, 5, 300)
    human_ke = rng.uniform(1, 5, 8)
    return pd.DataFrame({
        "human": np.concatenate([human_jp, human_it, human_ke]),
        "metric": np.concatenate([human_jp + rng.normal(0, 0.5, 60), rng.normal(size=300), human_ke]),
        "country": ["JP"] * 60 + ["IT"] * 300 + ["KE"] * 8,
        "region_group": ["GN"] * 360 + ["GS"] * 8,
        "category": (["food", "dance"] * 184),
    })


def test_trust_map_flags_the_low_validity_slice(pairs):
    rows = {(r["slice_type"], r["slice"]): r for r in trust_map(pairs, n_boot=500)}
    assert set(rows) == {("overall", "all"), ("country", "IT"), ("country", "JP"), ("country", "KE"),
                         ("region_group", "GN"), ("region_group", "GS"), ("category", "dance"), ("category", "food")}
    jp, it, ke = rows["country", "JP"], rows["country", "IT"], rows["country", "KE"]
    assert (jp["n"], jp["diagnostic"]) == (60, False) and jp["rho"] > 0.8
    assert it["n"] == 300 and it["diagnostic"] and it["rho_high"] < TRUST_RHO
    assert it["reason"] == f"upper 95% bound of Spearman's rho {it['rho_high']:.2f} < 0.3 (300 items)"
    assert ke["diagnostic"] and ke["reason"] == "too few rated items (8 < 20)"
    assert ke["rho"] == pytest.approx(1.0)  # perfect, but too few items to be trusted
    # the values are spearman_ci's on the slice's pairs
    expected = spearman_ci(pairs["metric"][:60], pairs["human"][:60], n_boot=500)
    assert (jp["rho"], jp["rho_low"], jp["rho_high"]) == pytest.approx(tuple(expected[1:]))


def test_trust_map_normalises_the_direction(pairs):
    distance = pairs.assign(metric=-pairs["metric"])
    up = {(r["slice_type"], r["slice"]): r for r in trust_map(pairs, n_boot=200)}
    down = {(r["slice_type"], r["slice"]): r for r in trust_map(distance, higher_is_better=False, n_boot=200)}
    assert up == down
    wrong = {(r["slice_type"], r["slice"]): r for r in trust_map(distance, n_boot=200)}
    assert wrong["country", "JP"]["diagnostic"] and wrong["country", "JP"]["rho"] < -0.8


def test_trust_map_small_and_constant_slices():
    frame = pd.DataFrame({"human": [1, 2, 3, 4, 1, 2], "metric": [5, 5, 5, 5, 1, np.nan], "country": list("AAAABB")})
    rows = {(r["slice_type"], r["slice"]): r for r in trust_map(frame, slices=("country",))}
    assert rows["country", "A"]["rho"] is None and rows["country", "A"]["n"] == 4
    assert rows["country", "B"] == {"slice_type": "country", "slice": "B", "n": 1, "rho": None, "rho_low": None,
                                    "rho_high": None, "diagnostic": True, "reason": "too few rated items (1 < 20)"}


SHA = [f"{i:x}" * 64 for i in range(1, 4)]


@pytest.fixture
def rows():
    answers = [("r1", 0, 4), ("r2", 0, 2), ("r1", 1, 5), ("r2", 1, 5), ("r1", 2, 1)]
    return validate_rows([{"study": "cube", "rater": r, "image_sha256": SHA[i], "prompt_id": f"p{i}", "sample_idx": 0,
                           "country": "JP" if i < 2 else "IT", "category": "food", "question": "faithfulness",
                           "value": v, "scale": "likert:1..5", "submission": "a"} for r, i, v in answers])


def test_human_means_per_item(rows):
    humans = human_means(rows, "faithfulness").set_index("prompt_id")
    assert humans["human"].to_dict() == {"p0": 3.0, "p1": 5.0, "p2": 1.0}
    assert humans["n_raters"].to_dict() == {"p0": 2, "p1": 2, "p2": 1}
    with pytest.raises(ValueError, match="no ratings of question 'realism'"):
        human_means(rows, "realism")


def test_pair_with_scores_on_sha256_or_prompt(rows):
    humans = human_means(rows, "faithfulness")
    scores = pd.DataFrame({"metric": ["clip"] * 3 + ["other"], "sha256": SHA + [SHA[0]], "prompt_id": ["p0", "p1", "p2", "p0"],
                           "sample_idx": [0, 0, 0, 0], "value": [0.3, 0.9, 0.1, 7.0], "country": ["JP", "JP", "IT", "JP"],
                           "region_group": ["GN", "GN", "GN", "GN"]})
    joined = pair_with_scores(humans, scores, "clip").set_index("prompt_id")
    assert joined["metric"].to_dict() == {"p0": 0.3, "p1": 0.9, "p2": 0.1}
    assert joined.loc["p0", "human"] == 3.0 and joined.loc["p0", "region_group"] == "GN"
    by_prompt = pair_with_scores(humans.assign(image_sha256=None), scores.drop(columns=["sha256", "region_group"]), "clip")
    assert by_prompt.set_index("prompt_id")["metric"].to_dict() == {"p0": 0.3, "p1": 0.9, "p2": 0.1}
    assert by_prompt.set_index("prompt_id")["region_group"].to_dict() == {"p0": "GN", "p1": "GN", "p2": "GN"}  # JP, IT
    with pytest.raises(CultureboardError, match="more than one clip value"):
        pair_with_scores(humans, pd.concat([scores, scores]), "clip")
    with pytest.raises(CultureboardError, match="several submissions cannot be joined on prompt_id"):
        two = pd.concat([humans, humans.assign(submission="b")]).assign(image_sha256=None)
        pair_with_scores(two, scores, "clip")


def test_pair_with_scores_on_file_name_or_a_clear_error(rows):
    """Ratings naming images by file_name only join the scores on file_name; without a key every rated image
    has and the scores share, a CultureboardError names the fix."""
    humans = human_means(rows, "faithfulness").assign(image_sha256=None, prompt_id=None,
                                                      file_name=["c.png", "a.png", "b.png"])
    scores = pd.DataFrame({"metric": ["clip"] * 3, "file_name": ["a.png", "b.png", "c.png"], "value": [0.3, 0.9, 0.1],
                           "prompt_id": ["p0", "p1", "p2"], "sample_idx": [0, 0, 0]})
    joined = pair_with_scores(humans, scores, "clip")
    assert dict(zip(joined["file_name"], joined["metric"])) == {"a.png": 0.3, "b.png": 0.9, "c.png": 0.1}
    assert dict(zip(joined["file_name"], joined["human"])) == dict(zip(humans["file_name"], humans["human"]))
    with pytest.raises(CultureboardError, match="name rated images by file_name, which the scores") as err:
        pair_with_scores(humans, scores.drop(columns="file_name"), "clip")
    assert "image_sha256" in err.value.fix


def test_the_validity_trust_map_reads_a_target_metric_by_its_distance(monkeypatch):
    """A target metric (closer to 0 is better) is judged by -|value - 0|: values whose size falls as the human
    rating rises agree with the humans (rho = 1), though their signed values swing both ways; the same values read
    as "higher is better" would not. A descriptive card enters as it is."""
    import dataclasses

    from cultureboard.evaluators.engine.registry import metric_cards
    from cultureboard.evaluators.results import ratings

    human = np.arange(1.0, 31.0)
    signed = np.where(np.arange(30) % 2, 1.0, -1.0) * (31.0 - human)  # |value| shrinks as the rating rises
    joined = pd.DataFrame({"cube.quality": signed, "realism": human})
    cards = metric_cards()
    for direction, target, expected in (("target", 0.0, 1.0), ("higher", None, None), ("none", None, None)):
        card = dataclasses.replace(cards["cube.quality"], direction=direction, target=target)
        monkeypatch.setattr(ratings, "metric_cards", lambda: {**cards, "cube.quality": card})
        overall = next(r for r in ratings._trust(joined, ["cube.quality"], n_boot=100, seed=0)
                       if r["slice_type"] == "overall")
        raw = spearman_ci(signed, human, n_boot=100).value
        assert overall["rho"] == pytest.approx(expected if expected is not None else raw)
        assert expected is not None or abs(overall["rho"]) < 0.3
