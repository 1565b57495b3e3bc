"""Where a country page's prompts come from: the prompt sets that hold prompts of the country, and whether the
country is one the dataset's artifact space was built for.

A prompt set such as ``cultivate`` or ``ecb`` brings its own catalogue of countries (CULTIVate's activities, ECB's
knowledge files), so a build for Spain, Mexico and Nigeria can still hold Italian or Korean prompts: the page says
which prompt sets named the country, so a reader is not left guessing why it is there.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from .board import Board


def built_countries(dataset: Path) -> list[str] | None:
    """The countries the dataset's artifact space was built for (``build.json`` options), or None where the folder
    does not record them (a downloaded or imported dataset)."""
    try:
        countries = json.loads((Path(dataset) / "build.json").read_text(encoding="utf-8"))["options"]["countries"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return sorted(countries) if isinstance(countries, list) and all(isinstance(c, str) for c in countries) else None


def sources(board: Board, country: str, built: list[str] | None) -> dict:
    """{prompt_sets: [(prompt set, prompts)] by name, outside: True where the dataset records the countries it was
    built for and ``country`` is not one of them, built: those countries}."""
    counts = Counter(p.get("prompt_set") for p in board.prompts.values() if p.get("country") == country)
    return {"prompt_sets": sorted(counts.items()), "outside": built is not None and country not in built,
            "built": built or []}
