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
from cultureboard.progress import MARK, without_progress
from cultureboard.evaluators import evaluate, merge_shards
from cultureboard.evaluators.submission.format import write_submission
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
def world(tmp_path_factory, tiny_scorers):
    root = tmp_path_factory.mktemp("eval")
    dataset = root / "dataset"
    # FR and IT share a continent, so the continent and country kernels differ; FR has no clothing artifact
    build(dataset, countries=["IT", "FR", "JP"], prompt_sets=["cube-awareness", "cube-diversity"])
    return {"root": root, "dataset": dataset, "scorers": tiny_scorers,
            "awareness": make_submission(root / "subs-a", dataset, "cube-awareness"),
            "diversity": make_submission(root / "subs-d", dataset, "cube-diversity")}


def run(world, which, out, options=None, **kw):
    kw.setdefault("cache", world["root"] / "cache")
    return evaluate(world[which], world["dataset"], out, scorers=world["scorers"], device="cpu", n_boot=200,
                    options={"repetitions": 5, **(options or {})}, **kw)


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
    assert scores["value"].between(-1, 1).all() and set(scores["country"]) == {"FR", "IT", "JP"}
    s = summary(result)
    overall = {m["metric"]: m for m in s["metrics"] if m["slice_type"] == "overall"}
    for m in overall.values():
        assert m["ci_low"] <= m["value"] <= m["ci_high"] and m["coverage"] == 1.0 and m["n_prompts"] == len(prompts)
    assert {(m["slice_type"], m["slice"]) for m in s["metrics"] if m["metric"] == "cube.quality"} >= {
        ("country", "IT"), ("country", "JP"), ("category", "cuisine"), ("region_group", "GN"), ("continent", "Europe")}
    relevance = scores[scores.metric == "cube.cultural_relevance"]["value"]
    assert relevance.between(0, 1).all()
    prov = s["provenance"]
    assert prov["family"] == "cube" and prov["metrics"]["cube.faithfulness"] == 2
    assert prov["options"] == {"repetitions": 5, "group_size": 8, "candidates": 5, "mapping": "judge",
                               "retrieve_by": "auto"}
    assert prov["notes"]["cube.cultural_relevance"]["chance"] == pytest.approx(1 / 3)  # three countries
    assert {p["name"] for p in prov["scorers"]} == {"siglip2-so400m", "hpsv2.1"}
    assert all(p["dtype"] == "float32" and p["kind"] == "embedding" for p in prov["scorers"])
    assert all(p["revision"].startswith("local:") for p in prov["scorers"])
    assert prov["dataset"]["revision"] == local_revision(world["dataset"]) and prov["device"] == "cpu"
    assert prov["code"]["cultureboard"] and len(prov["submission"]["sha256"]) == 64
    assert {i["name"]: i["direction"] for i in s["metrics_info"]}["cube.faithfulness"] == "none"  # CUBE never relates it to its ratings
    # every image read by the real OCR (noise spells nothing); the metrics whose scorers read text are repeated
    # without the images that spell (none here: the same values)
    text = prov["written"]
    assert text["ocr"]["version"] == "1.4.4" and all(len(h) == 64 for h in text["ocr"]["models"].values())
    assert set(text["images"]) == set(scores["file_name"]) and text["counts"]["spells"] == 0
    assert text["checked"] + text["counts"]["not checked"] == n_images and s["written"]["share"] == 0
    assert text["reads_text"] == ["cube.country_top1", "cube.cultural_relevance", "cube.faithfulness", "cube.quality"]
    assert s["written"]["without"]["cube.faithfulness"]["value"] == overall["cube.faithfulness"]["value"]


def test_rerun_uses_the_cache_loads_no_model_and_is_identical(world, tmp_path, monkeypatch):
    from cultureboard.evaluators.engine.scorers import Scorers

    cache = tmp_path / "cache"
    first = run(world, "awareness", tmp_path / "a", cache=cache)
    shards = sorted(cache.rglob("shard-*.npz"))
    assert shards  # the first run computed and cached every embedding
    monkeypatch.setattr(Scorers, "model", lambda self, name: pytest.fail(f"{name} was loaded on a rerun"))
    second = run(world, "awareness", tmp_path / "b", cache=cache)
    assert sorted(cache.rglob("shard-*.npz")) == shards  # the rerun computed nothing
    for name in ("summary.json", "scores.parquet"):
        assert (first / name).read_bytes() == (second / name).read_bytes()


def test_awareness_values_are_recomputed_from_the_scorers(world, tmp_path):
    """Every awareness value equals the formula applied to the scorers' own embeddings: a swapped country list,
    the probability of another country or a constant top-1 fails here."""
    from cultureboard.countries import load_countries
    from cultureboard.evaluators.engine.scorers import load_scorer

    scores = pq.read_table(run(world, "awareness", tmp_path) / "scores.parquet").to_pandas()
    siglip = load_scorer("siglip2-so400m", config=world["scorers"])
    hps = load_scorer("hpsv2.1", config=world["scorers"])
    prompts = {p["prompt_id"]: p for p in read_prompt_set(world["dataset"], "cube-awareness")}
    codes = ["FR", "IT", "JP"]
    T = siglip.embed_texts([f"An image from {load_countries().by_iso(c).name_in_sentence}." for c in codes])
    top1 = {}
    for row in scores[scores.metric == "cube.cultural_relevance"].itertuples():
        x = siglip.embed_images([Image.open(world["awareness"] / row.file_name)])[0]
        logits = siglip.logit_scale * (T @ x)
        p = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
        target = codes.index(prompts[row.prompt_id]["country"])
        assert row.value == pytest.approx(p[target], abs=1e-5)
        top1[row.prompt_id, row.sample_idx] = float(np.argmax(p) == target)
    got_top1 = {(r.prompt_id, r.sample_idx): r.value for r in scores[scores.metric == "cube.country_top1"].itertuples()}
    assert got_top1 == top1 and 0 < sum(top1.values()) < len(top1), "top-1 follows the probabilities, not a constant"
    sample = scores[scores.metric == "cube.quality"].iloc[:3]
    for row in sample.itertuples():
        x = hps.embed_images([Image.open(world["awareness"] / row.file_name)])[0]
        assert row.value == pytest.approx(float(x @ hps.embed_texts([prompts[row.prompt_id]["text"]])[0]), abs=1e-5)


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


def artifact_countries(dataset: Path) -> dict[str, str]:
    return {r["qid"]: r["country"] for f in sorted((dataset / "data" / "artifacts").glob("*.parquet"))
            for r in pq.read_table(f, columns=["qid", "country"]).to_pylist()}


def test_diversity_pools(world, tmp_path):
    result = run(world, "diversity", tmp_path)
    scores = pq.read_table(result / "scores.parquet").to_pandas()
    presets = ("continent", "country", "artifact", "hierarchical", "uniform")
    pools = scores[scores.metric.str.startswith(("cube.qvs.", "cube.vs.", "cube.within."))]
    assert pools["prompt_id"].isna().all()
    global_pools = pools[pools.metric.str.startswith(("cube.qvs.", "cube.vs."))]
    within = pools[pools.metric == "cube.within.vs.artifact"]
    assert set(global_pools.metric) == {f"cube.{k}.{p}" for k in ("qvs", "vs") for p in presets}
    assert (global_pools["level"] == "global").all() and global_pools["country"].isna().all()
    assert global_pools["flag"].isna().all() and global_pools["value"].between(0, 1).all()
    assert (within["level"] == "within-culture").all() and set(within["country"]) == {"FR", "IT", "JP"}
    assert scores[scores.metric == "cube.vs.artifact"]["value"].between(1 / 8, 1).all()
    retrieval = scores[scores.metric == "cube.retrieval"]
    labels = [json.loads(d) for d in retrieval["detail"]]
    assert all(lab["artifact"] in lab["candidates"] for lab in labels)
    # a within-culture prompt's candidates are its country's artifacts (CUBE J.2.1 retrieves within the country)
    country_of = artifact_countries(world["dataset"])
    for row, lab in zip(retrieval.itertuples(), labels):
        if row.level == "within-culture":
            assert {country_of[q] for q in lab["candidates"]} == {row.country} == {lab["country"]}
    # the tiny judge's choice among the candidates is a closed question, scored by likelihood (it always answers):
    # a candidate, or a number beyond the ones listed (an image with fewer than 5), which falls back to retrieval
    asked = [(row, lab) for row, lab in zip(retrieval.itertuples(), labels) if len(lab["candidates"]) > 1]
    assert 0 < len(asked) < len(labels)  # IT's and JP's one clothing artifact: nothing to choose among
    fallback = [(row, lab) for row, lab in asked if lab["decided_by"].startswith("retrieval")]
    assert 0 < len(asked) - len(fallback) == sum(lab["decided_by"].startswith("judge") for _, lab in asked)
    assert all("is not one of the" in lab["fallback"] and len(lab["candidates"]) < 5 for _, lab in fallback)
    notes = summary(result)["provenance"]["notes"]
    n_global = int((retrieval["level"] == "global").sum())
    assert notes["cube.retrieval"]["counts"]["judge_failed"] == len(fallback)
    assert notes["cube.qvs.uniform"]["counts"]["judge_failed"] == sum(row.level == "global" for row, _ in fallback)
    # ... and its P("Yes") is near 0: every within-culture image is left out as not showing the named culture
    pool_detail = {r.unit_id: json.loads(r.detail) for r in within.itertuples()}
    for detail in pool_detail.values():
        assert detail["images"] == 0 and detail["counts"]["not_of_culture"] == detail["counts"]["images"] == 40
    assert within["value"].isna().all() and within["flag"].str.contains("pool of 0 images").all()
    # FR has no clothing artifact: its art pool's candidates are all of FR's art, and each of its images counts
    assert pool_detail["cube-diversity/within-culture/art/FR/pool"]["counts"]["widened_to_concept"] == 40
    assert notes["cube.within.vs.artifact"]["counts"]["widened_to_concept"] == 40
    assert sum(json.loads(d)["counts"]["widened_to_concept"] for d in global_pools["detail"]) == 0
    detail = json.loads(global_pools["detail"].iloc[0])
    assert detail["group_size"] == 8 and detail["repetitions"] == 5
    overall = {(m["metric"], m["slice_type"]): m for m in summary(result)["metrics"]}
    assert overall[("cube.qvs.uniform", "overall")]["n_images"] == n_global


def fake_judge(monkeypatch):
    """A judge whose answers follow each image's sha256: asked to choose, it answers 0 (none matches), nothing
    usable, or one of the candidates listed from France, Italy or Japan (else one of all listed; which one follows
    the sha256 too), so that images land in countries that share a continent and a within-culture pool, whose
    candidates are all of one country, holds several artifacts; P("Yes") that an image shows the named culture is
    0.9 or 0.2. Returns the two rules: sha256 -> "none" | "unusable" | "pick", and sha256 -> P("Yes")."""
    import re

    from cultureboard.evaluators.engine.context import Context
    from cultureboard.evaluators.engine.judge import JudgeAnswer

    def rule(sha):
        return ("none", "pick", "unusable")[int(sha[1], 16) % 3]

    def p_yes(sha):
        return 0.2 if int(sha[2], 16) % 4 == 0 else 0.9

    def answer(im, question):
        if rule(im.sha256) == "unusable":
            return JudgeAnswer(None, 3, "not JSON")
        if rule(im.sha256) == "none":
            return JudgeAnswer({"choice": 0}, 1)
        wanted = ("France", "Italy", "Japan")[int(im.sha256[3], 16) % 3]
        listed = re.findall(r"^(\d+)\. .* \((\w+)\)$", question, flags=re.MULTILINE)
        among = [int(n) for n, c in listed if c == wanted] or [int(n) for n, _ in listed]
        return JudgeAnswer({"choice": among[int(im.sha256[4], 16) % len(among)]}, 1)

    monkeypatch.setattr(Context, "ask_json", lambda self, scorer, items, schema, **kw: [
        answer(im, q) for im, q in items])
    monkeypatch.setattr(Context, "probability", lambda self, scorer, items, answer="Yes": np.array(
        [p_yes(im.sha256) for im, _ in items]))
    return rule, p_yes


def test_diversity_values_are_recomputed_from_the_mapping(world, tmp_path, monkeypatch):
    """Each pool's value equals CUBE's grouped qVS of the labels and qualities of the images it keeps: swapped
    label lists, a wrong kernel, mixed levels, or an image the judge rejected kept in fail here. Most within-culture
    images pass the culture question here, and their pools hold several artifacts: every such pool is recomputed
    with the artifact kernel, and the country kernel (one country: VS/N = 1/N) would give another value."""
    from cultureboard.evaluators.families.cube import pool_id
    from cultureboard.evaluators.families.vendi import CUBE_KERNEL_PRESETS, grouped_qvendi

    rule, p_yes = fake_judge(monkeypatch)
    result = run(world, "diversity", tmp_path)
    scores = pq.read_table(result / "scores.parquet").to_pandas()
    prompts = {p["prompt_id"]: p for p in read_prompt_set(world["dataset"], "cube-diversity")}
    retrieval = {(r.prompt_id, r.sample_idx): r for r in scores[scores.metric == "cube.retrieval"].itertuples()}
    quality = {(r.prompt_id, r.sample_idx): r.value for r in scores[scores.metric == "cube.quality"].itertuples()}
    members, left_out = {}, {}
    for key in sorted(retrieval):
        r, detail = retrieval[key], json.loads(retrieval[key].detail)
        asked = len(detail["candidates"]) > 1
        none = asked and rule(r.sha256) == "none"
        assert isinstance(r.flag, str) == none and (detail["decided_by"] == "judge (among the retrieval candidates)") == (
            asked and rule(r.sha256) == "pick")
        within = prompts[key[0]]["level"] == "within-culture"
        rejected = within and p_yes(r.sha256) < 0.5
        pid = pool_id(prompts[key[0]])
        left_out.setdefault(pid, {"judge_chose_none": 0, "not_of_culture": 0})
        left_out[pid]["judge_chose_none"] += none
        left_out[pid]["not_of_culture"] += rejected
        if not (none or rejected):
            members.setdefault(pid, []).append((key, detail))
    checked, values, several = 0, {}, []
    for row in scores[scores.metric.str.startswith(("cube.qvs.", "cube.vs.", "cube.within."))].itertuples():
        keys, labs = zip(*members[row.unit_id])
        detail = json.loads(row.detail)
        assert detail["images"] == len(keys) >= 8
        assert {k: detail["counts"][k] for k in left_out[row.unit_id]} == left_out[row.unit_id]
        kind, preset = row.metric.split(".")[1], row.metric.split(".")[-1]
        weights = np.clip([quality[k] for k in keys], 0, 1) if kind == "qvs" else np.ones(len(keys))
        expected = grouped_qvendi([x["continent"] for x in labs], [x["country"] for x in labs],
                                  [x["artifact"] for x in labs], weights, w=CUBE_KERNEL_PRESETS[preset], size=8,
                                  repetitions=5, seed=0).mean
        assert row.value == pytest.approx(expected, abs=1e-12), row.metric
        values[row.metric, row.unit_id] = row.value
        checked += 1
        if kind == "within" and len({x["artifact"] for x in labs}) > 1:  # the country kernel sees one label only
            one_label = grouped_qvendi([x["continent"] for x in labs], [x["country"] for x in labs],
                                       [x["artifact"] for x in labs], weights, w=CUBE_KERNEL_PRESETS["country"],
                                       size=8, repetitions=5, seed=0).mean
            assert one_label == pytest.approx(1 / 8) and row.value > one_label + 1e-6, row.unit_id
            several.append(row.unit_id)
    n_global = sum(1 for pool in members if "/global/" in pool)
    assert checked == 10 * n_global + (len(members) - n_global) and n_global == 3
    assert len(members) - n_global == 9  # every within-culture pool (3 countries x 3 concepts) was scored
    assert len(several) == 7  # all but IT's and JP's art pools (one clothing artifact each): values never seen before
    # FR and IT share Europe: the continent kernel sees fewer distinct labels than the country kernel somewhere
    pools = [pid for pid in members if "/global/" in pid]
    assert any(values["cube.vs.continent", pid] != pytest.approx(values["cube.vs.country", pid]) for pid in pools)
    assert sum(c["judge_chose_none"] for c in left_out.values()) > 0
    assert sum(c["not_of_culture"] for c in left_out.values()) > 0


def test_small_pools_are_flagged_not_ranked(world, tmp_path):
    result = run(world, "diversity", tmp_path, options={"group_size": 1000})
    scores = pq.read_table(result / "scores.parquet").to_pandas()
    pools = scores[scores.metric.str.startswith(("cube.qvs.", "cube.vs.", "cube.within."))]
    assert pools["value"].isna().all() and pools["flag"].str.contains("smaller than the group size 1000").all()
    entry = next(m for m in summary(result)["metrics"] if m["metric"] == "cube.qvs.uniform" and m["slice_type"] == "overall")
    assert entry["value"] is None and entry["n_prompts"] == 0 and entry["n_flagged"] == 3  # cuisine, landmarks, art
    assert entry["coverage"] == 0 and not entry["complete"]


def test_the_judge_makes_the_final_choice_when_it_answers(world, tmp_path, monkeypatch):
    from cultureboard.evaluators.engine.context import Context
    from cultureboard.evaluators.engine.judge import JudgeAnswer

    monkeypatch.setattr(Context, "ask_json", lambda self, scorer, items, schema, **kw: [
        JudgeAnswer({"choice": 2}, 1) for _ in items])
    scores = pq.read_table(run(world, "diversity", tmp_path) / "scores.parquet").to_pandas()
    labels = [json.loads(d) for d in scores[scores.metric == "cube.retrieval"]["detail"]]
    asked = [lab for lab in labels if len(lab["candidates"]) > 1]
    assert asked and all(lab["artifact"] == lab["candidates"][1] and lab["decided_by"].startswith("judge")
                         for lab in asked)
    assert not any("retrieval top-1" in lab.get("fallback", "") for lab in labels)
    plain = run(world, "diversity", tmp_path / "retrieval", options={"mapping": "retrieval"})
    plain_scores = pq.read_table(plain / "scores.parquet").to_pandas()
    plain_labels = [json.loads(d) for d in plain_scores.query("metric == 'cube.retrieval'")["detail"]]
    assert all(lab["artifact"] == lab["candidates"][0] and "belongs_to_culture" not in lab for lab in plain_labels)
    # without the judge nothing checks the culture: no within-culture image is left out
    within = plain_scores[plain_scores.metric == "cube.within.vs.artifact"]
    assert (within["value"].notna()).all() and all(json.loads(d)["images"] == 40 for d in within["detail"])


def test_candidates_by_reference_photographs(world, tmp_path):
    """Once the dataset has reference photographs (retrieve_by=auto), the candidates are the artifacts whose
    photographs are closest to the image (image-image, max over an artifact's photographs); an artifact with
    none cannot be a candidate, and every image whose candidate pool lacked one counts it."""
    import io
    import shutil

    from cultureboard.builder.references import synthetic_references
    from cultureboard.dataset_folder import read_references
    from cultureboard.evaluators.engine.scorers import load_scorer

    dataset = shutil.copytree(world["dataset"], tmp_path / "dataset")
    arts = [r for f in sorted((dataset / "data" / "artifacts").glob("*.parquet")) for r in pq.read_table(f).to_pylist()]
    missing = min(a["qid"] for a in arts if a["concept"] == "cuisine" and a["country"] == "IT")
    synthetic_references(dataset, per_artifact=2, qids=[a["qid"] for a in arts if a["qid"] != missing])
    result = evaluate(world["diversity"], dataset, tmp_path / "r", scorers=world["scorers"], device="cpu", n_boot=200,
                      options={"repetitions": 5, "mapping": "retrieval"}, cache=world["root"] / "cache")
    s = summary(result)
    assert s["provenance"]["options"]["retrieve_by"] == "references" and s["provenance"]["dataset"]["references_revision"]
    scores = pq.read_table(result / "scores.parquet").to_pandas()
    rows = scores[scores.metric == "cube.retrieval"]
    details = [json.loads(d) for d in rows["detail"]]
    assert all(d["decided_by"] == "retrieval (image-image, top-1)" and missing not in d["candidates"] for d in details)
    lacking = [d["references_missing"] == 1 for d in details]  # the global and the IT cuisine pools
    assert [r.category == "cuisine" and (r.level == "global" or r.country == "IT") for r in rows.itertuples()] == lacking
    assert s["provenance"]["notes"]["cube.retrieval"]["counts"]["references_missing"] == sum(lacking) == 80
    # by hand, for the IT cuisine prompts: the best photograph of each IT dish with photographs
    msiglip = load_scorer("msiglip", config=world["scorers"])
    photos, _ = read_references(dataset)
    dishes = [a["qid"] for a in arts if a["concept"] == "cuisine" and a["country"] == "IT" and a["qid"] != missing]
    vectors = {q: msiglip.embed_images([Image.open(io.BytesIO(r["data"])) for r in photos[q]]) for q in dishes}
    checked = 0
    for row, detail in zip(rows.itertuples(), details):
        if row.category == "cuisine" and row.country == "IT":
            x = msiglip.embed_images([Image.open(world["diversity"] / row.file_name)])[0]
            best = {q: float(np.max(v @ x)) for q, v in vectors.items()}
            top = max(dishes, key=lambda q: best[q])
            assert detail["artifact"] == top and row.value == pytest.approx(best[top], abs=1e-5)
            checked += 1
    assert checked == 40


def test_options_are_validated_before_any_work(world, tmp_path):
    for bad, message in ((["repetitions=zero"], "is not an integer"), (["colour=red"], "is not KEY=VALUE with a known"),
                         (["mapping=oracle"], "is not one of judge, retrieval"), (["group_size=1"], "group_size >= 2")):
        with pytest.raises(CultureboardError, match=message) as error:
            evaluate(world["diversity"], world["dataset"], tmp_path / "r", scorers=world["scorers"],
                     option_overrides=bad, cache=tmp_path / "cache")
        assert "options of cube: repetitions (int, default 50)" in error.value.fix
    assert not (tmp_path / "r").exists()


def test_invalid_submission_and_unscored_prompt_set(world, tmp_path):
    broken = make_submission(tmp_path / "a", world["dataset"], "cube-awareness")
    next((broken / "images").rglob("*.png")).write_bytes(b"junk")
    with pytest.raises(CultureboardError, match="is not a valid submission"):
        evaluate(broken, world["dataset"], tmp_path / "r", scorers=world["scorers"])
    row = {"prompt_id": "other/1", "prompt_set": "other", "text": "a photo", "negative_prompt": "", "kind": "t2i",
           "images_per_prompt": 1, "seeds": [0], "seed_scheme": "consecutive"}
    dataset = write_dataset(tmp_path / "ds", [prompt_config(PromptSet("other", "1", "x", "x", [row]))], {})
    other = make_submission(tmp_path / "b", dataset, "other")
    with pytest.raises(CultureboardError, match="has no metrics"):
        evaluate(other, dataset, tmp_path / "r", scorers=world["scorers"])
    assert not (tmp_path / "r").exists()


def test_sigkill_then_resume_gives_identical_results(world, tmp_path):
    cache = tmp_path / "cache"
    reference = run(world, "awareness", tmp_path / "reference", cache=tmp_path / "fresh-cache")
    cmd = [sys.executable, "-m", "cultureboard.cli", "evaluate", str(world["awareness"]), "--dataset", str(world["dataset"]),
           "--out", str(tmp_path / "killed"), "--scorers", str(world["scorers"]), "--device", "cpu", "--cache", str(cache)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(cmd + ["--seed", "0"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 900  # a bound against hanging, not a speed requirement
    while time.time() < deadline and not list(cache.rglob("shard-*.npz")):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert list(cache.rglob("shard-*.npz")), "the run was killed before it cached anything"
    assert not (tmp_path / "killed" / "lab__model" / "summary.json").exists()
    resumed = evaluate(world["awareness"], world["dataset"], tmp_path / "killed", scorers=world["scorers"], device="cpu",
                       cache=cache, n_boot=200, options={"repetitions": 5})
    assert yaml.safe_load((resumed / "summary.json").read_text())["metrics"] != []
    assert pq.read_table(resumed / "scores.parquet").equals(pq.read_table(reference / "scores.parquet"))


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
                      options={"repetitions": 5}, cache=tmp_path / "cache")
    n_images = len((local / "metadata.jsonl").read_text().splitlines())
    assert calls == [("lab/model-images", "dataset", "a" * 40, n_images)]
    reference = run(world, "awareness", tmp_path / "reference", cache=tmp_path / "cache")
    assert pq.read_table(result / "scores.parquet").equals(pq.read_table(reference / "scores.parquet"))


def test_unreachable_default_scorers_say_so_in_one_line(world, tmp_path, capsys):
    from cultureboard.cli import main

    code = main(["evaluate", str(world["awareness"]), "--dataset", str(world["dataset"]), "--out", str(tmp_path / "r"),
                 "--cache", str(tmp_path / "cache"), "--device", "cpu"])
    everything = capsys.readouterr().err
    err = without_progress(everything)
    assert code == 1 and len(err) == 1, err
    assert err[0].startswith("error: scorer hpsv2.1: xswu/HPSv2@main is not in the local Hugging Face cache and "
                             "HF_HUB_OFFLINE=1 forbids the download")
    assert "--scorers tiny" in err[0] and "huggingface-cli download" in err[0]
    # at once: before validating a single image
    assert "validating" not in everything and everything.splitlines()[0].startswith(MARK + "evaluate ")
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())


def test_evaluate_reports_each_stage(world, tmp_path, capsys):
    from cultureboard.cli import main

    code = main(["evaluate", str(world["awareness"]), "--dataset", str(world["dataset"]), "--out", str(tmp_path / "r"),
                 "--cache", str(tmp_path / "cache"), "--device", "cpu", "--scorers", str(world["scorers"]),
                 "--option", "repetitions=5"])
    err = capsys.readouterr().err
    assert code == 0, err
    lines = err.strip().splitlines()
    assert all(line.startswith(MARK) for line in lines), lines  # not a terminal: one plain line per stage
    stages = ["evaluate ", "validating ", "scoring ", "loading scorer ", "embedding images with ", "summarising ",
              "writing "]
    positions = [next(i for i, line in enumerate(lines) if line.startswith(MARK + s)) for s in stages]
    assert positions[:3] == sorted(positions[:3]) and positions[-2:] == sorted(positions[-2:])
    counted = [line for line in lines if line.startswith(MARK + "embedding images with ") and "/s" in line]
    assert counted and all(" images, " in line for line in counted)



def test_a_fully_cached_rerun_imports_no_torch(world, tmp_path):
    """A rerun whose embeddings are all cached needs only numpy/pandas/pyarrow and the cache: torch, transformers
    and open_clip are never imported, and the results are the same."""
    first = run(world, "awareness", tmp_path / "first")
    script = (f"import sys\nfrom cultureboard.evaluators import evaluate\n"
              f"evaluate({str(world['awareness'])!r}, {str(world['dataset'])!r}, {str(tmp_path / 'second')!r}, "
              f"scorers={str(world['scorers'])!r}, device='cpu', n_boot=200, options={{'repetitions': 5}}, "
              f"cache={str(world['root'] / 'cache')!r})\n"
              "print('HEAVY', sorted(m for m in ('torch', 'transformers', 'open_clip', 'torchvision') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "HEAVY []" in done.stdout, done.stdout
    second = tmp_path / "second" / first.name
    assert summary(second)["metrics"] == summary(first)["metrics"]


def test_the_offline_check_reads_the_scorers_the_options_choose():
    from cultureboard.evaluators.engine.evaluate import scorers_in_use
    from cultureboard.evaluators.engine.registry import family_of, parse_options

    family, pspec = family_of("cultivate")
    registry = {"qwen2.5-vl-7b": {}, "all-minilm-l6-v2": {}, "other-judge": {}}
    default = scorers_in_use(family, pspec, parse_options(family, {}), registry)
    assert {"qwen2.5-vl-7b", "all-minilm-l6-v2"} <= default
    one = scorers_in_use(family, pspec, parse_options(family, {"extractor": "other-judge"}), registry)
    assert {"other-judge", "qwen2.5-vl-7b"} <= one  # vqa still reads the default judge
    both = scorers_in_use(family, pspec, parse_options(family, {"extractor": "other-judge", "vqa": "other-judge"}),
                          registry)
    assert "other-judge" in both and "qwen2.5-vl-7b" not in both
