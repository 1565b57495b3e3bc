"""Real evaluator results of every registered family, small enough for the site's tests.

    world = five_families(root, tiny_scorers)   # {dataset, submissions, results, ids: {prompt set: [ids]}}

One dataset of the sample dump (Italy, Nigeria, Spain; the demo's small CULTIVate catalogue, ECB slice and CuRe
ladder, synthetic reference photographs) holds every prompt set; one submission per prompt set of seeded colour
blocks (ECB's edit chains as repainted copies of the previous step; CULTIVate's declares its first prompt refused,
:data:`REFUSED`), a second cube-awareness model that declares LAION training data, a text-only control of
cube-awareness, and one cube-awareness submission under hostile names (:data:`HOSTILE`), all evaluated by the
tiny random stand-in scorers through the real engine.
:func:`variant` then copies a real result under another submission id with its values shifted, for views that
need several models (ranks, maps, disparity): only those copies are synthetic, and they say so in their model id.

Made once per test session (under pytest's base temporary folder), whichever test module asks first.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from cultureboard.builder import build
from cultureboard.builder.references import synthetic_references
from cultureboard.evaluators import evaluate
from cultureboard.evaluators.submission.controls import make_control
from cultureboard.evaluators.submission.format import submission_id, write_submission
from PIL import Image

from cultureboard.dataset_folder import local_revision, read_prompt_set
from cultureboard.provenance import file_sha256

COUNTRIES = ["IT", "NG", "ES"]
PROMPT_SETS = ["cube-awareness", "cultdiff", "cure-ladder", "cultivate", "ecb"]
SIDE = 64
#: The demo's small selections (cultureboard/demo.py), so that every family scores in seconds.
SMALL = {"cultivate_activities": "data/cultivate_demo_activities.yaml", "knowledge": "data/ecb_demo_knowledge",
         "ecb_subset": {"countries": ["NG"], "subcategories": ["main_dish"], "steps": 2}, "cure_images": [1, 2],
         "max_question_fallback": 1.0}
OPTIONS = {"cultivate": {"max_new_tokens": 16}}
#: Prompts each prompt set's submission declares refused (its model's safety filter, say).
REFUSED = {"cultivate": 1}
#: Names a page must show as text, never run: a submission made under them (organisation, model, tag).
HOSTILE = ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)> "q" & co', "' onmouseover='x")
HOSTILE_SPEC = {"model": {"training_data": HOSTILE[0], "links": ["javascript:alert(1)", 'https://example.org/"onmouseover="x']}}


def scorer_config(tiny: Path, root: Path) -> Path:
    """The tiny stand-ins with absolute paths; DreamSim is an LPIPS stand-in where the stand-ins hold none (its
    ensemble checkpoint cannot be made offline)."""
    config = yaml.safe_load(tiny.read_text())
    config = {name: {**entry, "path": str(tiny.parent / entry["path"])} for name, entry in config.items()}
    if "dreamsim" not in config:
        config["dreamsim"] = {"backend": "lpips", "net": "alex", "version": "0.1", "size": 64,
                              "path": config["lpips-alex"]["path"], "role": ["stand-in for DreamSim in tests"]}
    path = root / "scorers.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _png(seed: int) -> Image.Image:
    blocks = np.random.default_rng(seed).integers(0, 256, (8, 8, 3), dtype=np.uint8)
    return Image.fromarray(blocks).resize((SIDE, SIDE), Image.Resampling.NEAREST)


def _edited(image: Image.Image, seed: int) -> Image.Image:
    pixels = np.asarray(image).copy()
    rng = np.random.default_rng(seed)
    y, x = rng.integers(0, 8, 2) * (SIDE // 8)
    pixels[y:y + SIDE // 8, x:x + SIDE // 8] = rng.integers(0, 256, 3)
    return Image.fromarray(pixels)


def write_blocks(parent: Path, dataset: Path, prompt_set: str, *, organization: str = "lab", model: str = "model",
                 tag: str | None = None, spec: dict | None = None, refuse: int = 0) -> Path:
    """A valid submission of seeded 64 px colour blocks for every image of ``prompt_set``; an edit step (ECB) is
    its source image with one block repainted. ``refuse``: the first prompts (by prompt id) are declared refused,
    every sample of them (text-to-image prompts only)."""
    base = {
        "format_version": 1, "organization": organization, "contact": "lab@example.org", "date": "2026-01-15",
        "model": {"name": model, "id": f"{organization}/{model}", "revision": "0" * 40, "license": "mit",
                  "weights": "open"},
        "generation": {"pipeline": "StableDiffusionPipeline", "scheduler": "DDIMScheduler", "steps": 2,
                       "guidance_scale": 7.5, "width": SIDE, "height": SIDE, "negative_prompt": False,
                       "precision": "fp32"},
        "seeds": {"scheme": "prompt-set"},
        "prompt_set": {"name": prompt_set, "dataset": dataset.name, "revision": local_revision(dataset)},
        "images": {"location": "images"},
    }
    prompts = sorted(read_prompt_set(dataset, prompt_set), key=lambda p: (p.get("edit_step") or 0, p["prompt_id"]))
    if any(p.get("kind") == "i2i" for p in prompts):
        base["generation"] |= {"i2i_pipeline": "StableDiffusionImg2ImgPipeline", "i2i_strength": 0.6}
    base |= {"tag": tag} if tag else {}
    for key, value in (spec or {}).items():
        base[key] = {**base[key], **value} if isinstance(value, dict) else value
    out = parent / submission_id(base)
    made, rows = {}, []
    refused = sorted(p["prompt_id"] for p in prompts if p.get("kind") != "i2i")[:refuse]
    for p in prompts:
        for k in range(p["images_per_prompt"]):
            if p["prompt_id"] in refused:
                rows.append({"prompt_id": p["prompt_id"], "sample_idx": k, "seed": p["seeds"][k], "refused": True,
                             "reason": "safety filter"})
                continue
            seed = int(hashlib.sha256(f"{out.name}/{p['prompt_id']}/{k}".encode()).hexdigest()[:8], 16)
            source = p.get("source_prompt_id")
            image = _edited(made[(source, k)], seed) if p.get("kind") == "i2i" else _png(seed)
            made[(p["prompt_id"], k)] = image
            rel = f"images/{p['prompt_id']}/{k}.png"
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            image.save(out / rel)
            row = {"file_name": rel, "prompt_id": p["prompt_id"], "sample_idx": k, "seed": p["seeds"][k],
                   "sha256": file_sha256(out / rel)}
            if p.get("kind") == "i2i":
                row |= {"edit_step": p["edit_step"], "source_file": f"images/{source}/{k}.png"}
            rows.append(row)
    write_submission(out, base, rows)
    return out


def five_families(base: Path, tiny_scorers: Path) -> dict:
    """The world (made once under ``base``; later calls read it back)."""
    root = base / "five-families"
    done = root / "world.json"
    if done.is_file():
        return {k: Path(v) if k in ("dataset", "submissions", "results", "root") else v
                for k, v in json.loads(done.read_text()).items()}
    root.mkdir(parents=True, exist_ok=True)
    packaged = resources.files("cultureboard.builder")
    options = {k: str(packaged.joinpath(v)) if k in ("cultivate_activities", "knowledge") else v for k, v in SMALL.items()}
    dataset = root / "dataset"
    build(dataset, countries=COUNTRIES, prompt_sets=PROMPT_SETS, **options)
    synthetic_references(dataset, size=SIDE)
    submissions, results = root / "submissions", root / "results"
    config = scorer_config(tiny_scorers, root)
    ids: dict[str, list[str]] = {}
    folders = [write_blocks(submissions, dataset, ps, model="alpha", tag=ps, refuse=REFUSED.get(ps, 0))
               for ps in PROMPT_SETS]
    folders.append(write_blocks(submissions, dataset, "cube-awareness", organization="Other Lab", model="beta",
                                spec={"model": {"training_data": "a LAION-5B subset, then curated photographs"}}))
    folders.append(write_blocks(submissions, dataset, "cube-awareness", organization=HOSTILE[0], model=HOSTILE[1],
                                tag=HOSTILE[2], spec=HOSTILE_SPEC))
    control = submissions / "control__text-only"
    make_control("text-only", dataset, "cube-awareness", control, size=SIDE)
    folders.append(control)
    for folder in folders:
        prompt_set = yaml.safe_load((folder / "submission.yaml").read_text())["prompt_set"]["name"]
        family = prompt_set.split("-")[0]
        evaluate(folder, dataset, results, scorers=config, device="cpu", cache=root / "cache", n_boot=100,
                 options=OPTIONS.get(family))
        ids.setdefault(prompt_set, []).append(folder.name)
    world = {"root": str(root), "dataset": str(dataset), "submissions": str(submissions), "results": str(results),
             "ids": ids}
    done.write_text(json.dumps(world))
    return five_families(base, tiny_scorers)


def variant(results: Path, submissions: Path, source: str, model: str, shift: float, seed: int,
            out_results: Path, out_submissions: Path, *, unflag: bool = False, training_data: str | None = None,
            tag: str | None = None) -> str:
    """A synthetic copy of the real result ``source`` as the submission ``<org>__<model>`` (``<org>__<model>__<tag>``
    with a ``tag``: one model on several prompt sets): every value shifted by ``shift`` plus seeded noise (summary
    entries and CIs alike), the same images. ``unflag``: flagged rows get a value (for a family whose tiny stand-in
    judge answers nothing usable); ``training_data``: the model's declared training data. Returns the new id."""
    spec = yaml.safe_load((submissions / source / "submission.yaml").read_text())
    spec["model"] = {**spec["model"], "name": model, "id": f"synthetic/{model}"}
    if training_data is not None:
        spec["model"]["training_data"] = training_data
    spec.pop("tag", None)
    spec |= {"tag": tag} if tag else {}
    sid = submission_id(spec)
    shutil.copytree(submissions / source, out_submissions / sid, dirs_exist_ok=True)
    (out_submissions / sid / "submission.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    rng = np.random.default_rng(seed)
    scores = pq.read_table(results / source / "scores.parquet")
    frame = scores.to_pandas()
    if unflag:
        frame.loc[frame["flag"].notna(), "value"] = rng.random(int(frame["flag"].notna().sum()))
        frame["flag"] = None
    frame["value"] = frame["value"] + shift + rng.normal(0, 0.01, len(frame))
    summary = json.loads((results / source / "summary.json").read_text())
    for e in summary["metrics"]:
        if unflag and e["value"] is None:
            e.update(value=0.5, ci_low=0.4, ci_high=0.6, n_prompts=max(e["n_prompts"], 5), n_flagged=0, flags={},
                     coverage=1.0, complete=True)
        if e["value"] is not None:
            delta = shift + float(rng.normal(0, 0.01))
            e.update(value=e["value"] + delta)
            if e["ci_low"] is not None:  # one prompt: no CI
                e.update(ci_low=e["ci_low"] + delta, ci_high=e["ci_high"] + delta)
    summary["provenance"]["submission"]["id"] = sid
    target = out_results / sid
    target.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pandas(pd.DataFrame(frame), schema=scores.schema, preserve_index=False),
                   target / "scores.parquet")
    (target / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True))
    return sid
