"""The cuda / fp16 paths of generate and evaluate, on a GPU machine, in one short run; prints what they show.

Stages (each reported as it finishes, so a run cut short still tells something):
  tiny      the demo's tiny stand-ins: generate cube-awareness on cuda fp16 and on the CPU in fp32 (same seeds),
            validate both, evaluate both (cube-awareness) and cube-diversity on cuda (the judge generates in fp16),
            a rerun; differences between the fp16 and fp32 images and scores, NaN / blank images, cache folders
  generate  a real-size (SD 1.5 shapes, 0.9 B parameters) random-weight StableDiffusionPipeline, two 512 px
            images in fp16 on cuda: finite, not blank
  evaluate  benchmarks/evaluate_overhead.py --size real --device cuda (SigLIP 2 So400m + ViT-H-14 shapes)

    python benchmarks/gpu_check.py --out REPORT_DIR
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
GPU = "cuda"  # --device: another device to rehearse the script on (e.g. cpu)
sys.path.insert(0, str(ROOT / "tests"))


def report(out: Path, stage: str, facts: dict) -> None:
    line = json.dumps({"stage": stage, **facts}, default=str)
    print(line, flush=True)
    with open(out / "gpu_check.jsonl", "a") as fh:
        fh.write(line + "\n")


def images_of(submission: Path) -> dict[str, np.ndarray]:
    from PIL import Image

    rows = [json.loads(x) for x in (submission / "metadata.jsonl").read_text().splitlines() if x.strip()]
    return {r["file_name"]: np.asarray(Image.open(submission / r["file_name"]).convert("RGB"), dtype=np.float32)
            for r in rows}


def tiny_stage(work: Path, out: Path) -> None:
    from cultureboard.builder import build
    from cultureboard.evaluators import evaluate, validate
    from cultureboard.evaluators.engine.tiny_scorers import TINY_CONFIG, save_tiny_scorers
    from cultureboard.evaluators.submission.generate import generate
    from cultureboard.evaluators.submission.tiny_pipelines import save_tiny_text2image

    t0 = time.perf_counter()
    dataset = work / "dataset"
    build(dataset, countries=["IT", "NG"], prompt_sets=["cube-awareness", "cube-diversity"])
    pipe = save_tiny_text2image(work / "tiny-pipe")
    save_tiny_scorers(work / "scorers")
    subs = {}
    for device, dtype in ((GPU, "fp16"), ("cpu", "fp32")):
        for prompt_set in ("cube-awareness",) + (("cube-diversity",) if device == GPU else ()):
            folder = work / "subs" / f"{device}-{dtype}" / f"gpu__tiny__{prompt_set}"
            t = time.perf_counter()
            generate(dataset, prompt_set, str(pipe), folder, organization="gpu", model_name="tiny", tag=prompt_set,
                     steps=2, batch_size=16, device=device, dtype=dtype, progress=False)
            subs[(device, prompt_set)] = folder
            report(out, "tiny", {"generated": f"{prompt_set} on {device} {dtype}", "seconds": round(time.perf_counter() - t, 1),
                                 "valid": validate(folder, dataset).valid})
    a, b = images_of(subs[(GPU, "cube-awareness")]), images_of(subs[("cpu", "cube-awareness")])
    diffs = [np.abs(a[k] - b[k]).max() for k in a]
    report(out, "tiny", {"images": len(a), "max_pixel_diff_fp16_vs_fp32": float(max(diffs)),
                         "mean_pixel_diff": float(np.mean([np.abs(a[k] - b[k]).mean() for k in a])),
                         "non_finite_or_blank": sum(1 for v in a.values() if not np.isfinite(v).all() or v.max() == 0)})
    scorers = work / "scorers" / TINY_CONFIG
    results = {}
    for device, dtype in ((GPU, "float16"), ("cpu", "float32")):
        t = time.perf_counter()
        results[device] = evaluate(subs[(GPU, "cube-awareness")], dataset, work / f"results-{device}", scorers=scorers,
                                   device=device, dtype=dtype, cache=work / "cache")
        report(out, "tiny", {"evaluated": f"cube-awareness on {device} {dtype}", "seconds": round(time.perf_counter() - t, 1)})
    values = {}
    for device, folder in results.items():
        s = json.loads((folder / "summary.json").read_text())
        values[device] = {(e["metric"], e["slice_type"], e["slice"]): e["value"] for e in s["metrics"]}
        report(out, "tiny", {"device": device, "scorers": [(x["name"], x["device"], x["dtype"]) for x in s["provenance"]["scorers"]]})
    gaps = {k: abs(values[GPU][k] - values["cpu"][k]) for k in values["cpu"] if values["cpu"][k] is not None}
    worst = max(gaps, key=gaps.get)
    report(out, "tiny", {"max_summary_diff_fp16_vs_fp32": gaps[worst], "at": worst,
                         "cache_folders": len(list((work / "cache").glob("*/key.json")))})
    t = time.perf_counter()
    evaluate(subs[(GPU, "cube-awareness")], dataset, work / "results-rerun", scorers=scorers, device=GPU,
             dtype="float16", cache=work / "cache")
    report(out, "tiny", {"rerun_seconds": round(time.perf_counter() - t, 1)})
    t = time.perf_counter()
    div = evaluate(subs[(GPU, "cube-diversity")], dataset, work / "results-div", scorers=scorers, device=GPU,
                   dtype="float16", cache=work / "cache", options={"repetitions": 10})
    s = json.loads((div / "summary.json").read_text())
    rows = [json.loads(d) for d in __import__("pandas").read_parquet(div / "scores.parquet").query(
        "metric == 'cube.retrieval'")["detail"]]
    report(out, "tiny", {"diversity_seconds": round(time.perf_counter() - t, 1),
                         "decided_by": sorted({r["decided_by"] for r in rows}),
                         "fallbacks": sum("fallback" in r for r in rows), "mapped": len(rows),
                         "qvs_uniform": next(e["value"] for e in s["metrics"] if e["metric"] == "cube.qvs.uniform"
                                             and e["slice_type"] == "overall"),
                         "total_seconds": round(time.perf_counter() - t0, 1)})


def generate_stage(work: Path, out: Path) -> None:
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    from cultureboard.evaluators.submission.generate import generate
    from cultureboard.evaluators.submission.tiny_pipelines import _byte_vocab, _tiny_tokenizer

    t0 = time.perf_counter()
    vocab = _byte_vocab()
    torch.manual_seed(0)
    unet = UNet2DConditionModel(sample_size=64, cross_attention_dim=768)
    vae = AutoencoderKL(block_out_channels=(128, 256, 512, 512), latent_channels=4, sample_size=512,
                        down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4,
                        layers_per_block=2)
    text = CLIPTextModel(CLIPTextConfig(vocab_size=len(vocab), hidden_size=768, intermediate_size=3072,
                                        num_hidden_layers=12, num_attention_heads=12, max_position_embeddings=77,
                                        bos_token_id=vocab["<|startoftext|>"], eos_token_id=vocab["<|endoftext|>"]))
    pipe = StableDiffusionPipeline(vae=vae, text_encoder=text, tokenizer=_tiny_tokenizer(vocab), unet=unet,
                                   scheduler=DDIMScheduler(), safety_checker=None, feature_extractor=None,
                                   requires_safety_checker=False)
    folder = work / "sd-random"
    pipe.save_pretrained(folder)
    params = sum(p.numel() for m in (unet, vae, text) for p in m.parameters())
    report(out, "generate", {"parameters_millions": round(params / 1e6), "built_seconds": round(time.perf_counter() - t0, 1)})
    for dtype in ("fp16", "bf16"):
        t = time.perf_counter()
        sub = work / "subs-real" / dtype / f"gpu__sd-random__{dtype}"
        try:
            result = generate(work / "dataset", "cube-awareness", str(folder), sub, organization="gpu",
                              model_name="sd-random", tag=dtype, steps=4, batch_size=4, device=GPU, dtype=dtype,
                              limit=2, progress=False)
            imgs = images_of(sub)
            report(out, "generate", {"dtype": dtype, "images": result["images"], "seconds": round(time.perf_counter() - t, 1),
                                     "size": next(iter(imgs.values())).shape,
                                     "non_finite_or_blank": sum(1 for v in imgs.values() if not np.isfinite(v).all()
                                                                or v.max() == v.min())})
        except Exception as exc:  # record what the fp16 path does, whatever it is
            report(out, "generate", {"dtype": dtype, "error": f"{type(exc).__name__}: {exc}"[:500]})


def evaluate_stage(work: Path, out: Path) -> None:
    cmd = [sys.executable, str(ROOT / "benchmarks" / "evaluate_overhead.py"), "--size", "real", "--device", GPU,
           "--prompts", "9", "--work", str(work / "overhead")]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    report(out, "evaluate", {"returncode": done.returncode, "stdout": done.stdout[-3000:], "stderr": done.stderr[-2000:]})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/gpu-check"))
    parser.add_argument("--stages", default="tiny,generate,evaluate")
    parser.add_argument("--device", default="cuda", help="Rehearse on another device (the checks mean cuda).")
    args = parser.parse_args()
    global GPU
    GPU = args.device
    args.out.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    import torch

    report(args.out, "machine", {"torch": torch.__version__, "cuda": torch.cuda.is_available(),
                                 "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None})
    for stage in args.stages.split(","):
        t = time.perf_counter()
        try:
            {"tiny": tiny_stage, "generate": generate_stage, "evaluate": evaluate_stage}[stage](args.work, args.out)
        except Exception:
            report(args.out, stage, {"error": traceback.format_exc()[-3000:]})
        report(args.out, stage, {"stage_seconds": round(time.perf_counter() - t, 1)})


if __name__ == "__main__":
    main()
