"""submissions.html (site/submissions_page.py): every submission folder with its state.

A small world through the real validator and evaluator (tiny stand-in scorers, cube-awareness): one valid scored
submission, one scored whose result recorded another metric version (stale), one whose submission.yaml lost its
organisation and which lost an image (invalid: the first error shown) and one valid but never evaluated (not scored).
"""

from __future__ import annotations

import csv
import json
import shutil

import pytest
import yaml

from cultureboard.evaluators.engine.registry import family_of
from cultureboard.evaluators.submission.validate import validate
from cultureboard.site import submissions_page as page
from cultureboard.site.submissions_page import CACHE, _changes, read_cache, states, submissions_page
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
    review = {"pull_request": 12, "repository": "org/board", "server_url": "https://github.com", "head_sha": "a" * 40}
    (results / scored.name / "review.json").write_text(json.dumps(review))
    (results / stale.name / "review.json").write_text(json.dumps(review | {"repository": "org/board\" onload=\"x"}))
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
    submissions_page(site, world["submissions"], world["results"], world["dataset"], previous=tmp_path / "none")
    assert {k: e["invalid"] is None for k, e in read_cache(tmp_path).items()} == {
        k: r["state"] != "invalid" for k, r in world["rows"].items()}
    assert (tmp_path / CACHE).is_file()
    html = (tmp_path / "submissions.html").read_text()
    assert all(name in html for name in world["rows"])
    downloaded = list(csv.DictReader((tmp_path / "data" / "submissions-submissions.csv").open()))
    assert [(r["submission"], r["state"]) for r in downloaded] == [(k, r["state"]) for k, r in world["rows"].items()]


def test_without_a_readable_dataset_every_folder_says_it_was_not_checked(world, tmp_path):
    rows = states(world["submissions"], world["results"], tmp_path)  # an empty folder, not a dataset
    assert [r["state"] for r in rows] == ["not checked"] * 4
    assert all("cannot be read" in r["detail"] and "fix:" in r["detail"] for r in rows)


def test_validation_is_reused_until_what_it_read_changes(world, tmp_path, monkeypatch):
    """A folder is validated again when one of its images, its metadata.jsonl or a sibling's submission.yaml changes
    (or a sibling appears); the others keep what the earlier build found."""
    subs = shutil.copytree(world["submissions"], tmp_path / "submissions")
    cache: dict = {}
    first = states(subs, world["results"], world["dataset"], cache)
    assert sorted(cache) == sorted(world["rows"]) and [r["state"] for r in first] == [
        world["rows"][r["submission"]]["state"] for r in first]
    checked = []
    monkeypatch.setattr(page, "validate",
                        lambda folder, dataset: checked.append(folder.name) or validate(folder, dataset))

    def again():
        checked.clear()
        return {r["submission"]: r for r in states(subs, world["results"], world["dataset"], cache)}

    assert list(again().values()) == first and checked == []
    image = min((subs / "lab__scored" / "images").rglob("*.png"))
    image.write_bytes(image.read_bytes()[:-1] + b"\x00")  # the same size, other bytes than the declared sha256
    rows = again()
    assert checked == ["lab__scored"] and rows["lab__scored"]["state"] == "invalid"
    assert "sha256" in rows["lab__scored"]["detail"]
    metadata = subs / "lab__unscored" / "metadata.jsonl"
    metadata.write_text("".join(metadata.read_text().splitlines(keepends=True)[1:]))
    rows = again()
    assert checked == ["lab__unscored"] and rows["lab__unscored"]["state"] == "invalid"
    make_submission(subs, world["dataset"], PROMPT_SET, model="stale", tag="v2",  # the same model, tagged: a re-run
                    spec={"supersedes": {"submission": "lab__stale", "reason": "a re-run"}})
    rows = again()
    assert sorted(checked) == ["lab__stale", "lab__stale__v2"] and rows["lab__stale"]["state"] == "stale"
    sibling = subs / "lab__stale__v2" / "submission.yaml"
    spec = yaml.safe_load(sibling.read_text())
    spec["model"]["id"] = "lab/other"
    sibling.write_text(yaml.safe_dump(spec, sort_keys=False))  # in place: its folder does not change
    rows = again()
    assert sorted(checked) == ["lab__stale", "lab__stale__v2"] and rows["lab__stale"]["state"] == "invalid"
    assert "model.id" in rows["lab__stale"]["detail"]
    assert again() == rows and checked == []


def _counting_validations(monkeypatch) -> list[str]:
    """The names of the folders states() validates from now on."""
    checked: list[str] = []
    monkeypatch.setattr(page, "validate",
                        lambda folder, dataset: checked.append(folder.name) or validate(folder, dataset))
    return checked


def test_validation_follows_the_folders_tree_and_the_dataset(world, tmp_path, monkeypatch):
    """A file added to a folder, a file's permissions, and a change to the dataset folder each validate again."""
    subs = shutil.copytree(world["submissions"], tmp_path / "submissions")
    dataset = shutil.copytree(world["dataset"], tmp_path / world["dataset"].name)
    cache: dict = {}
    states(subs, world["results"], dataset, cache)
    checked = _counting_validations(monkeypatch)

    def again():
        checked.clear()
        return {r["submission"]: r for r in states(subs, world["results"], dataset, cache)}

    (subs / "lab__scored" / "images" / "notes.txt").write_text("an unlisted file")
    rows = again()
    assert checked == ["lab__scored"] and "notes.txt" in rows["lab__scored"]["detail"]
    (subs / "lab__scored" / "images" / "notes.txt").unlink()
    image = min((subs / "lab__unscored" / "images").rglob("*.png"))
    image.chmod(0o755)  # only the mode changes
    rows = again()
    assert checked == ["lab__scored", "lab__unscored"] and "executable" in rows["lab__unscored"]["detail"]
    image.chmod(0o644)
    again()
    parquet = min((dataset / "data").rglob("*.parquet"))
    parquet.write_bytes(parquet.read_bytes())  # the same bytes, written again: its times change
    again()
    assert sorted(checked) == sorted(world["rows"])
    again()
    assert checked == []


def test_a_finding_is_kept_across_days_unless_it_depends_on_the_day(world, tmp_path, monkeypatch):
    """A valid folder (and one invalid for a reason the date does not touch) keeps its entry on the next day; one
    whose date is in the future is validated again, as its date may be past by then."""
    subs = shutil.copytree(world["submissions"], tmp_path / "submissions")
    make_submission(subs, world["dataset"], PROMPT_SET, model="future", spec={"date": "2999-01-01"})
    cache: dict = {}
    monkeypatch.setattr(page, "_today", lambda: "2026-11-27")
    first = {r["submission"]: r for r in states(subs, world["results"], world["dataset"], cache)}
    assert "date 2999-01-01 is in the future" in first["lab__future"]["detail"]
    assert {name: e["day"] for name, e in cache.items()} == {name: "2026-11-27" if name == "lab__future" else None
                                                             for name in first}
    checked = _counting_validations(monkeypatch)
    assert {r["submission"]: r for r in states(subs, world["results"], world["dataset"], cache)} == first
    assert checked == []
    monkeypatch.setattr(page, "_today", lambda: "2026-11-28")
    assert {r["submission"]: r for r in states(subs, world["results"], world["dataset"], cache)} == first
    assert checked == ["lab__future"] and cache["lab__future"]["day"] == "2026-11-28"
    assert cache["lab__scored"]["day"] is None and cache["lab__invalid"]["day"] is None


def test_a_report_is_dated_only_by_a_date_problem():
    from cultureboard.evaluators.submission.validate import Problem, Report

    other = Problem("metadata.bad_json", "error", "metadata.jsonl:1", "x", "y")
    future = Problem("schema.bad_date", "error", "submission.yaml:4", "date 2999-01-01 is in the future", "y")
    assert not Report("s", [other]).dated and Report("s", [other, future]).dated
    assert Report("s", [other], omitted={"error": {"schema.bad_date": 1}}).dated


def test_each_row_links_its_pages_its_report_and_its_pull_request(world, tmp_path):
    """Scored rows link the submission's page and the model's; every row its validation report (written whole, the
    invalid one's errors in it); a review record's pull request becomes a link only when every part is well formed."""
    rows = states(world["submissions"], world["results"], world["dataset"],
                  summaries={sid: {} for sid in ("lab__scored", "lab__stale")})
    by = {r["submission"]: r for r in rows}
    assert by["lab__scored"]["page"] == {"text": "results", "href": "model/lab__scored.html"}
    assert by["lab__scored"]["model"] == {"text": "lab__scored", "href": "models/lab__scored.html"}
    assert by["lab__unscored"]["page"] is None and by["lab__unscored"]["model"] is None
    assert {r["report"]["href"] for r in rows} == {f"validation/{name}.txt" for name in by}
    assert by["lab__scored"]["pull_request"] == {"text": "#12", "href": "https://github.com/org/board/pull/12"}
    assert by["lab__stale"]["pull_request"] is None  # a repository that is not ORG/NAME
    assert by["lab__invalid"]["pull_request"] is None and by["lab__unscored"]["pull_request"] is None

    site = Site(tmp_path, {"skipped": [], "footer": {"results": 0, "code": [], "datasets": [], "devices": [],
                                                     "built": "2026-11-27", "site_code": "test", "min_prompts": 5,
                                                     "order": "the point value"},
                           "banner": None, "trust_page": False, "galleries": {}})
    submissions_page(site, world["submissions"], world["results"], world["dataset"], previous=tmp_path / "none",
                     summaries={"lab__scored": {}})
    html = (tmp_path / "submissions.html").read_text()
    assert '<a href="https://github.com/org/board/pull/12">#12</a>' in html
    assert '<a href="validation/lab__invalid.txt">report</a>' in html and 'href="models/lab__scored.html"' in html
    report = (tmp_path / "validation" / "lab__invalid.txt").read_text()
    assert "schema.missing_field" in report and "file.missing" in report and ": INVALID: " in report
    assert ": valid: 0 errors" in (tmp_path / "validation" / "lab__scored.txt").read_text()
