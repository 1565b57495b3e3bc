"""Declared refusals in the submission format: metadata lines with "refused": true and no file, validated like
any line, counted in coverage as refused (not missing), and written by `cultureboard package` from a mapping."""

from __future__ import annotations

import csv
import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import yaml
from PIL import Image

from cultureboard.builder.dataset import prompt_config, write_dataset
from cultureboard.builder.prompt_sets import PromptSet
from cultureboard.cli import main
from cultureboard.dataset_folder import local_revision
from cultureboard.errors import CultureboardError
from cultureboard.evaluators.submission.format import is_refusal, write_submission
from cultureboard.evaluators.submission.package import package
from cultureboard.evaluators.submission.validate import validate
from cultureboard.provenance import file_sha256

SPEC = {"organization": "Acme AI", "contact": "jo@acme.example",
        "model": {"name": "Imagen X", "id": "imagen-x", "revision": "2025-01-15", "license": "proprietary",
                  "weights": "closed"},
        "generation": {"negative_prompt": False}}


def _prompt(pid, n, step=None, source=None):
    return {"prompt_id": pid, "prompt_set": "toy", "text": f"text of {pid}", "kind": "i2i" if step else "t2i",
            "edit_step": step, "source_prompt_id": source, "images_per_prompt": n, "seeds": list(range(n)),
            "seed_scheme": "consecutive"}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """Two text-to-image prompts of 2 images, and an edit chain (base, step 1) of 1 image."""
    toy = PromptSet("toy", "1", "cure", "toy", [_prompt("toy/a", 2), _prompt("toy/b", 2), _prompt("toy/base", 1),
                                                 _prompt("toy/edit/1", 1, 1, "toy/base")])
    return write_dataset(tmp_path_factory.mktemp("ds") / "toy-dataset", [prompt_config(toy)], {})


def submission(root: Path, dataset: Path, lines: list[dict]) -> Path:
    """A submission of 64 px images for the lines that name a file (others as given)."""
    spec = {**SPEC, "format_version": 1, "date": "2026-11-25", "seeds": {"scheme": "prompt-set"},
            "model": {**SPEC["model"]}, "prompt_set": {"name": "toy", "dataset": dataset.name,
                                                       "revision": local_revision(dataset)},
            "images": {"location": "images"},
            "generation": {"pipeline": "api", "scheduler": None, "steps": None, "guidance_scale": None,
                           "precision": None, "width": 64, "height": 64, "negative_prompt": False}}
    out = root / "acme-ai__imagen-x"
    rows = []
    for i, line in enumerate(lines):
        if "file_name" in line and "sha256" not in line:
            (out / line["file_name"]).parent.mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (64, 64), (10 * i, 200, 3 * i)).save(out / line["file_name"])
            line = {**line, "sha256": file_sha256(out / line["file_name"])}
        rows.append(line)
    write_submission(out, spec, rows)
    return out


def image(pid, k, **extra):
    return {"file_name": f"images/{pid}/{k}.png", "prompt_id": pid, "sample_idx": k, "seed": k, **extra}


def refusal(pid, k, **extra):
    return {"prompt_id": pid, "sample_idx": k, "refused": True, **extra}


COMPLETE_CHAIN = [image("toy/base", 0), image("toy/edit/1", 0, edit_step=1, source_file="images/toy/base/0.png")]


def codes(report) -> list[str]:
    return sorted(p.code for p in report.errors)


def test_refusals_fill_their_slots_and_validate(tmp_path, dataset):
    lines = [image("toy/a", 0), refusal("toy/a", 1, seed=1, reason="content policy"), refusal("toy/b", 0),
             refusal("toy/b", 1, reason="safety filter"), refusal("toy/base", 0), refusal("toy/edit/1", 0, edit_step=1)]
    report = validate(submission(tmp_path, dataset, lines), dataset)
    assert report.valid, report.to_text()
    assert report.checked["refused"] == 5 and report.checked["images"] == 1
    assert is_refusal(lines[1]) and not is_refusal(lines[0]) and not is_refusal({"refused": "true"})


def test_a_slot_neither_filled_nor_refused_is_still_missing(tmp_path, dataset):
    report = validate(submission(tmp_path, dataset, [image("toy/a", 0), refusal("toy/a", 1), refusal("toy/b", 0)]
                                 + COMPLETE_CHAIN), dataset)
    assert codes(report) == ["coverage.missing_image"] and "sample 1 of 2" in report.errors[0].message


@pytest.mark.parametrize("bad, code", [
    (refusal("toy/b", 1, file_name="images/toy/b/1.png", sha256="0" * 64), "metadata.bad_refusal"),
    ({**image("toy/b", 1), "refused": False}, "metadata.bad_refusal"),
    ({**image("toy/b", 1), "reason": "no reason to give"}, "metadata.bad_refusal"),
    ({"prompt_id": "toy/b", "sample_idx": 1, "refused": "yes"}, "metadata.wrong_type"),
    (refusal("toy/c", 0), "coverage.unknown_prompt"),
    (refusal("toy/b", 2), "metadata.sample_out_of_range"),
    (refusal("toy/b", 1, seed=7), "metadata.wrong_seed"),
])
def test_bad_refusal_lines_are_errors(tmp_path, dataset, bad, code):
    lines = [image("toy/a", 0), image("toy/a", 1), image("toy/b", 0), *COMPLETE_CHAIN, bad]
    report = validate(submission(tmp_path, dataset, lines), dataset)
    assert code in codes(report), report.to_text()


def test_a_refusal_and_an_image_for_one_slot_are_a_duplicate(tmp_path, dataset):
    lines = [image("toy/a", 0), image("toy/a", 1), image("toy/b", 0), image("toy/b", 1), refusal("toy/b", 1),
             *COMPLETE_CHAIN]
    assert codes(validate(submission(tmp_path, dataset, lines), dataset)) == ["metadata.duplicate_sample"]


def test_an_edit_of_a_refused_image_is_an_error(tmp_path, dataset):
    lines = [image("toy/a", 0), image("toy/a", 1), image("toy/b", 0), image("toy/b", 1), refusal("toy/base", 0),
             image("toy/edit/1", 0, edit_step=1, source_file="images/toy/base/0.png")]
    report = validate(submission(tmp_path, dataset, lines), dataset)
    assert codes(report) == ["coverage.edits_refused"], report.to_text()


# ------------------------------------------------------------------------------------------- package

def _package(tmp_path, dataset, rows, suffix=".csv"):
    folder = tmp_path / "downloads"
    for i, row in enumerate(rows):
        if row.get("file"):
            (folder / row["file"]).parent.mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (64, 64), (20 * i, 90, 9)).save(folder / row["file"])
    mapping = tmp_path / f"mapping{suffix}"
    if suffix == ".csv":
        with open(mapping, "w", newline="") as fh:
            writer = csv.DictWriter(fh, ["file", "prompt_id", "sample_idx", "edit_step", "source_file", "refused",
                                         "reason"])
            writer.writeheader()
            writer.writerows(rows)
    else:
        mapping.write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    out = tmp_path / "submissions" / "acme-ai__imagen-x"
    return folder, mapping, spec, out


MAPPING = [{"file": "x/1.png", "prompt_id": "toy/a", "sample_idx": 0},
           {"file": "", "prompt_id": "toy/a", "sample_idx": 1, "refused": "true", "reason": "content policy"},
           {"file": "x/2.png", "prompt_id": "toy/b", "sample_idx": 0},
           {"file": "x/3.png", "prompt_id": "toy/b", "sample_idx": 1, "refused": "false"},
           {"prompt_id": "toy/base", "sample_idx": 0, "refused": "yes"},
           {"prompt_id": "toy/edit/1", "sample_idx": 0, "refused": "1"}]


def test_package_writes_declared_refusals_from_the_mapping(tmp_path, dataset):
    folder, mapping, spec, out = _package(tmp_path, dataset, MAPPING)
    result = package(folder, mapping, out, dataset=dataset, prompt_set="toy", spec=spec)
    assert (result["images"], result["refused"], result["slots"]) == (3, 3, 6)
    lines = [json.loads(x) for x in (out / "metadata.jsonl").read_text().splitlines()]
    assert lines[1] == {"prompt_id": "toy/a", "sample_idx": 1, "seed": 1, "refused": True, "reason": "content policy"}
    assert lines[5] == {"prompt_id": "toy/edit/1", "sample_idx": 0, "seed": 0, "edit_step": 1, "refused": True}
    assert [("file_name" in x) for x in lines] == [True, False, True, True, False, False]
    report = validate(out, dataset)
    assert report.valid and report.checked["refused"] == 3, report.to_text()
    # the CLI says how many refusals it wrote
    stdout = io.StringIO()
    with redirect_stdout(stdout):
        code = main(["package", "--from-folder", str(folder), "--mapping", str(mapping), "--spec", str(spec),
                     "--dataset", str(dataset), "--prompt-set", "toy", "--out", str(tmp_path / "again" / out.name)])
    assert code == 0 and "3 images and 3 declared refusals packaged" in stdout.getvalue()


def test_package_jsonl_refusals_need_no_file_key(tmp_path, dataset):
    rows = [{k: v for k, v in r.items() if v != ""} for r in MAPPING]
    for r in rows:
        r.update({k: r[k] in ("true", "yes", "1") for k in ("refused",) if k in r})
    folder, mapping, spec, out = _package(tmp_path, dataset, rows, suffix=".jsonl")
    assert package(folder, mapping, out, dataset=dataset, prompt_set="toy", spec=spec)["images"] == 3
    assert validate(out, dataset).valid


@pytest.mark.parametrize("row, problem", [
    ({"file": "x/9.png", "prompt_id": "toy/b", "sample_idx": 1, "refused": "true"}, "is refused but names a file"),
    ({"file": "x/9.png", "prompt_id": "toy/b", "sample_idx": 1, "reason": "why"}, "has a reason but is not refused"),
    ({"file": "", "prompt_id": "toy/b", "sample_idx": 1, "refused": "maybe"}, "refused 'maybe' is not true or false"),
    ({"file": "", "prompt_id": "toy/b", "sample_idx": 0, "refused": "true"}, "prompt 'toy/b' sample 0 is also on line 4"),
])
def test_package_reports_bad_refusal_rows(tmp_path, dataset, row, problem):
    folder, mapping, spec, out = _package(tmp_path, dataset, [*MAPPING[:3], row, *MAPPING[4:]])
    (folder / "x" / "9.png").parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (64, 64)).save(folder / "x" / "9.png")
    with pytest.raises(CultureboardError, match=problem):
        package(folder, mapping, out, dataset=dataset, prompt_set="toy", spec=spec)
    assert not out.exists()


def test_package_refuses_an_edit_of_a_refused_image(tmp_path, dataset):
    rows = [*MAPPING[:4], {"prompt_id": "toy/base", "sample_idx": 0, "refused": "true"},
            {"file": "x/4.png", "prompt_id": "toy/edit/1", "sample_idx": 0}]
    folder, mapping, spec, out = _package(tmp_path, dataset, rows)
    with pytest.raises(CultureboardError, match="which the mapping declares refused"):
        package(folder, mapping, out, dataset=dataset, prompt_set="toy", spec=spec)
