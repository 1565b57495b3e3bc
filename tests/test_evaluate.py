"""The evaluator end to end with tiny random scorers loaded through the real code path: CUBE awareness
and diversity, provenance, cache reuse, sharding, SIGKILL and resume."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image

from cultureboard.builder import build
from cultureboard.builder.dataset import prompt_config, write_dataset
from cultureboard.builder.prompt_sets import PromptSet
from cultureboard.dataset_folder import local_revision, read_prompt_set
from cultureboard.errors import CultureboardError
from cultureboard.evaluators import evaluate, merge_shards
from cultureboard.evaluators.submission.format import write_submission
from cultureboard.evaluators.engine.tiny_scorers import TINY_CONFIG, save_tiny_scorers
from cultureboard.provenance import file_sha256


def make_submission(root: Path, dataset: Path, prompt_set: str) -> Path:
    """A valid submission whose images are deterministic noise (seeded by prompt and sample)."""
    out = root / "lab__model"
    rows = []
    for p in read_prompt_set(dataset, prompt_set):
        for k in range(p["images_per_prompt"]):
            rel = f"images/{p['prompt_id']}/{k}.png"
            seed = int(hashlib.sha256(f"{p['prompt_id']}/{k}".encode()).hexdigest()[:8], 16)
            pixels = np.random.default_rng(seed).integers(0, 256, (64, 64, 3), dtype=np.uint8)
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(pixels).save(out / rel)
            rows.append({"file_name": rel, "prompt_id": p["prompt_id"], "sample_idx": k, "seed": p["seeds"][k],
                         "sha256": file_sha256(out / rel)})
    spec = {
        "format_version": 1, "organization": "lab", "contact": "lab@example.org", "date": "2026-11-25",
        "model": {"name": "model", "id": "lab/model", "revision": "0" * 40, "license": "mit", "weights": "open"},
        "generation": {"pipeline": "StableDiffusionPipeline", "scheduler": "DDIMScheduler", "steps": 2,
                       "guidance_scale": 7.5, "width": 64, "height": 64, "negative_prompt": True, "precision": "fp32"},
        "seeds": {"scheme": "prompt-set"},
        "prompt_set": {"name": prompt_set, "dataset": dataset.name, "revision": local_revision(dataset)},
        "images": {"location": "images"},
    }
    write_submission(out, spec, rows)
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("eval")
    dataset = root / "dataset"
    build(dataset, countries=["IT", "JP"], prompt_sets=["cube-awareness", "cube-diversity"])
    save_tiny_scorers(root / "scorers")
    return {"root": root, "dataset": dataset, "scorers": root / "scorers" / TINY_CONFIG,
            "awareness": make_submission(root / "subs-a", dataset, "cube-awareness"),
            "diversity": make_submission(root / "subs-d", dataset, "cube-diversity")}


def run(world, which, out, **kw):
    kw.setdefault("cache", world["root"] / "cache")
    return evaluate(world[which], world["dataset"], out, scorers=world["scorers"], device="cpu", n_boot=200,
                    repetitions=5, **kw)


def summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text())


def test_awareness_scores_and_summary(world, tmp_path):
    result = run(world, "awareness", tmp_path)
    scores = pq.read_table(result / "scores.parquet").to_pandas()
    prompts = read_prompt_set(world["dataset"], "cube-awareness")
    n_images = sum(p["images_per_prompt"] for p in prompts)
    counts = scores.groupby("metric").size().to_dict()
    assert counts == {"cube.faithfulness": n_images, "cube.cultural_relevance": n_images,
                      "cube.country_top1": n_images, "cube.quality": n_images}
    assert scores["value"].between(-1, 1).all() and set(scores["country"]) == {"IT", "JP"}
    s = summary(result)
    overall = {m["metric"]: m for m in s["metrics"] if m["slice_type"] == "overall"}
    for m in overall.values():
        assert m["ci_low"] <= m["value"] <= m["ci_high"] and m["coverage"] == 1.0 and m["n_prompts"] == len(prompts)
    assert {(m["slice_type"], m["slice"]) for m in s["metrics"] if m["metric"] == "cube.quality"} >= {
        ("country", "IT"), ("country", "JP"), ("category", "cuisine"), ("region_group", "GN"), ("continent", "Europe")}
    relevance = scores[scores.metric == "cube.cultural_relevance"]["value"]
    assert relevance.between(0, 1).all()
    prov = s["provenance"]
    assert {p["name"] for p in prov["scorers"]} == {"siglip2-so400m", "hpsv2.1"}
    assert all(p["revision"].startswith("local:") for p in prov["scorers"])
    assert prov["dataset"]["revision"] == local_revision(world["dataset"]) and prov["device"] == "cpu"
    assert prov["code"]["cultureboard"] and len(prov["submission"]["sha256"]) == 64
    assert {i["name"]: i["direction"] for i in s["metrics_info"]}["cube.faithfulness"] == "higher"


def test_rerun_uses_the_cache_and_is_identical(world, tmp_path):
    cache = tmp_path / "cache"
    first = run(world, "awareness", tmp_path / "a", cache=cache)
    shards = sorted(cache.rglob("shard-*.npz"))
    assert shards  # the first run computed and cached every embedding
    second = run(world, "awareness", tmp_path / "b", cache=cache)
    assert sorted(cache.rglob("shard-*.npz")) == shards  # the rerun computed nothing
    for name in ("summary.json", "scores.parquet"):
        assert (first / name).read_bytes() == (second / name).read_bytes()


@pytest.mark.parametrize("which", ["awareness", "diversity"])  # shard units: prompts, and diversity pools
def test_sharded_equals_unsharded(world, tmp_path, which):
    whole = run(world, which, tmp_path / "whole")
    for i in range(3):
        run(world, which, tmp_path / "sharded", shard=(i, 3))
    (tmp_path / "sharded" / f"{whole.name}.shards" / ".0-of-3.tmp-killed").mkdir()  # a killed run's leftover
    merged = merge_shards(tmp_path / "sharded", whole.name, world["dataset"])
    for name in ("summary.json", "scores.parquet"):
        assert (merged / name).read_bytes() == (whole / name).read_bytes()
    assert not (tmp_path / "sharded" / f"{whole.name}.shards").exists()


def test_merge_refuses_missing_shards_and_another_dataset(world, tmp_path):
    run(world, "awareness", tmp_path, shard=(0, 2))
    with pytest.raises(CultureboardError, match="lacks shards"):
        merge_shards(tmp_path, "lab__model", world["dataset"])
    run(world, "awareness", tmp_path, shard=(1, 2))
    build(tmp_path / "other-dataset", countries=["IT"], prompt_sets=["cube-awareness"])
    with pytest.raises(CultureboardError, match="is not the dataset the shards were scored against"):
        merge_shards(tmp_path, "lab__model", tmp_path / "other-dataset")


def test_diversity_pools(world, tmp_path):
    result = run(world, "diversity", tmp_path)
    scores = pq.read_table(result / "scores.parquet").to_pandas()
    pools = scores[scores.metric.str.startswith("cube.qvs.")]
    assert set(pools.metric) == {f"cube.qvs.{p}" for p in ("continent", "country", "artifact", "hierarchical", "uniform")}
    assert pools["prompt_id"].isna().all() and pools["value"].between(0, 1).all()
    vs = scores[scores.metric == "cube.vs.artifact"]["value"]
    assert vs.between(1 / 8, 1).all()
    retrieval = scores[scores.metric == "cube.retrieval"]
    labels = [json.loads(d) for d in retrieval["detail"]]
    assert all(lab["country"] in {"IT", "JP"} and lab["artifact"] for lab in labels)
    detail = json.loads(pools["detail"].iloc[0])
    assert detail["group_size"] == 8 and detail["repetitions"] == 5
    overall = [m for m in summary(result)["metrics"] if m["metric"] == "cube.qvs.uniform" and m["slice_type"] == "overall"][0]
    assert overall["n_images"] == len(retrieval)


def test_invalid_submission_and_unscored_prompt_set(world, tmp_path):
    broken = make_submission(tmp_path / "a", world["dataset"], "cube-awareness")
    next((broken / "images").rglob("*.png")).write_bytes(b"junk")
    with pytest.raises(CultureboardError, match="is not a valid submission"):
        evaluate(broken, world["dataset"], tmp_path / "r")
    row = {"prompt_id": "other/1", "prompt_set": "other", "text": "a photo", "negative_prompt": "", "kind": "t2i",
           "images_per_prompt": 1, "seeds": [0], "seed_scheme": "consecutive"}
    dataset = write_dataset(tmp_path / "ds", [prompt_config(PromptSet("other", "1", "x", "x", [row]))], {})
    other = make_submission(tmp_path / "b", dataset, "other")
    with pytest.raises(CultureboardError, match="has no metrics"):
        evaluate(other, dataset, tmp_path / "r")
    assert not (tmp_path / "r").exists()


def test_sigkill_then_resume_gives_identical_results(world, tmp_path):
    cache = tmp_path / "cache"
    reference = run(world, "awareness", tmp_path / "reference", cache=tmp_path / "fresh-cache")
    cmd = [sys.executable, "-m", "cultureboard.cli", "evaluate", str(world["awareness"]), "--dataset", str(world["dataset"]),
           "--out", str(tmp_path / "killed"), "--scorers", str(world["scorers"]), "--device", "cpu", "--cache", str(cache)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(cmd + ["--seed", "0"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and not list(cache.rglob("shard-*.npz")):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert list(cache.rglob("shard-*.npz")), "the run was killed before it cached anything"
    assert not (tmp_path / "killed" / "lab__model" / "summary.json").exists()
    resumed = evaluate(world["awareness"], world["dataset"], tmp_path / "killed", scorers=world["scorers"], device="cpu",
                       cache=cache, n_boot=200, repetitions=5)
    assert yaml.safe_load((resumed / "summary.json").read_text())["metrics"] != []
    assert pq.read_table(resumed / "scores.parquet").equals(pq.read_table(reference / "scores.parquet"))


def test_reference_images_refine_retrieval(world, tmp_path):
    """An artifact whose reference image is the submitted image itself wins the retrieval for that image."""
    scores = pq.read_table(run(world, "diversity", tmp_path / "plain") / "scores.parquet").to_pandas()
    row = scores[scores.metric == "cube.retrieval"].iloc[0]
    plain = json.loads(row["detail"])["artifact"]
    space = pq.read_table(next((world["dataset"] / "data" / "artifacts").glob("*.parquet"))).to_pylist()
    prompt = next(p for p in read_prompt_set(world["dataset"], "cube-diversity") if p["prompt_id"] == row["prompt_id"])
    other = next(a["qid"] for a in space if a["concept"] == prompt["category"] and a["qid"] != plain
                 and (prompt["subcategory"] is None or a["subcategory"] == prompt["subcategory"]))
    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / f"{other}.png").write_bytes((world["diversity"] / row["file_name"]).read_bytes())
    refined = run(world, "diversity", tmp_path / "refined", references=refs)
    again = pq.read_table(refined / "scores.parquet").to_pandas()
    match = again[(again.metric == "cube.retrieval") & (again.file_name == row["file_name"])].iloc[0]
    assert json.loads(match["detail"])["artifact"] == other
    assert summary(refined)["provenance"]["settings"]["references"] is not None


def test_images_on_the_hub_are_fetched_at_the_pinned_revision(world, tmp_path, monkeypatch):
    """images.location hf://datasets/ORG/REPO@REV: the evaluator downloads exactly the listed files at REV."""
    import shutil

    import huggingface_hub

    local = world["awareness"]
    hub = shutil.copytree(local, tmp_path / "lab__model", ignore=shutil.ignore_patterns("images"))
    spec = yaml.safe_load((hub / "submission.yaml").read_text())
    spec["images"]["location"] = "hf://datasets/lab/model-images@" + "a" * 40
    (hub / "submission.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    calls = []

    def fake_snapshot_download(repo_id, repo_type, revision, allow_patterns, cache_dir=None):
        calls.append((repo_id, repo_type, revision, len(allow_patterns)))
        return str(local)  # the repository's snapshot: the same files

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    result = evaluate(hub, world["dataset"], tmp_path / "results", scorers=world["scorers"], device="cpu", n_boot=200,
                      repetitions=5, cache=tmp_path / "cache")
    n_images = len((local / "metadata.jsonl").read_text().splitlines())
    assert calls == [("lab/model-images", "dataset", "a" * 40, n_images)]
    reference = run(world, "awareness", tmp_path / "reference", cache=tmp_path / "cache")
    assert pq.read_table(result / "scores.parquet").equals(pq.read_table(reference / "scores.parquet"))
