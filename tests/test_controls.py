"""Control submissions: the reference photographs and the prompt's words as an image, made, validated and
scored like any submission; prompts without photographs are declared refusals with the reason."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from cultureboard.builder import build
from cultureboard.builder.references import synthetic_references
from cultureboard.cli import main
from cultureboard.dataset_folder import read_prompt_set, read_references
from cultureboard.errors import CultureboardError
from cultureboard.evaluators import evaluate, validate
from cultureboard.evaluators.submission.controls import make_control
from cultureboard.evaluators.submission.format import read_metadata


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("controls")
    build(root / "dataset", countries=["IT", "NG"], prompt_sets=["cube-awareness"])
    prompts = read_prompt_set(root / "dataset", "cube-awareness")
    # photographs for all but the last artifact, two each (fewer than the prompts' four images)
    qids = sorted({p["artifact_id"] for p in prompts})
    synthetic_references(root / "dataset", per_artifact=2, qids=qids[:-1])
    return root / "dataset"


def test_reference_photos_control(dataset, tmp_path):
    out = tmp_path / "control__reference-photos"
    result = make_control("reference-photos", dataset, "cube-awareness", out, size=64)
    lines = read_metadata(out / "metadata.jsonl")
    photos, _ = read_references(dataset)
    prompts = {p["prompt_id"]: p for p in read_prompt_set(dataset, "cube-awareness")}
    images = [m for m in lines if not m.get("refused")]
    refused = [m for m in lines if m.get("refused")]
    assert result == {"out": str(out), "images": len(images), "refused": len(refused)}
    assert len(lines) == sum(p["images_per_prompt"] for p in prompts.values())
    assert all(m["sample_idx"] < 2 for m in images) and all(Image.open(out / m["file_name"]).size == (64, 64) for m in images)
    last = max(photos) < max(p["artifact_id"] for p in prompts.values())
    reasons = {m["reason"] for m in refused}
    assert any(r.startswith("only 2 reference photograph(s)") for r in reasons)
    assert last and any(r.startswith("no reference photograph of") for r in reasons)
    report = validate(out, dataset)
    assert report.valid, report.to_text()
    spec = out / "submission.yaml"
    assert "control: reference-photos" in spec.read_text()


def test_text_only_control_is_scored_like_a_submission(dataset, tmp_path, tiny_scorers):
    out = tmp_path / "control__text-only"
    make_control("text-only", dataset, "cube-awareness", out, size=128)
    lines = read_metadata(out / "metadata.jsonl")
    assert not any(m.get("refused") for m in lines)
    pixels = np.asarray(Image.open(out / lines[0]["file_name"]).convert("L"))
    assert pixels.min() < 100 < pixels.max(), "dark text on a white page"
    result = evaluate(out, dataset, tmp_path / "results", scorers=tiny_scorers, device="cpu", n_boot=50,
                      cache=tmp_path / "cache")
    summary = json.loads((result / "summary.json").read_text())
    assert summary["provenance"]["submission"]["id"] == "control__text-only"
    assert any(e["metric"] == "cube.cultural_relevance" for e in summary["metrics"])


def test_controls_refuse_what_they_cannot_make(tmp_path):
    build(tmp_path / "bare", countries=["IT"], prompt_sets=["cube-awareness"])
    with pytest.raises(CultureboardError, match="has no reference photographs"):
        make_control("reference-photos", tmp_path / "bare", "cube-awareness", tmp_path / "control__reference-photos")
    with pytest.raises(CultureboardError, match="is not named control__text-only"):
        make_control("text-only", tmp_path / "bare", "cube-awareness", tmp_path / "x")
    with pytest.raises(CultureboardError, match="control__text-only__cube-awareness"):  # the fix names a tagged folder
        make_control("text-only", tmp_path / "bare", "cube-awareness", tmp_path / "control__reference-photos__a")
    # a tag (the prompt set) tells the controls of several prompt sets apart
    tagged = tmp_path / "control__text-only__cube-awareness"
    make_control("text-only", tmp_path / "bare", "cube-awareness", tagged, size=64)
    assert validate(tagged, tmp_path / "bare").valid and "tag: cube-awareness" in (tagged / "submission.yaml").read_text()
    assert main(["control", "text-only", "--dataset", str(tmp_path / "bare"), "--prompt-set", "cube-awareness",
                 "--out", str(tmp_path / "control__text-only"), "--size", "10"]) == 2
