"""models/<org>__<model>.html: one page per model across its prompt sets (site/models.py).

Fast: hand-made results (summary entries with known values) on a real :class:`Board`, pages written by the real
:class:`Site`, without a site build. A model scored on two prompt sets must show both, with each one's own headline,
CI, rank, submission page and images; losing the second prompt set fails these tests.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image as PILImage

from cultureboard.builder.dataset import prompt_config, write_dataset
from cultureboard.builder.prompt_sets import PromptSet
from cultureboard.evaluators import evaluate
from cultureboard.evaluators.engine.context import score_row
from cultureboard.evaluators.engine.registry import Family, MetricCard, PromptSetSpec, register, unregister
from cultureboard.site.board import Board
from cultureboard.site.load import Result
from cultureboard.site.models import model_page, models_of, overview_pages
from cultureboard.site.names import display_name
from cultureboard.site.render import build_site
from cultureboard.site.write import Site
from results_factory import make_submission

CUBE, CURE = "cube.cultural_relevance", "cure.ita.cr"  # the headlines of cube-awareness and cure-ladder


#: The one scorer of the results, which says it learned from LAION (CUBE's headline reads it, CuRe's does not).
JUDGE = {"name": "judge", "model_id": "test/judge", "revision": "1", "training_data": ["LAION-2B"]}


def card(name: str, direction: str = "higher") -> dict:
    return {"name": name, "title": name.upper(), "direction": direction, "family": name.split(".")[0], "unit": "",
            "formula": "", "range": "[0, 1]", "source": "", "scorers": ["judge"] if name == CUBE else [], "version": 1,
            "validity": [],
            "chance": None, "proxy_for": None,
            "tier": "validated"}  # a toy metric ranked as a validated one


def entry(metric: str, slice_type: str, slice_: str, value: float, n_prompts: int = 8) -> dict:
    return {"metric": metric, "slice_type": slice_type, "slice": slice_, "value": value, "ci_low": value - 0.05,
            "ci_high": value + 0.05, "n_images": 4 * n_prompts, "n_prompts": n_prompts, "coverage": 1.0, "complete": True}


def result(org: str, model: str, tag: str | None, prompt_set: str, metric: str, values: dict[str, float],
           control: str | None = None, units: dict[str, float] | None = None, **spec_model) -> Result:
    """A result whose headline is ``values["all"]`` over all prompts and ``values[ISO]`` on each country;
    ``units``: country -> the value of each of its 10 scored prompts (what the disparity gaps are computed from)."""
    spec = {"organization": org, "model": {"name": model, "id": f"{org}/{model}", "revision": "0" * 40,
                                           "license": "mit", "weights": "open", **spec_model}}
    spec |= {"tag": tag} if tag else {}
    sid = "__".join(p for p in (org, model, tag) if p)
    other = f"{metric}.other"  # a second metric, sorted after the headline: never the one shown
    metrics = [entry(m, "overall" if k == "all" else "country", k, v + shift)
               for m, shift in ((metric, 0), (other, 0.2)) for k, v in values.items()]
    summary = {"provenance": {"prompt_set": prompt_set, "dataset": {"revision": "r1"}, "dtype": "fp32", "scorers": [JUDGE],
                              "metrics": {metric: 1, other: 1}, "options": {}, "settings": {}},
               "metrics": metrics, "metrics_info": [card(metric), card(other)]}
    entries = {(e["metric"], e["slice_type"], e["slice"]): e for e in metrics}
    scores = pd.DataFrame([{"file_name": f"{c}{k}.png", "metric": metric, "value": v + k / 1000, "unit_id": f"{c}{k}",
                            "country": c, "flag": None} for c, v in (units or {}).items() for k in range(10)],
                          columns=["file_name", "metric", "value", "unit_id", "country", "flag"])
    return Result(sid, summary, scores, spec, Path(sid), [], entries,
                  display=display_name(spec, sid), control=control)


@pytest.fixture
def board() -> Board:
    """lab / alpha on cube-awareness and cure-ladder (tagged folders; declares LAION training data; on
    cube-awareness Nigeria's prompts score far below Italy's), lab / beta on cube-awareness (no tag, so its
    submission id is its model key), and a cube-awareness control."""
    alpha = {"training_data": "a LAION-5B subset"}
    results = [result("lab", "alpha", "cube-awareness", "cube-awareness", CUBE, {"all": 0.61, "IT": 0.70, "NG": 0.52},
                      units={"IT": 0.8, "NG": 0.3}, **alpha),
               result("lab", "alpha", "cure-ladder", "cure-ladder", CURE, {"all": 0.33, "NG": 0.21, "ES": 0.44},
                      links=["https://example.org/alpha", "javascript:alert(1)"], **alpha),
               result("lab", "beta", None, "cube-awareness", CUBE, {"all": 0.40, "IT": 0.45}, id="local/beta"),
               result("control", "text-only", None, "cube-awareness", CUBE, {"all": 0.5}, control="text-only")]
    return Board({r.sid: r for r in results}, {})


@pytest.fixture
def site(tmp_path, board) -> Site:
    site = Site(tmp_path, {"skipped": [], "footer": {"built": "2026-01-01", "site_code": "x", "results": 4, "code": [],
                                                      "datasets": [], "devices": [], "min_prompts": 5,
                                                      "order": "the point value"},
                           "banner": None, "trust_page": False, "galleries": {}})
    overview_pages(site, board, {sid: f"model/{sid}/images-1.html" for sid in board.results})
    return site


def download(site: Site, key: str, table: str) -> list[dict]:
    return json.loads((site.root / f"data/models-{key}-{table}.json").read_text())["rows"]


def test_models_group_a_models_prompt_sets_and_leave_controls_out(board):
    assert {k: [r.sid for r in rs] for k, rs in models_of(board).items()} == {
        "lab__alpha": ["lab__alpha__cube-awareness", "lab__alpha__cure-ladder"], "lab__beta": ["lab__beta"]}


def test_overview_is_apart_from_the_submission_pages():
    """An untagged submission's own page is model/<org>__<model>.html: the overview must not take its place."""
    assert model_page("lab__beta") == "models/lab__beta.html"


def test_model_page_lists_every_prompt_set_with_its_headline_ci_rank_and_links(site):
    rows = download(site, "lab__alpha", "prompt-sets")
    assert [(r["prompt_set"], r["submission"], r["metric"], r["headline"], round(r["headline_ci_low"], 9),
             round(r["headline_ci_high"], 9)) for r in rows] == [("cube-awareness", "lab__alpha__cube-awareness", CUBE.upper(), 0.61, 0.56, 0.66),
                               ("cure-ladder", "lab__alpha__cure-ladder", CURE.upper(), 0.33, 0.28, 0.38)]
    # ranks within each prompt set's group: alpha beats beta on cube-awareness (CIs apart), alone on cure-ladder
    assert [(r["rank_best"], r["rank_worst"]) for r in rows] == [(1, 1), (1, 1)]
    html = (site.root / "models/lab__alpha.html").read_text()
    for sid in ("lab__alpha__cube-awareness", "lab__alpha__cure-ladder"):
        assert f'href="../model/{sid}.html"' in html and f'href="../model/{sid}/images-1.html"' in html
    assert 'href="../leaderboard/cure-ladder.html"' in html and "<h1>lab / alpha</h1>" in html


def test_beta_ranks_below_alpha_and_has_its_own_page(site):
    rows = download(site, "lab__beta", "prompt-sets")
    assert [(r["prompt_set"], r["headline"], r["rank_best"], r["rank_worst"]) for r in rows] == [
        ("cube-awareness", 0.40, 2, 2)]
    assert not (site.root / "models/control__text-only.html").exists()


def test_country_table_has_each_prompt_sets_headline_per_country(site):
    """Rows: the union of the countries; a column per submission; a country a prompt set did not slice is empty."""
    rows = download(site, "lab__alpha", "countries")
    assert [(r["country"], r["s0"], r["s1"]) for r in rows] == [
        ("Italy (IT)", 0.70, None), ("Nigeria (NG)", 0.52, 0.21), ("Spain (ES)", None, 0.44)]
    html = (site.root / "models/lab__alpha.html").read_text()
    assert "cube-awareness: CUBE.CULTURAL_RELEVANCE" in html and "cure-ladder: CURE.ITA.CR" in html
    assert 'href="../country/NG.html"' in html


def test_badges_entangled_headline_and_under_represented_country(site):
    """Entangled: the cube-awareness headline only (its scorer learned from LAION, CuRe's reads none); under-
    represented: Nigeria on cube-awareness only (Italy's gap is above zero; CuRe has no per-prompt scores)."""
    rows = download(site, "lab__alpha", "prompt-sets")
    assert [bool(r["headline_badges"]) for r in rows] == [True, False] and "LAION-2B" in rows[0]["headline_badges"]
    assert [(r["country"], bool(r["s0_badges"]), bool(r["s1_badges"])) for r in download(site, "lab__alpha", "countries")] \
        == [("Italy (IT)", False, False), ("Nigeria (NG)", True, False), ("Spain (ES)", False, False)]
    assert "under-represented" in (site.root / "models/lab__alpha.html").read_text()
    assert not download(site, "lab__beta", "prompt-sets")[0]["headline_badges"]  # beta declares nothing


def test_country_gaps_are_drawn_for_the_prompt_set_that_has_them(site):
    """alpha's cube-awareness has per-prompt scores in Italy and Nigeria: one chart, Nigeria's bar below its mean;
    cure-ladder (no per-prompt scores) has none."""
    plots = sorted(p.name for p in (site.root / "plots").iterdir())
    assert [p for p in plots if p.startswith("models-lab__alpha-")] == ["models-lab__alpha-gaps-0.svg"]
    svg = (site.root / "plots/models-lab__alpha-gaps-0.svg").read_text()
    assert "Nigeria (NG)" in svg and "Italy (IT)" in svg and "cube-awareness: CUBE.CULTURAL_RELEVANCE" in svg
    assert 'src="../plots/models-lab__alpha-gaps-0.svg"' in (site.root / "models/lab__alpha.html").read_text()


def test_model_card_links_the_hub_page_and_only_web_addresses(site):
    """The Hub page of the open model's id, and the links of the cure-ladder submission (not the first one)."""
    html = (site.root / "models/lab__alpha.html").read_text()
    assert 'href="https://huggingface.co/lab/alpha"' in html and 'href="https://example.org/alpha"' in html
    assert 'href="javascript' not in html and "javascript:alert(1)" in html  # shown as text, never linked
    assert "<dt>model.revision</dt><dd><span class=\"text\">" + "0" * 40 in html
    assert "huggingface.co" not in (site.root / "models/lab__beta.html").read_text()  # a local folder's id


# ------------------------------------------------------------------------------------------ through build_site

@dataclass(frozen=True)
class NoOptions:
    pass


def _brightness(ctx) -> list[dict]:
    return [score_row("duo.brightness", float(np.asarray(PILImage.open(im.path)).mean() / 255), im) for im in ctx.images]


DUO = Family(name="duo", title="Duo", description="Two prompt sets of one family, only in these tests.", papers={},
             prompt_sets=tuple(PromptSetSpec(ps, _brightness, ("duo.brightness",), shard_unit=lambda p: p["prompt_id"])
                               for ps in ("duo-a", "duo-b")),
             metrics=(MetricCard("duo.brightness", "duo", "Brightness", "mean pixel / 255", "higher", "[0, 1]", (),
                                 "these tests", version=1, primary=True, direction_evidence="a test family"),),
             options=NoOptions)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A site built from lab / alpha on the two prompt sets duo-a and duo-b (folders tagged by prompt set); 12
    images a submission, 4 a browser page."""
    register(DUO)
    try:
        root = tmp_path_factory.mktemp("duo")
        configs = [prompt_config(PromptSet(ps, "1", "duo", "duo", [
            {"prompt_id": f"{ps}/{k}", "prompt_set": ps, "text": f"a photo number {k}", "negative_prompt": "",
             "kind": "t2i", "images_per_prompt": 2, "seeds": [0, 1], "seed_scheme": "consecutive", "country": c,
             "continent": "Europe" if c == "IT" else "Africa", "region_group": "GN" if c == "IT" else "GS",
             "category": "cuisine"} for k, c in enumerate(["IT", "NG"] * 3)])) for ps in ("duo-a", "duo-b")]
        dataset = write_dataset(root / "dataset", configs, {})
        for ps in ("duo-a", "duo-b"):
            folder = make_submission(root / "submissions", dataset, ps, model="alpha", tag=ps)
            evaluate(folder, dataset, root / "results", device="cpu", n_boot=50, cache=root / "cache")
        build_site(root / "results", dataset, root / "submissions", root / "site", page_size=4, workers=1)
        yield root / "site"
    finally:
        unregister("duo")


@pytest.mark.slow
def test_the_built_site_has_one_model_page_with_both_prompt_sets(built):
    """The model's overview lists both prompt sets and links their submission pages; each submission page links
    back to the overview."""
    rows = json.loads((built / "data/models-lab__alpha-prompt-sets.json").read_text())["rows"]
    assert [(r["prompt_set"], r["submission"]) for r in rows] == [("duo-a", "lab__alpha__duo-a"),
                                                                 ("duo-b", "lab__alpha__duo-b")]
    assert all(0 < r["headline"] < 1 for r in rows)
    html = (built / "models/lab__alpha.html").read_text()
    assert 'href="../model/lab__alpha__duo-b.html"' in html and 'href="../model/lab__alpha__duo-b/images-1.html"' in html
    for ps in ("duo-a", "duo-b"):
        assert 'href="../models/lab__alpha.html"' in (built / f"model/lab__alpha__{ps}.html").read_text()


def test_a_learned_scorers_own_training_images_badge_the_metric_entangled(board):
    """Rows a learned scorer left out because its training record holds the image (flag IN_TRAINING) badge the
    metric "entangled" from that record, whatever the model declares as free text."""
    from cultureboard.evaluators.engine.context import IN_TRAINING

    beta = board.results["lab__beta"]
    assert board.entangled(beta, CUBE) == []  # nothing declared in common, nothing flagged
    beta.entries[(CUBE, "overall", "all")]["flags"] = {IN_TRAINING: 3, "unreadable answer": 1}
    found = board.entangled(beta, CUBE)
    assert len(found) == 1 and found[0]["scorer"] == "judge" and found[0]["corpora"][0].startswith("3 of this")
