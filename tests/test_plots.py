"""The site's static SVG plots: well-formed, escaped, self-contained, deterministic, one mark per row."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

import pytest

from cultureboard.site.plots import UNCOLOURED, colour_is_noise, era_bars_svg, gap_svg, heatmap_svg, meaningful

NS = "{http://www.w3.org/2000/svg}"
HOSTILE = "<script>alert(\"x\")</script> & 'quoted' \x01"
COUNTRIES = ["BR", "CN", "DE", "EG", "FR", "IN", "IT", "JP", "MX", "NG", "TR", "US", "ZA"]


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{NS}svg", "the document element is not an SVG element"
    return root


def by_class(root: ET.Element, tag: str, cls: str) -> list[ET.Element]:
    return [e for e in root.iter(f"{NS}{tag}") if cls in (e.get("class") or "").split()]


def all_text(root: ET.Element) -> str:
    return " ".join(t for e in root.iter() for t in (e.text, e.tail) if t)


def heat_cells(models=("model-a", "model-b", HOSTILE), countries=COUNTRIES[:4], drop=(("model-a", "CN"),)):
    cells = [{"model": m, "country": c, "value": 0.1 * i + 0.01 * j}
             for i, m in enumerate(models) for j, c in enumerate(countries) if (m, c) not in drop]
    if ("model-b", "DE") in drop:  # present, but without a value
        cells.append({"model": "model-b", "country": "DE", "value": None})
    return cells


def gap_rows():
    return [{"model": "model-a", "gap": 0.08, "low": 0.03, "high": 0.12},
            {"model": "model-b", "gap": -0.05, "low": -0.09, "high": 0.01},
            {"model": HOSTILE, "gap": 0.0, "low": -0.02, "high": 0.02},
            {"model": "model-c", "gap": None, "low": None, "high": None},
            {"model": "model-d", "gap": 0.02, "low": None, "high": None}]


def era_rows():
    rows = [{"model": m, "era": e, "value": 0.2 + 0.01 * k, "low": 0.15, "high": 0.3}
            for m in ("model-a", HOSTILE) for k, e in enumerate(("traditional", "modern", "general"))]
    rows.append({"model": "model-c", "era": "traditional", "value": 0.25, "low": 0.2, "high": 0.3})
    rows.append({"model": "model-c", "era": "modern", "value": float("nan"), "low": None, "high": None})
    return rows


ALL = [
    pytest.param(lambda t: heatmap_svg(heat_cells(), t), id="heatmap"),
    pytest.param(lambda t: gap_svg(gap_rows(), t), id="gap"),
    pytest.param(lambda t: era_bars_svg(era_rows(), t), id="era"),
    pytest.param(lambda t: heatmap_svg([], t), id="heatmap-empty"),
    pytest.param(lambda t: gap_svg([], t), id="gap-empty"),
    pytest.param(lambda t: era_bars_svg([], t), id="era-empty"),
]


@pytest.mark.parametrize("make", ALL)
def test_well_formed_accessible_and_self_contained(make):
    svg = make("Title <b>&</b> \"it's\"")
    root = parse(svg)
    assert root.get("role") == "img"
    first, second = list(root)[:2]
    assert first.tag == f"{NS}title" and first.text == "Title <b>&</b> \"it's\"", "no accessible <title> first"
    assert second.tag == f"{NS}desc" and second.text, "no accessible <desc> second"
    assert re.findall(r"https?:", svg) == ["http:"] and "http://www.w3.org/2000/svg" in svg, \
        "the only URL may be the SVG namespace"
    for forbidden in ("<script", "<image", "<foreignObject", "href", "@import", "url(", " on", "<style", " id="):
        assert forbidden not in svg, f"the plot contains {forbidden!r}"
    width, height = float(root.get("width")), float(root.get("height"))
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}" and width > 0 and height > 0


@pytest.mark.parametrize("make", ALL)
def test_hostile_labels_are_escaped(make):
    svg = make(HOSTILE)
    root = parse(svg)
    assert "<script" not in svg and "\x01" not in svg
    assert "&lt;script&gt;" in svg, "the hostile title is not escaped"
    # every attribute parses (quotes in labels cannot break out of one) and the label survives as text
    assert "alert(\"x\")" in all_text(root)


@pytest.mark.parametrize("make", ALL)
def test_deterministic(make):
    assert make("same") == make("same")


def test_heatmap_cells_missing_marked_and_labels_escaped():
    cells = heat_cells(drop=(("model-a", "CN"), ("model-b", "DE")))  # one absent, one value None
    root = parse(heatmap_svg(cells, "relevance"))
    assert len(by_class(root, "rect", "cell")) == 3 * 4 - 2
    missing = by_class(root, "g", "missing")
    assert len(missing) == 2, "absent and None cells are both drawn as missing"
    tooltips = sorted(g.find(f"{NS}rect/{NS}title").text for g in missing)
    assert tooltips == ["model-a \u00d7 CN: no data", "model-b \u00d7 DE: no data"]
    assert "no data" in all_text(root), "the legend names the missing-cell swatch"
    text = all_text(root)
    assert HOSTILE.replace("\x01", "\ufffd")[:31] in text, "hostile model label not shown as text"
    assert "0.13" in text, "a small grid prints its values"
    assert "2 of 12 cells have no data" in root.find(f"{NS}desc").text


def test_heatmap_large_grid_hides_values_but_keeps_tooltips():
    cells = [{"model": f"org/model-{i}", "country": c, "value": i / 50} for i in range(50) for c in COUNTRIES]
    root = parse(heatmap_svg(cells, "big"))
    rects = by_class(root, "rect", "cell")
    assert len(rects) == 650 and all(r.find(f"{NS}title") is not None for r in rects)
    assert not [t for t in root.iter(f"{NS}text") if t.get("pointer-events") == "none"], "values printed in 650 cells"
    fills = {r.get("fill") for r in rects}
    assert len(fills) == 50 and "#440154" in fills and "#fde725" in fills, "colour scale spans viridis"


def test_heatmap_fixed_scale_and_duplicates():
    svg = heatmap_svg([{"model": "m", "country": "JP", "value": 5.0}], "t", vmin=0, vmax=1)
    assert by_class(parse(svg), "rect", "cell")[0].get("fill") == "#fde725", "values above vmax are clipped"
    with pytest.raises(ValueError, match="two cells"):
        heatmap_svg([{"model": "m", "country": "JP", "value": 1}] * 2, "t")


def ci_cells(values, widths):
    return [{"model": f"m{k}", "country": "JP", "value": v, "low": v - w / 2, "high": v + w / 2}
            for k, (v, w) in enumerate(zip(values, widths))]


def test_colour_is_noise_compares_the_spread_with_the_median_ci_width():
    """Spread max - min against the median of high - low: 0.50..0.52 under CIs 0.1 wide is noise; under CIs 0.01
    wide it is not; the median, not the mean (one very wide CI does not make a clear spread noise); strictly less."""
    assert colour_is_noise(ci_cells([0.50, 0.52, 0.51], [0.1, 0.1, 0.08])) == pytest.approx((0.02, 0.1))
    assert colour_is_noise(ci_cells([0.50, 0.52, 0.51], [0.01, 0.01, 0.01])) is None
    assert colour_is_noise(ci_cells([0.50, 0.52, 0.51], [0.01, 0.015, 0.9])) is None  # mean width 0.31 would say noise
    assert colour_is_noise(ci_cells([0.50, 0.54], [0.04, 0.04])) is None  # equal: not narrower
    assert colour_is_noise([{"value": 0.5}, {"value": 0.51}]) is None  # no CI: nothing to compare with
    assert colour_is_noise(ci_cells([0.5], [1.0])) is None  # one value has no spread to colour
    no_data = {"model": "m9", "country": "JP", "value": None, "low": None, "high": None}
    assert colour_is_noise(ci_cells([0.5, 0.51], [1.0, 1.0]) + [no_data]) == pytest.approx((0.01, 1.0))


def test_heatmap_over_a_range_narrower_than_the_cis_is_not_coloured_and_says_why():
    noisy = [{"model": f"m{i}", "country": c, "value": 0.5 + 0.01 * i + 0.003 * j, "low": 0.45, "high": 0.58}
             for i in range(3) for j, c in enumerate(COUNTRIES[:3])]
    root = parse(heatmap_svg(noisy, "t"))
    assert {r.get("fill") for r in by_class(root, "rect", "cell")} == {UNCOLOURED}
    assert not by_class(root, "g", "legend"), "a colour legend for uncoloured cells"
    note = " ".join(t.text for t in by_class(root, "g", "uncoloured")[0].iter(f"{NS}text"))
    assert "Not coloured: the values span 0.026" in note and "typical 95% CI width (0.130)" in note
    assert "Not coloured" in root.find(f"{NS}desc").text and "0.513" in all_text(root)  # values still printed
    clear = [dict(c, low=c["value"] - 0.0005, high=c["value"] + 0.0005) for c in noisy]
    root = parse(heatmap_svg(clear, "t"))
    assert len({r.get("fill") for r in by_class(root, "rect", "cell")}) == 9 and by_class(root, "g", "legend")
    assert not by_class(root, "g", "uncoloured")


def test_gap_bars_and_whiskers_match_rows():
    rows = gap_rows()
    root = parse(gap_svg(rows, "GN - GS"))
    bars = by_class(root, "rect", "bar")
    assert len(bars) == sum(r["gap"] is not None for r in rows)
    assert len(by_class(root, "path", "whisker")) == sum(r["low"] is not None for r in rows)
    assert len(by_class(root, "text", "missing")) == 1
    zero = by_class(root, "line", "zero")
    assert len(zero) == 1, "one zero line"
    x0 = float(zero[0].get("x1"))
    positive, negative = bars[0], bars[1]
    assert float(positive.get("x")) == pytest.approx(x0, abs=0.1) and float(negative.get("x")) < x0
    assert positive.get("fill") != negative.get("fill")
    assert "0.08 [0.03, 0.12]" in all_text(root)


def test_gap_whisker_spans_ci():
    root = parse(gap_svg([{"model": "m", "gap": 0.5, "low": 0.0, "high": 1.0}], "t"))
    zero_x = float(by_class(root, "line", "zero")[0].get("x1"))
    d = by_class(root, "path", "whisker")[0].get("d")
    x1, x2 = (float(v) for v in re.match(r"M([\d.]+) [\d.]+H([\d.]+)", d).groups())
    bar = by_class(root, "rect", "bar")[0]
    assert x1 == pytest.approx(zero_x, abs=0.1)
    assert float(bar.get("width")) == pytest.approx((x2 - x1) / 2, abs=0.2), "the bar ends at the middle of the CI"


def test_era_bars_and_whiskers_match_rows():
    rows = era_rows()
    root = parse(era_bars_svg(rows, "by era"))
    with_value = [r for r in rows if r["value"] is not None and not math.isnan(r["value"])]
    assert len(by_class(root, "rect", "bar")) == len(with_value) == 7
    assert len(by_class(root, "path", "whisker")) == sum(r["low"] is not None for r in with_value)
    missing = [t.text for t in by_class(root, "text", "missing")]
    assert missing == ["modern: no data", "general: no data"], "NaN and absent pairs are marked"
    legend = by_class(root, "g", "legend")[0]
    assert [t.text for t in legend.iter(f"{NS}text")] == ["traditional", "modern", "general"]
    colours = {b.get("fill") for b in by_class(root, "rect", "bar")}
    assert len(colours) == 3, "one colour per era"
    with pytest.raises(ValueError, match="two rows"):
        era_bars_svg(rows + rows[:1], "t")


def test_negative_values_and_constant_values_render():
    rows = [{"model": "m", "era": "e", "value": -0.3, "low": -0.4, "high": -0.2}]
    root = parse(era_bars_svg(rows, "t"))
    assert float(by_class(root, "rect", "bar")[0].get("width")) > 1
    root = parse(heatmap_svg([{"model": "m", "country": "JP", "value": 0.5}, {"model": "n", "country": "JP", "value": 0.5}], "t"))
    assert len(by_class(root, "rect", "cell")) == 2


def test_narrow_ranges_print_enough_decimals_and_long_titles_fit():
    title = "Cultural relevance (zero-shot country), cube-awareness by country"
    cells = [{"model": m, "country": c, "value": v} for m, c, v in
             (("a", "IT", 0.5012), ("a", "NG", 0.5098), ("b", "IT", 0.5051), ("b", "NG", 0.5070))]
    root = parse(heatmap_svg(cells, title))
    assert float(root.get("width")) >= len(title) * 7, "the visible title does not fit the plot"
    legend = [t.text for t in by_class(root, "g", "legend")[0].iter(f"{NS}text")][:3]
    assert len(set(legend)) == 3, f"legend labels of a narrow range repeat: {legend}"
    assert "0.501" in all_text(root), "values of a narrow range are printed with three decimals"
    root = parse(gap_svg([{"model": "m", "gap": -0.0101, "low": -0.012, "high": -0.0071}], "t"))
    assert "-0.0101 [-0.0120, -0.0071]" in all_text(root), "a small gap's CI is printed as [-0.01, -0.01]"
    root = parse(era_bars_svg([{"model": "m", "era": "modern", "value": 0.4987, "low": 0.4951, "high": 0.5012}], "t"))
    assert "0.499 [0.495, 0.501]" in all_text(root), "a narrow CI is printed as [0.50, 0.50]"


def test_long_labels_are_cut_in_the_middle():
    names = [f"open-diffusion-collective__playground-v2-5__run-{i:02d}" for i in (7, 17)]
    root = parse(gap_svg([{"model": m, "gap": 0.1, "low": 0.0, "high": 0.2} for m in names], "t"))
    shown = [t.text for t in root.iter(f"{NS}text") if t.text and "\u2026" in t.text]
    assert len(shown) == 2 and shown[0] != shown[1] and shown[0].endswith("run-07"), shown
    assert {b.find(f"{NS}title").text.split(":")[0] for b in by_class(root, "rect", "bar")} == set(names)


def test_a_gap_plot_of_values_apart_by_rounding_only_draws():
    from cultureboard.site.plots import gap_svg

    svg = gap_svg([{"model": "IT", "gap": 0.0, "low": 0.0, "high": 1e-17}, {"model": "NG", "gap": -1e-17, "low": None,
                                                                             "high": None}], "flat gaps")
    assert svg.startswith("<svg") and "IT" in svg


def test_a_heatmap_cell_whose_difference_does_not_clear_the_smallest_meaningful_difference_is_neutral():
    """Mean 0.50; smallest meaningful difference 0.02: the cells 0.01 from the mean are pale grey (``neutral``),
    those 0.1 from it keep their colour, and a legend line says what pale grey means."""
    cells = [{"model": "m", "country": c, "value": v, "low": v - 0.002, "high": v + 0.002}
             for c, v in zip(COUNTRIES, (0.40, 0.49, 0.51, 0.60))]
    root = parse(heatmap_svg(cells, "t", smallest=0.02))
    fill = {r.find(f"{NS}title").text.split(": ")[0].split(" × ")[1]: r.get("fill") for r in by_class(root, "rect", "cell")}
    assert (fill["CN"], fill["DE"]) == (UNCOLOURED, UNCOLOURED)
    assert (fill["BR"], fill["EG"]) == ("#440154", "#fde725")
    assert {r.find(f"{NS}title").text.split(": ")[0] for r in by_class(root, "rect", "neutral") if r.find(f"{NS}title") is not None} == {"m × CN", "m × DE"}
    legend = " ".join(by_class(root, "g", "legend")[0].itertext())
    assert "difference from the mean (0.50) not clearly beyond ±0.02" in legend
    assert "Pale grey" in root.find(f"{NS}desc").text or "pale grey" in root.find(f"{NS}desc").text
    plain = parse(heatmap_svg(cells, "t"))  # no threshold: four colours, no neutral line
    assert len({r.get("fill") for r in by_class(plain, "rect", "cell")}) == 4 and not by_class(plain, "rect", "neutral")
    centred = parse(heatmap_svg(cells, "t", smallest=0.02, centre=0.6))  # from the target: France is on it
    assert [r.get("fill") for r in by_class(centred, "rect", "cell")][3] == UNCOLOURED


@pytest.mark.parametrize(("value", "low", "high", "reference", "smallest", "coloured"), [
    (0.51, 0.508, 0.512, 0.50, 0.02, False),  # 0.01 < 0.02
    (0.60, 0.598, 0.602, 0.50, 0.02, True),  # 0.1 clears it
    (0.40, 0.398, 0.402, 0.50, 0.02, True),  # below as well as above
    (0.53, 0.515, 0.545, 0.50, 0.02, False),  # the point clears, the interval does not
    (0.52, None, None, 0.50, 0.02, True),  # no CI: the point difference reaches it
    (0.51, 0.508, 0.512, 0.50, None, True),  # no threshold declared
    (None, None, None, 0.50, 0.02, False),
])
def test_meaningful_is_the_interval_of_the_difference_against_the_threshold(value, low, high, reference, smallest,
                                                                            coloured):
    assert meaningful(value, low, high, reference, smallest) is coloured


def test_era_bars_draw_the_chance_level_and_mark_the_controls():
    """A dashed line at x(chance) labelled "chance 0.33" above the bars; the control's bars faded and dashed, with a
    legend entry; the description names both. Without them: no line, no faded bar."""
    rows = [{"model": m, "era": e, "value": v, "low": v - 0.01, "high": v + 0.01}
            for m, v in (("model-a", 0.6), ("words [control: text-only]", 0.7)) for e in ("traditional", "modern")]
    root = parse(era_bars_svg(rows, "t", chance=1 / 3, controls=["words [control: text-only]"]))
    (line,) = by_class(root, "line", "chance")
    assert line.get("stroke-dasharray") and line.get("x1") == line.get("x2")
    grid = {float(g.get("x1")) for g in root.iter(f"{NS}line") if g.get("class") in ("zero", "grid")}
    ticks = {float(t.text): float(t.get("x")) for t in root.iter(f"{NS}text") if float(t.get("x")) in grid
             and re.fullmatch(r"-?\d+(\.\d+)?", t.text or "")}
    step = ticks[0.2] - ticks[0.0]  # the axis is linear from zero
    assert float(line.get("x1")) == pytest.approx(ticks[0.0] + step * (1 / 3) / 0.2, abs=0.1)
    assert [t.text for t in by_class(root, "text", "chance-label")] == ["chance 0.33"]
    faded = by_class(root, "rect", "control")
    assert len([r for r in faded if "bar" in r.get("class")]) == 2 and all(r.get("fill-opacity") == "0.35" for r in faded)
    assert "control (never ranked)" in all_text(root)
    desc = root.find(f"{NS}desc").text
    assert "chance level, 0.33" in desc and "words [control: text-only]" in desc
    plain = parse(era_bars_svg(rows, "t"))
    assert not by_class(plain, "line", "chance") and not by_class(plain, "rect", "control")


def test_curves_draw_the_chance_level_and_dash_the_controls():
    from cultureboard.site.plots import curve_svg

    rows = [{"model": m, "x": x, "value": v + 0.01 * x, "low": None, "high": None}
            for m, v in (("model-a", 0.5), ("same [control: unedited]", 0.6)) for x in (0, 1, 2)]
    root = parse(curve_svg(rows, "t", x_label="step", chance=0.2, controls=["same [control: unedited]"]))
    (line,) = by_class(root, "line", "chance")
    assert line.get("y1") == line.get("y2")
    assert [t.text for t in by_class(root, "text", "chance-label")] == ["chance 0.20"]
    lines = by_class(root, "path", "line")
    assert [bool(p.get("stroke-dasharray")) for p in lines] == [False, True]
    assert "same [control: unedited] (control)" in all_text(root)
    ys = sorted(float(t.get("y")) for t in root.iter(f"{NS}text") if t.text in ("0.2", "0.20", "0.6", "0.60"))
    assert float(line.get("y1")) == pytest.approx(ys[-1] - 4, abs=0.1)  # the tick label of 0.2 sits 4 px below its line
