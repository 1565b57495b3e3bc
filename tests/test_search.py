"""The site's search index (site/search_index.py, static/search.js): built from the five-family world
(tests/site_worlds.py), every model, submission, country, metric, artifact and prompt page is in it, every href is a
written page, hostile names stay data, and every page carries the (hidden until scripted) search box."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from cultureboard.site.gallery import prompt_page
from cultureboard.site.render import build_site
from cultureboard.site.search_index import GLOBAL, INDEX, search_script, submission_label
from site_worlds import HOSTILE, five_families

from cultureboard.dataset_folder import read_prompt_set


@pytest.fixture(scope="module")
def built(tmp_path_factory, tiny_scorers):
    base = five_families(tmp_path_factory.getbasetemp(), tiny_scorers)
    out = tmp_path_factory.mktemp("search") / "site"
    build_site(base["results"], base["dataset"], base["submissions"], out, built="2026-01-02")
    return base, out


def read_index(site: Path) -> list[dict]:
    text = (site / INDEX).read_text()
    prefix, suffix = f"window.{GLOBAL} = ", ";\n"
    assert text.startswith(prefix) and text.endswith(suffix), text[:80]
    return json.loads(text[len(prefix):-len(suffix)])


def test_every_model_country_metric_and_prompt_page_is_indexed(built):
    base, site = built
    entries = read_index(site)
    hrefs = {e["href"] for e in entries}
    for folder in ("models", "model", "country", "metric", "prompt"):
        pages = {p.relative_to(site).as_posix() for p in site.glob(f"{folder}/**/*.html")}
        if folder == "model":  # the image browser pages under model/<id>/ are not search targets
            pages = {p for p in pages if p.count("/") == 1}
        assert pages, f"the world has no {folder} page"
        assert pages <= hrefs, f"{folder} pages missing from the index: {sorted(pages - hrefs)[:3]}"
    assert {e["kind"] for e in entries} >= {"model", "submission", "country", "region group", "metric", "artifact"}
    assert any(e["kind"] == "country" and e["label"] == "Italy (IT)" and e["href"] == "country/IT.html"
               for e in entries)
    labels = {(e["kind"], e["href"]): e["label"] for e in entries}
    prompts = [p for p in read_prompt_set(base["dataset"], "cube-awareness")
               if (site / prompt_page("cube-awareness", p["prompt_id"])).is_file()]
    assert prompts, "no cube-awareness prompt page"
    for p in prompts:
        assert labels[("prompt (cube-awareness)", prompt_page("cube-awareness", p["prompt_id"]))] == p["text"]


def test_every_href_is_a_written_page_and_unique(built):
    _, site = built
    entries = read_index(site)
    assert all((site / e["href"]).is_file() for e in entries)
    keys = [(e["kind"], e["href"]) for e in entries]
    assert len(keys) == len(set(keys))
    artifacts = [e for e in entries if e["kind"] == "artifact"]
    assert all(e["href"].startswith("prompt/") for e in artifacts)


def test_hostile_labels_stay_data(built):
    _, site = built
    text = (site / INDEX).read_text()
    assert not re.search(r"[<>&]", text.split("=", 1)[1]), "raw markup characters in the index"
    labels = {e["label"] for e in read_index(site)}
    assert any(HOSTILE[0] in label and HOSTILE[1] in label for label in labels)
    script = (site / "static" / "search.js").read_text()
    assert "textContent" in script and "innerHTML" not in script and "fetch(" not in script


def test_search_script_escapes_what_could_end_a_script():
    text = search_script([{"label": "</script><b>é & \u2028", "kind": "model", "href": "models/x.html"}])
    assert "</script>" not in text and "\u2028" not in text and "&" not in text
    assert json.loads(text.split(" = ", 1)[1].removesuffix(";\n"))[0]["label"] == "</script><b>é & \u2028"


def test_every_page_has_the_search_box(built):
    _, site = built
    for path in [site / "index.html", site / "country" / "IT.html", *site.glob("prompt/*/*.html")][:6]:
        source = path.read_text()
        depth = path.relative_to(site).as_posix().count("/")
        assert f'<div class="search" role="search" data-root="{"../" * depth}" hidden>' in source, path
        assert f'<script src="{"../" * depth}search-index.js" defer></script>' in source, path


@pytest.mark.parametrize("display, prompt_set, label", [
    ("demo / tiny-a (cube-awareness)", "cube-awareness", "demo / tiny-a (cube-awareness)"),  # the tag names it
    ("lab / alpha", "cube-awareness", "lab / alpha (cube-awareness)"),
    ("lab / alpha (v2)", "cultdiff", "lab / alpha (v2) (cultdiff)"),
    ("lab / alpha (cultdiff)", "cultdiff-native", "lab / alpha (cultdiff) (cultdiff-native)")])
def test_a_submission_label_names_its_prompt_set_once(display, prompt_set, label):
    assert submission_label(SimpleNamespace(display=display, prompt_set=prompt_set)) == label
