"""The CultDiff family's cuda / fp16 paths on a GPU machine, in one short run; prints what they show.

Stages (each reported as it finishes, so a run cut short still tells something):
  dreamsim  the tiny dino_vitb16 stand-in, and a real-size random ensemble (DINO, CLIP and OpenCLIP ViT-B/16 through
            the package's own three loaders): distances on cuda fp16 and fp32 against the CPU in fp32, d(x, x),
            symmetry, finiteness, pairs per second
  train     CultDiff-S on the tests' toy set on cuda, twice with one seed (same losses?), its held-out correlation,
            and the trained model as a scorer on cuda fp16 against the CPU
  evaluate  the tests' cultdiff submission evaluated on cuda fp16 and fp32 against the CPU: the largest difference
            per metric, same flags, unflagged NaNs

    python benchmarks/cultdiff_gpu_check.py --out REPORT_DIR [--device cuda] [--stages dreamsim,train,evaluate]
        [--work SCRATCH] [--pairs 64]
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
VIT_B = {"embed_dim": 768, "depth": 12, "num_heads": 12, "mlp_ratio": 4.0}


def report(out: Path, stage: str, facts: dict) -> None:
    line = json.dumps({"stage": stage, **facts}, default=str)
    print(line, flush=True)
    with open(out / "cultdiff_gpu_check.jsonl", "a") as fh:
        fh.write(line + "\n")


def _distances(folder: Path, kind: str, device: str, dtype: str, a, b):
    import torch

    from cultureboard.evaluators.engine.scorers import load_scorer

    scorer = load_scorer("dreamsim", config={"dreamsim": {"backend": "dreamsim", "path": str(folder),
                                                          "dreamsim_type": kind}}, device=device, dtype=dtype)
    started = time.perf_counter()
    d = scorer.compare(a, b)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    same, back = scorer.compare(a, a), scorer.compare(b, a)
    del scorer
    return d, same, back, seconds


def dreamsim_stage(work: Path, out: Path, device: str, pairs: int) -> None:
    import torch

    from cultureboard.evaluators.engine.dreamsim import save_tiny_dreamsim

    generator = torch.Generator().manual_seed(0)
    a, b = (torch.rand(pairs, 3, 224, 224, generator=generator) for _ in range(2))
    for kind, shape in (("dino_vitb16", None), ("ensemble", VIT_B)):
        t0 = time.perf_counter()
        folder = save_tiny_dreamsim(work / f"dreamsim-{kind}", dreamsim_type=kind, dino=shape)
        built = time.perf_counter() - t0
        base, *_ = _distances(folder, kind, "cpu", "float32", a[:4], b[:4])
        for dtype in ("float16", "float32"):
            d, same, back, seconds = _distances(folder, kind, device, dtype, a, b)
            report(out, "dreamsim", {"type": kind, "device": device, "dtype": dtype, "built_seconds": round(built, 1),
                                     "finite": bool(np.isfinite(d).all()),
                                     "max_abs_diff_vs_cpu_fp32": round(float(np.abs(d[:4] - base).max()), 6),
                                     "max_d_x_x": float(np.abs(same).max()),
                                     "max_asymmetry": float(np.abs(d - back).max()),
                                     "mean_d": round(float(d.mean()), 5), "pairs_per_second": round(pairs / seconds, 1)})


def train_stage(work: Path, out: Path, device: str, pairs: int) -> None:
    import dataclasses

    import torch
    from PIL import Image
    from test_cultdiff_train import make_toy

    from cultureboard.evaluators.engine.scorers import load_scorer
    from cultureboard.evaluators.families.cultdiff.train import train_cultdiff_s

    t0 = time.perf_counter()
    toy = make_toy(work / "toy", device=device)
    again = train_cultdiff_s(toy["ratings"], toy["dataset"], work / "toy-again", images=[toy["root"] / "generated"],
                             config=toy["config"])
    cpu = train_cultdiff_s(toy["ratings"], toy["dataset"], work / "toy-cpu", images=[toy["root"] / "generated"],
                           config=dataclasses.replace(toy["config"], device="cpu"))
    record = toy["record"]
    report(out, "train", {"device": device, "seconds": round(time.perf_counter() - t0, 1),
                          "losses": [round(x, 6) for x in record["losses"]],
                          "same_losses_same_seed": again["losses"] == record["losses"],
                          "max_loss_diff_vs_cpu": round(max(abs(x - y) for x, y in zip(record["losses"], cpu["losses"])), 6),
                          "held_out": record["held_out"]["after"], "held_out_before": record["held_out"]["before"]})
    images = [Image.open(path).convert("RGB") for path, _, _ in toy["items"][:16]]
    values = {}
    for dev, dtype in ((device, "float16"), ("cpu", "float32")):
        scorer = load_scorer("cultdiff.learned", device=dev, dtype=dtype,
                             config={"cultdiff.learned": {"backend": "cultdiff-s", "path": str(toy["model"])}})
        pixels = torch.stack([scorer.image_transform(im) for im in images])
        values[(dev, dtype)] = scorer.compare(pixels, pixels.flip(0))
    diff = np.abs(values[(device, "float16")] - values[("cpu", "float32")]).max()
    report(out, "train", {"scorer_fp16_vs_cpu_max_abs_diff": round(float(diff), 6),
                          "finite": bool(np.isfinite(values[(device, "float16")]).all())})


def evaluate_stage(work: Path, out: Path, device: str, pairs: int) -> None:
    import pyarrow.parquet as pq
    from test_cultdiff import make_world

    from cultureboard.evaluators import evaluate
    from cultureboard.evaluators.engine.tiny_scorers import TINY_CONFIG, save_tiny_scorers

    t0 = time.perf_counter()
    save_tiny_scorers(work / "scorers")
    world = make_world(work / "world", work / "scorers" / TINY_CONFIG)
    tables = {("cpu", "float32"): world["scores"].set_index(["metric", "unit_id"])}
    for dtype in ("float16", "float32"):
        started = time.perf_counter()
        folder = evaluate(world["submission"], world["dataset"], work / f"results-{dtype}", scorers=world["config"],
                          device=device, dtype=dtype, cache=work / f"cache-{dtype}", n_boot=50)
        tables[(device, dtype)] = pq.read_table(folder / "scores.parquet").to_pandas().set_index(["metric", "unit_id"])
        report(out, "evaluate", {"device": device, "dtype": dtype, "seconds": round(time.perf_counter() - started, 1)})
    base = tables[("cpu", "float32")]
    for key, table in tables.items():
        if key == ("cpu", "float32"):
            continue
        diff = (table["value"] - base["value"]).abs().groupby(level=0).max()
        report(out, "evaluate", {"compare": f"{key[0]} {key[1]} vs cpu float32",
                                 "same_flags": bool((table["flag"].fillna("") == base["flag"].fillna("")).all()),
                                 "nan_values_unflagged": int((table["value"].isna() & table["flag"].isna()).sum()),
                                 "max_abs_diff": {m: round(float(v), 6) for m, v in diff.items()}})
    report(out, "evaluate", {"done_seconds": round(time.perf_counter() - t0, 1)})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--stages", default="dreamsim,train,evaluate")
    parser.add_argument("--work", type=Path, default=Path("/tmp/cultdiff-gpu-check"), help="Scratch folder (not --out).")
    parser.add_argument("--pairs", type=int, default=64, help="DreamSim pairs compared per device and dtype.")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.work
    from cultureboard.evaluators.engine.registry import load_families

    load_families()  # family-registered backends
    stages = {"dreamsim": dreamsim_stage, "train": train_stage, "evaluate": evaluate_stage}
    for stage in args.stages.split(","):
        try:
            stages[stage](work / stage, args.out, args.device, args.pairs)
        except Exception:  # noqa: BLE001  (a stage's failure is reported, the next stage still runs)
            report(args.out, stage, {"error": traceback.format_exc()[-3000:]})


if __name__ == "__main__":
    main()
