"""Entanglement: a scorer that learned from the same data as the model it scores may favour it.

Scorers declare what they were trained on as a list of corpus names (``training_data`` of their entry in
``evaluators/engine/data/scorers.yaml``, e.g. ``[LAION-2B, HPDv2]``; a result's provenance may carry the list
per scorer, and then that wins); submissions declare ``model.training_data`` as free text. A corpus name's
*key* is its first word, lowercased, up to a hyphen or space ("LAION-2B" -> ``laion``, "DataComp-1B" ->
``datacomp``, "WIT-400M" -> ``wit``); a submission overlaps a scorer when its text contains one of the scorer's
keys as a whole word ("a LAION-5B subset" contains ``laion``). Such a cell carries a badge: the score may be
inflated by shared training data, not earned.
"""

from __future__ import annotations

import re

from cultureboard.errors import CultureboardError

_WORDS = re.compile(r"[a-z0-9]+")


def registry_training_data() -> dict[str, list[str]]:
    """scorer name -> the corpus names its registry entry declares (empty where it declares none)."""
    from cultureboard.evaluators.engine.scorers import load_registry

    try:
        registry = load_registry()
    except CultureboardError:
        return {}
    return {name: [str(c) for c in entry.get("training_data") or []] for name, entry in registry.items()}


def declared(result, scorer: str, registry: dict[str, list[str]]) -> list[str]:
    """What ``scorer`` was trained on, as the result's provenance records it, else as the registry declares it."""
    for s in result.summary["provenance"]["scorers"]:
        if s["name"] == scorer and isinstance(s.get("training_data"), list):
            return [str(c) for c in s["training_data"]]
    return registry.get(scorer, [])


def key(corpus: str) -> str:
    words = _WORDS.findall(corpus.lower().split("-", 1)[0])
    return words[0] if words else ""


def overlap(corpora: list[str], text) -> list[str]:
    """The corpus names of ``corpora`` whose key is a whole word of ``text`` (none when ``text`` is not text)."""
    if not isinstance(text, str) or not text.strip():
        return []
    words = set(_WORDS.findall(text.lower()))
    return [c for c in corpora if key(c) and key(c) in words]
