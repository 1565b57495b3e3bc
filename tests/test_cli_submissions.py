"""The submission commands as a model team runs them: generate, validate (text and --json), PR scope."""

from __future__ import annotations

import json
import shutil

import pytest
from test_cli import assert_clean_error, cli
from tiny_dataset import T2I, write_tiny_dataset

from cultureboard.evaluators.submission.tiny_pipelines import save_tiny_text2image


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-sub")
    dataset = write_tiny_dataset(root / "dataset")
    pipeline = save_tiny_text2image(root / "tiny-sd")
    out = root / "submissions" / "local__tiny-sd"
    r = cli("generate", "--dataset", dataset, "--prompt-set", T2I, "--pipeline", pipeline, "--out", out,
            "--steps", 2, "--device", "cpu")
    assert r.returncode == 0, r.stderr
    assert "6 images" in r.stdout and "Traceback" not in r.stderr
    return root, dataset, out


def test_generated_submission_validates(generated):
    _, dataset, out = generated
    r = cli("validate", out, "--dataset", dataset)
    assert r.returncode == 0, r.stdout
    report = json.loads(cli("validate", out, "--dataset", dataset, "--json").stdout)
    assert report["valid"] is True


def test_broken_submission_exit_1_with_json(generated, tmp_path):
    _, dataset, out = generated
    broken = shutil.copytree(out, tmp_path / out.name)
    next((broken / "images").rglob("*.png")).write_bytes(b"not an image")
    r = cli("validate", broken, "--dataset", dataset, "--json")
    assert r.returncode == 1
    report = json.loads(r.stdout)
    assert not report["valid"] and any(p["severity"] == "error" for p in report["problems"])


def test_pr_scope(generated, tmp_path):
    _, dataset, out = generated
    changed = tmp_path / "changed.txt"
    changed.write_text("submissions/local__tiny-sd/metadata.jsonl\nresults/other/summary.json\n")
    r = cli("validate", "--changed-files", changed)
    assert r.returncode == 1 and "results/other/summary.json" in r.stdout
    changed.write_text("submissions/local__tiny-sd/metadata.jsonl\n")
    assert cli("validate", "--changed-files", changed).returncode == 0


def test_usage_errors_exit_2(tmp_path):
    assert_clean_error(cli("validate"), "needs a SUBMISSION", code=2)
    assert_clean_error(cli("validate", tmp_path / "nope"), "is not a folder", code=2)
    assert cli("validate", "--bogus-flag").returncode == 2
