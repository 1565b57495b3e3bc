"""The submission commands as a model team runs them: generate, package, validate (text and --json), PR scope."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml
from test_cli import assert_clean_error, cli
from tiny_dataset import ECB, T2I, write_tiny_dataset

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


def test_generate_takes_the_names_from_out(generated, tmp_path):
    """--out submissions/<org>__<model>__<tag> alone names the submission; an option that disagrees is refused."""
    root, dataset, _ = generated
    out = tmp_path / "submissions" / "acme__tiny-sd__v1"
    r = cli("generate", "--dataset", dataset, "--prompt-set", T2I, "--pipeline", root / "tiny-sd", "--out", out,
            "--steps", 2, "--device", "cpu", "--limit", 1, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["submission"] == "acme__tiny-sd__v1"
    spec = yaml.safe_load((out / "submission.yaml").read_text())
    assert (spec["organization"], spec["model"]["name"], spec["tag"]) == ("acme", "tiny-sd", "v1")
    other = tmp_path / "submissions" / "acme__tiny-sd"
    assert_clean_error(cli("generate", "--dataset", dataset, "--prompt-set", T2I, "--pipeline", root / "tiny-sd",
                           "--out", other, "--organization", "Other Lab"), str(other), "other-lab__tiny-sd")
    assert not other.exists()


def test_generate_refuses_edit_steps_without_a_denoising_step(generated, tmp_path):
    root, dataset, _ = generated
    out = tmp_path / "local__tiny-sd"
    r = cli("generate", "--dataset", dataset, "--prompt-set", ECB, "--pipeline", root / "tiny-sd", "--out", out,
            "--steps", 1, "--device", "cpu")
    assert_clean_error(r, "--steps 1 --strength 0.6", "pass --steps 2 or more")
    assert not out.exists()


def test_package_takes_the_names_from_out(generated, tmp_path):
    """A spec without organization, model.name and tag: package reads them from --out's name."""
    _, dataset, made = generated
    lines = [json.loads(line) for line in (made / "metadata.jsonl").read_text().splitlines()]
    mapping = tmp_path / "mapping.csv"
    mapping.write_text("file,prompt_id,sample_idx\n" + "".join(f"{m['file_name']},{m['prompt_id']},{m['sample_idx']}\n"
                                                              for m in lines))
    spec = yaml.safe_load((made / "submission.yaml").read_text())
    for key in ("organization", "tag"):
        spec.pop(key, None)
    del spec["model"]["name"]
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    out = tmp_path / "submissions" / "acme__imagen__api-v2"
    r = cli("package", "--from-folder", made, "--mapping", mapping, "--spec", tmp_path / "spec.yaml", "--dataset",
            dataset, "--prompt-set", T2I, "--out", out, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["images"] == len(lines)
    packaged = yaml.safe_load((out / "submission.yaml").read_text())
    assert (packaged["organization"], packaged["model"]["name"], packaged["tag"]) == ("acme", "imagen", "api-v2")
    assert cli("validate", out, "--dataset", dataset).returncode == 0
