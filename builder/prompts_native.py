"""Native-language variants of prompt sets: the same prompts in each country's own language(s) (issue 26).

A variant ``<base>-native`` (:data:`~.prompt_sets.NATIVE_VARIANTS`) is built from its base set's rows, never
rendered again: for every English row whose country lists languages (``countries.csv``) and that has at least
one translation kept by :mod:`.translate`'s check, it holds

* the English row itself, ``language = "en"``, id ``<variant>/<the base row's id parts>/en``;
* one row per kept translation: the translated ``text``, ``language`` its BCP 47 tag, ``translation_of`` the
  English row's id, ``translation_check`` the back-translation score and ``translation_source``; every other
  column (artifact, country, category, template, negative prompt, images per prompt, seeds) is the English
  row's, so a native row and its English row differ only in the language of the prompt.

``artifact_name`` on a native row is the artifact's Wikidata label in that language where the knowledge base has
one (the translation is asked to write it), else the English name. An English row none of whose translations was
kept is left out (it would have no pair to compare with).
"""

from __future__ import annotations

from cultureboard.countries import CountryTable

from .prompt_common import make_prompt_id
from .prompt_sets import NATIVE_VARIANTS, PromptSet
from .translate import Request, Translation

VERSION = "1.0"

#: Why the other prompt sets have no native variant yet (shown in every variant's notes).
NOT_VARIANTS = (
    "Only cube-awareness and cultdiff have native variants: each of their prompts names one artifact of one country, "
    "so a translation into that country's language is a like-for-like pair. cube-diversity's global prompts have no "
    "country (so no language) and its images are mapped to artifacts by their English names; cure-ladder's levels "
    "differ only by the words each adds (name, category, country), which a translation must keep level by level and "
    "our check does not test; cultivate's reference descriptors and ecb's edit chains and culture questions are "
    "keyed to the English prompts and would need their own translated rows first."
)


def translation_requests(base: PromptSet, countries: CountryTable, labels: dict[str, dict[str, str]]) -> list[Request]:
    """One request per (row of ``base`` whose country lists languages, language); ``labels`` are the artifacts'
    Wikidata labels by language ({qid: {tag: label}})."""
    return [
        Request(row["prompt_id"], row["country"], base.name, row["text"], language, row["artifact_name"],
                labels.get(row["artifact_id"] or "", {}).get(language))
        for row in base.rows if row["country"]
        for language in countries.by_iso(row["country"]).languages
    ]


def native_id(name: str, english_id: str, language: str) -> str:
    """``cube-awareness/q816663/ng`` -> ``cube-awareness-native/q816663/ng/yo`` (``/en`` for the English row)."""
    return make_prompt_id(name, *english_id.split("/")[1:], language)


def build_native(name: str, base: PromptSet, countries: CountryTable, kept: dict[tuple[str, str], Translation],
                 labels: dict[str, dict[str, str]], report: dict) -> PromptSet:
    """The variant ``name`` of ``base`` from the translations ``kept`` ({(base prompt id, language): Translation},
    checked); ``report`` is the translation stage's (its threshold goes into the notes)."""
    assert NATIVE_VARIANTS[name] == base.name, (name, base.name)
    rows = []
    for row in base.rows:
        languages = [t for t in (countries.by_iso(row["country"]).languages if row["country"] else ())
                     if (row["prompt_id"], t) in kept]
        if not languages:
            continue
        english = {**row, "prompt_set": name, "prompt_id": native_id(name, row["prompt_id"], "en"), "language": "en"}
        rows.append(english)
        for language in languages:
            t = kept[row["prompt_id"], language]
            rows.append({
                **english, "prompt_id": native_id(name, row["prompt_id"], language), "text": t.text,
                "artifact_name": labels.get(row["artifact_id"] or "", {}).get(language, row["artifact_name"]),
                "language": language, "translation_of": english["prompt_id"], "translation_check": t.score,
                "translation_source": t.source,
            })
    used = sorted({r["language"] for r in rows} - {"en"})
    return PromptSet(
        name=name, version=VERSION, family=base.family,
        description=f"{base.name} in the languages of its countries: each English prompt with its translations "
                    f"(language, translation_of), for the parity gap between them. Languages: "
                    f"{', '.join(used) or 'none'}.",
        rows=rows,
        notes=[
            f"Rows are {base.name}'s (version {base.version}) rows, unchanged but for their ids, paired with their "
            "translations into the country's official or most spoken languages (cultureboard/data/countries.csv, "
            "BCP 47). Seeds, images per prompt, artifact and negative prompt are the English row's.",
            "Translations come from the build's translation file (translation_source 'override') or its LLM stage "
            "('llm:<backend>:<model>'); each was translated back into English and kept only when the all-MiniLM-L6-v2 "
            f"similarity of the back-translation to the English prompt (translation_check) is at least "
            f"{report['threshold']}. Rejected translations are listed in build.json (translations.flagged), never "
            "used; an English prompt without a kept translation is left out.",
            "artifact_name on a native row is the artifact's Wikidata label in that language where the knowledge base "
            "has one, else the English name. The negative prompt stays English.",
            NOT_VARIANTS,
        ],
    )
