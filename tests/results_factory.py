"""Real evaluator results, made quickly: a small dataset built from the sample dump, submissions of seeded
block images (each submission's own images), and tiny random scorers loaded through the real code path.

    dataset = make_dataset(root / "dataset")
    subs = [make_submission(root / "submissions", dataset, "cube-awareness", model=m) for m in ("alpha", "beta")]
    results = evaluate_all(subs, dataset, root / "results", root / "work")
"""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path

import numpy as np
from PIL import Image

from cultureboard.builder import build
from cultureboard.dataset_folder import local_revision, read_prompt_set
from cultureboard.evaluators import evaluate
from cultureboard.evaluators.submission.format import submission_id, write_submission
from cultureboard.evaluators.engine.tiny_scorers import TINY_CONFIG, save_tiny_scorers
from cultureboard.provenance import file_sha256

#: One Global North and one Global South country: every slice type has entries, the smallest are < 5 prompts.
COUNTRIES = ("IT", "NG")
#: Images are wider than tall, so thumbnails show that only the longer side is capped.
WIDTH, HEIGHT = 320, 192


def make_dataset(out: Path, countries=COUNTRIES, prompt_sets=("cube-awareness",)) -> Path:
    build(out, countries=list(countries), prompt_sets=list(prompt_sets))
    return out


def _merge(base: dict, extra: dict) -> dict:
    """``base`` with ``extra`` merged in, nested mappings merged key by key."""
    out = copy.deepcopy(base)
    for key, value in extra.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def make_submission(parent: Path, dataset: Path, prompt_set: str, *, organization: str = "lab", model: str = "model",
                    tag: str | None = None, spec: dict | None = None) -> Path:
    """A valid submission in ``parent/<org>__<model>[__<tag>]``; ``spec`` is merged into its submission.yaml.

    Each image is 8 x 8 blocks of colours seeded by the submission id, prompt and sample (scaled up without
    smoothing, so the PNGs stay small), so two submissions get different images and different scores.
    """
    spec = _merge({
        "format_version": 1, "organization": organization, "contact": "lab@example.org", "date": "2026-11-25",
        "model": {"name": model, "id": f"{organization}/{model}", "revision": "0" * 40, "license": "mit", "weights": "open"},
        "generation": {"pipeline": "StableDiffusionPipeline", "scheduler": "DDIMScheduler", "steps": 2,
                       "guidance_scale": 7.5, "width": WIDTH, "height": HEIGHT, "negative_prompt": True,
                       "precision": "fp32"},
        "seeds": {"scheme": "prompt-set"},
        "prompt_set": {"name": prompt_set, "dataset": dataset.name, "revision": local_revision(dataset)},
        "images": {"location": "images"},
    } | ({"tag": tag} if tag else {}), spec or {})
    out = parent / submission_id(spec)
    rows = []
    for p in read_prompt_set(dataset, prompt_set):
        for k in range(p["images_per_prompt"]):
            rel = f"images/{p['prompt_id']}/{k}.png"
            seed = int(hashlib.sha256(f"{out.name}/{p['prompt_id']}/{k}".encode()).hexdigest()[:8], 16)
            blocks = np.random.default_rng(seed).integers(0, 256, (HEIGHT // 24, WIDTH // 40, 3), dtype=np.uint8)
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(blocks).resize((WIDTH, HEIGHT), Image.Resampling.NEAREST).save(out / rel)
            rows.append({"file_name": rel, "prompt_id": p["prompt_id"], "sample_idx": k, "seed": p["seeds"][k],
                         "sha256": file_sha256(out / rel)})
    write_submission(out, spec, rows)
    return out


def evaluate_all(submissions: list[Path], dataset: Path, results: Path, work: Path) -> Path:
    """Evaluate each submission into ``results/<id>`` with tiny scorers saved under ``work``; returns ``results``."""
    if not (work / "scorers" / TINY_CONFIG).exists():
        save_tiny_scorers(work / "scorers")
    for submission in submissions:
        evaluate(submission, dataset, results, scorers=work / "scorers" / TINY_CONFIG, device="cpu",
                 cache=work / "cache", n_boot=200, options={"repetitions": 5})
    return results
