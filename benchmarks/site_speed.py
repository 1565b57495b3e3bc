"""Benchmark ``site build``: the leaderboard of 50 submissions with every slice.

    .venv/bin/python benchmarks/site_speed.py [--submissions 50] [--no-thumbnails] [--rebuilds 1] [--keep]

1. Generates (once; kept with ``--keep``) in ``benchmarks/_work/site-speed``:
   - the ``cube-awareness`` prompt set of the sample build (the 13 default countries: 248 prompts x 4 images);
   - N submission folders: ``submission.yaml``, ``metadata.jsonl`` and, unless ``--no-thumbnails``, a tiny
     64x64 PNG per image, each its own file and sha256, so the renderer makes one thumbnail per image as
     for a real submission (but decodes 64x64 pixels, not 1024x1024); with ``--no-thumbnails`` the images
     are "on the Hub" and the site has no thumbnails;
   - N results folders in the evaluator's format: synthetic per-image scores of the four awareness
     metrics (no scorer runs: a per-model skill, per-country, Global North and per-era effects, noise),
     summarised by the evaluator's own code (``_write_results``: 95% bootstrap CIs over prompts for every
     metric x slice). Every 10th submission lacks one country, so incomplete slices are on the pages too.
2. Times ``build_site(results, dataset, submissions, out)`` into an empty folder (every thumbnail made),
   then ``--rebuilds`` times into the same folder (thumbnails of the earlier build reused, as when CI
   keeps the previous site).
3. Prints a Markdown table: wall times (target < 30 s), pages, the largest HTML page (target < 200 KB;
   images excluded; an SVG inlined in a page would count, an SVG file does not) and the site by file type.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import io
import json
import multiprocessing as mp
import os
import platform
import shutil
import struct
import sys
import time
import zlib
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa
from PIL import Image

GENERATOR_VERSION = 2
PROMPT_SET = "cube-awareness"
WORK = Path(__file__).resolve().parent / "_work" / "site-speed"
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".webp", ".gif", ".avif", ".svg", ".ico"}
TARGET_SECONDS, TARGET_KB = 30.0, 200.0
ORGS = ["Black Forest Labs", "Stability AI", "Bench Lab", "Kandinsky Lab", "PixArt Team", "Universit\u00e9 de Test",
        "Open Diffusion Collective", "Acme AI & Co"]
MODELS = ["FLUX.1 dev", "Stable Diffusion XL", "SD 3.5 Large", "Kandinsky 3", "PixArt Sigma", "Imagen X",
          "Tiny Diffusion", "Playground v2.5", "Hunyuan DiT", "Sana 1.6B"]


def spec_for(i: int, dataset_name: str, revision: str) -> dict:
    org, name = ORGS[i % len(ORGS)], MODELS[i % len(MODELS)]
    return {
        "format_version": 1, "organization": org, "tag": f"run-{i:02d}", "contact": "bench@example.org",
        "date": f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}",
        "model": {"name": name, "id": f"{org.split()[0].lower()}/{name.lower().replace(' ', '-')}-{i}",
                  "revision": hashlib.sha1(str(i).encode()).hexdigest(), "license": "apache-2.0",
                  "weights": "open" if i % 4 else "closed", "links": [f"https://example.org/models/{i}"]},
        "generation": {"pipeline": "StableDiffusionXLPipeline" if i % 4 else "api", "scheduler": "EulerDiscreteScheduler",
                       "steps": 30, "guidance_scale": 7.0, "width": 1024, "height": 1024, "negative_prompt": bool(i % 2),
                       "precision": "fp16"},
        "seeds": {"scheme": "prompt-set"},
        "prompt_set": {"name": PROMPT_SET, "dataset": dataset_name, "revision": revision},
        "images": {"location": "images"},
    }


def tiny_pngs(n: int = 32) -> list[bytes]:
    """``n`` distinct 64x64 PNGs (a gradient each), a few hundred bytes to a few KB."""
    out = []
    for k in range(n):
        y, x = np.mgrid[0:64, 0:64]
        pixels = np.stack([(x * 4 + k * 8) % 256, (y * 4 + k * 16) % 256, np.full_like(x, (k * 37) % 256)], -1)
        buffer = io.BytesIO()
        Image.fromarray(pixels.astype(np.uint8)).save(buffer, "PNG")
        out.append(buffer.getvalue())
    return out


def tagged(png: bytes, tag: str) -> bytes:
    """``png`` with a ``tEXt`` chunk before IEND: the same pixels, its own bytes and sha256."""
    data = b"cultureboard\0" + tag.encode()
    chunk = struct.pack(">I", len(data)) + b"tEXt" + data + struct.pack(">I", zlib.crc32(b"tEXt" + data))
    return png[:-12] + chunk + png[-12:]


def synth_scores(i: int, prompts: list[dict], images: list[tuple[dict, int, str, str]]) -> list[dict]:
    """Score rows in ``evaluate.SCORES_SCHEMA`` for submission ``i``: deterministic, plausible ranges."""
    from cultureboard.evaluators.engine.context import SLICE_FIELDS

    rng = np.random.default_rng(1000 + i)
    skill = rng.normal(0, 0.6)
    countries = sorted({p["country"] for p in prompts})
    country_bias = dict(zip(countries, rng.normal(0, 0.4, len(countries))))
    gn_bonus = rng.normal(0.3, 0.2)  # most models do better on Global North prompts
    eras = sorted({p["era"] for p in prompts if p.get("era")})
    era_bias = dict(zip(eras, rng.normal(0, 0.3, len(eras))))
    rows = []
    for prompt, k, file_name, sha in images:
        logit = (skill + country_bias[prompt["country"]] + (gn_bonus if prompt["region_group"] == "GN" else 0.0)
                 + era_bias.get(prompt.get("era"), 0.0) + rng.normal(0, 1.0))
        relevance = float(1 / (1 + np.exp(-logit)))
        values = {
            "cube.faithfulness": 0.12 + 0.02 * skill + rng.normal(0, 0.02),
            "cube.cultural_relevance": relevance,
            "cube.country_top1": float(rng.random() < relevance),
            "cube.quality": 0.27 + 0.015 * skill + rng.normal(0, 0.015),
        }
        for metric, value in values.items():
            rows.append({"metric": metric, "unit_id": prompt["prompt_id"], "prompt_id": prompt["prompt_id"],
                         "sample_idx": k, "file_name": file_name, "sha256": sha, "value": float(value), "detail": None,
                         **{f: prompt.get(f) for f in SLICE_FIELDS}})
    return rows


def make_submission(args: tuple) -> str:
    """One submission folder and its results folder (run in a worker process)."""
    try:
        return _make_submission(*args)
    except Exception as exc:  # CultureboardError does not unpickle, which would hang Pool.map: send text
        raise RuntimeError(f"submission {args[0]}: {exc.__class__.__name__}: {exc}") from None


def _make_submission(i: int, work: Path, thumbnails: bool) -> str:
    from cultureboard.dataset_folder import local_revision, read_prompt_set
    ev = importlib.import_module("cultureboard.evaluators.engine.evaluate")  # the module: the package re-exports the function
    from cultureboard.evaluators.submission.format import submission_id, write_submission
    from cultureboard.provenance import code_provenance

    dataset = work / "dataset"
    prompts = read_prompt_set(dataset, PROMPT_SET)
    spec = spec_for(i, dataset.name, local_revision(dataset))
    sid = submission_id(spec)
    folder = work / "submissions" / sid
    pngs = tiny_pngs()
    skipped = sorted({p["country"] for p in prompts})[i // 10 % 13] if i % 10 == 9 else None
    images, lines = [], []
    for n, prompt in enumerate(p for p in prompts if p["country"] != skipped):
        for k in range(prompt["images_per_prompt"]):
            data = tagged(pngs[(n + k + i) % len(pngs)], f"{sid}/{prompt['prompt_id']}/{k}")  # every image its own
            name = f"images/{prompt['prompt_id']}/{k}.png"
            if thumbnails:
                (folder / name).parent.mkdir(parents=True, exist_ok=True)
                (folder / name).write_bytes(data)
            sha = hashlib.sha256(data).hexdigest()
            images.append((prompt, k, name, sha))
            lines.append({"file_name": name, "prompt_id": prompt["prompt_id"], "sample_idx": k,
                          "seed": prompt["seeds"][k], "sha256": sha})
    if not thumbnails:  # the images live on the Hub: no local files, nothing for thumbnails
        spec["images"]["location"] = f"hf://datasets/bench/{sid.replace('__', '-')}@{'0' * 40}"
    write_submission(folder, spec, lines)

    table = pa.Table.from_pylist(synth_scores(i, prompts, images), schema=ev.SCORES_SCHEMA)
    provenance = {
        "code": code_provenance(("torch", "transformers", "open_clip_torch", "numpy", "pandas", "pyarrow", "scipy")),
        "scorers": [{"name": name, "backend": "synthetic", "model_id": f"synthetic/{name}", "revision": "0" * 40,
                     "preprocessing": "none", "text_preprocessing": "none", "device": "cpu", "dtype": "float32"}
                    for name in ("hpsv2.1", "siglip2-so400m")],
        "device": "cpu", "dtype": "float32",
        "dataset": {"folder": dataset.name, "revision": local_revision(dataset)},
        "prompt_set": PROMPT_SET,
        "submission": {"id": sid, "sha256": ev._submission_hash(folder), "model": spec["model"]["id"],
                       "model_revision": spec["model"]["revision"]},
        "settings": {"seed": 0, "n_boot": 1000, "repetitions": 50, "ci_level": 0.95},
    }
    _, unit_of = ev.FAMILIES[PROMPT_SET]
    ev._write_results(work / "results" / sid, table, provenance, {p["prompt_id"]: p for p in prompts}, unit_of, 0, 1000)
    return sid


def generate(work: Path, n: int, thumbnails: bool) -> None:
    from cultureboard.builder import build

    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    build(work / "dataset", prompt_sets=[PROMPT_SET])  # the sample dump, the 13 default countries
    (work / "results").mkdir()
    with mp.get_context("spawn").Pool(min(16, os.cpu_count() or 1)) as pool:
        ids = pool.map(make_submission, [(i, work, thumbnails) for i in range(n)])
    assert len(set(ids)) == n, "submission ids collide"
    (work / "meta.json").write_text(json.dumps({"generator": GENERATOR_VERSION, "submissions": n, "thumbnails": thumbnails}))


def site_sizes(out: Path) -> dict:
    pages = sorted(out.rglob("*.html"))
    by_type: dict[str, list[int]] = defaultdict(list)
    for f in out.rglob("*"):
        if f.is_file():
            by_type[f.suffix.lower() or "(none)"].append(f.stat().st_size)
    largest = max(pages, key=lambda p: p.stat().st_size) if pages else None
    return {"pages": len(pages), "largest": largest.relative_to(out).as_posix() if largest else None,
            "largest_kb": largest.stat().st_size / 1024 if largest else 0.0,
            "html_mb": sum(by_type[".html"]) / 1e6,
            "images": sum(len(v) for k, v in by_type.items() if k in IMAGE_SUFFIXES),
            "by_type": {k: (len(v), sum(v)) for k, v in sorted(by_type.items())}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=50)
    parser.add_argument("--no-thumbnails", dest="thumbnails", action="store_false",
                        help="submissions without local images (images on the Hub): the site has no thumbnails")
    parser.add_argument("--rebuilds", type=int, default=1, help="builds into the same folder after the first (thumbnails reused)")
    parser.add_argument("--keep", action="store_true", help="keep the generated inputs and the site for the next run")
    parser.add_argument("--workdir", type=Path, default=WORK, help=f"where inputs and the site go (default {WORK})")
    args = parser.parse_args()
    work = args.workdir.resolve()
    if work.is_dir() and any(work.iterdir()) and not (work / "meta.json").is_file() and not (work / "dataset").is_dir():
        sys.exit(f"{work} holds other files: pass an empty or new --workdir (this script deletes and rewrites it)")

    from cultureboard.site.render import build_site

    meta = work / "meta.json"
    wanted = {"generator": GENERATOR_VERSION, "submissions": args.submissions, "thumbnails": args.thumbnails}
    if not (meta.exists() and json.loads(meta.read_text()) == wanted):
        started = time.perf_counter()
        generate(work, args.submissions, args.thumbnails)
        print(f"generated {args.submissions} submissions and results in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    n_rows = sum(len(json.loads((d / "summary.json").read_text())["metrics"]) for d in (work / "results").iterdir())

    out = work / "site"
    shutil.rmtree(out, ignore_errors=True)
    times, info = [], {}
    for r in range(1 + args.rebuilds):
        started = time.perf_counter()
        info = build_site(work / "results", work / "dataset", work / "submissions", out) or {}
        times.append(time.perf_counter() - started)
        print(f"  {'build' if r == 0 else 'rebuild'}: {times[-1]:.2f} s", file=sys.stderr)
    sizes = site_sizes(out)

    print(f"\n{args.submissions} submissions of {PROMPT_SET} (248 prompts x 4 images, 13 countries; {n_rows:,} summary "
          f"rows in all), thumbnails {'from tiny local PNGs' if args.thumbnails else 'off (images on the Hub)'}; "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}\n")
    print("| measure | value | target |")
    print("|---|---|---|")
    made = " (every thumbnail made)" if args.thumbnails else ""
    print(f"| first build{made} | {times[0]:.2f} s | < {TARGET_SECONDS:.0f} s |")
    if len(times) > 1:
        print(f"| rebuild (thumbnails reused), best of {len(times) - 1} | {min(times[1:]):.2f} s | < {TARGET_SECONDS:.0f} s |")
    if "thumbnails" in info:
        print(f"| thumbnails | {info['thumbnails']:,} made or reused, {info.get('missing_images', 0):,} missing | |")
    print(f"| pages | {sizes['pages']:,} | |")
    print(f"| largest HTML page | {sizes['largest_kb']:.1f} KB (`{sizes['largest']}`) | < {TARGET_KB:.0f} KB |")
    print(f"| all HTML | {sizes['html_mb']:.2f} MB | |")
    print(f"| image files | {sizes['images']:,} | |")
    print("\nfiles by type: " + ", ".join(f"{k} {n:,} ({b / 1e6:.2f} MB)" for k, (n, b) in sizes["by_type"].items()))
    met = max(times) < TARGET_SECONDS and sizes["largest_kb"] < TARGET_KB
    print(f"\ntargets {'met' if met else 'NOT met'}")
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
