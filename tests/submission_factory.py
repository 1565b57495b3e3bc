"""A tiny dataset folder and a valid submission for it, for the validator's tests.

The prompt set ``tiny`` has 7 prompts and 12 images: two text-to-image prompts x 2 images (one with a
negative prompt), two "mannequin" prompts with the same text and seed (1 image each, submitted as the
same image, as ECB's shared bases legitimately are) and an I2I chain: a base and two edit steps x 2.
Images are 64x64 PNGs of distinct solid colours, so every hash differs.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import struct
import zlib
from pathlib import Path

import pytest

import yaml
from PIL import Image

from cultureboard.builder.dataset import prompt_config, write_dataset
from cultureboard.builder.prompt_sets import PromptSet
from cultureboard.dataset_folder import local_revision
from cultureboard.provenance import file_sha256

@contextlib.contextmanager
def without_copy_rule():
    """Validation (and so ``evaluate``) with the copy rule (:mod:`rules.copies`) left out, for a test world that
    hands in copies on purpose, to test a metric at its extreme (an image identical to a reference photograph, one
    picture for every prompt); each such world also tests that the rule refuses it."""
    from cultureboard.evaluators.submission import validate
    from cultureboard.evaluators.submission.rules import copies

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(validate, "GROUPS", tuple(g for g in validate.GROUPS if g is not copies.check))
        yield


def evaluate_allowing_copies(*args, **kwargs):
    """:func:`cultureboard.evaluators.evaluate` under :func:`without_copy_rule`."""
    from cultureboard.evaluators import evaluate

    with without_copy_rule():
        return evaluate(*args, **kwargs)


PROMPT_SET = "tiny"
SUBMISSION_ID = "test-lab__tiny-diffusion"


def _prompt(pid: str, text: str, seeds: list[int], negative: str = "", step: int | None = None, source: str | None = None) -> dict:
    return {"prompt_id": f"{PROMPT_SET}/{pid}", "prompt_set": PROMPT_SET, "text": text, "negative_prompt": negative,
            "kind": "i2i" if step else "t2i", "edit_step": step, "source_prompt_id": source and f"{PROMPT_SET}/{source}",
            "images_per_prompt": len(seeds), "seeds": seeds, "seed_scheme": "prompt-set"}


PROMPTS = [
    _prompt("jp/sushi", "a photo of sushi from Japan", [0, 1]),
    _prompt("it/pizza", "a photo of pizza from Italy", [10, 11], negative="blurry, text"),
    _prompt("jp/mannequin", "a mannequin in a white room", [5]),
    _prompt("kr/mannequin", "a mannequin in a white room", [5]),
    _prompt("chain/base", "a house", [30, 31]),
    _prompt("chain/1", "make it traditional", [30, 31], step=1, source="chain/base"),
    _prompt("chain/2", "make it modern", [30, 31], step=2, source="chain/1"),
]


def make_dataset(folder: Path) -> Path:
    ps = PromptSet(PROMPT_SET, "1", "ecb", "a tiny prompt set for validator tests", PROMPTS)
    return write_dataset(folder, [prompt_config(ps)], {})


def png_bytes(color: tuple[int, int, int], size: tuple[int, int] = (64, 64), fmt: str = "PNG") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, fmt)
    return buffer.getvalue()


def noise_image(fmt: str = "PNG", size: int = 64) -> bytes:
    """An image of noise: its pixel data spans many bytes, so cutting or flipping them breaks it."""
    buffer = io.BytesIO()
    Image.frombytes("RGB", (size, size), random.Random(size).randbytes(size * size * 3)).save(buffer, fmt)
    return buffer.getvalue()


def png_header_only(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` but whose data is a few bytes: a decompression bomb's shape."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def image_file(prompt_id: str, k: int) -> str:
    return f"images/{prompt_id}/{k}.png"


def make_spec(dataset: Path) -> dict:
    return {
        "format_version": 1,
        "organization": "Test Lab",
        "contact": "Jo Doe <jo@example.org>",
        "date": "2025-01-15",
        "model": {"name": "Tiny Diffusion", "id": "test-lab/tiny-diffusion", "revision": "a" * 40, "license": "apache-2.0",
                  "weights": "open", "links": ["https://example.org/tiny"],
                  "training_data": "LAION-5B subset.\nNo cultural filtering."},
        "generation": {"pipeline": "StableDiffusionPipeline", "scheduler": "DDIMScheduler", "steps": 30,
                       "guidance_scale": 7.5, "width": 64, "height": 64, "negative_prompt": True, "precision": "fp16",
                       "i2i_pipeline": "StableDiffusionImg2ImgPipeline", "i2i_strength": 0.6, "extra": {"eta": 0.0}},
        "seeds": {"scheme": "prompt-set"},
        "prompt_set": {"name": PROMPT_SET, "dataset": dataset.name, "revision": local_revision(dataset)},
        "images": {"location": "images"},
    }


def make_submission(parent: Path, dataset: Path) -> Path:
    """Write the valid submission ``parent/test-lab__tiny-diffusion`` for ``dataset``."""
    folder = parent / SUBMISSION_ID
    rows = []
    for i, p in enumerate(PROMPTS):
        for k, seed in enumerate(p["seeds"]):
            name = image_file(p["prompt_id"], k)
            color = (0, 0, 200) if "mannequin" in name else (20 * i, 250 - 30 * k, 17 * i + 40 * k)
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(png_bytes(color))
            row = {"file_name": name, "prompt_id": p["prompt_id"], "sample_idx": k, "seed": seed,
                   "sha256": file_sha256(folder / name)}
            if p["kind"] == "i2i":
                row |= {"edit_step": p["edit_step"], "source_file": image_file(p["source_prompt_id"], k)}
            rows.append(row)
    write_spec(folder, make_spec(dataset))
    write_rows(folder, rows)
    return folder


def read_spec(folder: Path) -> dict:
    return yaml.safe_load((folder / "submission.yaml").read_text(encoding="utf-8"))


def write_spec(folder: Path, spec: dict) -> None:
    (folder / "submission.yaml").write_text(yaml.safe_dump(spec, sort_keys=False, allow_unicode=True), encoding="utf-8")


def read_rows(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "metadata.jsonl").read_text(encoding="utf-8").splitlines()]


def write_rows(folder: Path, rows: list[dict]) -> None:
    (folder / "metadata.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def yaml_line(folder: Path, text: str) -> str:
    """``submission.yaml:N``, N being the line of submission.yaml that starts with ``text``."""
    lines = (folder / "submission.yaml").read_text(encoding="utf-8").splitlines()
    return f"submission.yaml:{next(i for i, line in enumerate(lines, 1) if line.startswith(text))}"
