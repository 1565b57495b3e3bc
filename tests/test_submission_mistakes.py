"""The twelve common mistakes of a team's first submission, through the CLI: each is one line naming the fix and
the command that makes it (package's, since package runs validate's rules and writes nothing validate rejects),
every problem of a run at once, one a line, and nothing written.

wrong size, format, missing prompts, duplicates, a misspelt prompt set, wrong seeds, spec typos and wrong values,
images from another prompt set, 1-based sample indices, a Windows path, a future date, upper-case ids.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
import yaml
from hub_download import as_hub_download
from PIL import Image
from test_cli import cli
from tiny_dataset import ECB, T2I, write_tiny_dataset

SID = "acme__imagen-x"
SPEC = {"organization": "Acme", "contact": "jo@acme.example", "generation": {"negative_prompt": False},
        "model": {"name": "Imagen X", "id": "imagen-x", "revision": "2025-01-15", "license": "proprietary",
                  "weights": "closed"}}


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    """A Hub download of the tiny dataset, the prompts as export-prompts writes them, and one image a row."""
    root = tmp_path_factory.mktemp("mistakes")
    dataset = as_hub_download(write_tiny_dataset(root / "dataset"))
    r = cli("export-prompts", "--dataset", dataset, "--prompt-set", T2I, "--out", root / "prompts.csv")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    with open(root / "prompts.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["prompt_id"].split("/")[-1], r["sample_idx"], r["seed"]) for r in rows] == [
        ("pizza", "0", "10"), ("pizza", "1", "11"), ("sushi", "0", "10"), ("sushi", "1", "11"),
        ("zuma-rock", "0", "10"), ("zuma-rock", "1", "11")]
    for i, row in enumerate(rows):
        row["file"] = f"out/{i}.png"
        _image(root / "images" / row["file"], (30 * i, 20, 200))
    _image(root / "images" / "out" / "anim.gif", (1, 2, 3), "GIF")
    _image(root / "images" / "out" / "wide.png", (4, 5, 6), size=(96, 64))
    _image(root / "images" / "out" / "extra.png", (7, 8, 9))
    return {"root": root, "dataset": dataset, "rows": rows}


def _image(path: Path, color, fmt: str = "PNG", size=(64, 64)) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, color).save(path, fmt)


def package(team, tmp_path, rows, spec=None, prompt_set=T2I):
    mapping = tmp_path / "mapping.csv"
    with open(mapping, "w", newline="") as fh:
        writer = csv.DictWriter(fh, list(team["rows"][0]))
        writer.writeheader()
        writer.writerows(rows)
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec or SPEC))
    out = tmp_path / "submissions" / SID
    r = cli("package", "--from-folder", team["root"] / "images", "--mapping", mapping, "--spec", tmp_path / "spec.yaml",
            "--dataset", team["dataset"], "--prompt-set", prompt_set, "--out", out)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert not out.exists() and not any(p.name.startswith(f".{SID}.tmp") for p in out.parent.glob(".*"))
    return r.stderr.splitlines()


def line(lines: list[str], *needles: str) -> str:
    """The one line that holds every needle (the problem and its fix)."""
    found = [x for x in lines if all(n in x for n in needles)]
    assert len(found) == 1, "\n".join(lines)
    return found[0]


def test_row_mistakes_are_reported_together_one_a_line(team, tmp_path):
    rows = [dict(r) for r in team["rows"]]
    pizza, sushi, zuma = rows[0:2], rows[2:4], rows[4:6]
    pizza[0]["file"] = "out/anim.gif"  # format
    pizza[1]["seed"] = "3"  # wrong seeds
    sushi[0]["prompt_id"] = sushi[0]["prompt_id"].upper()  # upper-case ids
    sushi[1]["file"] = sushi[1]["file"].replace("/", "\\")  # a Windows path
    zuma[0]["sample_idx"], zuma[1]["sample_idx"] = "1", "2"  # 1-based sample indices
    other = {**rows[0], "prompt_id": f"{ECB}/kr/food/main-dish", "sample_idx": "0", "file": "out/wide.png"}
    duplicate = {**team["rows"][1], "file": "out/extra.png"}  # duplicates
    lines = package(team, tmp_path, [*pizza, *sushi, *zuma, other, duplicate])
    assert lines[0].startswith("error: ") and "problems, one a line below" in lines[0]
    again = "`cultureboard package` into a new --out"
    assert "is not a PNG, JPEG or WebP image" in line(lines, "anim.gif", "fix:")
    line(lines, "seed 3 is not seeds[1] = 11", "fix: generate image k of each prompt with the prompt set's seeds[k]", again)
    line(lines, "TINY-T2I/JP/FOOD/SUSHI", f"(did you mean {T2I}/jp/food/sushi?)", "case-sensitive", again)
    line(lines, "has backslashes: a Windows path", "fix: give the path relative to --from-folder with / separators")
    line(lines, "sample_idx 2 is out of range", "these look counted from 1", "(sample_idx - 1)", again)
    line(lines, f"is from prompt set {ECB}, not {T2I}", f"--prompt-set {ECB}", again)
    line(lines, f"prompt '{T2I}/it/food/pizza' sample 1 is also on line 3",
         "fix: keep one mapping row (and one image) per prompt and sample", again)
    line(lines, f"prompt '{T2I}/jp/food/sushi' has no image for sample 0 of 2",
         "fix: add a mapping row for each (or a declared refusal", again)  # missing prompts (the upper-cased row's)
    assert all(len(x) < 600 for x in lines)  # one line a problem, never one huge line


def test_spec_mistakes_name_the_field_meant_and_the_allowed_values(team, tmp_path):
    spec = {k: v for k, v in SPEC.items() if k != "organization"}
    spec = {**spec, "organisation": "Acme", "date": "2999-01-01",
            "model": {**{k: v for k, v in SPEC["model"].items() if k != "license"}, "licence": "Apache 2.0",
                      "weights": "Closed"}}
    lines = package(team, tmp_path, team["rows"], spec)
    again = "`cultureboard package` into a new --out"
    line(lines, "spec.yaml: organisation is not a field of the format (did you mean organization?)", again)
    line(lines, "model.licence is not a field of the format (did you mean model.license?)", "rename model.licence")
    line(lines, "model.weights is 'Closed', not one of open, closed (did you mean closed?)", "write model.weights:")
    line(lines, "date 2999-01-01 is in the future", "fix: write the generation date in the spec")
    spec["model"]["license"] = spec["model"].pop("licence")
    spec["organization"] = spec.pop("organisation")
    lines = package(team, tmp_path, team["rows"], spec)
    line(lines, "model.license is 'Apache 2.0', not a licence id (did you mean apache-2.0?)", "write model.license: apache-2.0")


def test_images_of_another_size_and_a_misspelt_prompt_set(team, tmp_path):
    rows = [dict(r) for r in team["rows"]]
    rows[0]["file"] = "out/wide.png"  # wrong size
    (lines,) = [package(team, tmp_path, rows)]
    assert len(lines) == 1 and "the mapped images differ in size: 96x64 (out/wide.png), 64x64" in lines[0]
    assert "fix: all images of a submission must share one width and height" in lines[0]
    lines = package(team, tmp_path, team["rows"], prompt_set="tiny_t2i")
    assert lines == [f"error: {team['dataset']}: has no prompt set 'tiny_t2i' (did you mean {T2I}?) (fix: use one of "
                     f"its prompt sets: {ECB}, {T2I})"]


def test_the_export_packages_and_validates_without_a_warning(team, tmp_path):
    """From export-prompts to a submission validate accepts; without --dataset, validate never says valid."""
    mapping = tmp_path / "mapping.csv"
    shutil.copy(team["root"] / "prompts.csv", mapping)
    with open(mapping, newline="") as fh:
        rows = list(csv.DictReader(fh))
    with open(mapping, "w", newline="") as fh:
        writer = csv.DictWriter(fh, [*rows[0], "file"])
        writer.writeheader()
        writer.writerows({**r, "file": f"out/{i}.png"} for i, r in enumerate(rows))
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(SPEC))
    out = tmp_path / "submissions" / SID
    r = cli("package", "--from-folder", team["root"] / "images", "--mapping", mapping, "--spec", tmp_path / "spec.yaml",
            "--dataset", team["dataset"], "--prompt-set", T2I, "--out", out)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert cli("validate", out, "--dataset", team["dataset"]).stdout.splitlines()[-1].startswith(f"{SID}: valid: 0 errors")
    blind = cli("validate", out)
    assert blind.returncode == 1 and "NOT CHECKED: coverage, seeds and I2I chains" in blind.stdout
    assert f"{SID}: NOT VALIDATED: 0 errors" in blind.stdout and ": valid" not in blind.stdout
