"""A tiny dataset folder for generation tests, written with the builder's own ``write_dataset``.

- ``tiny-t2i``: 3 text-to-image prompts x 2 images (seeds 10, 11), the second with a negative prompt;
- ``tiny-ecb``: one text-to-image base and a 2-step edit chain on it, 1 image each (seed 0), as ECB.
"""

from __future__ import annotations

from pathlib import Path

from cultureboard.builder.dataset import prompt_config, write_dataset
from cultureboard.builder.prompt_sets import PromptSet

T2I = "tiny-t2i"
ECB = "tiny-ecb"


def _row(prompt_set: str, prompt_id: str, text: str, *, negative: str = "", seeds=(0,), kind: str = "t2i",
         step: int | None = None, source: str | None = None) -> dict:
    return {"prompt_id": f"{prompt_set}/{prompt_id}", "prompt_set": prompt_set, "text": text, "negative_prompt": negative,
            "kind": kind, "edit_step": step, "source_prompt_id": source and f"{prompt_set}/{source}",
            "images_per_prompt": len(seeds), "seeds": list(seeds), "seed_scheme": "consecutive"}


def t2i_rows() -> list[dict]:
    return [
        _row(T2I, "it/food/pizza", "A photo of pizza from Italy.", seeds=(10, 11)),
        _row(T2I, "jp/food/sushi", "A photo of sushi from Japan.", negative="blurry, cartoon", seeds=(10, 11)),
        _row(T2I, "ng/landmarks/zuma-rock", "A photo of Zuma Rock, a landmark of Nigeria.", seeds=(10, 11)),
    ]


def ecb_rows() -> list[dict]:
    edit = "Change the image to represent traditional food in Korea."
    return [
        _row(ECB, "kr/food/main-dish", "A photo of a traditional main dish of Korea."),
        _row(ECB, "kr/food/main-dish/edit/1", edit, kind="i2i", step=1, source="kr/food/main-dish"),
        _row(ECB, "kr/food/main-dish/edit/2", edit, kind="i2i", step=2, source="kr/food/main-dish/edit/1"),
    ]


def write_tiny_dataset(out: str | Path, extra: dict[str, list[dict]] | None = None) -> Path:
    """Write the two sets (and any ``extra`` name -> rows) as a dataset folder at ``out``."""
    sets = {T2I: t2i_rows(), ECB: ecb_rows(), **(extra or {})}
    configs = [prompt_config(PromptSet(name, "1.0", "test", f"test set {name}", rows)) for name, rows in sets.items()]
    return write_dataset(out, configs, {"test": True})
