"""Benchmark ``validate`` against reading and hashing the same images.

    .venv/bin/python benchmarks/validate_speed.py --images 20000

1. Generates (once; kept with ``--keep``) a dataset folder with a prompt set of N/2 prompts x 2 images
   and a valid submission of N 512x512 PNGs in ``benchmarks/_work/validate-speed``. The PNGs are
   realistic in size and decoding cost (smooth structure plus sensor-like noise, default zlib level,
   about 450 KB): 64 distinct images are encoded by worker processes, and each file is one of them
   with its own ``tEXt`` chunk, so every file has its own sha256 and valid CRCs.
2. Reads every file once untimed (page cache warm, so every pass measures the same thing), then
   times: reading + sha256 of every file (one thread, and as many threads as validate uses),
   ``validate`` (default: structural integrity checks), ``validate`` with one worker, and with
   ``--full-decode`` also ``validate(full_decode=True)``.
3. Prints a Markdown table; the target is validate >= 0.5x the one-thread read + sha256 rate.
   Timings are ratios measured in one run on a shared machine: read them as such.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import multiprocessing as mp
import os
import platform
import resource
import shutil
import struct
import sys
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image

from cultureboard.builder.dataset import prompt_config, write_dataset
from cultureboard.builder.prompt_sets import PromptSet
from cultureboard.dataset_folder import local_revision
from cultureboard.evaluators.submission.format import write_submission
from cultureboard.evaluators.submission.validate import validate

GENERATOR_VERSION = 1
SIZE = 512
DISTINCT = 64
WORK = Path(__file__).resolve().parent / "_work" / "validate-speed"
SUBMISSION_ID = "bench-lab__noise-diffusion"


def base_png(seed: int) -> bytes:
    """A 512x512 PNG that encodes and decodes like a generated image: smooth structure plus noise."""
    rng = np.random.default_rng(seed)
    coarse = Image.fromarray(rng.integers(0, 256, (SIZE // 8, SIZE // 8, 3), dtype=np.uint8)).resize((SIZE, SIZE), Image.BICUBIC)
    pixels = np.clip(np.asarray(coarse, dtype=np.int16) + rng.integers(-4, 5, (SIZE, SIZE, 3)), 0, 255).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "PNG")
    return buffer.getvalue()


def tagged(png: bytes, tag: str) -> bytes:
    """``png`` with a ``tEXt`` chunk before IEND: same pixels, its own bytes and sha256."""
    data = b"cultureboard\0" + tag.encode()
    chunk = struct.pack(">I", len(data)) + b"tEXt" + data + struct.pack(">I", zlib.crc32(b"tEXt" + data))
    return png[:-12] + chunk + png[-12:]


def generate(work: Path, n: int) -> None:
    """The dataset folder and the submission of ``n`` images (written fresh)."""
    shutil.rmtree(work, ignore_errors=True)
    prompts = [{"prompt_id": f"bench/p{i:06d}", "prompt_set": "bench", "text": f"a photo of thing {i}", "negative_prompt": "",
                "kind": "t2i", "images_per_prompt": 2, "seeds": [2 * i, 2 * i + 1], "seed_scheme": "prompt-set"}
               for i in range((n + 1) // 2)]
    dataset = write_dataset(work / "dataset", [prompt_config(PromptSet("bench", "1", "cube", "benchmark", prompts))], {})
    with mp.Pool(min(DISTINCT, os.cpu_count() or 1)) as pool:
        bases = pool.map(base_png, range(DISTINCT))
    folder = work / "submissions" / SUBMISSION_ID
    rows = []
    for i in range(n):
        prompt, k = prompts[i // 2], i % 2
        name = f"images/{prompt['prompt_id']}/{k}.png"
        data = tagged(bases[i % DISTINCT], f"{i}")
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
        rows.append({"file_name": name, "prompt_id": prompt["prompt_id"], "sample_idx": k, "seed": prompt["seeds"][k],
                     "sha256": hashlib.sha256(data).hexdigest()})
    spec = {
        "format_version": 1, "organization": "Bench Lab", "contact": "bench@example.org", "date": "2025-01-15",
        "model": {"name": "Noise Diffusion", "id": "bench-lab/noise-diffusion", "revision": "0" * 40,
                  "license": "apache-2.0", "weights": "open"},
        "generation": {"pipeline": "StableDiffusionPipeline", "scheduler": "DDIMScheduler", "steps": 30, "guidance_scale": 7.5,
                       "width": SIZE, "height": SIZE, "negative_prompt": False, "precision": "fp16"},
        "seeds": {"scheme": "prompt-set"},
        "prompt_set": {"name": "bench", "dataset": dataset.name, "revision": local_revision(dataset)},
        "images": {"location": "images"},
    }
    write_submission(folder, spec, rows)
    (work / "meta.json").write_text(json.dumps({"generator": GENERATOR_VERSION, "images": n}))


def read_and_hash(path: Path) -> int:
    with open(path, "rb") as fh:
        data = fh.read()
    hashlib.sha256(data).hexdigest()
    return len(data)


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)  # every thread of this process
    return usage.ru_utime + usage.ru_stime


def timed(label: str, workers: int, n: int, run) -> dict:
    """Wall time and CPU time of ``run`` (CPU time per image is the figure that other load on the machine
    disturbs least)."""
    started, cpu = time.perf_counter(), cpu_seconds()
    nbytes = run()
    seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    print(f"  {label}, {workers} thread(s): {seconds:.2f} s, {cpu:.2f} CPU s", file=sys.stderr)
    return {"pass": label, "workers": workers, "images/s": n / seconds, "MB/s": nbytes / seconds / 1e6,
            "cpu ms/image": cpu / n * 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=None, help="validate's threads (default: its own default)")
    parser.add_argument("--keep", action="store_true", help="keep the generated files for the next run")
    parser.add_argument("--full-decode", action="store_true", help="also time validate(full_decode=True) (about 20x slower)")
    args = parser.parse_args()

    meta = WORK / "meta.json"
    if not (meta.exists() and json.loads(meta.read_text()) == {"generator": GENERATOR_VERSION, "images": args.images}):
        started = time.perf_counter()
        generate(WORK, args.images)
        print(f"generated {args.images} images in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    folder = WORK / "submissions" / SUBMISSION_ID
    files = sorted((folder / "images").rglob("*.png"))
    total = sum(map(read_and_hash, files))  # untimed: page cache warm for every pass
    workers = args.workers or min(8, os.cpu_count() or 1)
    n = len(files)

    def threaded_hash() -> int:
        with ThreadPoolExecutor(workers) as pool:
            return sum(pool.map(read_and_hash, files))

    def check(**options):
        def run() -> int:
            report = validate(folder, WORK / "dataset", **options)
            assert report.valid and report.checked["images"] == n, report.to_text()[-2000:]
            return total
        return run

    results = [
        timed("read + sha256", 1, n, lambda: sum(map(read_and_hash, files))),
        timed("read + sha256", workers, n, threaded_hash),
        timed("validate", workers, n, check(workers=workers)),
        timed("validate", 1, n, check(workers=1)),
    ]
    if args.full_decode:
        results.append(timed("validate, full_decode", workers, n, check(workers=workers, full_decode=True)))
    baseline = results[0]["images/s"]
    print(f"\n{n:,} PNGs of {SIZE}x{SIZE}, {total / n / 1e3:.0f} KB each on average ({total / 1e9:.2f} GB); "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}\n")
    print("| pass | threads | images/s | MB/s | CPU ms / image | throughput vs read + sha256 (1 thread) |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['pass']} | {r['workers']} | {r['images/s']:,.0f} | {r['MB/s']:,.0f} | {r['cpu ms/image']:.2f} "
              f"| {r['images/s'] / baseline:.2f} |")
    ratio = results[2]["images/s"] / baseline
    cost = results[0]["cpu ms/image"] / results[2]["cpu ms/image"]
    print(f"\nvalidate / (read + sha256): {ratio:.2f} in throughput, {cost:.2f} in CPU cost per image "
          f"(target >= 0.5: {'met' if min(ratio, cost) >= 0.5 else 'NOT met'})")
    if not args.keep:
        shutil.rmtree(WORK)


if __name__ == "__main__":
    main()
