"""summarize on hand-computed rows: the mean of per-unit means, flagged rows counted and left out, images counted,
slices sorted as text, coverage against the prompt set, and the bootstrap over units in unit-id order."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from cultureboard.evaluators.engine.registry import IMAGE_UNIT
from cultureboard.evaluators.results.aggregate import NO_CI, NO_SPREAD, summarize
from cultureboard.evaluators.results.stats import bootstrap_ci, cluster_bootstrap_ci, wilson_interval

NAN = float("nan")


def _rows():
    image = [  # (unit, file, value, flag, country); units sort u1 < u2 < u3 < u4, rows given out of order
        ("u3", "e.png", 10.0, None, "NG"),
        ("u1", "b.png", 3.0, None, "IT"),
        ("u2", "c.png", 4.0, None, "IT"),
        ("u2", "d.png", NAN, "unreadable", "IT"),
        ("u1", "a.png", 1.0, None, "IT"),
        ("u4", "f.png", 7.0, None, None),
    ]
    pool = [("p1", 0.5, None, 3, "IT"), ("p2", 0.25, None, 2, "NG"), ("p3", NAN, "pool too small", 5, "NG")]
    rows = [{"metric": "m", "unit_id": u, "sample_idx": 0, "file_name": f, "value": v, "detail": None, "flag": fl,
             "country": c} for u, f, v, fl, c in image]
    rows += [{"metric": "d", "unit_id": u, "sample_idx": None, "file_name": None, "value": v,
              "detail": json.dumps({"images": n}), "flag": fl, "country": c} for u, v, fl, n, c in pool]
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def entries():
    expected = {IMAGE_UNIT: {"u1": {"country": "IT"}, "u2": {"country": "IT"}, "u3": {"country": "NG"},
                             "u4": {"country": None}, "u5": {"country": "NG"}},
                "pool": {"p1": {"country": "IT"}, "p2": {"country": "NG"}, "p3": {"country": "NG"}}}
    out = summarize(_rows(), {"m": IMAGE_UNIT, "d": "pool"}, expected, ("overall", "country"), seed=3, n_boot=200,
                    refused={IMAGE_UNIT: {"u5"}})
    return {(e["metric"], e["slice_type"], e["slice"]): e for e in out}, out


def test_values_are_means_of_unit_means_without_flagged_rows(entries):
    by_key, _ = entries
    overall = by_key["m", "overall", "all"]
    assert overall["value"] == pytest.approx((2.0 + 4.0 + 10.0 + 7.0) / 4)
    assert (overall["n_prompts"], overall["n_images"], overall["n_flagged"]) == (4, 5, 1)
    assert overall["flags"] == {"unreadable": 1} and overall["coverage"] == pytest.approx(4 / 5)
    assert overall["n_refused"] == 1 and not overall["complete"]
    italy = by_key["m", "country", "IT"]
    assert italy["value"] == pytest.approx(3.0) and (italy["n_images"], italy["n_flagged"]) == (3, 1)
    assert italy["complete"] and italy["n_refused"] == 0
    nigeria = by_key["m", "country", "NG"]
    assert (nigeria["value"], nigeria["ci_low"], nigeria["ci_high"]) == (10.0, None, None)  # one prompt: no CI
    assert nigeria["ci_note"] == NO_CI and italy["ci_note"] is None and italy["ci_low"] < italy["ci_high"]
    assert nigeria["coverage"] == 0.5 and nigeria["n_refused"] == 1 and nigeria["flags"] == {}


def test_the_bootstrap_resamples_units_in_unit_id_order(entries):
    overall = entries[0]["m", "overall", "all"]
    ci = bootstrap_ci({"u1": [1.0, 3.0], "u2": [4.0], "u3": [10.0], "u4": [7.0]}, n_boot=200, seed=3)
    assert (overall["ci_low"], overall["ci_high"]) == (ci.low, ci.high)
    shuffled = bootstrap_ci({"u3": [10.0], "u1": [1.0, 3.0], "u4": [7.0], "u2": [4.0]}, n_boot=200, seed=3)
    assert (shuffled.low, shuffled.high) != (ci.low, ci.high)  # so the order above is really tested


def test_unit_rows_count_the_images_their_detail_names(entries):
    by_key, _ = entries
    overall = by_key["d", "overall", "all"]
    assert overall["value"] == pytest.approx(0.375) and overall["n_images"] == 5  # the flagged pool's 5 not counted
    assert overall["flags"] == {"pool too small": 1} and overall["coverage"] == pytest.approx(2 / 3)
    nigeria = by_key["d", "country", "NG"]
    assert (nigeria["value"], nigeria["n_images"], nigeria["n_flagged"], nigeria["n_prompts"]) == (0.25, 2, 1, 1)


def test_entries_are_ordered_and_rows_without_a_slice_value_are_in_none(entries):
    _, out = entries
    assert [(e["metric"], e["slice_type"], e["slice"]) for e in out] == [
        ("d", "overall", "all"), ("d", "country", "IT"), ("d", "country", "NG"),
        ("m", "overall", "all"), ("m", "country", "IT"), ("m", "country", "NG")]
    assert sum(e["n_images"] for e in out if e["metric"] == "m" and e["slice_type"] == "country") == 4  # u4's image


def _clustered(n_per_cluster: int = 30):
    """Two clusters of units (think: CuRe categories sharing their P(c) images) whose values differ a lot."""
    rows, expected = [], {}
    for k, (cluster, centre) in enumerate((("food", 0.0), ("art", 10.0))):
        for i in range(n_per_cluster):
            uid = f"{cluster}{i}"
            expected[uid] = {"category": cluster}
            rows.append({"metric": "m", "unit_id": uid, "sample_idx": 0, "file_name": f"{uid}.png",
                         "value": centre + i / 60, "detail": None, "flag": None, "category": cluster,
                         "country": "AB"[i % 2]})
    return pd.DataFrame(rows), {IMAGE_UNIT: expected}


def test_a_clustered_metric_gets_the_two_stage_interval_and_the_same_value():
    rows, expected = _clustered()
    clusters = {"m": {uid: fields["category"] for uid, fields in expected[IMAGE_UNIT].items()}}
    naive = summarize(rows, {"m": IMAGE_UNIT}, expected, ("overall",), seed=1, n_boot=400)[0]
    two = summarize(rows, {"m": IMAGE_UNIT}, expected, ("overall",), seed=1, n_boot=400, clusters=clusters)[0]
    assert two["value"] == pytest.approx(naive["value"]) and naive["value"] == pytest.approx(5 + 29 / 120)
    # with two clusters, a quarter of the replicates draw "food" twice (mean about 0.25), a quarter "art" twice:
    # the 95% interval reaches nearly both cluster means; the naive one stays near the middle
    assert two["ci_low"] < 1.0 and two["ci_high"] > 9.5
    assert naive["ci_high"] - naive["ci_low"] < 0.5 * (two["ci_high"] - two["ci_low"])
    by_unit = [[v] for v in rows.sort_values("unit_id")["value"]]
    labels = [uid.rstrip("0123456789") for uid in sorted(rows["unit_id"])]
    ci = cluster_bootstrap_ci(by_unit, labels, n_boot=400, seed=1)
    assert (two["ci_low"], two["ci_high"]) == (ci.low, ci.high)  # clusters handed over in unit-id order
    per_slice = summarize(rows, {"m": IMAGE_UNIT}, expected, ("overall", "category"), seed=1, n_boot=400,
                          clusters=clusters)
    within = next(e for e in per_slice if e["slice"] == "art")  # one cluster: the units within it resampled
    assert 10.0 <= within["ci_low"] < within["ci_high"] <= 10.5
    # a slice whose units are every other unit of both clusters keeps each unit's own cluster
    country = summarize(rows, {"m": IMAGE_UNIT}, expected, ("country",), seed=1, n_boot=400, clusters=clusters)
    b = next(e for e in country if e["slice"] == "B")
    assert b["ci_low"] < 1.0 and b["ci_high"] > 9.5


def test_units_without_a_cluster_are_clusters_of_their_own():
    rows, expected = _clustered()
    plain = summarize(rows, {"m": IMAGE_UNIT}, expected, ("overall",), seed=2, n_boot=300)[0]
    alone = summarize(rows, {"m": IMAGE_UNIT}, expected, ("overall",), seed=2, n_boot=300, clusters={"m": {}})[0]
    assert (alone["ci_low"], alone["ci_high"]) == pytest.approx((plain["ci_low"], plain["ci_high"]), abs=1e-12)


def _image_rows(metric: str, values: dict[str, list[float]], country: dict[str, str]) -> list[dict]:
    return [{"metric": metric, "unit_id": u, "sample_idx": k, "file_name": f"{u}-{k}.png", "value": v,
             "detail": None, "flag": None, "country": country[u]} for u, vs in values.items() for k, v in enumerate(vs)]


def test_a_bounded_metric_gets_wilson_intervals_and_a_slice_that_agrees_has_no_point_interval():
    """A 4-question accuracy (card ``bounded`` (0, 1)) where Italy's four prompts all score 1 and Nigeria's two all
    0: Wilson at the unit level, [4 / (4 + z^2), 1] and [0, z^2 / (2 + z^2)], where the bootstrap gives [1, 1] and
    [0, 0]. The same rows of an unbounded metric get no CI there (``NO_SPREAD``), never a point."""
    values = {"a": [1, 1], "b": [1], "c": [1, 1], "d": [1], "e": [0, 0], "f": [0]}
    country = dict(zip("abcdef", "IIIINN"))
    rows = pd.DataFrame(_image_rows("acc", values, country) + _image_rows("cos", values, country))
    expected = {IMAGE_UNIT: {u: {"country": c} for u, c in country.items()}}
    out = {(e["metric"], e["slice"]): e for e in summarize(rows, {"acc": IMAGE_UNIT, "cos": IMAGE_UNIT}, expected,
                                                             ("overall", "country"), n_boot=200,
                                                             bounded={"acc": (0.0, 1.0)})}
    assert (out["acc", "I"]["ci_low"], out["acc", "I"]["ci_high"]) == pytest.approx(wilson_interval(1.0, 4))
    assert (out["acc", "N"]["ci_low"], out["acc", "N"]["ci_high"]) == pytest.approx(wilson_interval(0.0, 2))
    assert out["acc", "all"]["value"] == pytest.approx(4 / 6)
    assert (out["acc", "all"]["ci_low"], out["acc", "all"]["ci_high"]) == pytest.approx(wilson_interval(4 / 6, 6))
    for key in ("I", "N"):
        assert (out["cos", key]["ci_low"], out["cos", key]["ci_high"], out["cos", key]["ci_note"]) == (
            None, None, NO_SPREAD)
    assert out["cos", "all"]["ci_low"] < out["cos", "all"]["ci_high"] and out["cos", "all"]["ci_note"] is None


def test_no_interval_from_two_or_more_units_is_a_point():
    """Random slices of 1-8 units of discrete values (many slices agree throughout), bounded or not, clustered or
    tested or neither: an entry of two or more units has ci_low < ci_high, or no CI with the reason why."""
    rng = np.random.default_rng(11)
    for trial in range(40):
        n = int(rng.integers(1, 9))
        p = rng.choice([0.0, 1.0, 0.5])
        values = {f"u{i}": (rng.binomial(1, p, size=int(rng.integers(1, 4))) * 1.0).tolist() for i in range(n)}
        country = {u: "AB"[i % 2] for i, u in enumerate(values)}
        rows = pd.DataFrame(_image_rows("m", values, country))
        expected = {IMAGE_UNIT: {u: {"country": c} for u, c in country.items()}}
        options = [{}, {"bounded": {"m": (0.0, 1.0)}}, {"tested": {"m": 0.0}},
                   {"clusters": {"m": {u: int(u[1:]) // 3 for u in values}}},
                   {"tested": {"m": 0.0}, "bounded": {"m": (-1.0, 1.0)}, "clusters": {"m": {u: 0 for u in values}}}]
        for kw in options:
            for e in summarize(rows, {"m": IMAGE_UNIT}, expected, ("overall", "country"), n_boot=50, seed=trial, **kw):
                if e["n_prompts"] >= 2:
                    assert (e["ci_low"] is not None and e["ci_low"] < e["ci_high"]) or (
                        e["ci_low"] is None and e["ci_note"] == NO_SPREAD), (kw, values, e)
                    if "bounded" in kw:
                        assert e["ci_low"] is not None, (kw, e)  # Wilson never collapses


def test_an_entry_without_spread_says_so_on_the_site_and_is_not_ranked():
    """The site's caveat of a NO_SPREAD entry: not "one prompt" but units that all scored the same, not ranked."""
    from cultureboard.site.names import caveat

    values = {u: [0.5] for u in "abcdef"}
    rows = pd.DataFrame(_image_rows("cos", values, dict.fromkeys(values, "IT")))
    (entry,) = summarize(rows, {"cos": IMAGE_UNIT}, {IMAGE_UNIT: {u: {"country": "IT"} for u in values}}, ("overall",),
                         n_boot=50)
    assert entry["ci_note"] == NO_SPREAD and entry["n_prompts"] == 6
    badge = caveat(entry)
    assert badge["label"] == "no spread: not ranked" and "scored the same" in badge["title"]
    few = caveat({**entry, "n_prompts": 3})
    assert few["label"] == "3 prompts: not ranked" and "no spread" in few["title"]
