"""submissions.html (site/submissions_page.py): every submission folder with its state.

A small world through the real validator and evaluator (tiny stand-in scorers, cube-awareness): one valid scored
submission, one scored whose result recorded another metric version (stale), one whose submission.yaml lost its
organisation and which lost an image (invalid: the first error shown) and one valid but never evaluated (not scored).
"""

from __future__ import annotations

import csv
import json

import pytest
import yaml

from cultureboard.evaluators.engine.registry import family_of
from cultureboard.site.submissions_page import _changes, states, submissions_page
from cultureboard.site.write import Site
from results_factory import evaluate_all, make_dataset, make_submission

PROMPT_SET = "cube-awareness"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("subpage")
    dataset = make_dataset(root / "dataset")
    subs = root / "submissions"
    scored, stale, invalid, unscored = (make_submission(subs, dataset, PROMPT_SET, model=m)
                                        for m in ("scored", "stale", "invalid", "unscored"))
    results = evaluate_all([scored, stale], dataset, root / "results", root / "work")
    path = results / stale.name / "summary.json"
    summary = json.loads(path.read_text())
    metric = sorted(summary["provenance"]["metrics"])[0]
    summary["provenance"]["metrics"][metric] = 99
    path.write_text(json.dumps(summary))
    spec = yaml.safe_load((invalid / "submission.yaml").read_text())
    del spec["organization"]
    (invalid / "submission.yaml").write_text(yaml.safe_dump(spec))
    next((invalid / "images").rglob("*.png")).unlink()  # a second, later error: the first must be shown
    return {"dataset": dataset, "submissions": subs, "results": results, "metric": metric,
            "rows": {r["submission"]: r for r in states(subs, results, dataset)}}


def test_each_folder_has_its_state(world):
    rows = world["rows"]
    assert {k: r["state"] for k, r in rows.items()} == {
        "lab__scored": "scored", "lab__stale": "stale", "lab__invalid": "invalid", "lab__unscored": "not scored"}
    assert list(rows) == sorted(rows)


def test_scored_says_which_code_scored_it(world):
    summary = json.loads((world["results"] / "lab__scored" / "summary.json").read_text())
    code = summary["provenance"]["code"]
    detail = world["rows"]["lab__scored"]["detail"]
    assert f"cultureboard {code['cultureboard']} (git {(code['git']['commit'] or 'unknown')[:12]}" in detail
    assert world["rows"]["lab__scored"]["prompt_set"] == PROMPT_SET


def test_stale_names_the_metric_version_that_changed(world):
    current = family_of(PROMPT_SET)[0].card(world["metric"]).version
    assert f"metric {world['metric']} version 99 is now {current}" in world["rows"]["lab__stale"]["detail"]
    assert "dataset revision" not in world["rows"]["lab__stale"]["detail"]


def test_invalid_shows_the_validators_first_error(world):
    detail = world["rows"]["lab__invalid"]["detail"]
    assert detail.startswith("submission.yaml") and "organization" in detail and "fix:" in detail


def test_a_changed_dataset_revision_is_stale(world):
    provenance = json.loads((world["results"] / "lab__scored" / "summary.json").read_text())["provenance"]
    assert _changes(provenance, provenance["dataset"]["revision"]) == []
    assert _changes(provenance, "other") == [f"dataset revision {provenance['dataset']['revision']} is now other"]
    gone = provenance | {"metrics": provenance["metrics"] | {"cube.gone": 1}}
    assert _changes(gone, provenance["dataset"]["revision"]) == ["metric cube.gone version 1 is now gone"]


def test_the_page_and_its_download(world, tmp_path):
    site = Site(tmp_path, {"skipped": [], "footer": {"results": 0, "code": [], "datasets": [], "devices": [],
                                                     "built": "2026-11-27", "site_code": "test", "min_prompts": 5, "order": "the point value"},
                           "banner": None, "trust_page": False, "galleries": {}})
    submissions_page(site, world["submissions"], world["results"], world["dataset"])
    html = (tmp_path / "submissions.html").read_text()
    assert all(name in html for name in world["rows"])
    downloaded = list(csv.DictReader((tmp_path / "data" / "submissions-submissions.csv").open()))
    assert [(r["submission"], r["state"]) for r in downloaded] == [(k, r["state"]) for k, r in world["rows"].items()]


def test_without_a_readable_dataset_every_folder_says_it_was_not_checked(world, tmp_path):
    rows = states(world["submissions"], world["results"], tmp_path)  # an empty folder, not a dataset
    assert [r["state"] for r in rows] == ["not checked"] * 4
    assert all("cannot be read" in r["detail"] and "fix:" in r["detail"] for r in rows)
