"""What embedding each image alone costs, why the engine avoids batch-mates, and what its fixed batches cost
(evaluators/engine/batching.py).

Real-size image towers with random weights (SigLIP 2 So400m/14 at 384 px as transformers SiglipVisionModel,
open_clip ViT-H-14 as HPS v2.1 uses, DINOv2-large at 224 px) on random pixels; ``--size base`` uses base-size
towers (SigLIP base/16, ViT-B-16, DINOv2-base, all at 224 px) for a CPU run:

* bits: how many of N images get other bits when embedded in a batch of 32 beside other images (a different
  subset, or the same images in another order) than in the first batch: the defect of batched caching; and
  whether an image embedded alone gives the same bits every time (it must);
* time: forward passes per image, in plain batches of 32 (the last short), one at a time, and in the engine's fixed
  batches of 32 (the last padded), with the engine's throughput against the other two (synchronised, after a
  warm-up; the fastest of --repeats rounds, the three ways interleaved in each, so that a burst of load on a
  shared machine slows one round of all three, not one way; use an --images count that is no multiple of 32 to
  see the padding's cost), and
  the time to decode and preprocess one 1024 px PNG on one CPU core (the other cost per image of a run,
  spread over the DataLoader's workers).

    python benchmarks/one_pass_each.py [--size real|base] [--device cuda] [--dtype float16] [--images 64] [--repeats 3]
"""

from __future__ import annotations

import argparse
import io
import json
import math
import time

import numpy as np

from cultureboard.evaluators.engine.batching import fixed_batches


def towers(size: str, device: str, dtype):
    import open_clip
    import torch
    from transformers import Dinov2Config, Dinov2Model, SiglipVisionConfig, SiglipVisionModel

    if size == "real":
        siglip = SiglipVisionConfig(hidden_size=1152, intermediate_size=4304, num_hidden_layers=27,
                                    num_attention_heads=16, image_size=384, patch_size=14)
        dino = Dinov2Config(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, image_size=224,
                            patch_size=14)
        arch = "ViT-H-14"
    else:
        siglip = SiglipVisionConfig(image_size=224, patch_size=16)
        dino = Dinov2Config(image_size=224, patch_size=14)
        arch = "ViT-B-16"
    for name, build, run in ((f"siglip {size}", lambda: SiglipVisionModel(siglip),
                              lambda m, x: m(pixel_values=x).pooler_output),
                             (f"open_clip {arch}", lambda: open_clip.create_model(arch).visual, lambda m, x: m(x)),
                             (f"dinov2 {size}", lambda: Dinov2Model(dino), lambda m, x: m(pixel_values=x).pooler_output)):
        model = build()
        side = siglip.image_size if name.startswith("siglip") else 224
        yield name, model.to(device=device, dtype=dtype).eval(), side, run
        model.cpu()
        if device.startswith("cuda"):
            torch.cuda.empty_cache()


def main() -> None:
    import torch

    parser = argparse.ArgumentParser()
    parser.add_argument("--size", choices=("real", "base"), default="real")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="float16")
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds; each way's fastest is reported")
    args = parser.parse_args()
    device, dtype, n = args.device, getattr(torch, args.dtype), args.images
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    report = {"device": torch.cuda.get_device_name() if device.startswith("cuda") else "cpu", "dtype": args.dtype,
              "torch threads": torch.get_num_threads(), "repeats": args.repeats}
    torch.manual_seed(0)
    for name, model, side, run in towers(args.size, device, dtype):
        pixels = torch.randn(n, 3, side, side, generator=torch.Generator().manual_seed(1)).to(device, dtype)

        def embed(x):
            with torch.inference_mode():
                return run(model, x).float().cpu().numpy()

        def batched(order):  # batches of 32 in this order, rows put back in image order
            out = np.empty((n, embed(pixels[:1]).shape[1]), np.float32)
            for start in range(0, n, 32):
                rows = order[start:start + 32]
                out[rows] = embed(pixels[rows])
            return out

        alone = np.stack([embed(pixels[i:i + 1])[0] for i in range(n)])
        again = np.stack([embed(pixels[i:i + 1])[0] for i in reversed(range(n))])[::-1]
        first = batched(np.arange(n))
        shuffled = batched(np.random.default_rng(2).permutation(n))
        shifted = batched(np.roll(np.arange(n), 7))
        entry = {"images differing, batch of 32 with other batch-mates": int((first != shuffled).any(1).sum()),
                 "images differing, batch of 32 shifted by 7": int((first != shifted).any(1).sum()),
                 "images differing, alone vs batch of 32": int((alone != first).any(1).sum()),
                 "images differing, alone twice": int((alone != again).any(1).sum()),
                 "max abs difference, batched vs alone": float(np.abs(alone - first).max())}
        def plain(size):  # batches of `size`, the last one short
            for start in range(0, n, size):
                with torch.inference_mode():
                    run(model, pixels[start:start + size])

        def engine():  # the engine's path: fixed batches of 32, the last one padded
            with torch.inference_mode():
                fixed_batches(lambda x: run(model, x), pixels)

        ways = (("ms per image, batches of 32", lambda: plain(32)), ("ms per image, alone", lambda: plain(1)),
                ("ms per image, fixed batches of 32 (engine)", engine))
        embed(pixels[:32])
        for _ in range(args.repeats):
            for label, call in ways:
                sync()
                t = time.perf_counter()
                call()
                sync()
                entry[label] = min(entry.get(label, math.inf), round(1000 * (time.perf_counter() - t) / n, 2))
        fixed = entry["ms per image, fixed batches of 32 (engine)"]
        entry["engine throughput / plain batches of 32 (target >= 0.9)"] = round(
            entry["ms per image, batches of 32"] / fixed, 2)
        entry["engine throughput / one input per pass"] = round(entry["ms per image, alone"] / fixed, 2)
        report[name] = entry
        print(json.dumps({name: entry}), flush=True)
    from PIL import Image
    from transformers import SiglipImageProcessor

    buffer = io.BytesIO()
    Image.fromarray(np.random.default_rng(3).integers(0, 256, (1024, 1024, 3), dtype=np.uint8)).save(buffer, "PNG")
    processor = SiglipImageProcessor(size={"height": 384, "width": 384})
    t = time.perf_counter()
    for _ in range(10):
        processor(images=Image.open(io.BytesIO(buffer.getvalue())).convert("RGB"), return_tensors="pt")
    report["ms to decode and preprocess one 1024 px PNG (one core)"] = round(100 * (time.perf_counter() - t), 1)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
