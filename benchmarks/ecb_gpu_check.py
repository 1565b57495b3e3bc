"""The ECB family's cuda / fp16 paths on a GPU machine, in one short run; prints what they show.

Stages (each reported as it finishes):
  tiny       the tests' small ecb set (tests/test_ecb_family.py: 22 chains, 132 images) evaluated with the tiny
             stand-ins on cuda in fp16 and fp32 and on the CPU in fp32: per metric the largest difference from the
             CPU, NaN values, flags, seconds
  aesthetic  a real-size random CLIP ViT-L/14 (transformers) with a random 768-1024-128-64-16-1 head, saved and
             loaded through the laion-aesthetic backend: fp16 scores on cuda are finite and agree with fp32

    python benchmarks/ecb_gpu_check.py --out REPORT_DIR [--device cuda]
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
    with open(out / "ecb_gpu_check.jsonl", "a") as fh:
        fh.write(line + "\n")


def tiny_stage(work: Path, out: Path, device: str) -> None:
    import pyarrow.parquet as pq
    from cultureboard.evaluators import evaluate
    from cultureboard.evaluators.engine.tiny_scorers import TINY_CONFIG, save_tiny_scorers
    from test_ecb_family import OPTIONS, make_ecb_dataset, make_ecb_submission, scorer_config

    dataset = make_ecb_dataset(work / "dataset")
    submission = make_ecb_submission(work / "submissions", dataset)
    save_tiny_scorers(work / "tiny")
    config = scorer_config(work / "tiny" / TINY_CONFIG, work)
    tables = {}
    for dev, dtype in ((device, "float16"), (device, "float32"), ("cpu", "float32")):
        started = time.perf_counter()
        folder = evaluate(submission, dataset, work / f"results-{dev}-{dtype}", scorers=config, device=dev,
                          dtype=dtype, cache=work / f"cache-{dev}-{dtype}", n_boot=100, options=OPTIONS)
        tables[(dev, dtype)] = pq.read_table(folder / "scores.parquet").to_pandas().set_index(
            ["metric", "unit_id", "file_name"])
        report(out, "tiny", {"device": dev, "dtype": dtype, "seconds": round(time.perf_counter() - started, 1)})
    base = tables[("cpu", "float32")]
    for key, table in tables.items():
        if key == ("cpu", "float32"):
            continue
        joined = table[["value", "flag"]].join(base[["value", "flag"]], rsuffix="_cpu")
        facts = {}
        for metric, part in joined.groupby(level="metric"):
            diff = (part["value"] - part["value_cpu"]).abs()
            facts[metric] = {"max_abs_diff": float(diff.max()) if diff.notna().any() else None,
                             "nan": int(part["value"].isna().sum() - part["flag"].notna().sum()),
                             "flags_differ": int((part["flag"].fillna("") != part["flag_cpu"].fillna("")).sum())}
        report(out, "tiny-compare", {"device": key[0], "dtype": key[1], "metrics": facts})


def aesthetic_stage(work: Path, out: Path, device: str) -> None:
    import torch
    from cultureboard.evaluators.engine.scorers import load_scorer
    from cultureboard.evaluators.engine.tiny_scorers import save_tiny_clip
    from cultureboard.evaluators.families.ecb.aesthetic import HEAD_FILE, LINEAR_LAYERS
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTokenizerFast

    folder = work / "aesthetic-l14"
    tokenizer_source = save_tiny_clip(work / "tokenizer-source")  # a CLIP tokenizer without the Hub
    torch.manual_seed(0)
    model = CLIPModel(CLIPConfig(
        text_config={"hidden_size": 768, "intermediate_size": 3072, "num_attention_heads": 12, "num_hidden_layers": 12,
                     "vocab_size": CLIPTokenizerFast.from_pretrained(tokenizer_source).vocab_size},
        vision_config={"hidden_size": 1024, "intermediate_size": 4096, "num_attention_heads": 16,
                       "num_hidden_layers": 24, "image_size": 224, "patch_size": 14},
        projection_dim=768))
    model.save_pretrained(folder)
    CLIPProcessor(image_processor=CLIPImageProcessor(), tokenizer=CLIPTokenizerFast.from_pretrained(
        tokenizer_source)).save_pretrained(folder)
    dims = (768, 1024, 128, 64, 16, 1)
    state = {}
    for k, i in enumerate(LINEAR_LAYERS):
        state[f"layers.{i}.weight"] = torch.randn(dims[k + 1], dims[k]) / dims[k] ** 0.5
        state[f"layers.{i}.bias"] = torch.randn(dims[k + 1])
    torch.save(state, folder / HEAD_FILE)
    pixels = torch.rand(8, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    scores = {}
    for dtype in ("float16", "float32"):
        started = time.perf_counter()
        scorer = load_scorer("a", config={"a": {"backend": "laion-aesthetic", "path": str(folder)}}, device=device,
                             dtype=dtype)
        scores[dtype] = scorer.encode_pixels(pixels)[:, 0]
        report(out, "aesthetic", {"dtype": dtype, "finite": bool(np.isfinite(scores[dtype]).all()),
                                  "scores": np.round(scores[dtype], 4).tolist(),
                                  "seconds": round(time.perf_counter() - started, 1)})
    report(out, "aesthetic-compare", {"max_abs_diff_fp16_fp32": float(np.abs(scores["float16"] - scores["float32"]).max()),
                                      "spread_fp32": float(np.ptp(scores["float32"]))})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--work", type=Path, default=Path("/tmp/ecb-gpu-check"))
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    for name, stage in (("tiny", tiny_stage), ("aesthetic", aesthetic_stage)):
        try:
            stage(args.work / name, args.out, args.device)
        except Exception:  # noqa: BLE001  (a stage's failure is reported, the next stage still runs)
            report(args.out, name, {"error": traceback.format_exc()[-3000:]})


if __name__ == "__main__":
    main()
