"""The submission commands as a model team runs them: generate, package, validate (text and --json), PR scope."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from hub_download import COMMIT, as_hub_download
from test_cli import assert_clean_error, cli
from tiny_dataset import ECB, T2I, write_tiny_dataset

from cultureboard.evaluators.submission.tiny_pipelines import save_tiny_text2image
from cultureboard.hub import OFFICIAL_DATASET

DOWNLOAD = f"hf download {OFFICIAL_DATASET} --repo-type dataset --revision REV --local-dir dataset"


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
    assert f"is a local dataset folder, not a download of the official dataset {OFFICIAL_DATASET}" in r.stderr
    assert DOWNLOAD in r.stderr
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


# ------------------------------------------------------------------------------------ a team's first submission

def one_line(text: str) -> str:
    return " ".join(text.split())  # the help is wrapped to the terminal


@pytest.mark.parametrize("command", [[], ["package"], ["generate"], ["validate"]])
def test_the_help_names_the_official_dataset_and_how_to_pin_it(command):
    r = cli(*command, "--help")
    assert r.returncode == 0 and OFFICIAL_DATASET in one_line(r.stdout) and DOWNLOAD in one_line(r.stdout)


@pytest.fixture
def api(generated, tmp_path):
    """The generated images as a closed API's download: a mapping of every image, a spec, and an --out."""
    _, dataset, made = generated
    lines = [json.loads(line) for line in (made / "metadata.jsonl").read_text().splitlines()]
    spec = {"organization": "Acme", "contact": "jo@acme.example", "generation": {"negative_prompt": False},
            "model": {"name": "imagen", "id": "imagen-x", "revision": "2025-01-15", "license": "proprietary",
                      "weights": "closed"}}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    return {"lines": lines, "made": made, "dataset": dataset, "mapping": tmp_path / "mapping.csv",
            "spec": tmp_path / "spec.yaml", "out": tmp_path / "submissions" / "acme__imagen"}


def package(api, rows=None, dataset=None, prompt_set=T2I):
    rows = [(m["file_name"], m["prompt_id"], m["sample_idx"]) for m in api["lines"]] if rows is None else rows
    api["mapping"].write_text("file,prompt_id,sample_idx\n" + "".join(f"{f},{p},{k}\n" for f, p, k in rows))
    return cli("package", "--from-folder", api["made"], "--mapping", api["mapping"], "--spec", api["spec"],
               "--dataset", dataset or api["dataset"], "--prompt-set", prompt_set, "--out", api["out"])


def test_a_hub_download_is_pinned_and_a_local_folder_is_reported(api, tmp_path):
    local = package(api)
    assert local.returncode == 0 and "is a local dataset folder" in local.stderr and DOWNLOAD in local.stderr
    report = json.loads(cli("validate", api["out"], "--dataset", api["dataset"], "--json").stdout)
    assert report["valid"] and [p["code"] for p in report["problems"]] == ["schema.unofficial_dataset"]
    assert DOWNLOAD in report["problems"][0]["fix"]

    shutil.rmtree(api["out"])
    hub = as_hub_download(Path(shutil.copytree(api["dataset"], tmp_path / "dataset")))
    r = package(api, dataset=hub)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    pin = yaml.safe_load((api["out"] / "submission.yaml").read_text())["prompt_set"]
    assert (pin["dataset"], pin["revision"]) == (OFFICIAL_DATASET, COMMIT)
    checked = cli("validate", api["out"], "--dataset", hub)
    assert checked.returncode == 0 and ": valid: 0 errors, 0 warnings" in checked.stdout, checked.stdout


def test_packaging_again_into_its_own_output_says_what_to_do(api):
    assert package(api).returncode == 0
    assert_clean_error(package(api), f"{api['out']}: already holds a submission", f"delete it first (rm -r {api['out']};",
                       "or choose another --out")


def test_a_wrong_prompt_id_gets_the_closest_ids(api):
    rows = [(m["file_name"], m["prompt_id"], m["sample_idx"]) for m in api["lines"]]
    sushi = next(i for i, (_, pid, _) in enumerate(rows) if pid == f"{T2I}/jp/food/sushi")
    rows[sushi] = (rows[sushi][0], f"{T2I}/JP/food/sushi", rows[sushi][2])  # a case difference
    rows[0] = (rows[0][0], rows[0][1].removeprefix(f"{T2I}/"), rows[0][2])  # the prompt set's prefix left out
    r = package(api, rows)
    lines = r.stderr.splitlines()
    assert r.returncode == 1 and lines[0].startswith("error: ") and "has 4 problems, one a line below" in lines[0]
    assert all(line.startswith(("ERROR ", "coverage.")) for line in lines[1:])  # one a line, grouped by code
    assert f"prompt_id '{T2I}/JP/food/sushi' is not in prompt set {T2I} (did you mean {T2I}/jp/food/sushi?)" in r.stderr
    wanted = api["lines"][0]["prompt_id"]
    assert f"prompt_id '{wanted.removeprefix(T2I + '/')}' is not in prompt set {T2I} (did you mean {wanted}?)" in r.stderr
    assert not api["out"].exists()


def test_a_misspelt_prompt_set_gets_the_closest_prompt_sets_only(api, tmp_path):
    dataset = Path(shutil.copytree(api["dataset"], tmp_path / "dataset"))
    (dataset / "data" / "artifacts").mkdir()  # a config that is not a prompt set
    pq.write_table(pa.table({"qid": ["Q1"]}), dataset / "data" / "artifacts" / "train-00000-of-00001.parquet")
    r = package(api, dataset=dataset, prompt_set=T2I.replace("-", "_"))
    assert_clean_error(r, f"has no prompt set {T2I.replace('-', '_')!r} (did you mean {T2I}?)",
                       f"(fix: use one of its prompt sets: {ECB}, {T2I})")
    assert "artifacts" not in r.stderr
    assert_clean_error(package(api, dataset=dataset, prompt_set="artifacts"), "is not a prompt set",
                       f"(fix: name one of the dataset's prompt sets: {ECB}, {T2I})")


def test_missing_images_are_an_error_that_says_to_add_rows_and_package_again(api):
    """package writes nothing validate would reject: a missing slot is one line naming the prompt, the sample and
    the fix (a mapping row, or a declared refusal, then package into a new --out)."""
    rows = [(m["file_name"], m["prompt_id"], m["sample_idx"]) for m in api["lines"]][1:]
    r = package(api, rows)
    first = api["lines"][0]
    assert_clean_error(r, f"mapping.csv: prompt '{first['prompt_id']}' has no image for sample {first['sample_idx']} of 2",
                       "add a mapping row for each (or a declared refusal: refused true, an empty file and the API's "
                       "reason)", "`cultureboard package` into a new --out")
    assert not api["out"].exists()


def test_the_demo_output_is_ignored_by_git():
    """A careless `git add .` in a submission pull request cannot add the demo's default output folder."""
    root = Path(__file__).resolve().parents[1]
    assert "[default: cultureboard-demo]" in one_line(cli("demo", "--help").stdout)
    for path in ("cultureboard-demo/site/index.html", "dataset/README.md"):  # and the walkthrough's download
        assert subprocess.run(["git", "check-ignore", "-q", path], cwd=root).returncode == 0, path
