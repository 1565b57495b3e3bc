"""The site's language-parity parts (issue 26) from hand-made results of cube-awareness-native: a gap column beside
the headline on the leaderboards and the country pages, a per-language table with refusals on the model page,
and world maps coloured by the gap on a scale centred on 0. Everything from a result is escaped."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from cultureboard.site import figures, leaderboards, worldmap
from cultureboard.site.board import Board
from cultureboard.site.load import Result
from cultureboard.site.models import overview_pages
from cultureboard.site.names import display_name
from cultureboard.site.write import Site

PS = "cube-awareness-native"
HEAD, GAP = "cube.cultural_relevance", "cube.cultural_relevance.parity"
HOSTILE = "<script>alert(1)</script>"


def card(name: str) -> dict:
    gap = name.endswith(".parity")
    return {"name": name, "title": name.upper(), "direction": "target" if gap else "higher",
            "target": 0.0 if gap else None, "family": "cube", "unit": "pair" if gap else "image", "formula": "",
            "range": "[0, 1]", "source": "", "scorers": [], "version": 1, "validity": [], "chance": None,
            "proxy_for": None, "tier": "validated"}  # a toy metric ranked as a validated one


def entry(metric, slice_type, slice_, value, q=None) -> dict:
    out = {"metric": metric, "slice_type": slice_type, "slice": slice_, "value": value, "ci_low": value - 0.01,
           "ci_high": value + 0.01, "n_images": 40, "n_prompts": 10, "coverage": 1.0, "complete": True,
           "n_refused": 0, "n_flagged": 0, "flags": {}}
    return out | ({"p": q, "p_adjusted": q} if metric.endswith(".parity") else {})


def result(model: str, gaps: dict[tuple[str, str], tuple[float, float]], counts: dict[str, int]) -> Result:
    """A cube-awareness-native result of lab / ``model``: headline 0.5 everywhere, and its gap per (slice type,
    slice) as (value, BH q)."""
    spec = {"organization": "lab", "model": {"name": model, "id": f"lab/{model}", "revision": "0" * 40,
                                             "license": "mit", "weights": "open"}}
    sid = f"lab__{model}"
    metrics = [entry(HEAD, t, s, 0.5) for t, s in gaps] + [entry(GAP, t, s, v, q) for (t, s), (v, q) in gaps.items()]
    summary = {"provenance": {"prompt_set": PS, "dataset": {"revision": "r1"}, "dtype": "fp32", "scorers": [],
                              "metrics": {HEAD: 1, GAP: 101}, "options": {}, "settings": {},
                              "notes": {GAP: {"counts": counts}}},
               "metrics": metrics, "metrics_info": [card(HEAD), card(GAP)]}
    entries = {(e["metric"], e["slice_type"], e["slice"]): e for e in metrics}
    scores = pd.DataFrame(columns=["file_name", "metric", "value", "unit_id", "country", "flag"])
    return Result(sid, summary, scores, spec, Path(sid), [], entries, display=display_name(spec, sid))


@pytest.fixture
def parity_site(tmp_path) -> tuple[Site, Board]:
    """alpha: Yoruba darker than English (q 0.01: badged), Spanish on par, one Hausa prompt refused and a
    language tag that is markup; beta: small gaps."""
    alpha = result("alpha", {("overall", "all"): (-0.06, 0.01), ("country", "NG"): (-0.09, 0.01),
                             ("country", "ES"): (0.01, 0.4), ("language", "yo"): (-0.12, 0.01),
                             ("language", "es"): (0.01, 0.4), ("language", HOSTILE): (0.0, 0.9)},
                   {"es pairs": 4, "es refused": 0, "es English refused": 0, "yo pairs": 4, "yo refused": 0,
                    "yo English refused": 0, "ha pairs": 4, "ha refused": 4, "ha English refused": 0})
    beta = result("beta", {("overall", "all"): (0.02, 0.5), ("country", "NG"): (0.02, 0.5),
                           ("country", "ES"): (0.03, 0.5)}, {})
    board = Board({r.sid: r for r in (alpha, beta)}, {})
    site = Site(tmp_path, {"skipped": [], "footer": {"built": "2026-01-01", "site_code": "x", "results": 2, "code": [],
                                                      "datasets": [], "devices": [], "min_prompts": 5,
                                                      "order": "the point value"},
                           "banner": None, "trust_page": False, "galleries": {}})
    return site, board


def rows(site: Site, stem: str) -> list[dict]:
    return json.loads((site.root / f"data/{stem}.json").read_text())["rows"]


def test_the_gap_is_beside_the_headline_and_never_taken_for_a_scorer_variant(parity_site):
    site, board = parity_site
    group = board.groups[PS][0]
    assert group.headline == [HEAD, GAP] and group.shown[:2] == [HEAD, GAP]
    assert board.variants(HEAD, group.metrics) == [HEAD]  # not "<metric>.<scorer>": no rank spread


def test_leaderboards_and_country_pages_have_a_gap_column_ranked_by_distance_to_zero(parity_site):
    site, board = parity_site
    leaderboards.overview(site, board)
    leaderboards.slice_pages(site, board)
    top = rows(site, f"index-{PS}-g1")
    assert [(r["submission"], r[GAP]) for r in top] == [("lab / alpha", -0.06), ("lab / beta", 0.02)]
    nigeria = rows(site, f"country-NG-{PS}-g1")
    assert [(r["submission"], r[GAP], bool(r.get(f"{GAP}_badges"))) for r in nigeria] == [
        ("lab / alpha", -0.09, True), ("lab / beta", 0.02, False)]  # the badge: q < 0.05 across countries
    html = (site.root / "country/NG.html").read_text()
    assert "language gap" in html and GAP.upper() in html
    assert not rows(site, f"country-ES-{PS}-g1")[0].get(f"{GAP}_badges")
    # ranked by |gap|: on Nigeria beta (0.02) is nearer 0 than alpha (-0.09) on the gap
    assert board.ranks(board.groups[PS][0], GAP, "country", "NG")["lab__beta"]["rank"] == 1


def test_the_model_page_has_a_per_language_table_with_refusals(parity_site):
    site, board = parity_site
    overview_pages(site, board, {sid: f"model/{sid}/images-1.html" for sid in board.results})
    table = rows(site, "models-lab__alpha-languages")
    by = {r["language"]: r for r in table}
    assert sorted(by) == sorted([HOSTILE, "es", "ha", "yo"])
    assert (by["ha"]["pairs"], by["ha"]["refused"], by["ha"]["refusal_rate"], by["ha"]["gap"]) == (4, 4, 1.0, None)
    assert (by["yo"]["gap"], by["yo"]["refusal_rate"], bool(by["yo"]["gap_badges"])) == (-0.12, 0.0, True)
    html = (site.root / "models/lab__alpha.html").read_text()
    assert "Per language" in html and HOSTILE not in html and "&lt;script&gt;" in html
    assert "Per language" not in (site.root / "models/lab__beta.html").read_text()  # no language slices
    assert not (site.root / "data/models-lab__beta-languages.json").exists()  # nor an empty download


def test_world_maps_colour_countries_by_the_gap_centred_on_zero(parity_site):
    site, board = parity_site
    group = board.groups[PS][0]
    found = figures.group_figures(site, board, f"leaderboard/{PS}.html", group)
    assert any(f["href"] == figures.map_page(group, GAP) for f in found)
    svg = (site.root / f"plots/leaderboard-{PS}-{group.name}-map-parity.svg").read_text()
    assert "Nigeria" in svg and GAP.upper() in svg
    figures.map_pages(site, board)
    page = (site.root / figures.map_page(group, GAP)).read_text()
    data = json.loads(page.split('data-map="', 1)[1].split('"', 1)[0].replace("&#34;", '"').replace("&quot;", '"'))
    assert data["vmin"] == -data["vmax"]  # 0, no gap, is the ramp's middle colour
    assert worldmap.scale_of([-0.09, 0.03], 0.0)[:2] == (-0.09, 0.09) and worldmap.scale_of([0.2, 0.3])[:2] == (0.2, 0.3)
