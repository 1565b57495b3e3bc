"""World maps over a spread narrower than the values' CIs are not coloured and say so (issue 23), as the heatmaps do
(:func:`cultureboard.site.plots.colour_is_noise`): every country with a value one light grey, a note with the
spread and the typical CI width in place of the legend, the values still in the tooltips. Hand-made values; the
map pages' data carry each choice's CIs (the browser test checks that app.js applies the same rule)."""

from __future__ import annotations

import html
import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest

from cultureboard.site import figures, worldmap
from cultureboard.site.board import Board
from cultureboard.site.load import Result
from cultureboard.site.names import display_name
from cultureboard.site.search_index import write_search_index
from cultureboard.site.write import Site

NS = "{http://www.w3.org/2000/svg}"
NAMES = {"IT": "Italy", "NG": "Nigeria", "ES": "Spain", "JP": "Japan"}
VALUES = {"IT": 0.50, "NG": 0.52, "ES": 0.51, "JP": None}  # Japan: in the data, without a value
PS, HEAD = "cube-awareness", "cube.cultural_relevance"


def cis(half: float, values=VALUES) -> dict:
    return {iso: (v - half, v + half) for iso, v in values.items() if v is not None}


def fills(svg: str) -> dict[str, str]:
    return dict(re.findall(r'data-iso="(\w\w)" d="[^"]*" fill="(#[0-9a-f]{6})"', svg))


def groups(svg: str) -> dict[str, ET.Element]:
    """class -> <g> of the legend and the note."""
    root = ET.fromstring(svg)
    return {g.get("class"): g for g in root.iter(f"{NS}g") if g.get("class") in ("legend", "uncoloured")}


def test_a_map_over_a_spread_narrower_than_the_cis_is_grey_and_says_why():
    svg = worldmap.map_svg(VALUES, "t", names=NAMES, cis=cis(0.05))  # spread 0.02, every CI 0.10 wide
    assert fills(svg) == {"IT": worldmap.UNCOLOURED, "NG": worldmap.UNCOLOURED, "ES": worldmap.UNCOLOURED,
                          "JP": worldmap.NO_VALUE}
    found = groups(svg)
    assert set(found) == {"uncoloured"}, "a colour legend on an uncoloured map"
    note = "".join(found["uncoloured"].itertext())
    assert "Not coloured: the values span 0.02, less than their typical 95% CI width (0.10)" in note
    desc = ET.fromstring(svg).find(f"{NS}desc").text
    assert "Not coloured" in desc and "Nigeria: 0.52" in desc and "dark purple" not in desc
    assert "<title>Nigeria: 0.52 (95% CI 0.47 to 0.57)</title>" in svg  # the values stay in the tooltips
    assert "<title>Japan: no data</title>" in svg


def test_a_countrys_tooltip_prints_its_interval_at_the_intervals_precision():
    svg = worldmap.map_svg({"NG": 0.3401, "ES": 0.52}, "t", names=NAMES,
                           cis={"NG": (0.3398, 0.3404), "ES": (0.47, 0.57)})
    assert "<title>Nigeria: 0.3401 (95% CI 0.3398 to 0.3404)</title>" in svg  # never 0.34 (95% CI 0.34 to 0.34)
    assert "<title>Spain: 0.52 (95% CI 0.47 to 0.57)</title>" in svg


def test_a_map_over_a_spread_wider_than_the_cis_is_coloured_with_a_legend():
    svg = worldmap.map_svg(VALUES, "t", names=NAMES, cis=cis(0.005))  # spread 0.02, every CI 0.01 wide
    got = fills(svg)
    assert (got["IT"], got["NG"], got["JP"]) == ("#440154", "#fde725", worldmap.NO_VALUE)  # viridis' ends
    assert worldmap.UNCOLOURED not in got.values() and len(set(got.values())) == 4
    assert set(groups(svg)) == {"legend"} and "Not coloured" not in svg
    assert "dark purple" in ET.fromstring(svg).find(f"{NS}desc").text


@pytest.mark.parametrize(("values", "bounds", "grey"), [
    pytest.param({"IT": 0.25, "NG": 0.75}, {"IT": (0.0, 0.5), "NG": (0.5, 1.0)}, False, id="spread-equals-width"),
    pytest.param({"IT": 0.25, "NG": 0.5, "ES": 0.45}, {"IT": (0.2, 0.3), "NG": (0.45, 0.55), "ES": (0.0, 0.9)},
                 False, id="median-not-mean"),  # widths 0.1, 0.1, 0.9: median 0.1 < spread 0.25 < mean 0.37
    pytest.param({"IT": 0.25, "NG": 0.5}, {"IT": (0.0, 0.5), "NG": (0.2, 0.8)}, True, id="even-count-median"),
    pytest.param({"IT": 0.25, "NG": 0.26}, None, False, id="no-ci"),
    pytest.param({"IT": 0.25, "NG": 0.26}, {"IT": (None, None), "NG": (None, None)}, False, id="ci-unknown"),
    pytest.param({"IT": 0.25, "NG": None}, {"IT": (0.0, 1.0)}, False, id="one-value"),
])
def test_the_map_rule_is_the_heatmaps(values, bounds, grey):
    """Strictly narrower than the median CI width; fewer than two values or no CI: coloured as usual."""
    got = worldmap.colours(values, 0.0, 1.0, bounds)
    assert (worldmap.UNCOLOURED in got.values()) == grey
    assert ('class="uncoloured"' in worldmap.map_svg(values, "t", names=NAMES, cis=bounds)) == grey


def test_map_body_draws_the_legend_and_the_note_and_hides_the_one_that_does_not_apply():
    """The map pages' inline map: app.js shows one or the other per choice and fills the note's numbers."""
    for half, shown in ((0.05, "uncoloured"), (0.005, "legend")):
        svg = worldmap.map_body(VALUES, "label", names=NAMES, vmin=0.5, vmax=0.52, digits=2, cis=cis(half))
        found = groups(svg)
        assert set(found) == {"legend", "uncoloured"}
        assert {k for k, g in found.items() if g.get("display") != "none"} == {shown}
        spread, width = (found["uncoloured"].find(f".//{NS}tspan[@class='{c}']").text for c in ("spread", "width"))
        assert (spread, width) == (("0.02", "0.10") if shown == "uncoloured" else (None, None))
        assert fills(svg) == worldmap.colours(VALUES, 0.5, 0.52, cis(half))


def test_the_mean_maps_ci_is_the_mean_of_the_submissions_bounds():
    """Mean value over the submissions with one; CI bounds averaged over those with a CI (never narrower than the
    mean's own where the errors are positively related: the rule errs towards "noise")."""
    def result(values):
        return type("R", (), {"entries": {(HEAD, "country", c): {"value": v, "ci_low": lo, "ci_high": hi}
                                          for c, (v, lo, hi) in values.items()} | {("other", "country", "IT"): {
                                              "value": 9.0, "ci_low": 8.0, "ci_high": 10.0}}})

    results = [result({"IT": (0.4, 0.3, 0.5), "NG": (0.2, None, None), "ES": (None, None, None)}),
               result({"IT": (0.6, 0.4, 0.9), "NG": (0.4, 0.3, 0.6)})]
    means, bounds = figures._country_means(results, HEAD)
    assert means == pytest.approx({"ES": None, "IT": 0.5, "NG": 0.3})
    assert bounds.keys() == {"IT", "NG"}
    assert bounds["IT"] == pytest.approx((0.35, 0.7)) and bounds["NG"] == pytest.approx((0.3, 0.6))


# --- the map page's data, from hand-made results


def card(name: str) -> dict:
    return {"name": name, "title": name.upper(), "direction": "higher", "target": None, "family": "cube",
            "unit": "image", "formula": "", "range": "[0, 1]", "source": "", "scorers": [], "version": 1,
            "validity": [], "chance": None, "proxy_for": None}


def map_result(model: str, countries: dict[str, tuple[float, float | None, float | None]]) -> Result:
    """A cube-awareness result of lab / ``model`` with ``countries``: iso2 -> (value, CI low, CI high)."""
    spec = {"organization": "lab", "model": {"name": model, "id": f"lab/{model}", "revision": "0" * 40,
                                             "license": "mit", "weights": "open"}}
    sid = f"lab__{model}"
    rows = [("overall", "all", 0.5, 0.4, 0.6)] + [("country", c, *v) for c, v in countries.items()]
    metrics = [{"metric": HEAD, "slice_type": t, "slice": s, "value": v, "ci_low": lo, "ci_high": hi,
                "n_images": 40, "n_prompts": 10, "coverage": 1.0, "complete": True, "n_refused": 0, "n_flagged": 0,
                "flags": {}} for t, s, v, lo, hi in rows]
    summary = {"provenance": {"prompt_set": PS, "dataset": {"revision": "r1"}, "dtype": "fp32", "scorers": [],
                              "metrics": {HEAD: 1}, "options": {}, "settings": {}, "notes": {}},
               "metrics": metrics, "metrics_info": [card(HEAD)]}
    entries = {(e["metric"], e["slice_type"], e["slice"]): e for e in metrics}
    scores = pd.DataFrame(columns=["file_name", "metric", "value", "unit_id", "country", "flag"])
    return Result(sid, summary, scores, spec, Path(sid), [], entries, display=display_name(spec, sid))


#: Each submission's countries: (value, CI low, CI high). flat: spread 0.02 under CIs 0.10 wide; steep: spread 0.4
#: under 0.1; bare: no CIs; edge: spread 0.5 equal to the CIs' width (not narrower); skewed: widths 0.1, 0.1, 0.9
#: (median 0.1, mean 0.37) under spread 0.25; even, even2: two widths, 0.2 and 0.6 (median 0.4), under spread 0.3
#: and 0.5 (a median taking either middle width alone gets one of them wrong).
MAP_RESULTS = {"flat": {"IT": (0.50, 0.45, 0.55), "NG": (0.52, 0.47, 0.57), "ES": (0.51, 0.46, 0.56)},
               "steep": {"IT": (0.30, 0.25, 0.35), "NG": (0.70, 0.65, 0.75), "ES": (0.50, 0.45, 0.55)},
               "bare": {"IT": (0.40, None, None), "NG": (0.41, None, None), "ES": (0.42, None, None)},
               "edge": {"IT": (0.25, 0.0, 0.5), "NG": (0.75, 0.5, 1.0), "ES": (0.5, 0.25, 0.75)},
               "skewed": {"IT": (0.25, 0.2, 0.3), "NG": (0.5, 0.45, 0.55), "ES": (0.45, 0.0, 0.9)},
               "even": {"IT": (0.25, 0.15, 0.35), "NG": (0.55, 0.25, 0.85), "ES": (0.3, None, None)},
               "even2": {"IT": (0.25, 0.15, 0.35), "NG": (0.75, 0.45, 1.05), "ES": (0.5, None, None)}}
#: The choices of the map page whose colours would paint noise; the mean's spread (0.31 to 0.60 over IT, ES, NG) is
#: less than its median CI width (the means of the bounds: widths 0.2, 0.4, 0.33).
MAP_GREY = {"lab / flat", "lab / even", "Mean of the ranked submissions"}


def map_site(root: Path) -> tuple[Site, Board]:
    """A site at ``root`` of the board of :data:`MAP_RESULTS`."""
    board = Board({r.sid: r for r in (map_result(m, v) for m, v in MAP_RESULTS.items())}, {})
    site = Site(root, {"skipped": [], "footer": {"built": "2026-01-01", "site_code": "x", "results": 3, "code": [],
                                                  "datasets": [], "devices": [], "min_prompts": 5,
                                                  "order": "the point value"},
                       "banner": None, "trust_page": False, "galleries": {}})
    return site, board


def write_map_page(root: Path, smallest: float | None = None) -> tuple[Path, dict]:
    """The map page of :data:`MAP_RESULTS` under ``root`` (with the site's static files and search index) and its
    data-map; ``smallest``: the card's smallest meaningful difference."""
    site, board = map_site(root)
    board.cards[HEAD]["smallest_difference"] = smallest
    figures.map_pages(site, board)
    write_search_index(site, board)
    shutil.copytree(Path(figures.__file__).parent / "static", root / "static")
    page = root / figures.map_page(board.groups[PS][0], HEAD)
    data = json.loads(html.unescape(page.read_text().split('data-map="', 1)[1].split('"', 1)[0]))
    return page, data


def test_the_map_pages_data_carry_each_choices_cis_and_the_mean_is_drawn_by_the_rule(tmp_path):
    page, data = write_map_page(tmp_path)
    by = {ch["label"]: ch for ch in data["choices"]}
    flat = by["lab / flat"]
    assert (flat["values"], flat["low"], flat["high"]) == ([0.51, 0.5, 0.52], [0.46, 0.45, 0.47], [0.56, 0.55, 0.57])
    assert data["countries"] == ["ES", "IT", "NG"] and by["lab / bare"]["low"] == [None, None, None]
    mean = data["choices"][0]
    assert mean["low"][0] == pytest.approx((0.46 + 0.45 + 0.25 + 0.0) / 4)  # Spain: the four submissions with a CI
    for label, choice in by.items():  # the Python rule on each choice, as app.js must apply it
        bounds = dict(zip(data["countries"], zip(choice["low"], choice["high"])))
        grey = worldmap.noise(dict(zip(data["countries"], choice["values"])), bounds) is not None
        assert grey == (label in MAP_GREY), label
    drawn = dict(re.findall(r'data-iso="(\w\w)" d="[^"]*" fill="(#[0-9a-f]{6})"', page.read_text()))
    assert drawn == worldmap.colours(dict(zip(data["countries"], mean["values"])), data["vmin"], data["vmax"],
                                     dict(zip(data["countries"], zip(mean["low"], mean["high"]))), data["smallest"],
                                     data["centre"])


def test_the_leaderboards_map_of_the_means_follows_the_rule(tmp_path):
    """The leaderboard's static map of the mean per country: grey with the note where the mean's spread is narrower
    than its CIs (:data:`MAP_GREY`); coloured once the CIs are narrow."""
    site, board = map_site(tmp_path)
    group = board.groups[PS][0]
    figures.group_figures(site, board, f"leaderboard/{PS}.html", group)
    svg = (tmp_path / f"plots/leaderboard-{PS}-{group.name}-map.svg").read_text()
    assert set(fills(svg).values()) == {worldmap.UNCOLOURED} and set(groups(svg)) == {"uncoloured"}
    for r in board.results.values():
        for (_, t, _), e in r.entries.items():
            if t == "country" and e["ci_low"] is not None:
                e["ci_low"], e["ci_high"] = e["value"] - 0.001, e["value"] + 0.001
    figures.group_figures(site, board, f"leaderboard/{PS}.html", group)
    svg = (tmp_path / f"plots/leaderboard-{PS}-{group.name}-map.svg").read_text()
    assert worldmap.UNCOLOURED not in fills(svg).values() and set(groups(svg)) == {"legend"}


TOY = {"IT": 0.40, "NG": 0.49, "ES": 0.51, "FR": 0.60}  # mean 0.50: Nigeria and Spain 0.01 from it, Italy and France 0.1


def test_a_country_whose_difference_does_not_clear_the_smallest_meaningful_difference_is_neutral():
    """Smallest meaningful difference 0.02: a 0.01 difference from the mean is light grey, a 0.1 one coloured; the
    legend says what the grey means; a difference whose interval reaches into the band is grey too."""
    bounds = {iso: (v - 0.002, v + 0.002) for iso, v in TOY.items()}
    svg = worldmap.map_svg(TOY, "t", names=NAMES, cis=bounds, smallest=0.02)
    got = fills(svg)
    assert (got["NG"], got["ES"]) == (worldmap.UNCOLOURED, worldmap.UNCOLOURED)
    assert (got["IT"], got["FR"]) == ("#440154", "#fde725")
    legend = "".join(groups(svg)["legend"].itertext())
    assert "difference from the mean (0.50) not clearly beyond ±0.02" in legend
    assert "light grey: difference from the mean" in ET.fromstring(svg).find(f"{NS}desc").text
    assert worldmap.colours(TOY, 0.4, 0.6, bounds) == {"IT": "#440154", "NG": got_colour(0.49), "ES": got_colour(0.51),
                                                       "FR": "#fde725"}  # no threshold: every value coloured
    wide = dict(bounds, FR=(0.55, 0.65))  # 0.1 from the mean, but its interval reaches 0.05 of it: still clears
    assert worldmap.colours(TOY, 0.4, 0.6, wide, 0.02)["FR"] == "#fde725"
    reaching = dict(bounds, FR=(0.515, 0.65))  # the interval of the difference starts at 0.015 < 0.02
    assert worldmap.colours(TOY, 0.4, 0.6, reaching, 0.02)["FR"] == worldmap.UNCOLOURED
    assert worldmap.colours(TOY, 0.4, 0.6, None, 0.02) == got  # no CI: the point difference against 0.02
    centred = worldmap.colours(TOY, 0.4, 0.6, bounds, 0.02, centre=0.41)  # a target metric: from its target
    assert (centred["IT"], centred["NG"]) == (worldmap.UNCOLOURED, got_colour(0.49))


def got_colour(t_value: float) -> str:
    from cultureboard.site.plots import _colour

    return _colour((t_value - 0.4) / 0.2)


def test_map_body_names_the_reference_for_the_script_to_rewrite():
    svg = worldmap.map_body(TOY, "label", names=NAMES, vmin=0.4, vmax=0.6, digits=2, smallest=0.02)
    assert '<text x="536" y="' in svg and 'class="neutral-text">difference from the mean (0.50) not clearly' in svg
    assert fills(svg) == worldmap.colours(TOY, 0.4, 0.6, None, 0.02)
