"""``package``: images made elsewhere (a closed API) with arbitrary names, a mapping and a spec -> a
submission folder; every bad input is one error naming the file, and leaves no output."""

from __future__ import annotations

import copy
import csv
import datetime
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from PIL import Image

from cultureboard.builder.dataset import prompt_config, write_dataset
from cultureboard.builder.prompt_sets import PromptSet
from cultureboard.dataset_folder import local_revision, pin
from cultureboard.errors import CultureboardError
from cultureboard.evaluators.submission.package import package
from cultureboard.evaluators.submission.validate import validate
from cultureboard.hub import OFFICIAL_DATASET
from cultureboard.provenance import file_sha256
from hub_download import COMMIT, as_hub_download

SID = "acme-ai__imagen-x__api-v2"
SPEC = {
    "organization": "Acme AI", "tag": "api v2", "contact": "Jo Doe <jo@acme.example>",
    "model": {"name": "Imagen X", "id": "imagen-x", "revision": "2025-01-15", "license": "proprietary", "weights": "closed"},
    "generation": {"negative_prompt": False},
}


def _prompt(pid: str, set_name: str, n: int, seeds: list[int], step=None, source=None) -> dict:
    return {"prompt_id": pid, "prompt_set": set_name, "text": f"text of {pid}", "kind": "i2i" if step else "t2i",
            "edit_step": step, "source_prompt_id": source, "images_per_prompt": n, "seeds": seeds, "seed_scheme": "consecutive"}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """``tiny``: 3 prompts x 2 images (seeds differ per prompt); ``chain``: a base prompt and two edit steps."""
    tiny = PromptSet("tiny", "1", "cube", "three prompts", [
        _prompt("tiny/jp/sushi", "tiny", 2, [0, 1]), _prompt("tiny/it/pizza", "tiny", 2, [10, 11]),
        _prompt("tiny/ng/jollof", "tiny", 2, [20, 21]),
    ])
    chain = PromptSet("chain", "1", "ecb", "an edit chain", [
        _prompt("chain/base", "chain", 1, [0]), _prompt("chain/edit/1", "chain", 1, [0], 1, "chain/base"),
        _prompt("chain/edit/2", "chain", 1, [0], 2, "chain/edit/1"),
    ])
    return write_dataset(tmp_path_factory.mktemp("ds") / "tiny-dataset", [prompt_config(tiny), prompt_config(chain)], {})


def _image(path: Path, fmt: str, color: tuple[int, int, int], size=(96, 64)) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, color).save(path, fmt)


@pytest.fixture
def api(tmp_path, dataset):
    """A folder of "API" images named like a download (nested, PNG and JPEG mixed, one JPEG named .png),
    its mapping rows, a spec and the paths package writes to."""
    folder = tmp_path / "downloads"
    files = {  # file -> (prompt_id, sample_idx, format)
        "batch-1/img-Xq3zP9.png": ("tiny/jp/sushi", 0, "PNG"),
        "batch-1/img-7hT2aa.png": ("tiny/jp/sushi", 1, "JPEG"),  # a JPEG with a misleading name
        "batch-2/sub/file-00a1.jpg": ("tiny/it/pizza", 0, "JPEG"),
        "batch-2/sub/file-00a2.jpeg": ("tiny/it/pizza", 1, "JPEG"),
        "d/e/img-B1.png": ("tiny/ng/jollof", 0, "PNG"),
        "img-B2.png": ("tiny/ng/jollof", 1, "PNG"),
    }
    for i, (file, (_, _, fmt)) in enumerate(files.items()):
        _image(folder / file, fmt, (40 * i, 255 - 30 * i, 7 * i))
    rows = [{"file": f, "prompt_id": p, "sample_idx": k} for f, (p, k, _) in files.items()]

    return SimpleNamespace(folder=folder, rows=rows, spec=copy.deepcopy(SPEC), dataset=dataset, mapping=tmp_path / "mapping.csv",
                           spec_file=tmp_path / "spec.yaml", out=tmp_path / "submissions" / SID)


def run(env, *, prompt_set: str = "tiny", **options) -> dict:
    """Write the env's mapping CSV and spec (a dict as YAML, a string as it is), then package."""
    columns = list(dict.fromkeys(k for row in env.rows for k in row))
    with open(env.mapping, "w", newline="") as fh:
        writer = csv.DictWriter(fh, columns)
        writer.writeheader()
        writer.writerows(env.rows)
    env.spec_file.write_text(env.spec if isinstance(env.spec, str) else yaml.safe_dump(env.spec))
    return package(env.folder, env.mapping, env.out, dataset=env.dataset, prompt_set=prompt_set, spec=env.spec_file, **options)


def metadata(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metadata.jsonl").read_text().splitlines()]


def test_package_writes_a_complete_submission(api):
    before = {p: p.read_bytes() for p in api.folder.rglob("*") if p.is_file()}
    result = run(api, seed_honoured=False)
    assert result == {"submission_id": SID, "out": str(api.out), "images": 6, "refused": 0, "slots": 6, "width": 96,
                      "height": 64, "warnings": [],
                      "dataset": {"dataset": "tiny-dataset", "revision": local_revision(api.dataset), "hub": False}}

    rows = metadata(api.out)
    assert [(r["prompt_id"], r["sample_idx"]) for r in rows] == [  # prompt set order, not mapping order
        ("tiny/jp/sushi", 0), ("tiny/jp/sushi", 1), ("tiny/it/pizza", 0), ("tiny/it/pizza", 1),
        ("tiny/ng/jollof", 0), ("tiny/ng/jollof", 1)]
    assert [r["seed"] for r in rows] == [0, 1, 10, 11, 20, 21]
    assert [r["file_name"] for r in rows] == [
        "images/tiny/jp/sushi/0.png", "images/tiny/jp/sushi/1.jpg", "images/tiny/it/pizza/0.jpg",
        "images/tiny/it/pizza/1.jpg", "images/tiny/ng/jollof/0.png", "images/tiny/ng/jollof/1.png"]
    by_slot = {(r["prompt_id"], r["sample_idx"]): r for r in rows}
    for m in api.rows:
        row = by_slot[m["prompt_id"], m["sample_idx"]]
        assert (api.out / row["file_name"]).read_bytes() == before[api.folder / m["file"]]
        assert row["sha256"] == file_sha256(api.out / row["file_name"])
        assert set(row) == {"file_name", "prompt_id", "sample_idx", "seed", "sha256"}
    assert {p: p.read_bytes() for p in api.folder.rglob("*") if p.is_file()} == before  # copied, not moved
    assert sorted(p.relative_to(api.out).as_posix() for p in api.out.rglob("*") if p.is_file()) == sorted(
        [r["file_name"] for r in rows] + ["metadata.jsonl", "submission.yaml"])

    spec = yaml.safe_load((api.out / "submission.yaml").read_text())
    assert spec["format_version"] == 1 and spec["organization"] == "Acme AI" and spec["model"] == SPEC["model"]
    assert len(spec["date"]) == 10 and spec["date"][4] == "-"
    assert spec["seeds"] == {"scheme": "prompt-set"}
    assert spec["prompt_set"] == {"name": "tiny", "dataset": "tiny-dataset", "revision": local_revision(api.dataset)}
    assert spec["images"] == {"location": "images"}
    assert spec["generation"] == {"negative_prompt": False, "pipeline": "api", "width": 96, "height": 64, "scheduler": None,
                                  "steps": None, "guidance_scale": None, "precision": None, "extra": {"seed_honoured": False}}

    report = validate(api.out, dataset=api.dataset)  # a local folder's pin: a warning, nothing else
    assert report.valid and [p.code for p in report.warnings] == ["schema.unofficial_dataset"], report.to_text()


def test_a_hub_download_is_pinned_by_the_official_id_and_its_commit(api, tmp_path):
    api.dataset = as_hub_download(shutil.copytree(api.dataset, tmp_path / "dataset"))
    assert run(api)["dataset"] == {"dataset": OFFICIAL_DATASET, "revision": COMMIT, "hub": True}
    spec = yaml.safe_load((api.out / "submission.yaml").read_text())
    assert spec["prompt_set"] == {"name": "tiny", "dataset": OFFICIAL_DATASET, "revision": COMMIT}
    report = validate(api.out, dataset=api.dataset)
    assert report.valid and report.problems == [], report.to_text()


def test_a_folder_is_a_hub_download_only_while_every_prompt_set_file_has_one_commit(dataset, tmp_path):
    hub = as_hub_download(shutil.copytree(dataset, tmp_path / "dataset"))
    assert pin(hub) == {"dataset": OFFICIAL_DATASET, "revision": COMMIT, "hub": True}
    records = sorted((hub / ".cache" / "huggingface" / "download" / "data").glob("*/*.metadata"))
    assert len(records) == 2  # tiny and chain
    records[0].write_text(records[0].read_text().replace(COMMIT, "e" * 40))  # files of two commits
    assert pin(hub) == {"dataset": "dataset", "revision": local_revision(hub), "hub": False}
    records[0].unlink()  # a file without a record (added by hand)
    assert pin(hub)["hub"] is False


def test_a_missing_slot_is_an_error_and_nothing_is_written(api):
    """package writes nothing validate would reject: a slot without an image or a declared refusal is an error
    naming the prompt and sample and the fix (a mapping row, or a declared refusal)."""
    api.rows = [r for r in api.rows if (r["prompt_id"], r["sample_idx"]) != ("tiny/it/pizza", 1)]  # the API refused it
    with pytest.raises(CultureboardError, match="prompt 'tiny/it/pizza' has no image for sample 1 of 2") as err:
        run(api)
    assert "declared refusal" in err.value.fix and "cultureboard package" in err.value.fix
    assert not api.out.exists()
    api.rows.append({"file": "", "prompt_id": "tiny/it/pizza", "sample_idx": 1, "refused": "true", "reason": "policy"})
    api.rows.append(api.rows.pop(0))  # mapping order does not matter
    api.spec["date"] = datetime.date(2025, 2, 1)  # written unquoted, so YAML reads it back as a date
    result = run(api)
    assert (result["images"], result["refused"], result["slots"]) == (5, 1, 6)
    spec = yaml.safe_load((api.out / "submission.yaml").read_text())
    assert spec["date"] == "2025-02-01" and "extra" not in spec["generation"]
    assert validate(api.out, dataset=api.dataset).valid


def test_jsonl_mapping_and_a_rerun_needs_a_new_folder(api):
    jsonl = api.mapping.with_suffix(".jsonl")
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in api.rows))
    result = package(api.folder, jsonl, api.out, dataset=api.dataset, prompt_set="tiny", spec=SPEC)
    assert result["images"] == 6 and len(metadata(api.out)) == 6
    with pytest.raises(CultureboardError, match="already holds a submission") as caught:  # no marker says it may be replaced
        run(api)
    assert f"to package again, delete it first (rm -r {api.out};" in caught.value.fix
    assert len(metadata(api.out)) == 6


def test_edit_chain_sources_come_from_the_prompt_set(api):
    for i, name in enumerate(("base.png", "step1.png", "step2.png")):
        _image(api.folder / "chain" / name, "PNG", (i, 2, 3))
    api.rows = [{"file": "chain/step2.png", "prompt_id": "chain/edit/2", "sample_idx": 0, "source_file": "chain/step1.png"},
                {"file": "chain/step1.png", "prompt_id": "chain/edit/1", "sample_idx": 0, "source_file": ""},
                {"file": "chain/base.png", "prompt_id": "chain/base", "sample_idx": 0, "source_file": ""}]
    run(api, prompt_set="chain")
    assert [(r["file_name"], r.get("edit_step"), r.get("source_file")) for r in metadata(api.out)] == [
        ("images/chain/base/0.png", None, None),
        ("images/chain/edit/1/0.png", 1, "images/chain/base/0.png"),
        ("images/chain/edit/2/0.png", 2, "images/chain/edit/1/0.png")]
    assert validate(api.out, dataset=api.dataset).valid


def test_an_edit_step_needs_the_image_it_edited(api):
    _image(api.folder / "chain" / "step1.png", "PNG", (1, 2, 3))
    api.rows = [{"file": "chain/step1.png", "prompt_id": "chain/edit/1", "sample_idx": 0}]
    with pytest.raises(CultureboardError, match="edits chain/base sample 0, which the mapping does not list"):
        run(api, prompt_set="chain")
    api.rows.append({"file": "img-B2.png", "prompt_id": "chain/edit/2", "sample_idx": 0, "source_file": "img-B2.png"})
    api.rows.insert(0, {"file": "d/e/img-B1.png", "prompt_id": "chain/base", "sample_idx": 0})
    with pytest.raises(CultureboardError, match="source_file img-B2.png is not chain/step1.png, the image of chain/edit/1 sample 0"):
        run(api, prompt_set="chain")
    assert not api.out.exists()


def _set(path: str, value):
    """A change of the spec at a dotted path (None: remove the key)."""
    def change(env):
        *parents, key = path.split(".")
        node = env.spec
        for part in parents:
            node = node[part]
        if value is None:
            del node[key]
        else:
            node[key] = value
    return change


def _row(i: int, **changes):
    return lambda env: env.rows[i].update(changes)


BAD = {
    "missing column": (lambda env: [r.pop("sample_idx") for r in env.rows], "mapping.csv", "lacks column.*sample_idx"),
    "unknown column": (_row(0, prompt="sushi"), "mapping.csv", "unknown column.*prompt"),
    "file does not exist": (_row(2, file="batch-2/nope.jpg"), "mapping.csv:4", "batch-2/nope.jpg does not exist"),
    "not an image": (lambda env: (env.folder / "img-B2.png").write_text("refused by the safety filter"),
                     "img-B2.png", "is not a PNG, JPEG or WebP image"),
    "a GIF": (lambda env: _image(env.folder / "img-B2.png", "GIF", (0, 0, 0)), "img-B2.png", "is not a PNG, JPEG or WebP"),
    "too small": (lambda env: _image(env.folder / "img-B2.png", "PNG", (0, 0, 0), (32, 32)), "img-B2.png",
                  "is 32x32 pixels; the minimum is 64"),
    "unknown prompt_id": (_row(1, prompt_id="tiny/jp/ramen"), "mapping.csv:3", "'tiny/jp/ramen' is not in prompt set tiny"),
    "sample_idx out of range": (_row(3, sample_idx=2), "mapping.csv:5", "sample_idx 2 is out of range"),
    "sample_idx not a number": (_row(3, sample_idx="one"), "mapping.csv:5", "not a whole number"),
    "duplicate slot": (_row(5, prompt_id="tiny/ng/jollof", sample_idx=0), "mapping.csv:7", "prompt .tiny/ng/jollof. sample 0 is also on line 6"),
    "file mapped twice": (_row(5, file="batch-1/img-Xq3zP9.png"), "mapping.csv:7", "file .batch-1/img-Xq3zP9.png. is also on line 2"),
    "edit_step on a text prompt": (_row(0, edit_step=1), "mapping.csv:2", "has no edit step"),
    "images differ in size": (lambda env: _image(env.folder / "img-B2.png", "PNG", (0, 0, 0), (64, 64)),
                              "downloads", "differ in size: 96x64.*64x64"),
    "spec not YAML": (lambda env: setattr(env, "spec", "organization: [Acme\n"), "spec.yaml", "is not valid YAML"),
    "spec not a mapping": (lambda env: setattr(env, "spec", "- Acme\n"), "spec.yaml", "is not a YAML mapping"),
    # an --out named <org>__<model>[__<tag>] gives what the spec leaves out: here it is named otherwise
    "spec lacks organization": (lambda env: (_set("organization", None)(env), setattr(env, "out", env.out.with_name("api"))),
                                "spec.yaml", "organization is missing"),
    "spec lacks model.name": (lambda env: (_set("model.name", None)(env), setattr(env, "out", env.out.with_name("api"))),
                              "spec.yaml", "model.name is missing"),
    "spec contradicts the images": (_set("generation.width", 1024), "spec.yaml", "generation.width: 1024 but package found 96"),
    "folder misnamed": (lambda env: setattr(env, "out", env.out.with_name("acme__imagen")), "acme__imagen",
                        f"must be named {SID}"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_one_error_and_no_output(api, case):
    change, source, problem = BAD[case]
    change(api)
    with pytest.raises(CultureboardError, match=problem) as err:
        run(api)
    problems = getattr(err.value, "problems", [err.value])  # several: one a line (ProblemsError), else one error
    assert any(source in getattr(p, "file", getattr(p, "source", "")) for p in problems), str(err.value)
    assert "\n" not in err.value.message and err.value.fix
    assert not (api.out.parent.exists() and any(api.out.parent.iterdir()))


def test_a_failure_while_writing_leaves_nothing(api, monkeypatch):
    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr("cultureboard.evaluators.submission.package.write_submission", fail)
    with pytest.raises(OSError):
        run(api)
    assert list(api.out.parent.iterdir()) == []


def test_an_unrelated_folder_is_never_replaced(api):
    api.out.mkdir(parents=True)
    (api.out / "notes.txt").write_text("mine")
    with pytest.raises(CultureboardError, match="will not be overwritten"):
        run(api)
    assert [p.name for p in api.out.iterdir()] == ["notes.txt"]
