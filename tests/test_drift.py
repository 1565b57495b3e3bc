"""compare_results: drift between two summary.json files (values beyond tolerance, entries missing or
added, scorer / dataset / submission provenance changes), on hand-written summaries."""

from __future__ import annotations

import copy
import json

import pytest

from cultureboard.errors import CultureboardError
from cultureboard.evaluators.results.drift import compare_results, format_drifts

SHA = "b" * 64


def entry(metric: str, slice_type: str, slice_: str, value):
    return {"metric": metric, "slice_type": slice_type, "slice": slice_, "value": value, "ci_low": None, "ci_high": None,
            "n_images": 4, "n_prompts": 2, "coverage": 1.0, "complete": True}


BASE = {
    "provenance": {
        "dataset": {"folder": "dataset", "revision": "sha256:" + "1" * 64},
        "submission": {"id": "acme__x", "sha256": SHA},
        "scorers": [{"name": "clip", "model_id": "openai/clip-vit-base-patch32", "revision": "c" * 40},
                    {"name": "dino", "model_id": "facebook/dinov2-small", "revision": "d" * 40}],
    },
    "metrics": [entry("faithfulness", "overall", "all", 0.5), entry("faithfulness", "country", "JP", 0.40),
                entry("faithfulness", "country", "IT", 0.60), entry("quality", "overall", "all", None)],
}


def write(tmp_path, name, summary):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


def test_identical_results_have_no_drift(tmp_path):
    a, b = write(tmp_path, "a", BASE), write(tmp_path, "b", BASE)
    assert compare_results(a, b) == []
    assert compare_results(a, b / "summary.json", tolerance=0) == []  # the file itself works too
    assert format_drifts([]).startswith("no drift")


def test_value_drift_is_absolute_and_beyond_tolerance(tmp_path):
    new = copy.deepcopy(BASE)
    new["metrics"][0]["value"] = 0.52  # exactly at tolerance 0.02 (up to rounding): not drift
    new["metrics"][1]["value"] = 0.45  # +0.05: drift
    new["metrics"][2]["value"] = 0.59  # -0.01: not drift
    new["metrics"][3]["value"] = 0.3  # null -> number: drift
    drifts = compare_results(write(tmp_path, "a", BASE), write(tmp_path, "b", new), tolerance=0.02 + 1e-12)
    assert [(d["kind"], d["metric"], d["slice"]) for d in drifts] == [("value", "faithfulness", "JP"),
                                                                      ("value", "quality", "all")]
    jp = drifts[0]
    assert jp["baseline"] == 0.40 and jp["new"] == 0.45 and jp["delta"] == pytest.approx(0.05)
    assert jp["slice_type"] == "country" and "tolerance" in jp["message"]
    assert drifts[1]["baseline"] is None and drifts[1]["new"] == 0.3 and drifts[1]["delta"] is None
    # a tighter tolerance catches the small moves as well
    slices = [d["slice"] for d in compare_results(tmp_path / "a", tmp_path / "b", tolerance=0.001)]
    assert slices == ["IT", "JP", "all", "all"]  # sorted by (metric, slice_type, slice)


def test_missing_and_added_entries(tmp_path):
    new = copy.deepcopy(BASE)
    del new["metrics"][2]  # IT gone
    new["metrics"].append(entry("faithfulness", "country", "KR", 0.7))
    drifts = compare_results(write(tmp_path, "a", BASE), write(tmp_path, "b", new))
    assert [(d["kind"], d["slice"]) for d in drifts] == [("missing", "IT"), ("added", "KR")]
    assert drifts[0]["baseline"] == 0.60 and drifts[1]["new"] == 0.7
    report = format_drifts(drifts)
    assert "missing: faithfulness [country=IT]" in report and report.splitlines()[-1] == "drift: 1 missing, 1 added"


def test_provenance_changes_are_drift(tmp_path):
    new = copy.deepcopy(BASE)
    new["provenance"]["scorers"][0]["revision"] = "e" * 40  # same checkpoint, other commit
    del new["provenance"]["scorers"][1]  # dino no longer used
    new["provenance"]["scorers"].append({"name": "siglip", "model_id": "google/siglip", "revision": "f" * 40})
    new["provenance"]["dataset"]["revision"] = "a" * 40
    drifts = compare_results(write(tmp_path, "a", BASE), write(tmp_path, "b", new))
    assert [d["kind"] for d in drifts] == ["dataset_revision", "scorer_revision", "scorer_revision", "scorer_revision"]
    assert drifts[0]["baseline"] == "sha256:" + "1" * 64 and drifts[0]["new"] == "a" * 40
    clip, dino, siglip = drifts[1:]
    assert clip["baseline"].endswith("@" + "c" * 40) and clip["new"].endswith("@" + "e" * 40) and "clip" in clip["message"]
    assert dino["new"] is None and "not used" in dino["message"]
    assert siglip["baseline"] is None and siglip["new"] == "google/siglip@" + "f" * 40


def test_another_submission_is_reported(tmp_path):
    new = copy.deepcopy(BASE)
    new["provenance"]["submission"]["sha256"] = "0" * 64
    assert [d["kind"] for d in compare_results(write(tmp_path, "a", BASE), write(tmp_path, "b", new))] == ["submission"]


def test_bad_input(tmp_path):
    good = write(tmp_path, "a", BASE)
    with pytest.raises(CultureboardError, match="does not exist"):
        compare_results(good, tmp_path / "nowhere")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "summary.json").write_text("{not json")
    with pytest.raises(CultureboardError, match="cannot be read as JSON"):
        compare_results(good, tmp_path / "broken")
    with pytest.raises(CultureboardError, match="not a cultureboard summary"):
        compare_results(good, write(tmp_path, "c", {"provenance": {}}))
    with pytest.raises(CultureboardError, match="finite number"):
        compare_results(good, good, tolerance=-0.1)
    with pytest.raises(CultureboardError, match="lacks metric"):
        compare_results(good, write(tmp_path, "d", {"metrics": [{"value": 1}]}))


def test_the_cli_reports_drift_as_json_and_exits_1(tmp_path):
    from click.testing import CliRunner

    from cultureboard.cli import cli

    new = copy.deepcopy(BASE)
    new["metrics"][1]["value"] = 0.45
    a, b = write(tmp_path, "a", BASE), write(tmp_path, "b", new)
    result = CliRunner().invoke(cli, ["compare-results", str(a), str(b), "--json"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["drifted"] and [(d["metric"], d["slice"]) for d in report["drifts"]] == [("faithfulness", "JP")]
    same = CliRunner().invoke(cli, ["compare-results", str(a), str(a), "--json"])
    assert same.exit_code == 0 and json.loads(same.stdout) == {"tolerance": 0.02, "drifted": False, "drifts": []}
