"""The registry of prompt-set families: name -> function that builds the set from the artifact space.

Each family lives in its own module (``prompts_<family>.py``) and exposes a function
``build_X(artifacts, countries) -> PromptSet``. ``artifacts`` is a list of artifact rows (dicts with
the columns of ``cultureboard.records.ARTIFACT_SCHEMA``) after curation; families that are not built
from artifacts (CULTIVate activities, the ECB grammar) ignore it and read their own data files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from cultureboard.countries import CountryTable


@dataclass
class PromptSet:
    name: str  # the config name on the Hub, e.g. "cure-ladder"
    version: str  # bumped whenever the templates or rules change what the rows say
    family: str  # cube | cure | cultdiff | cultivate | ecb
    description: str
    rows: list[dict]  # rows with the columns of cultureboard.records.PROMPT_SCHEMA
    license: str = "CC0-1.0"  # of the rows' content; imported sets carry the source's licence
    notes: list[str] = field(default_factory=list)  # deviations and fixes, shown in the dataset card


Builder = Callable[[list[dict], CountryTable], PromptSet]

#: The native-language variants (``builder/prompts_native.py``): variant name -> the base set it translates. They
#: are built from their base set's rows by the build's translation stage, not from artifacts, so they are not in
#: :func:`registry`.
NATIVE_VARIANTS = {"cube-awareness-native": "cube-awareness", "cultdiff-native": "cultdiff"}


def registry() -> dict[str, Builder]:
    from . import prompts_cube, prompts_cultdiff, prompts_cultivate, prompts_cure, prompts_ecb

    return {
        "cube-awareness": prompts_cube.build_awareness,
        "cube-diversity": prompts_cube.build_diversity,
        "cure-ladder": prompts_cure.build_ladder,
        "cultdiff": prompts_cultdiff.build_cultdiff,
        "cultivate": prompts_cultivate.build_cultivate,
        "ecb": prompts_ecb.build_ecb,
    }


def prompt_set_names() -> list[str]:
    """Every prompt set a build can make, in build order: the registry's, then the native variants."""
    return [*registry(), *NATIVE_VARIANTS]
