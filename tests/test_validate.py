"""``validate``: a valid submission passes; a corpus of broken ones, each one mutation of the valid one,
reports its specific problem (code, file, fix) and writes nothing; ``check_pr_scope`` on PR file lists."""

from __future__ import annotations

import builtins
import contextlib
import gzip
import hashlib
import io
import json
import os
import shutil
import zipfile
from pathlib import Path
from typing import Callable, Iterator

import pytest
from PIL import ImageFile

from cultureboard.dataset_folder import local_revision
from cultureboard.errors import CultureboardError
from cultureboard.evaluators.submission.validate import CODES, Limits, Report, check_pr_scope, validate
from cultureboard.hub import OFFICIAL_DATASET
from hub_download import COMMIT, as_hub_download
from submission_factory import (SUBMISSION_ID, make_dataset, make_submission, noise_image, png_bytes, png_header_only,
                                read_rows, read_spec, write_rows, write_spec, yaml_line)

SUSHI0 = "images/tiny/jp/sushi/0.png"
LINE = "metadata.jsonl:{}".format


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """The tiny dataset as a team gets it: downloaded from the Hub at :data:`COMMIT`."""
    return as_hub_download(make_dataset(tmp_path_factory.mktemp("ds") / "tiny-dataset"))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory, dataset) -> Path:
    """The valid submission, pinning the official dataset at the commit ``dataset`` was downloaded at."""
    folder = make_submission(tmp_path_factory.mktemp("pristine"), dataset)
    spec_edit(lambda s: s["prompt_set"].update(dataset=OFFICIAL_DATASET, revision=COMMIT))(folder)
    return folder


@pytest.fixture
def sub(tmp_path, pristine) -> Path:
    """A fresh copy of the valid submission, in ``tmp_path/submissions/``."""
    return Path(shutil.copytree(pristine, tmp_path / "submissions" / SUBMISSION_ID, symlinks=True))


# ------------------------------------------------------------------------------------------ mutations

def spec_edit(change: Callable[[dict], None]) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        spec = read_spec(folder)
        change(spec)
        write_spec(folder, spec)
    return mutate


def rows_edit(change: Callable[[list[dict]], None]) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        rows = read_rows(folder)
        change(rows)
        write_rows(folder, rows)
    return mutate


def text_edit(file: str, change: Callable[[str], str]) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        (folder / file).write_text(change((folder / file).read_text(encoding="utf-8")), encoding="utf-8")
    return mutate


def put_image(line: int, data: bytes, name: str | None = None) -> Callable[[Path], None]:
    """Replace the image of metadata line ``line`` by ``data`` (under ``name`` if given), keeping sha256 right."""
    def mutate(folder: Path) -> None:
        rows = read_rows(folder)
        row = rows[line - 1]
        (folder / row["file_name"]).unlink()
        row["file_name"] = name or row["file_name"]
        (folder / row["file_name"]).parent.mkdir(parents=True, exist_ok=True)
        (folder / row["file_name"]).write_bytes(data)
        row["sha256"] = hashlib.sha256(data).hexdigest()
        write_rows(folder, rows)
    return mutate


def add_row(**row) -> Callable[[Path], None]:
    """Add an image (a new colour) and its metadata line (line 13)."""
    def mutate(folder: Path) -> None:
        data = png_bytes((1, 2, 3))
        (folder / row["file_name"]).parent.mkdir(parents=True, exist_ok=True)
        (folder / row["file_name"]).write_bytes(data)
        write_rows(folder, [*read_rows(folder), {**row, "sha256": hashlib.sha256(data).hexdigest()}])
    return mutate


def drop_line(line: int) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        rows = read_rows(folder)
        (folder / rows.pop(line - 1)["file_name"]).unlink()
        write_rows(folder, rows)
    return mutate


def write(rel: str, data: bytes, mode: int = 0o644) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
        (folder / rel).chmod(mode)
    return mutate


def symlink_image(folder: Path) -> None:
    (folder.parent / "secret.txt").write_text("not for the site")
    (folder / SUSHI0).unlink()
    (folder / SUSHI0).symlink_to(folder.parent / "secret.txt")


def symlink_folder(folder: Path) -> None:
    shutil.move(folder / "images/tiny/jp", folder.parent / "jp")
    (folder / "images/tiny/jp").symlink_to(folder.parent / "jp", target_is_directory=True)


def move_outside_location(folder: Path) -> None:
    (folder / "other").mkdir()
    shutil.move(folder / SUSHI0, folder / "other/sushi.png")
    rows_edit(lambda r: r[0].update(file_name="other/sushi.png"))(folder)


def zip_bytes() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("payload.txt", "hello")
    return buffer.getvalue()


def flipped(data: bytes) -> bytes:
    out = bytearray(data)
    out[len(out) // 2] ^= 0xFF
    return bytes(out)


def at(text: str) -> Callable[[Path], str]:
    return lambda folder: yaml_line(folder, text)


def last_yaml_line(folder: Path) -> str:
    return f"submission.yaml:{len((folder / 'submission.yaml').read_text().splitlines())}"


NOISE_JPEG = noise_image("JPEG")
OLD = "0" * 64

# (id, mutation, code, file (a string, or a function of the folder), validate options)
BROKEN = [
    # the two files
    ("missing-yaml", lambda f: (f / "submission.yaml").unlink(), "folder.missing_file", "submission.yaml", {}),
    ("missing-metadata", lambda f: (f / "metadata.jsonl").unlink(), "folder.missing_file", "metadata.jsonl", {}),
    ("yaml-syntax-error", text_edit("submission.yaml", lambda t: t.replace("  id: test-lab", "   id: test-lab")),
     "schema.yaml_syntax", at("   id:"), {}),
    ("yaml-not-a-mapping", write("submission.yaml", b"- a\n- b\n"), "schema.not_mapping", "submission.yaml", {}),
    ("yaml-alias", text_edit("submission.yaml", lambda t: t + "x: &a {b: *a}\n"), "schema.yaml_alias", last_yaml_line, {}),
    ("yaml-duplicate-key", text_edit("submission.yaml", lambda t: t + "contact: someone else\n"), "schema.duplicate_key",
     last_yaml_line, {}),
    # submission.yaml fields
    ("missing-required-field", spec_edit(lambda s: s["model"].pop("license")), "schema.missing_field", at("model:"), {}),
    ("null-required-field", spec_edit(lambda s: s["model"].update(id=None)), "schema.missing_field", at("  id:"), {}),
    ("wrong-type", spec_edit(lambda s: s["generation"].update(steps="thirty")), "schema.wrong_type", at("  steps:"), {}),
    ("bool-for-int", spec_edit(lambda s: s.update(format_version=True)), "schema.wrong_type", at("format_version:"), {}),
    ("section-not-a-mapping", spec_edit(lambda s: s.update(generation="default")), "schema.wrong_type", at("generation:"), {}),
    ("bad-choice", spec_edit(lambda s: s["model"].update(weights="partly")), "schema.bad_choice", at("  weights:"), {}),
    ("unquoted-date", text_edit("submission.yaml", lambda t: t.replace("'2025-01-15'", "2025-01-15")), "schema.wrong_type",
     at("date:"), {}),
    ("bad-date", spec_edit(lambda s: s.update(date="2025-13-45")), "schema.bad_date", at("date:"), {}),
    ("bad-release-date", spec_edit(lambda s: s["model"].update(release_date="2025-02-30")), "schema.bad_date",
     at("  release_date:"), {}),
    ("parameters-not-positive", spec_edit(lambda s: s["model"].update(parameters=0)), "schema.out_of_range",
     at("  parameters:"), {}),
    ("format-version", spec_edit(lambda s: s.update(format_version=2)), "schema.format_version", at("format_version:"), {}),
    ("folder-name-mismatch", spec_edit(lambda s: s.update(organization="Other Lab")), "schema.folder_name", "submission.yaml", {}),
    ("unknown-prompt-set", spec_edit(lambda s: s["prompt_set"].update(name="nope")), "schema.unknown_prompt_set",
     at("  name: nope"), {}),
    ("wrong-revision", spec_edit(lambda s: s["prompt_set"].update(revision="sha256:" + OLD)), "schema.wrong_revision",
     at("  revision: sha256:"), {}),
    ("wrong-hub-commit", spec_edit(lambda s: s["prompt_set"].update(revision="c" * 40)), "schema.wrong_revision",
     at("  revision: cccc"), {}),
    ("unpinned-revision", spec_edit(lambda s: s["prompt_set"].update(revision="main")), "schema.bad_revision",
     at("  revision: main"), {}),
    ("bad-image-location", spec_edit(lambda s: s["images"].update(location="../elsewhere")), "schema.bad_location",
     at("  location:"), {}),
    # metadata.jsonl
    ("metadata-bad-json", text_edit("metadata.jsonl", lambda t: t + "{not json\n"), "metadata.bad_json", LINE(13), {}),
    ("metadata-not-an-object", text_edit("metadata.jsonl", lambda t: t + "[1, 2]\n"), "metadata.not_object", LINE(13), {}),
    ("metadata-duplicate-key", text_edit("metadata.jsonl", lambda t: t.replace('"seed": 0,', '"seed": 0, "seed": 1,', 1)),
     "metadata.duplicate_key", LINE(1), {}),
    ("metadata-missing-field", rows_edit(lambda r: r[2].pop("seed")), "metadata.missing_field", LINE(3), {}),
    ("metadata-wrong-type", rows_edit(lambda r: r[0].update(sample_idx="0")), "metadata.wrong_type", LINE(1), {}),
    ("bad-sha256-format", rows_edit(lambda r: r[0].update(sha256="abc")), "metadata.bad_sha256", LINE(1), {}),
    ("duplicated-line", rows_edit(lambda r: r.append(r[0])), "metadata.duplicate_line", LINE(13), {}),
    ("duplicated-prompt-sample", rows_edit(lambda r: r[1].update(sample_idx=0, seed=0)), "metadata.duplicate_sample", LINE(2), {}),
    ("duplicated-file", rows_edit(lambda r: r[1].update(file_name=r[0]["file_name"])), "metadata.duplicate_file", LINE(2), {}),
    ("wrong-seed", rows_edit(lambda r: r[0].update(seed=999)), "metadata.wrong_seed", LINE(1), {}),
    ("sample-out-of-range", add_row(file_name="images/tiny/jp/sushi/2.png", prompt_id="tiny/jp/sushi", sample_idx=2, seed=2),
     "metadata.sample_out_of_range", LINE(13), {}),
    ("negative-sample", rows_edit(lambda r: r[0].update(sample_idx=-1)), "metadata.sample_out_of_range", LINE(1), {}),
    ("unknown-prompt-id", add_row(file_name="images/x/0.png", prompt_id="tiny/xx/nothing", sample_idx=0, seed=0),
     "coverage.unknown_prompt", LINE(13), {}),
    ("outside-location", move_outside_location, "metadata.outside_location", LINE(1), {}),
    ("empty-metadata", write("metadata.jsonl", b""), "metadata.empty", "metadata.jsonl", {}),
    # coverage
    ("missing-image", drop_line(4), "coverage.missing_image", "metadata.jsonl", {}),
    ("broken-chain", drop_line(9), "coverage.broken_chain", "metadata.jsonl", {}),
    ("wrong-source-file", rows_edit(lambda r: r[11].update(source_file=r[7]["file_name"])), "coverage.wrong_source_file",
     LINE(12), {}),
    ("wrong-edit-step", rows_edit(lambda r: r[8].update(edit_step=2)), "coverage.wrong_edit_step", LINE(9), {}),
    ("edit-step-on-t2i", rows_edit(lambda r: r[0].update(edit_step=1)), "coverage.wrong_edit_step", LINE(1), {}),
    # image files
    ("listed-file-missing", lambda f: (f / SUSHI0).unlink(), "file.missing", LINE(1), {}),
    ("extra-unlisted-image", write("images/extra.png", png_bytes((9, 9, 9))), "folder.unlisted_file", "images/extra.png", {}),
    ("garbage-bytes", put_image(1, b"\x00garbage" * 100), "file.not_an_image", SUSHI0, {}),
    ("truncated-png", put_image(1, noise_image()[:6000]), "file.truncated", SUSHI0, {}),
    ("png-without-end-chunk", put_image(1, noise_image()[:-12]), "file.truncated", SUSHI0, {}),
    ("corrupted-after-hashing", lambda f: (f / SUSHI0).write_bytes(flipped((f / SUSHI0).read_bytes())),
     "file.sha256_mismatch", SUSHI0, {}),
    ("corrupt-png-hashed-as-is", put_image(1, flipped(noise_image())), "file.corrupt", SUSHI0, {"full_decode": True}),
    ("zip-appended-to-png", put_image(1, noise_image() + zip_bytes()), "file.trailing_data", SUSHI0, {}),
    ("jpeg-named-png", put_image(1, png_bytes((5, 5, 5), fmt="JPEG")), "file.format_mismatch", SUSHI0, {}),
    ("truncated-jpeg", put_image(1, NOISE_JPEG[: len(NOISE_JPEG) // 2], "images/tiny/jp/sushi/0.jpg"), "file.truncated",
     "images/tiny/jp/sushi/0.jpg", {}),
    ("unsupported-extension", put_image(1, noise_image(), "images/tiny/jp/sushi/0.gif"), "file.bad_extension",
     "images/tiny/jp/sushi/0.gif", {}),
    ("huge-dimensions", put_image(1, png_header_only(100_000, 100_000)), "file.dimensions", SUSHI0, {}),
    ("over-pixel-limit", put_image(1, png_header_only(5000, 5000)), "file.dimensions", SUSHI0, {}),
    ("too-small", put_image(1, png_bytes((5, 5, 5), (32, 32))), "file.too_small", SUSHI0, {}),
    ("oversize-file", lambda f: None, "file.too_large", SUSHI0, {"limits": Limits(max_file_bytes=100)}),
    ("sha256-mismatch", rows_edit(lambda r: r[0].update(sha256=OLD)), "file.sha256_mismatch", SUSHI0, {}),
    ("same-image-two-prompts", lambda f: put_image(3, (f / SUSHI0).read_bytes())(f), "file.duplicate_image", LINE(3), {}),
    # safety
    ("symlink", symlink_image, "safety.symlink", SUSHI0, {}),
    ("symlinked-folder", symlink_folder, "safety.symlink", "images/tiny/jp", {}),
    ("hard-link", lambda f: os.link(f / SUSHI0, f.parent / "outside.png"), "safety.hardlink", SUSHI0, {}),
    ("path-escape", rows_edit(lambda r: r[0].update(file_name="../outside.png")), "safety.path_escape", LINE(1), {}),
    ("absolute-path", rows_edit(lambda r: r[0].update(file_name="/etc/passwd")), "safety.absolute_path", LINE(1), {}),
    ("backslash-path", rows_edit(lambda r: r[0].update(file_name="images\\tiny\\jp\\sushi\\0.png")), "safety.bad_path",
     LINE(1), {}),
    ("dot-component-path", rows_edit(lambda r: r[0].update(file_name="images/./tiny/jp/sushi/0.png")), "safety.bad_path",
     LINE(1), {}),
    ("empty-component-path", rows_edit(lambda r: r[0].update(file_name="images//tiny/jp/sushi/0.png")),
     "safety.bad_path", LINE(1), {}),
    ("hidden-file", write(".DS_Store", b"\0\0\0\1Bud1"), "safety.hidden_file", ".DS_Store", {}),
    ("macosx-folder", write("__MACOSX/images/._0.png", b"\0\5\26\7"), "safety.hidden_file", "__MACOSX", {}),
    ("fifo", lambda f: os.mkfifo(f / "images/pipe"), "safety.special_file", "images/pipe", {}),
    ("executable-script", write("run.sh", b"#!/bin/sh\nrm -rf ~\n", 0o755), "safety.executable", "run.sh", {}),
    ("script-without-exec-bit", write("notes.txt", b"#!/usr/bin/env python\n"), "safety.executable", "notes.txt", {}),
    ("elf-named-png", put_image(1, b"\x7fELF\x02\x01\x01" + b"\0" * 200), "safety.executable", SUSHI0, {}),
    ("exec-bit-on-image", lambda f: (f / SUSHI0).chmod(0o755), "safety.executable", SUSHI0, {}),
    ("zip-archive", write("images.zip", zip_bytes()), "safety.archive", "images.zip", {}),
    ("gzip-renamed", write("images/data.bin", gzip.compress(b"payload")), "safety.archive", "images/data.bin", {}),
    ("control-char-in-yaml", spec_edit(lambda s: s.update(contact="Jo\x1b[31m")), "safety.control_char", at("contact:"), {}),
    ("newline-in-single-line-field", spec_edit(lambda s: s["model"].update(id="a\nb")), "safety.control_char", at("  id:"), {}),
    ("nul-in-metadata", rows_edit(lambda r: r[0].update(prompt_id="tiny/jp/sushi\x00")), "safety.control_char", LINE(1), {}),
    ("bidi-override-in-yaml", spec_edit(lambda s: s.update(contact="Jo \u202eevil")), "safety.bidi_override",
     at("contact:"), {}),
    ("bidi-isolate-in-metadata", rows_edit(lambda r: r[0].update(file_name="images/\u2066x.png")), "safety.bidi_override",
     LINE(1), {}),
    ("bidi-override-in-unknown-key", rows_edit(lambda r: r[0].update({"no\u202ete": 1})), "safety.bidi_override",
     LINE(1), {}),
    # 19 digits: the shortest integer beyond 64 bits (a line is walked for such values only when it has 19 in a row)
    ("seed-of-two-to-the-63", rows_edit(lambda r: r[0].update(seed=2**63)), "metadata.bad_json", LINE(1), {}),
    ("over-long-field", spec_edit(lambda s: s.update(contact="x" * 300)), "safety.too_long", at("contact:"), {}),
    ("over-long-training-data", spec_edit(lambda s: s["model"].update(training_data="a" * 2001)), "safety.too_long",
     at("  training_data:"), {}),
]


def snapshot(*folders: Path) -> dict:
    """Every entry under ``folders`` (links not followed) with its type, size, mode and mtime."""
    out = {}
    for folder in folders:
        for dirpath, dirnames, filenames in os.walk(folder):
            for name in dirnames + filenames:
                st = os.lstat(Path(dirpath) / name)
                out[str(Path(dirpath) / name)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


@contextlib.contextmanager
def write_guard() -> Iterator[None]:
    """Fail any attempt to open a file for writing (Python's open and os.open) inside the block."""
    real_open, real_os_open = builtins.open, os.open
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

    def guarded_open(file, mode="r", *args, **kwargs):
        assert not set(mode) & set("wax+"), f"validate opened {file} with mode {mode}"
        return real_open(file, mode, *args, **kwargs)

    def guarded_os_open(path, flags, *args, **kwargs):
        assert not flags & write_flags, f"validate opened {path} for writing"
        return real_os_open(path, flags, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(builtins, "open", guarded_open)
        mp.setattr(os, "open", guarded_os_open)
        yield


def run(folder: Path, dataset: Path, options: dict) -> Report:
    """Validate with nothing written: no file opened for writing, and the trees unchanged (mtimes included)."""
    before = snapshot(folder.parent.parent, dataset)
    with write_guard():
        report = validate(folder, dataset, **options)
    assert snapshot(folder.parent.parent, dataset) == before
    return report


def test_valid_submission_passes(sub, dataset):
    report = run(sub, dataset, {})
    assert report.valid and report.problems == []
    assert report.checked == {"files": 14, "metadata_lines": 12, "images": 12, "prompts": 7}
    assert report.submission == SUBMISSION_ID


def test_full_decode_passes_the_valid_submission(sub, dataset):
    assert run(sub, dataset, {"full_decode": True}).problems == []


@pytest.mark.parametrize("mutate, code, file, options", [pytest.param(*case[1:], id=case[0]) for case in BROKEN])
def test_broken_submission(sub, dataset, mutate, code, file, options):
    mutate(sub)
    report = run(sub, dataset, options)
    expected_file = file(sub) if callable(file) else file
    matches = [p for p in report.problems if p.code == code]
    assert matches, report.to_text()
    assert expected_file in [p.file for p in matches], report.to_text()
    assert all(p.severity == "error" and p.message and p.fix for p in matches)
    assert not report.valid  # the CLI exits 1
    assert {p.code for p in report.problems} <= set(CODES)


@pytest.mark.parametrize("workers", [1, 4])
def test_image_problems_come_in_the_order_of_their_lines(sub, dataset, workers):
    """However the images are shared among threads, each image's problems come in metadata.jsonl's order."""
    rows = read_rows(sub)
    for line in (12, 1, 6):
        (sub / rows[line - 1]["file_name"]).write_bytes(png_bytes((5, 5, 5), (32, 32)))
    report = run(sub, dataset, {"workers": workers})
    assert [p.file for p in report.problems if p.code == "file.too_small"] == [
        rows[line - 1]["file_name"] for line in (1, 6, 12)]


def test_corpus_is_large_and_distinct():
    assert len(BROKEN) >= 30
    assert len({case[0] for case in BROKEN}) == len(BROKEN)
    assert len({case[2] for case in BROKEN}) >= 30


def test_broken_chain_names_the_missing_step(sub, dataset):
    drop_line(9)(sub)  # chain/1, sample 0
    report = validate(sub, dataset)
    [problem] = [p for p in report.problems if p.code == "coverage.broken_chain"]
    assert "tiny/chain/base" in problem.message and "sample 0" in problem.message and "step 1 (tiny/chain/1)" in problem.message


def test_every_problem_is_reported_at_once(sub, dataset):
    for mutate in (spec_edit(lambda s: s["model"].pop("license")), rows_edit(lambda r: r[0].update(seed=999)),
                   put_image(5, b"garbage" * 20), write(".env", b"TOKEN=1")):
        mutate(sub)
    codes = {p.code for p in validate(sub, dataset).errors}
    assert {"schema.missing_field", "metadata.wrong_seed", "file.not_an_image", "safety.hidden_file"} <= codes


@pytest.mark.parametrize("mutate, code", [
    pytest.param(spec_edit(lambda s: s["generation"].update(sampler_notes="x")), "schema.unknown_field", id="unknown-yaml-field"),
    pytest.param(rows_edit(lambda r: r[0].update(comment="nice")), "metadata.unknown_field", id="unknown-metadata-key"),
    pytest.param(lambda f: (shutil.rmtree(f / "images"), spec_edit(
        lambda s: s["images"].update(location="hf://datasets/test-lab/tiny-images@" + "b" * 40))(f)), "file.skipped", id="hub-images"),
])
def test_warnings_leave_the_submission_valid(sub, dataset, mutate, code):
    mutate(sub)
    report = run(sub, dataset, {})
    assert report.valid, report.to_text()
    assert [p.code for p in report.problems] == [code] and report.problems[0].severity == "warning"


def only_warning(report: Report, code: str):
    assert report.valid, report.to_text()
    assert [(p.code, p.severity) for p in report.problems] == [(code, "warning")], report.to_text()
    return report.problems[0]


def test_a_local_dataset_pin_is_a_warning_naming_the_official_dataset(sub, dataset):
    spec_edit(lambda s: s["prompt_set"].update(dataset="tiny-dataset", revision=local_revision(dataset)))(sub)
    problem = only_warning(run(sub, dataset, {}), "schema.unofficial_dataset")
    assert problem.file == yaml_line(sub, "  dataset: tiny-dataset")
    assert "local dataset folder 'tiny-dataset'" in problem.message and OFFICIAL_DATASET in problem.message
    assert f"hf download {OFFICIAL_DATASET} --repo-type dataset --revision REV" in problem.fix


@pytest.mark.parametrize("pin, says", [
    pytest.param({"revision": "sha256:" + "0" * 64}, "the fingerprint of a local folder", id="hub-id-local-fingerprint"),
    pytest.param({"dataset": "someone/fork"}, f"not the leaderboard's {OFFICIAL_DATASET}", id="another-hub-dataset"),
])
def test_a_pin_other_than_the_official_hub_commit_is_a_warning(sub, pin, says):
    spec_edit(lambda s: s["prompt_set"].update(pin))(sub)
    report = validate(sub)  # without --dataset: the pin is checked all the same
    assert report.valid and report.warnings[0].code == "schema.unofficial_dataset" and says in report.warnings[0].message


def test_a_hub_commit_is_checked_against_the_commit_the_folder_was_downloaded_at(sub, dataset, tmp_path):
    wrong = run(sub, as_hub_download(shutil.copytree(dataset, tmp_path / "other-download"), "d" * 40), {})
    assert [p.code for p in wrong.errors] == ["schema.wrong_revision"]
    assert f"Hub commit {COMMIT}" in wrong.errors[0].message and "d" * 40 in wrong.errors[0].message
    copied = shutil.copytree(dataset, tmp_path / "copy", ignore=shutil.ignore_patterns(".cache"))  # not a download
    assert "not an unchanged Hub download" in only_warning(run(sub, copied, {}), "schema.revision_unchecked").message
    edited = next((dataset / "data").glob("*/*.parquet"))
    changed = shutil.copytree(dataset, tmp_path / "changed")
    os.utime(changed / edited.relative_to(dataset), (edited.stat().st_mtime + 60,) * 2)  # modified after the download
    only_warning(run(sub, changed, {}), "schema.revision_unchecked")


def test_a_misspelt_prompt_set_or_prompt_id_gets_the_closest_names(sub, dataset):
    spec_edit(lambda s: s["prompt_set"].update(name="Tiny"))(sub)
    rows_edit(lambda r: r[0].update(prompt_id="tiny/JP/sushi"))(sub)
    problem = validate(sub, dataset).errors[0]
    assert problem.code == "schema.unknown_prompt_set" and "(did you mean tiny?)" in problem.message
    assert problem.fix.startswith("use one of its prompt sets (tiny) as package's --prompt-set; then make the folder "
                                  "again: `cultureboard package` into a new --out")
    spec_edit(lambda s: s["prompt_set"].update(name="tiny"))(sub)
    rows_edit(lambda r: r[1].update(prompt_id="jp/sushi"))(sub)
    messages = [p.message for p in validate(sub, dataset).errors if p.code == "coverage.unknown_prompt"]
    assert messages == ["prompt_id 'tiny/JP/sushi' is not in prompt set tiny (did you mean tiny/jp/sushi?)",
                        "prompt_id 'jp/sushi' is not in prompt set tiny (did you mean tiny/jp/sushi?)"]


def test_hostile_markup_is_allowed_within_limits(sub, dataset):
    spec_edit(lambda s: s.update(contact="<script>alert(1)</script>"))(sub)
    assert validate(sub, dataset).problems == []


def test_without_dataset_coverage_is_skipped_with_a_warning(sub):
    report = validate(sub)
    assert report.valid
    assert {p.code for p in report.problems} == {"coverage.skipped", "file.duplicate_image"}  # mannequins: texts unknown


def test_pixel_limit_is_checked_before_decoding(sub, dataset, monkeypatch):
    put_image(1, png_header_only(100_000, 100_000))(sub)
    put_image(2, png_header_only(5000, 5000))(sub)
    decoded = []
    real_load = ImageFile.ImageFile.load
    monkeypatch.setattr(ImageFile.ImageFile, "load", lambda self: decoded.append(self.size) or real_load(self))
    report = validate(sub, dataset, full_decode=True)
    assert [p.file for p in report.problems if p.code == "file.dimensions"] == [SUSHI0, "images/tiny/jp/sushi/1.png"]
    assert decoded and all(w * h <= 4096 * 4096 for w, h in decoded)  # the other images were decoded, these were not


@pytest.mark.parametrize("data, code", [
    pytest.param(png_header_only(64, 64), "file.truncated", id="too-little-pixel-data"),  # chunks and CRCs intact
    pytest.param(flipped(noise_image()), "file.corrupt", id="bit-flip-before-hashing"),  # a CRC fails
])
def test_full_decode_catches_what_the_structure_check_cannot(sub, dataset, data, code):
    put_image(1, data)(sub)
    assert validate(sub, dataset).valid  # the documented trade-off of the default
    assert [(p.code, p.file) for p in validate(sub, dataset, full_decode=True).problems] == [(code, SUSHI0)]


def test_report_json_round_trip_and_text(sub, dataset):
    rows_edit(lambda r: r[0].update(seed=999))(sub)
    spec_edit(lambda s: s.update(surprise=1))(sub)
    report = validate(sub, dataset)
    data = json.loads(report.to_json())
    assert data["valid"] is False and data["errors"] == 1 and data["warnings"] == 1
    assert Report.from_json(report.to_json()) == report
    text = report.to_text().splitlines()
    assert text[0] == ("ERROR metadata.jsonl:1: seed 999 is not seeds[0] = 0 of prompt 'tiny/jp/sushi' "
                       "(fix: generate image k of each prompt with the prompt set's seeds[k] (the seed column of "
                       "`cultureboard export-prompts`); then make the folder again: `cultureboard package` into a new "
                       "--out (or `cultureboard generate` again)) [metadata.wrong_seed]")
    assert text[1].startswith("WARNING submission.yaml:")
    assert text[-1].startswith(f"{SUBMISSION_ID}: INVALID: 1 errors, 1 warnings")


def test_user_strings_are_escaped_in_reports(sub, dataset):
    write("images/\x1b[2Jevil\u202e.png", b"x")(sub)
    problems = validate(sub, dataset).problems
    assert [p.file for p in problems] == ["images/\\u001b[2Jevil\\u202e.png"]


def test_usage_errors_raise_with_exit_code_2(tmp_path, sub):
    with pytest.raises(CultureboardError) as missing:
        validate(tmp_path / "nope")
    with pytest.raises(CultureboardError) as not_dataset:
        validate(sub, tmp_path)
    assert missing.value.exit_code == not_dataset.value.exit_code == 2


def test_a_linked_submission_folder_is_not_followed(sub, tmp_path):
    (tmp_path / "link").symlink_to(sub, target_is_directory=True)
    report = validate(tmp_path / "link")
    assert [p.code for p in report.problems] == ["safety.symlink"]


# ------------------------------------------------------------------------------------- PR scope

OWN = f"submissions/{SUBMISSION_ID}"


@pytest.mark.parametrize("submission_dir", [None, OWN])
def test_scope_only_the_submission_folder(submission_dir):
    report = check_pr_scope([f"{OWN}/submission.yaml", f"{OWN}/images/tiny/jp/sushi/0.png"], submission_dir)
    assert report.valid and report.problems == [] and report.submission == SUBMISSION_ID


@pytest.mark.parametrize("path", ["results/tiny/summary.parquet", "builder/kb.py", ".github/workflows/ci.yml",
                                  "submissions/README.md", f"{OWN}/../../builder/kb.py", '"submissions/a\\tb/x.png"'])
def test_scope_outside_a_submission(path):
    report = check_pr_scope([f"{OWN}/metadata.jsonl", path], OWN)
    assert [(p.code, p.file) for p in report.problems] == [("scope.outside_submission", path)]
    assert report.problems[0].fix and not report.valid


def test_scope_another_submission():
    report = check_pr_scope([f"{OWN}/metadata.jsonl", "submissions/other__model/metadata.jsonl"], OWN)
    assert [(p.code, p.file) for p in report.problems] == [("scope.other_submission", "submissions/other__model/metadata.jsonl")]


def test_scope_two_submissions():
    paths = [f"{OWN}/metadata.jsonl", "submissions/other__model/metadata.jsonl"]
    report = check_pr_scope(paths, None)
    assert [(p.code, p.file) for p in report.problems] == [("scope.multiple_submissions", p) for p in paths]


def test_scope_empty_change_list_is_a_warning():
    report = check_pr_scope(["", "\n"], OWN)
    assert report.valid and [p.code for p in report.problems] == ["scope.empty"]


def test_field_ranges_by_hand():
    """The edges of each range, and the words messages use: width, height and steps >= 1; 0 < i2i_strength <= 1."""
    from cultureboard.evaluators.submission.format import FIELDS

    fields = {f.path: f for f in FIELDS}
    width, steps, strength = fields["generation.width"], fields["generation.steps"], fields["generation.i2i_strength"]
    assert [width.in_range(v) for v in (0, 1, 10**6)] == [False, True, True]
    assert [steps.in_range(v) for v in (-3, 0, 1)] == [False, False, True]
    assert [strength.in_range(v) for v in (0, 1e-9, 1, 1.0000001, 7)] == [False, True, True, False, False]
    assert (width.range_text(), strength.range_text(), fields["generation.guidance_scale"].range_text()) == (
        "at least 1", "above 0 and at most 1", "any number")


def test_release_date_and_size_are_optional_and_checked(sub, dataset):
    """model.release_date and model.parameters (the boards' filters) may be left out or declared; a size written
    as YAML reads text (2.6e9: no sign in the exponent) is a type error whose fix writes it as a number; a release
    date in the future is an error at its line."""
    spec = read_spec(sub)
    spec["model"].update(release_date="2024-06-12", parameters=2.6e9)
    write_spec(sub, spec)
    assert validate(sub, dataset).valid
    text = (sub / "submission.yaml").read_text()
    (sub / "submission.yaml").write_text(text.replace("parameters: 2600000000.0", "parameters: 2.6e9")
                                         .replace("2024-06-12", "2999-01-01"))
    report = validate(sub, dataset)
    found = {p.code: p for p in report.errors}
    assert sorted(found) == ["schema.bad_date", "schema.wrong_type"], report.to_text()
    size = found["schema.wrong_type"]
    assert size.file == yaml_line(sub, "  parameters:") and size.message == "model.parameters is '2.6e9', not an integer or a number"
    assert "parameters: 2.6e+9 (YAML reads 2.6e9 as text)" in size.fix
    date = found["schema.bad_date"]
    assert date.file == yaml_line(sub, "  release_date:") and date.message == "model.release_date 2999-01-01 is in the future"


def test_read_spec_remembers_parsed_bytes_and_reads_a_changed_file_anew(sub, tmp_path):
    """format.read_spec parses one file's bytes once a process: the same bytes (at another path too) give an equal
    spec, a fresh copy each time (changing one changes no later read); changed bytes are parsed anew, and a broken
    file is an error naming its own path however often it is read."""
    from cultureboard.evaluators.submission import format as fmt

    path = sub / "submission.yaml"
    first = fmt.read_spec(path)
    key = (hashlib.sha256(path.read_bytes()).digest(), False)
    assert fmt._SPECS[key] == first
    first["model"]["name"] = "changed here only"
    other = tmp_path / "elsewhere.yaml"
    other.write_bytes(path.read_bytes())
    assert fmt.read_spec(path) == fmt.read_spec(other) == fmt._SPECS[key] != first
    path.write_text(path.read_text().replace("steps: ", "steps: 1", 1))
    assert fmt.read_spec(path)["generation"]["steps"] == int("1" + str(fmt._SPECS[key]["generation"]["steps"]))
    broken = tmp_path / "broken.yaml"
    broken.write_text("model: [unclosed\n")
    for _ in range(2):
        with pytest.raises(CultureboardError, match="broken.yaml"):
            fmt.read_spec(broken)


def test_out_of_range_settings_are_each_one_error(sub, dataset):
    """A width of 0 is reported (never a silently skipped size check), with the value and the range."""
    spec = read_spec(sub)
    spec["generation"].update(width=0, height=-64, steps=0, i2i_strength=1.5)
    write_spec(sub, spec)
    report = validate(sub, dataset)
    found = {(p.file, p.message) for p in report.errors if p.code == "schema.out_of_range"}
    assert found == {(yaml_line(sub, "  width:"), "generation.width is 0, not at least 1"),
                     (yaml_line(sub, "  height:"), "generation.height is -64, not at least 1"),
                     (yaml_line(sub, "  steps:"), "generation.steps is 0, not at least 1"),
                     (yaml_line(sub, "  i2i_strength:"), "generation.i2i_strength is 1.5, not above 0 and at most 1")}


# ------------------------------------------------------------------------------------------ one model, several sets

def sibling(sub: Path, name: str, change: Callable[[dict], None] | None = None) -> Path:
    """A folder ``name`` beside ``sub`` holding a copy of its submission.yaml, changed by ``change``."""
    folder = sub.parent / name
    folder.mkdir()
    shutil.copy(sub / "submission.yaml", folder / "submission.yaml")
    if change:
        spec_edit(change)(folder)
    return folder


def mismatches(sub: Path, dataset: Path) -> list[tuple[str, str, str]]:
    return sorted((p.file, p.message, p.fix) for p in validate(sub, dataset).errors if p.code == "schema.model_mismatch")


def test_siblings_of_one_model_that_agree_are_valid(sub, dataset):
    """The same model's submission for another prompt set (a tag), with a different prompt set and date: valid."""
    sibling(sub, f"{SUBMISSION_ID}__cure-ladder", lambda s: (s.update(tag="cure-ladder", date="2025-01-02"),
                                                             s["prompt_set"].update(name="cure-ladder")))
    report = validate(sub, dataset)
    assert report.valid, report.to_text()


# ------------------------------------------------------------------------------------------ one row per model version

def rows_problems(sub: Path, dataset: Path) -> list[tuple[str, str, str]]:
    return sorted((p.code, p.file, p.message) for p in validate(sub, dataset).errors
                  if p.code in ("schema.duplicate_row", "schema.bad_supersedes"))


def test_a_second_submission_of_one_model_version_and_prompt_set_needs_supersedes(sub, dataset):
    """Another folder of the same model version for the same prompt set (a tagged re-run): one error naming it and
    the two fixes; with supersedes naming it and a reason, valid, and the old one too (it is replaced)."""
    old = sibling(sub, f"{SUBMISSION_ID}__first-run")
    [(code, where, message)] = rows_problems(sub, dataset)
    assert code == "schema.duplicate_row" and where == yaml_line(sub, "  name: tiny")
    assert message.startswith(f"{old.name} is already a submission of the same model version")
    spec_edit(lambda s: s.update(supersedes={"submission": old.name, "reason": "regenerated with the fixed VAE"}))(sub)
    assert rows_problems(sub, dataset) == []
    assert rows_problems(old, dataset) == []  # the old row, replaced, is no duplicate either
    # a chain: a third replaces the second, and the first stays replaced
    third = sibling(sub, f"{SUBMISSION_ID}__third-run",
                    lambda s: s.update(supersedes={"submission": SUBMISSION_ID, "reason": "a third run"}))
    assert rows_problems(third, dataset) == [] and rows_problems(sub, dataset) == []


def test_supersedes_naming_nothing_or_without_a_reason_is_an_error(sub, dataset):
    sibling(sub, f"{SUBMISSION_ID}__cure-ladder", lambda s: s["prompt_set"].update(name="cure-ladder"))
    spec_edit(lambda s: s.update(supersedes={"submission": f"{SUBMISSION_ID}__cure-ladder"}))(sub)
    found = rows_problems(sub, dataset)
    assert [(c, m.split(",")[0]) for c, _, m in found] == [
        ("schema.bad_supersedes", "supersedes gives no reason"),
        ("schema.bad_supersedes", f"supersedes.submission is '{SUBMISSION_ID}__cure-ladder'")]
    assert "not a submission of test-lab__tiny-diffusion for prompt set tiny" in found[1][2]


def test_sibling_disagreeing_on_identity_is_one_error_per_field(sub, dataset):
    """Each field of the model's identity that differs is an error at its line, naming both folders and the fix;
    fields that agree are not reported."""
    other = f"{SUBMISSION_ID}__cure-ladder"
    sibling(sub, other, lambda s: s["model"].update(revision="1" * 40, license="mit", weights="closed"))
    found = mismatches(sub, dataset)
    assert [(f, m.split(" is ")[0]) for f, m, _ in found] == sorted(
        (yaml_line(sub, f"  {field}:"), f"model.{field}") for field in ("license", "revision", "weights"))
    for _, message, fix in found:
        assert other in message and "test-lab__tiny-diffusion" in message
        assert other in fix and SUBMISSION_ID in fix and "model.name" in fix
    revision = next(m for _, m, _ in found if m.startswith("model.revision"))
    assert revision.startswith(f"model.revision is '{'a' * 40}'") and f"'{'1' * 40}' in '{other}'" in revision


def test_siblings_disagreeing_on_release_date_or_size_are_a_mismatch(sub, dataset):
    sibling(sub, f"{SUBMISSION_ID}__ecb", lambda s: s["model"].update(release_date="2024-01-01", parameters=1e9))
    assert [m.split(" is ")[0] for _, m, _ in mismatches(sub, dataset)] == ["model.parameters", "model.release_date"]


def test_training_data_declared_in_one_submission_only_is_a_mismatch(sub, dataset):
    sibling(sub, f"{SUBMISSION_ID}__ecb", lambda s: s["model"].pop("training_data", None))
    assert [m.split(" is ")[0] for _, m, _ in mismatches(sub, dataset)] == ["model.training_data"]


def test_other_models_controls_and_unreadable_siblings_are_not_compared(sub, dataset):
    """Another model of the organisation, a model whose name only starts like this one's, a control, and a sibling
    whose submission.yaml is broken (its own validation reports that) never make this submission invalid."""
    differ = lambda s: s["model"].update(revision="1" * 40)  # noqa: E731
    sibling(sub, "test-lab__other-model", differ)
    sibling(sub, "test-lab__tiny-diffusion-xl", differ)
    sibling(sub, f"{SUBMISSION_ID}__ctl", lambda s: (differ(s), s.update(control="text-only")))
    (sibling(sub, f"{SUBMISSION_ID}__broken") / "submission.yaml").write_text("model: [unclosed\n")
    assert mismatches(sub, dataset) == []


def test_a_prompt_set_is_read_once_while_its_files_stay_the_same(sub, dataset, tmp_path, monkeypatch):
    """Validations against one dataset share its prompt set's rows, read again when a file of data/<name>/ changes
    or another dataset folder is given."""
    import pyarrow.parquet as pq

    from cultureboard.dataset_folder import read_prompt_set
    from cultureboard.evaluators.submission.rules import coverage as module

    reads: list[Path] = []
    monkeypatch.setattr(module, "_PROMPT_SETS", {})
    monkeypatch.setattr(module, "read_prompt_set", lambda folder, name: reads.append(folder) or read_prompt_set(folder, name))
    assert validate(sub, dataset).valid and validate(sub, dataset).valid
    assert reads == [dataset]
    copy = Path(shutil.copytree(dataset, tmp_path / "copy"))
    assert validate(sub, copy).valid and reads == [dataset, copy]
    shard = min((copy / "data" / "tiny").glob("*.parquet"))
    table = pq.read_table(shard)
    pq.write_table(table.slice(0, table.num_rows - 1), shard)  # its last prompt is gone
    report = validate(sub, copy)
    assert reads == [dataset, copy, copy] and "coverage.unknown_prompt" in {p.code for p in report.problems}


# ------------------------------------------------------------------------------------------ copies (perceptual hashes)

def test_copy_threshold_finds_the_promised_edits_and_not_distinct_photos_of_one_subject():
    """The measured pairs of README "Copies and near-copies" (benchmarks/copy_thresholds.py, smaller): every promised
    edit of a photograph is within THRESHOLD of it; none of the 1225 pairs of 50 distinct photographs of one house
    is, compared both ways as two images of a submission are; a flat image is featureless (never compared)."""
    import numpy as np
    from PIL import Image

    from cultureboard.evaluators.submission.perceptual import THRESHOLD, distances, image_hash, image_hashes, views
    from photo_factory import copy_edits, house_photo

    photos = [house_photo(i) for i in range(50)]
    promised, beyond = copy_edits()
    for name, edit in promised.items():
        for photo in photos[:6]:
            copy = edit(photo)
            d = distances(image_hash(copy)[None], [views(photo, copy.width / copy.height)])[0, 0]
            assert d <= THRESHOLD, (name, d)
    crop5 = beyond["cropped 5% off the right"](photos[0])  # beyond the promise: not found (README says so)
    assert distances(image_hash(crop5)[None], [views(photos[0], crop5.width / crop5.height)])[0, 0] > THRESHOLD
    both = [image_hashes(p) for p in photos]
    d = distances(np.array([h[0] for h in both]), both)
    assert np.diag(d).max() == 0 and d[~np.eye(50, dtype=bool)].min() > THRESHOLD
    assert image_hash(Image.new("RGB", (64, 64), (10, 200, 30))) is None
