"""The CuRe family's cuda / fp16 paths on a GPU machine, in one short run; prints what they show.

Stages (each reported as it finishes):
  tiny   the tests' tiny cure-ladder (tests/test_cure_family.py), evaluated with the tiny stand-ins on cuda in
         fp16 and fp32 and on the CPU in fp32: per metric the largest difference from the CPU, NaN values, flags
  real   real-size random-weight AIMv2-L (transformers-patch-mean) and DINOv2-L encoders, saved and loaded
         through the registry's loader: fp16 embeddings on cuda are finite and agree with fp32 (cosine)

    python benchmarks/cure_gpu_check.py --out REPORT_DIR [--device cuda]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def report(out: Path, stage: str, facts: dict) -> None:
    line = json.dumps({"stage": stage, **facts}, default=str)
    print(line, flush=True)
    with open(out / "cure_gpu_check.jsonl", "a") as fh:
        fh.write(line + "\n")


def tiny_stage(work: Path, out: Path, device: str) -> None:
    import pyarrow.parquet as pq
    from cultureboard.builder.dataset import prompt_config, write_dataset
    from cultureboard.builder.prompts_cure import build_ladder
    from cultureboard.evaluators import evaluate
    from cultureboard.evaluators.engine.tiny_scorers import TINY_CONFIG, save_tiny_scorers
    from test_cure_family import ARTIFACTS, make_submission, write_references

    from cultureboard.countries import load_countries

    t0 = time.perf_counter()
    ladder = build_ladder(ARTIFACTS, load_countries(), images_per_prompt=2, category_images=3)
    dataset = write_dataset(work / "dataset", [prompt_config(ladder)], {})
    write_references(dataset)
    submission = make_submission(work / "submissions", dataset, "gpu")
    save_tiny_scorers(work / "scorers")
    tables = {}
    for dev, dtype in ((device, "float16"), (device, "float32"), ("cpu", "float32")):
        started = time.perf_counter()
        folder = evaluate(submission, dataset, work / f"results-{dev}-{dtype}", scorers=work / "scorers" / TINY_CONFIG,
                          device=dev, dtype=dtype, cache=work / f"cache-{dev}-{dtype}", n_boot=50)
        tables[(dev, dtype)] = pq.read_table(folder / "scores.parquet").to_pandas().set_index(["metric", "unit_id"])
        report(out, "tiny", {"device": dev, "dtype": dtype, "seconds": round(time.perf_counter() - started, 1)})
    base = tables[("cpu", "float32")]
    for key, table in tables.items():
        if key == ("cpu", "float32"):
            continue
        diff = (table["value"] - base["value"]).abs().groupby(level=0).max()
        report(out, "tiny", {"compare": f"{key[0]} {key[1]} vs cpu float32",
                             "same_flags": bool((table["flag"].fillna("") == base["flag"].fillna("")).all()),
                             "nan_values_unflagged": int((table["value"].isna() & table["flag"].isna()).sum()),
                             "max_abs_diff": {m: round(float(v), 6) for m, v in diff.items()}})
    report(out, "tiny", {"done_seconds": round(time.perf_counter() - t0, 1)})


def real_stage(work: Path, out: Path, device: str) -> None:
    import torch
    from cultureboard.evaluators.engine.scorers import load_scorer
    from PIL import Image
    from transformers import (
        Aimv2VisionConfig,
        Aimv2VisionModel,
        BitImageProcessor,
        CLIPImageProcessor,
        Dinov2Config,
        Dinov2Model,
    )

    rng = np.random.default_rng(0)
    images = [Image.fromarray(rng.integers(0, 256, (300, 260, 3), dtype=np.uint8)) for _ in range(8)]
    models = {
        "aimv2-large": (Aimv2VisionModel(Aimv2VisionConfig(use_head=False)),
                        CLIPImageProcessor(size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224})),
        "dinov2-large": (Dinov2Model(Dinov2Config(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16)),
                         BitImageProcessor(size={"shortest_edge": 256}, crop_size={"height": 224, "width": 224},
                                           image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225])),
    }
    for name, (model, processor) in models.items():
        t0 = time.perf_counter()
        folder = work / "real" / name
        model.save_pretrained(folder)
        processor.save_pretrained(folder)
        vectors = {}
        for dtype in ("float16", "float32"):
            scorer = load_scorer(name, config={name: {"path": str(folder)}}, device=device, dtype=dtype)
            vectors[dtype] = scorer.embed_images(images)
            del scorer
            torch.cuda.empty_cache() if device.startswith("cuda") else None
        cos = (vectors["float16"] * vectors["float32"]).sum(axis=1)
        report(out, "real", {"scorer": name, "finite_fp16": bool(np.isfinite(vectors["float16"]).all()),
                             "min_cosine_fp16_fp32": round(float(cos.min()), 5), "dim": vectors["float32"].shape[1],
                             "seconds": round(time.perf_counter() - t0, 1)})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--stages", default="tiny,real")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.out / "work"
    from cultureboard.evaluators.engine.registry import load_families

    load_families()  # family-registered backends and stand-ins
    for stage in args.stages.split(","):
        try:
            {"tiny": tiny_stage, "real": real_stage}[stage](work, args.out, args.device)
        except Exception:  # noqa: BLE001  (a stage's failure is reported, the next stage still runs)
            report(args.out, stage, {"error": traceback.format_exc()[-3000:]})


if __name__ == "__main__":
    main()
