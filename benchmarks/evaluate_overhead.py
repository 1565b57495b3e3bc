"""Evaluator overhead: `evaluate` wall time against the bare forward passes of the same models on the same
images and against the hardware's floor, and a rerun of the unchanged submission against its own floor.

Targets: the first run within 1.5x of the floor (import torch + read the weights to the device + the forward
passes, all measured in the bare process), and a fully cached rerun within 2x of its floor (a process that imports
numpy, pandas and pyarrow and hashes every image: what a rerun cannot avoid).

Setup: a cube-awareness submission of PROMPTS x 4 PNGs; the two scorers that set reads, at real size with
random weights (SigLIP 2 So400m/14 at 384 px as transformers SiglipModel, open_clip ViT-H-14 for HPS v2.1), saved
into a private Hugging Face cache as Hub snapshots (so they load exactly as the registry's checkpoints do,
revision = the snapshot's commit). `--size base` uses base-size configurations instead (for a CPU run), `--size
tiny` the tiny stand-ins of `evaluators/engine/tiny_scorers.py` (seconds on a CPU: the fixed costs, not the passes).

Four measurements, each in its own process, in one run:
  bare      a script with the same classes, files, preprocessing and call order (images decoded in batches of 32,
            each image and text then embedded alone, as the engine does); no cultureboard code
  floor     (rerun) import numpy, pandas, pyarrow and sha256 every image
  first     `cultureboard evaluate` with an empty cache
  rerun     `cultureboard evaluate` again, every embedding cached
The bare process also reports the time of its forward passes alone. Ratios are printed; absolute numbers vary
with the machine (shared and noisy here: compare ratios measured in one run).

    python benchmarks/evaluate_overhead.py [--size real|base|tiny] [--prompts 9] [--device cpu|cuda] [--dtype ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

COMMIT_SIGLIP, COMMIT_HPS = "1" * 40, "2" * 40

BARE = r'''
import glob, json, sys, time
t0 = time.perf_counter()
import torch
t_import = time.perf_counter() - t0
import numpy as np, open_clip
from PIL import Image
from transformers import AutoModel, AutoProcessor
from huggingface_hub import snapshot_download
cfg = json.loads(sys.argv[1])
device, dtype = cfg["device"], getattr(torch, cfg["dtype"])
files = [json.loads(line)["file_name"] for line in open(cfg["submission"] + "/metadata.jsonl") if line.strip()]
texts = sorted({p["text"] for p in cfg["prompts"]})
forward = 0.0
folder = snapshot_download("google/siglip2-so400m-patch14-384", revision="main")
t = time.perf_counter()
processor = AutoProcessor.from_pretrained(folder)
model = AutoModel.from_pretrained(folder).to(device=device, dtype=dtype).eval()
load = time.perf_counter() - t
def sync():
    if device.startswith("cuda"):
        torch.cuda.synchronize()
with torch.inference_mode():
    for start in range(0, len(files), 32):
        pixels = torch.stack([processor.image_processor(images=Image.open(cfg["submission"] + "/" + f).convert("RGB"),
                              return_tensors="pt")["pixel_values"][0] for f in files[start:start + 32]])
        sync(); t = time.perf_counter()
        for i in range(len(pixels)):
            model.get_image_features(pixel_values=pixels[i:i + 1].to(device, dtype))
        sync(); forward += time.perf_counter() - t
    for text in texts:
        tokens = processor.tokenizer([text.lower()], padding="max_length", max_length=64, truncation=True,
                                     return_tensors="pt").to(device)
        sync(); t = time.perf_counter(); model.get_text_features(**tokens); sync(); forward += time.perf_counter() - t
if cfg["hps_arch"].startswith("local-dir:"):  # the tiny stand-in: open_clip's Hub layout in a local folder
    hps_name, hps_weights = cfg["hps_arch"], glob.glob(cfg["hps_arch"].removeprefix("local-dir:") + "/*.safetensors")
    pretrained = None
else:
    hps_file = snapshot_download("xswu/HPSv2", revision="main", allow_patterns=["HPS_v2.1_compressed.pt"])
    hps_name, pretrained = cfg["hps_arch"], hps_file + "/HPS_v2.1_compressed.pt"
    hps_weights = [pretrained]
precision = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}[cfg["dtype"]]
t = time.perf_counter()
hps, _, transform = open_clip.create_model_and_transforms(hps_name, pretrained=pretrained,
                                                          precision=precision, device=device, image_resize_mode="longest")
hps.eval(); sync()
load += time.perf_counter() - t
# the floor of loading: the checkpoint's bytes read straight to the device (memory-mapped), no model built
t = time.perf_counter()
import safetensors.torch
for path in hps_weights + glob.glob(folder + "/*.safetensors"):
    if path.endswith(".safetensors"):
        state = safetensors.torch.load_file(path, device=str(device))
    else:
        state = torch.load(path, map_location=device, mmap=True, weights_only=True)
sync()
read = time.perf_counter() - t
tokenizer = open_clip.get_tokenizer(hps_name)
with torch.inference_mode():
    for start in range(0, len(files), 32):
        pixels = torch.stack([transform(Image.open(cfg["submission"] + "/" + f).convert("RGB")) for f in files[start:start + 32]])
        sync(); t = time.perf_counter()
        for i in range(len(pixels)):
            hps.encode_image(pixels[i:i + 1].to(device, dtype))
        sync(); forward += time.perf_counter() - t
    for text in texts:
        sync(); t = time.perf_counter(); hps.encode_text(tokenizer([text]).to(device)); sync(); forward += time.perf_counter() - t
print(json.dumps({"wall": time.perf_counter() - t0, "forward": forward, "import_torch": t_import, "load": load,
                  "read_weights": read}))
'''

FLOOR_RERUN = r'''
import hashlib, json, sys
import numpy, pandas, pyarrow
root = sys.argv[1]
for line in open(root + "/metadata.jsonl"):
    if line.strip():
        hashlib.sha256(open(root + "/" + json.loads(line)["file_name"], "rb").read()).hexdigest()
'''


def _siglip(size: str):
    from transformers import SiglipConfig, SiglipModel

    if size == "real":  # google/siglip2-so400m-patch14-384
        vision = dict(hidden_size=1152, intermediate_size=4304, num_hidden_layers=27, num_attention_heads=16,
                      image_size=384, patch_size=14)
        text = dict(hidden_size=1152, intermediate_size=4304, num_hidden_layers=27, num_attention_heads=16,
                    vocab_size=256000, max_position_embeddings=64, projection_size=1152)
    else:
        vision = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                      image_size=224, patch_size=16)
        text = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                    vocab_size=32000, max_position_embeddings=64)
    return SiglipModel(SiglipConfig(vision_config=vision, text_config=text))


def _save_siglip(size: str, folder: Path) -> None:
    """A SigLIP with random weights and a tokenizer / image processor of the right shape, saved as a Hub snapshot."""
    from transformers import GemmaTokenizer, SiglipImageProcessor, SiglipProcessor

    if size == "tiny":
        from cultureboard.evaluators.engine.tiny_scorers import save_tiny_siglip

        save_tiny_siglip(folder)
        return
    model = _siglip(size)
    side = model.config.vision_config.image_size
    vocab = {t: i for i, t in enumerate(["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"])}
    vocab.update({f"<0x{b:02X}>": len(vocab) + b for b in range(256)})
    processor = SiglipProcessor(image_processor=SiglipImageProcessor(size={"height": side, "width": side}),
                                tokenizer=GemmaTokenizer(vocab=vocab, merges=[]))
    model.save_pretrained(folder)
    processor.save_pretrained(folder)


def _save_hps(size: str, folder: Path) -> str:
    """open_clip ViT-H-14 (or ViT-B-16) with random weights in the HPS checkpoint format; returns the architecture
    (the tiny size: a local folder in open_clip's Hub layout, returned as ``local-dir:FOLDER``)."""
    import open_clip
    import torch

    if size == "tiny":
        from cultureboard.evaluators.engine.tiny_scorers import save_tiny_open_clip

        return "local-dir:" + str(save_tiny_open_clip(folder.parent.parent.parent / "tiny-hps"))

    arch = "ViT-H-14" if size == "real" else "ViT-B-16"
    model = open_clip.create_model(arch)
    folder.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": model.state_dict()}, folder / "HPS_v2.1_compressed.pt")
    return arch


def _snapshot(cache: Path, repo: str, commit: str) -> Path:
    storage = cache / ("models--" + repo.replace("/", "--"))
    (storage / "refs").mkdir(parents=True, exist_ok=True)
    (storage / "refs" / "main").write_text(commit)
    return storage / "snapshots" / commit


def _timed(cmd: list[str], env: dict) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd[:4])}...\n{done.stderr[-2000:]}")
    return time.perf_counter() - start, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=("real", "base", "tiny"), default="real")
    parser.add_argument("--prompts", type=int, default=9)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default=None)
    parser.add_argument("--work", type=Path, default=None, help="Work folder (default: a temporary one).")
    args = parser.parse_args()
    dtype = args.dtype or ("float16" if args.device.startswith("cuda") else "float32")
    work = args.work or Path(tempfile.mkdtemp(prefix="cb-eval-bench-"))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from results_factory import make_submission

    from cultureboard.builder import build
    from cultureboard.builder.dataset import prompt_config, write_dataset
    from cultureboard.builder.prompt_sets import PromptSet
    from cultureboard.dataset_folder import read_prompt_set

    hub = work / "hub"
    if not hub.exists():
        print(f"saving {args.size}-size random-weight scorers into {hub} ...", flush=True)
        _save_siglip(args.size, _snapshot(hub, "google/siglip2-so400m-patch14-384", COMMIT_SIGLIP))
        arch = _save_hps(args.size, _snapshot(hub, "xswu/HPSv2", COMMIT_HPS))
        (work / "arch.txt").write_text(arch)
    arch = (work / "arch.txt").read_text()
    dataset = work / "dataset"
    if not dataset.exists():  # the first PROMPTS prompts of a built cube-awareness set, as a dataset of its own
        build(work / "full-dataset", countries=["IT", "JP", "NG"], prompt_sets=["cube-awareness"])
        rows = read_prompt_set(work / "full-dataset", "cube-awareness")[: args.prompts]
        write_dataset(dataset, [prompt_config(PromptSet("cube-awareness", "bench", "cube", "benchmark subset", rows))], {})
    prompts = read_prompt_set(dataset, "cube-awareness")
    submission = work / "submissions" / "bench__model"
    if not submission.exists():
        make_submission(work / "submissions", dataset, "cube-awareness", organization="bench", model="model")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(hub), "CULTUREBOARD_CACHE": str(work / "cb-cache")}
    scorers = work / "scorers.yaml"  # the real registry entries; only the HPS architecture differs at base size
    hps = (f"{{path: {arch.removeprefix('local-dir:')}}}" if arch.startswith("local-dir:") else f"{{model: {arch}}}")
    scorers.write_text(f"hpsv2.1: {hps}\n")
    cfg = json.dumps({"device": args.device, "dtype": dtype, "submission": str(submission), "prompts": prompts,
                      "hps_arch": arch})
    bare_wall, out = _timed([sys.executable, "-c", textwrap.dedent(BARE), cfg], env)
    bare = json.loads(out.strip().splitlines()[-1])
    shutil.rmtree(work / "cb-cache", ignore_errors=True)
    shutil.rmtree(work / "results", ignore_errors=True)
    evaluate = [sys.executable, "-m", "cultureboard.cli", "evaluate", str(submission), "--dataset", str(dataset),
                "--out", str(work / "results"), "--scorers", str(scorers), "--device", args.device, "--dtype", dtype]
    first, _ = _timed(evaluate, env)
    rerun, _ = _timed(evaluate, env)
    rerun_floor, _ = _timed([sys.executable, "-c", textwrap.dedent(FLOOR_RERUN), str(submission)], env)
    floor = bare["import_torch"] + bare["read_weights"] + bare["forward"]
    n = sum(p["images_per_prompt"] for p in prompts)
    print(f"\n{args.size}-size scorers, {n} images, device {args.device}, dtype {dtype}")
    print(f"{'measurement':<34}{'seconds':>10}{'ratio':>10}")
    print(f"{'bare: forward passes only':<34}{bare['forward']:>10.1f}{1:>10.2f}")
    print(f"{'bare: whole process':<34}{bare_wall:>10.1f}{bare_wall / bare['forward']:>10.2f}")
    print(f"{'evaluate: first run':<34}{first:>10.1f}{first / bare['forward']:>10.2f}")
    print(f"{'evaluate / bare whole process':<34}{'':>10}{first / bare_wall:>10.2f}")
    print(f"{'evaluate: rerun, all cached':<34}{rerun:>10.1f}{rerun / first:>10.3f}  (of the first run)")
    print(f"{'floor: import torch':<34}{bare['import_torch']:>10.1f}")
    print(f"{'floor: read the weights to device':<34}{bare['read_weights']:>10.1f}  (bare's model building: "
          f"{bare['load']:.1f} s)")
    print(f"{'floor: first run (import+read+fwd)':<34}{floor:>10.1f}")
    print(f"{'evaluate first run / floor':<34}{'':>10}{first / floor:>10.2f}  (target at most 1.5)")
    print(f"{'floor: rerun (numpy+pandas+pyarrow+sha256)':<34}{rerun_floor:>10.1f}")
    print(f"{'evaluate rerun / rerun floor':<34}{'':>10}{rerun / rerun_floor:>10.2f}  (target at most 2)")


if __name__ == "__main__":
    main()
