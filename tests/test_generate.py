"""``generate``: a tiny random Stable Diffusion pipeline, saved and reloaded through generate's own loading
code, run over a tiny dataset: images and metadata, submission.yaml, determinism, resume, edit chains,
Hub ids pinned to their commit, and bad input."""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from diffusers import StableDiffusionImg2ImgPipeline, StableDiffusionPipeline
from PIL import Image
from hub_download import COMMIT, as_hub_download
from tiny_dataset import ECB, T2I, ecb_rows, write_tiny_dataset

from cultureboard.dataset_folder import local_revision
from cultureboard.errors import CultureboardError
from cultureboard.evaluators.submission.generate import JOURNAL, _select, generate
from cultureboard.evaluators.submission.format import FIELDS, get, parse_location, submission_id
from cultureboard.evaluators.submission.tiny_pipelines import save_tiny_text2image
from cultureboard.evaluators.submission.validate import validate
from cultureboard.hub import OFFICIAL_DATASET

NAME = "local__tiny-sd"  # the submission id for organization "local" and a pipeline folder named tiny-sd
FAST = {"steps": 2, "progress": False, "device": "cpu"}  # the same results on machines with a GPU


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> tuple[Path, Path]:
    """(dataset folder, pipeline folder); the dataset also has a set whose chain source is missing."""
    root = tmp_path_factory.mktemp("tiny")
    broken = [r for r in ecb_rows() if r["kind"] == "i2i"]
    dataset = write_tiny_dataset(root / "dataset", extra={"broken-chain": broken})
    return dataset, save_tiny_text2image(root / "tiny-sd")


@pytest.fixture(scope="module")
def first(tiny, tmp_path_factory) -> tuple[Path, dict]:
    """The text-to-image set generated once (batch size 4, so batches mix prompts and samples)."""
    dataset, pipeline = tiny
    out = tmp_path_factory.mktemp("first") / NAME
    return out, generate(dataset, T2I, str(pipeline), out, batch_size=4, **FAST)


@pytest.fixture(scope="module")
def chain(tiny, tmp_path_factory) -> Path:
    dataset, pipeline = tiny
    out = tmp_path_factory.mktemp("chain") / NAME
    generate(dataset, ECB, str(pipeline), out, **FAST)
    return out


@pytest.fixture
def calls(monkeypatch) -> list[tuple[str, dict]]:
    """Every pipeline call as (class name, keyword arguments); the pipelines still run."""
    log: list[tuple[str, dict]] = []
    for cls in (StableDiffusionPipeline, StableDiffusionImg2ImgPipeline):
        original = cls.__call__

        @functools.wraps(original)
        def spy(self, *args, __original=original, **kwargs):
            log.append((type(self).__name__, kwargs))
            return __original(self, *args, **kwargs)

        monkeypatch.setattr(cls, "__call__", spy)
    return log


def spec_of(out: Path) -> dict:
    return yaml.safe_load((out / "submission.yaml").read_text())


def metadata(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metadata.jsonl").read_text().splitlines()]


def pixels(path: Path) -> np.ndarray:
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"))


def copy(out: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(out, tmp_path / NAME))


def mtimes(out: Path) -> dict[str, int]:
    return {p.relative_to(out).as_posix(): p.stat().st_mtime_ns for p in (out / "images").rglob("*.png")}


def seeds_of(call: dict) -> list[int]:
    return [g.initial_seed() for g in call["generator"]]


def test_tiny_pipeline_weights_depend_only_on_the_seed(tiny, tmp_path):
    torch.manual_seed(123)
    expected = torch.rand(1)
    torch.manual_seed(123)
    again = save_tiny_text2image(tmp_path / "again")
    assert torch.rand(1) == expected  # the caller's RNG is left alone
    for part in ("unet/diffusion_pytorch_model", "vae/diffusion_pytorch_model", "text_encoder/model"):
        assert (again / f"{part}.safetensors").read_bytes() == (tiny[1] / f"{part}.safetensors").read_bytes()


def test_every_image_with_its_seed_and_hash(first):
    out, summary = first
    rows = metadata(out)
    assert [(r["prompt_id"], r["sample_idx"]) for r in rows] == [
        (f"{T2I}/{p}", k) for p in ("it/food/pizza", "jp/food/sushi", "ng/landmarks/zuma-rock") for k in (0, 1)]
    for r in rows:
        assert r["file_name"] == f"images/{r['prompt_id']}/{r['sample_idx']}.png"
        assert r["seed"] == 10 + r["sample_idx"]
        assert r["sha256"] == hashlib.sha256((out / r["file_name"]).read_bytes()).hexdigest()
        assert "edit_step" not in r and "source_file" not in r
        assert Image.open(out / r["file_name"]).size == (64, 64)
    assert summary == {**summary, "submission": NAME, "images": 6, "generated": 6, "skipped": 0}
    assert not (out / JOURNAL).exists()


def test_submission_yaml_records_the_settings(first, tiny):
    out, _ = first
    dataset, _ = tiny
    spec = spec_of(out)
    for field in FIELDS:
        value = get(spec, field.path)
        if field.required and not field.nullable:
            assert value is not None, f"{field.path} missing"
        if value is not None:
            assert isinstance(value, field.type), f"{field.path}: {value!r}"
            assert not field.choices or value in field.choices, f"{field.path}: {value!r}"
    assert submission_id(spec) == out.name and parse_location(spec["images"]["location"]).kind == "local"
    assert spec["model"]["name"] == "tiny-sd" and spec["model"]["revision"].startswith("local:")
    assert spec["model"]["license"] == "unknown" and spec["model"]["weights"] == "open" and "links" not in spec["model"]
    assert spec["generation"] == {**spec["generation"], "pipeline": "StableDiffusionPipeline", "scheduler": "DDIMScheduler",
                                  "steps": 2, "guidance_scale": 7.5, "width": 64, "height": 64,
                                  "negative_prompt": True, "precision": "fp32"}
    assert spec["generation"]["extra"]["device"] == "cpu" and spec["generation"]["extra"]["batch_size"] == 4
    assert "limit" not in spec["generation"]["extra"] and spec["generation"]["extra"]["code"]["packages"]["diffusers"]
    assert "i2i_pipeline" not in spec["generation"]
    assert spec["seeds"] == {"scheme": "prompt-set"}
    assert spec["prompt_set"] == {"name": T2I, "dataset": "dataset", "revision": local_revision(dataset)}
    report = validate(out, dataset)
    assert report.valid, report.to_text()


def test_a_hub_download_is_pinned_by_the_official_id_and_its_commit(tiny, tmp_path):
    dataset, pipeline = tiny
    hub = as_hub_download(Path(shutil.copytree(dataset, tmp_path / "dataset")))
    result = generate(hub, T2I, str(pipeline), tmp_path / NAME, limit=1, **FAST)
    assert result["dataset"] == {"dataset": OFFICIAL_DATASET, "revision": COMMIT, "hub": True}
    assert spec_of(tmp_path / NAME)["prompt_set"] == {"name": T2I, "dataset": OFFICIAL_DATASET, "revision": COMMIT}


def test_prompts_negative_prompts_and_one_generator_per_image(tiny, tmp_path, calls):
    dataset, pipeline = tiny
    generate(dataset, T2I, str(pipeline), tmp_path / NAME, batch_size=3, **FAST)
    assert [len(kw["prompt"]) for _, kw in calls] == [3, 3]
    prompts = [p for _, kw in calls for p in kw["prompt"]]
    negatives = [n for _, kw in calls for n in kw["negative_prompt"]]
    seeds = [s for _, kw in calls for s in seeds_of(kw)]
    assert list(zip(prompts, negatives, seeds))[2:4] == [("A photo of sushi from Japan.", "blurry, cartoon", 10),
                                                         ("A photo of sushi from Japan.", "blurry, cartoon", 11)]
    assert negatives.count("") == 4 and seeds == [10, 11] * 3
    assert all(g.device.type == "cpu" for _, kw in calls for g in kw["generator"])


def test_another_batch_size_changes_only_rounding(first, tiny, tmp_path):
    out, _ = first
    dataset, pipeline = tiny
    again = tmp_path / NAME
    generate(dataset, T2I, str(pipeline), again, batch_size=1, limit=1, **FAST)
    assert spec_of(again)["generation"]["extra"]["batch_size"] == 1
    for r in metadata(again):
        diff = pixels(again / r["file_name"]).astype(int) - pixels(out / r["file_name"])
        assert np.abs(diff).max() <= 1


def test_rerun_of_a_finished_submission_rewrites_nothing(first, tiny, tmp_path, calls, capsys):
    dataset, pipeline = tiny
    out = copy(first[0], tmp_path)
    before = mtimes(out)
    summary = generate(dataset, T2I, str(pipeline), out, **{**FAST, "progress": True})
    assert (summary["generated"], summary["skipped"]) == (0, 6) and f"{NAME}: 100%" in capsys.readouterr().err
    assert calls == [] and mtimes(out) == before
    assert metadata(out) == metadata(first[0]) and spec_of(out) == spec_of(first[0])


def test_rerun_regenerates_exactly_the_missing_and_changed_images(first, tiny, tmp_path, calls):
    dataset, pipeline = tiny
    out = copy(first[0], tmp_path)
    missing, changed = out / f"images/{T2I}/it/food/pizza/1.png", out / f"images/{T2I}/ng/landmarks/zuma-rock/0.png"
    missing.unlink()
    changed.write_bytes(b"not the image that was generated")
    before = mtimes(out)
    summary = generate(dataset, T2I, str(pipeline), out, **FAST)
    assert summary["generated"] == 2
    assert [len(kw["prompt"]) for _, kw in calls] == [4, 2]  # the batches of the first run, which held the two
    after = mtimes(out)
    assert {f for f in after if after[f] != before.get(f)} == {"images/tiny-t2i/it/food/pizza/1.png",
                                                               "images/tiny-t2i/ng/landmarks/zuma-rock/0.png"}
    assert metadata(out) == metadata(first[0])  # made in the same batches: the same bytes again


def test_interrupted_run_resumes_from_its_journal(first, tiny, tmp_path, monkeypatch):
    """Also the determinism check: the same settings in another folder give the first run's bytes."""
    dataset, pipeline = tiny
    out = tmp_path / NAME
    original, n = StableDiffusionPipeline.__call__, []

    @functools.wraps(original)
    def crash_on_second_batch(self, *args, **kwargs):
        n.append(1)
        if len(n) == 2:
            raise KeyboardInterrupt
        return original(self, *args, **kwargs)

    monkeypatch.setattr(StableDiffusionPipeline, "__call__", crash_on_second_batch)
    with pytest.raises(KeyboardInterrupt):
        generate(dataset, T2I, str(pipeline), out, batch_size=4, **FAST)
    journal = [json.loads(line) for line in (out / JOURNAL).read_text().splitlines()]
    assert journal[0]["settings"]["generation.steps"] == 2 and len(journal) == 1 + 4
    assert not (out / "submission.yaml").exists()
    with (out / JOURNAL).open("a") as journal:
        journal.write('{"file_name": "images/tiny-t2i/ng/land')  # a line cut short by the crash
    monkeypatch.undo()
    summary = generate(dataset, T2I, str(pipeline), out, batch_size=4, **FAST)
    assert (summary["generated"], summary["skipped"]) == (2, 4)
    assert metadata(out) == metadata(first[0]) and not (out / JOURNAL).exists()  # a fresh run's bytes


def test_resume_with_other_settings_is_refused(first, tiny, tmp_path):
    dataset, pipeline = tiny
    out = copy(first[0], tmp_path)
    with pytest.raises(CultureboardError, match=r"other settings \(generation\.steps\)"):
        generate(dataset, T2I, str(pipeline), out, steps=3, progress=False)


def test_each_edit_step_edits_the_previous_steps_image(tiny, tmp_path, calls):
    dataset, pipeline = tiny
    out = tmp_path / NAME
    generate(dataset, ECB, str(pipeline), out, **FAST)
    edits = [kw for name, kw in calls if name == "StableDiffusionImg2ImgPipeline"]
    assert len(edits) == 2 and all(kw["strength"] == 0.6 for kw in edits)  # one call per chain step, in order
    rows = {r["prompt_id"]: r for r in metadata(out)}
    for step, kw in enumerate(edits, start=1):
        row = rows[f"{ECB}/kr/food/main-dish/edit/{step}"]
        assert row["edit_step"] == step and row["seed"] == 0 and seeds_of(kw) == [0]
        source = "kr/food/main-dish" + (f"/edit/{step - 1}" if step > 1 else "")
        assert row["source_file"] == f"images/{ECB}/{source}/0.png"
        assert np.array_equal(np.asarray(kw["image"][0]), pixels(out / row["source_file"]))
    assert "edit_step" not in rows[f"{ECB}/kr/food/main-dish"]
    report = validate(out, dataset)
    assert report.valid, report.to_text()
    generation = spec_of(out)["generation"]
    assert generation["i2i_pipeline"] == "StableDiffusionImg2ImgPipeline" and generation["i2i_strength"] == 0.6
    assert "i2i_model" not in generation["extra"]


def test_edit_steps_are_redone_when_their_source_is(chain, tiny, tmp_path):
    dataset, pipeline = tiny
    out = copy(chain, tmp_path)
    (out / f"images/{ECB}/kr/food/main-dish/edit/1/0.png").unlink()
    summary = generate(dataset, ECB, str(pipeline), out, **FAST)
    assert (summary["generated"], summary["skipped"]) == (2, 1)  # step 1 and the step 2 made from it
    assert metadata(out) == metadata(chain)


def test_separate_i2i_pipeline_is_recorded(chain, tiny, tmp_path):
    dataset, pipeline = tiny
    out = tmp_path / NAME
    generate(dataset, ECB, str(pipeline), out, i2i_pipeline=str(pipeline), **FAST)
    extra = spec_of(out)["generation"]["extra"]
    assert extra["i2i_model"] == {"id": f"local/{pipeline.name}", "revision": spec_of(chain)["model"]["revision"]}
    assert metadata(out) == metadata(chain)  # the same weights turned into their img2img form


def test_limit_keeps_the_chain_sources_it_needs():
    rows = list(reversed(ecb_rows()))  # the last step first
    assert [r["prompt_id"] for r in _select(rows, 1, "test")] == [r["prompt_id"] for r in rows]
    assert len(_select(ecb_rows(), 1, "test")) == 1


def test_hub_id_is_pinned_to_the_cached_commit(tiny, tmp_path, monkeypatch):
    dataset, pipeline = tiny
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--acme--tiny-sd"
    shutil.copytree(pipeline, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "hub"))
    out = tmp_path / "acme__tiny-sd__fp32"
    summary = generate(dataset, T2I, "acme/tiny-sd@main", out, organization="acme", tag="fp32", limit=1, **FAST)
    spec = spec_of(out)
    assert (spec["model"]["id"], spec["model"]["revision"], spec["tag"]) == ("acme/tiny-sd", commit, "fp32")
    assert spec["model"]["links"] == ["https://huggingface.co/acme/tiny-sd"]
    assert spec["generation"]["extra"]["limit"] == 1 and summary["images"] == 2


def test_out_folder_must_be_named_after_the_submission(tiny, tmp_path):
    dataset, pipeline = tiny
    with pytest.raises(CultureboardError, match=r"<org>__<model>\[__<tag>\].*local__tiny-sd"):
        generate(dataset, T2I, str(pipeline), tmp_path / "my-run", **FAST)
    assert not (tmp_path / "my-run").exists()


def broken_pipeline(tmp_path: Path) -> str:
    folder = tmp_path / "tiny-sd"
    folder.mkdir()
    (folder / "model_index.json").write_text('{"_class_name": "StableDiffusionPipeline", "unet": ["diffusers", "UNet2DConditionModel"]}')
    return str(folder)


@pytest.mark.parametrize(("case", "message"), [
    ("unknown prompt set", "has no prompt set 'nope'"),
    ("missing pipeline", "neither a local folder nor an available Hub pipeline"),
    ("not a pipeline folder", r"no model_index.json"),
    ("unloadable pipeline", "cannot be loaded as a diffusers pipeline"),
    ("chain source missing", "edits 'tiny-ecb/kr/food/main-dish', which is not in the set"),
    ("foreign out folder", "neither a submission nor an interrupted generation"),
    ("unknown dtype", "unknown dtype 'fp8'"),
])
def test_bad_input_is_one_clear_error(tiny, tmp_path, case, message):
    dataset, pipeline = tiny
    args = {"prompt_set": T2I, "pipeline": str(pipeline), "out": tmp_path / NAME, "dtype": None}
    if case == "unknown prompt set":
        args["prompt_set"] = "nope"
    elif case == "missing pipeline":
        args["pipeline"] = "nobody/tiny-sd"
    elif case == "not a pipeline folder":
        (tmp_path / "tiny-sd").mkdir()
        args["pipeline"] = str(tmp_path / "tiny-sd")
    elif case == "unloadable pipeline":
        args["pipeline"] = broken_pipeline(tmp_path)
    elif case == "chain source missing":
        args["prompt_set"] = "broken-chain"
    elif case == "foreign out folder":
        (tmp_path / NAME).mkdir()
        (tmp_path / NAME / "notes.txt").write_text("mine")
    else:
        args["dtype"] = "fp8"
    with pytest.raises(CultureboardError, match=message) as err:
        generate(dataset, **args, **FAST)
    assert "\n" not in err.value.message and "(fix: " in err.value.message


@pytest.mark.parametrize("header", ["", "{\"settings\": {\"generation.st", "[]", '{"settings": 1, "date": "2026-01-02"}',
                                    '{"settings": {}}', "\u2028\n"])
def test_an_empty_or_damaged_journal_header_is_one_error(tiny, tmp_path, header):
    """The journal is read with the metadata line reader; a header that is not the settings and date of a run
    is one line naming the journal (never a ValueError or JSONDecodeError traceback), and nothing is written."""
    dataset, pipeline = tiny
    out = tmp_path / NAME
    out.mkdir()
    (out / JOURNAL).write_bytes(header.encode("utf-8"))
    with pytest.raises(CultureboardError) as err:
        generate(dataset, T2I, str(pipeline), out, **FAST)
    assert err.value.message == (f"{out / JOURNAL}: has no readable header (the settings and date of the interrupted "
                                 f"run) (fix: delete {out} to start again, or choose a new folder for --out)")
    assert sorted(p.name for p in out.iterdir()) == [JOURNAL]
