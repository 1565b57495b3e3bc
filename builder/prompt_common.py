"""What every prompt-set family shares: stable prompt ids, country slice fields and seed schemes."""

from __future__ import annotations

from typing import Any

from cultureboard.countries import Country
from cultureboard.naming import slug


def make_prompt_id(prompt_set: str, *parts: Any) -> str:
    """A prompt id built from what the prompt means (set, artifact, level, ...), never from row order,
    so it is stable across rebuilds: ``cure-ladder/q5449200/n-c-r``. Artifact ids keep their case-free
    slug; parts that are None are skipped."""
    return "/".join([prompt_set, *(slug(p) for p in parts if p is not None and p != "")])


def country_fields(country: Country) -> dict[str, str]:
    """The slice fields every prompt row carries for its country."""
    return {
        "country": country.iso2,
        "country_name": country.name,
        "continent": country.continent,
        "region_group": country.region_group,
    }


def consecutive_seeds(base: int, n: int) -> list[int]:
    """Seed scheme ``consecutive``: image k of a prompt uses seed ``base + k`` (CUBE J.1 starts at 0)."""
    return list(range(base, base + n))


#: Nouns that take no indefinite article (checked on a phrase's last word: "traditional clothing").
MASS_NOUNS = frozenset(
    {"art", "bread", "clothing", "cuisine", "dough", "embroidery", "food", "jewellery", "jewelry", "music", "pottery"}
)


def indefinite_article(phrase: str) -> str:
    """"a" or "an" for the word that starts ``phrase`` (by its spelling, with the common exceptions:
    "a uniform", "a European", "an hour"); "" for a mass noun ("jewellery", "traditional clothing")."""
    words = phrase.strip().casefold().split()
    if not words or words[-1] in MASS_NOUNS:
        return ""
    word = words[0]
    if word.startswith(("hour", "honest", "honou", "honor", "heir")):
        return "an"
    if word.startswith(("uni", "use", "usu", "uti", "eu", "one", "once")):
        return "a"
    return "an" if word[:1] in "aeiou" else "a"
