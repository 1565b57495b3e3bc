"""Translating English prompts into a country's languages, checked by back-translation (the native variants).

Each request is one English prompt row and one BCP 47 language of its country. Its translation comes from:

1. the **translation file** (build option ``translations``), a human-editable YAML like the curation file, whose
   entries win over the LLM (``translation_source = "override"``)::

       translations:
         - language: yo                                   # BCP 47, as in countries.csv
           en: "A high resolution image of akara from Nigerian cuisine."   # the English prompt, verbatim
           text: "Àwòrán ..."                             # the translation given to the model
           back: "A high-quality picture of akara ..."    # its translation back into English, made without the en line
           note: "optional: who wrote or checked it"
           same_as_english: true                          # optional: the text is meant to read as the en line

2. else the builder's **LLM stage** (``--llm SPEC``, ``translation_source = "llm:<backend>:<model>"``): one call
   translates (the artifact's Wikidata label in that language, when the knowledge base has one, is given as the
   name to write), a second translates the answer back into English. Both go through
   :class:`~cultureboard.builder.llm_backends.CachedLLM`, so a build with the stored ``llm/cache.jsonl`` makes no
   call and gives the same rows, and each outcome is one row of ``llm-decisions`` (stage ``translation``);
3. else (``--llm none`` and no entry) there is no translation: the row is absent and counted.

Every text of the file (``en``, ``text``, ``back``, ``note``) passes :func:`cultureboard.text.text_problem`, the
rule English prompts pass, or the file is refused naming its entry; an LLM's translation or back-translation that
fails it is flagged with the reason, never used. An entry in one of the build's languages that matches no request
(its ``en`` is no English prompt of this build) is listed in the report (``unmatched``) and named in a warning;
entries in languages the build does not translate into are only counted (``other_languages``).

**The check.** The back-translation is compared with the English prompt: ``translation_check`` is the cosine of
their all-MiniLM-L6-v2 sentence embeddings (the embedder of the ECB knowledge stage, offline, CPU), clipped to
[0, 1] and rounded to 4 decimals. A translation scoring below the threshold (option ``translation_threshold``,
default :data:`DEFAULT_THRESHOLD`) is left out of the prompt set and listed for review in the build report
(``translations.flagged``, with its ``reason``), never used. So is a translation that is its English prompt itself
(the same after :func:`cultureboard.text.comparable`: an LLM that echoes its input, whose back-translation scores
1.0 and would compare English with English), unless the file's entry says ``same_as_english: true`` (a prompt that
a language writes as English does, e.g. with a loanword).

Why 0.9: faithful back-translations of the demo's prompts score 0.91 to 1.0 (the lowest are rewordings such as
"a very clear photo of Chapman from the food of Nigerians"), while on constructed pairs back-translations that
lost or swapped the artifact score 0.60 to 0.86 ("a picture of a Nigerian meal" for jollof rice 0.60, "a dance
from Nigeria" for the Ite-igbo dance 0.82, "fried rice" for jollof rice 0.85, "a palace in Spain" for the Royal
Palace of Madrid 0.86), and a refusal about 0.2. The check is strict about names: a back-translation that keeps
the native name ("Palacio Real de Madrid", 0.88) or describes the dish instead ("melon soup" for egusi soup,
0.72) is flagged too, which is why the back-translation is asked for English names. The embedder is
English-only, which is why the check reads the back-translation and never the translation itself; it cannot see
a wrong word that the back-translation repairs, so it is a filter for gross errors, not a native speaker's review.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cultureboard.countries import check_language_tag
from cultureboard.errors import CultureboardError
from cultureboard.text import FIELD, PROMPT, check_text, comparable, printable, text_problem

from .llm_backends import CachedLLM, Reply
from .llm_cache import ResponseCache
from .yaml_file import load_yaml

DEFAULT_THRESHOLD = 0.9
TRANSLATE_PARAMS = {"temperature": 0, "max_tokens": 256}
ANSWER_CHARS = 500  # the raw answer kept in a decision record
ENTRY_FIELDS = ("language", "en", "text", "back", "note", "same_as_english")
_FORMAT = ("write a YAML mapping with a list 'translations' of entries {language, en, text, back, note, "
           "same_as_english}: see builder/translate.py")
#: The unmatched entries a warning names (the report lists them all).
WARNED_ENTRIES = 3


@dataclass(frozen=True)
class Request:
    """One translation to make: an English prompt row's text into ``language``; ``name`` is the artifact's English
    name in it and ``label`` its Wikidata label in the language (None when the knowledge base has none)."""

    prompt_id: str
    country: str
    prompt_set: str
    text: str
    language: str
    name: str | None
    label: str | None


@dataclass(frozen=True)
class Translation:
    text: str
    back: str
    source: str  # "override" or "llm:<backend>:<model>"
    score: float | None = None  # set by the check
    same_as_english: bool = False  # the file says the text is meant to read as the English prompt
    entry: int | None = None  # its entry number in the translation file


def load_translations(path: str | Path) -> dict[tuple[str, str], Translation]:
    """The translation file, checked: {(language, English text): Translation}. Every entry has the four
    string fields language (a BCP 47 tag), en, text and back, each a text the dataset may hold
    (:func:`cultureboard.text.text_problem`); ``note`` (text) and ``same_as_english`` (a boolean) are optional; two
    entries for the same language and English text are an error, as is a key repeated in one entry."""
    data = load_yaml(path, "a translation file", _FORMAT)
    if not isinstance(data, dict) or set(data) != {"translations"} or not isinstance(data["translations"], list):
        raise CultureboardError(path, "must be a mapping with one key, translations, holding a list", _FORMAT)
    out: dict[tuple[str, str], Translation] = {}
    for i, entry in enumerate(data["translations"], 1):
        where = f"{path} (translations entry {i})"
        if not isinstance(entry, dict) or set(map(str, entry)) - set(ENTRY_FIELDS):
            raise CultureboardError(where, "is not a mapping of only " + ", ".join(ENTRY_FIELDS), _FORMAT)
        for field in ENTRY_FIELDS[:4]:
            if not isinstance(entry.get(field), str) or not entry[field].strip():
                raise CultureboardError(where, f"has no {field} string", f"give {field}: \"...\" (quote it)")
        for field, rule in (("en", PROMPT), ("text", PROMPT), ("back", PROMPT), ("note", FIELD)):
            if field in entry:
                check_text(entry[field] if field == "note" else entry[field].strip(), rule,
                           f"{path} (translations entry {i}, {field})",
                           f"write {field} as plain text: one line of visible characters, no control, bidirectional "
                           "or invisible format characters")
        if not isinstance(entry.get("same_as_english", False), bool):
            raise CultureboardError(where, f"same_as_english is {entry['same_as_english']!r}, not true or false",
                                    "write same_as_english: true, or leave it out")
        language = check_language_tag(entry["language"], f"{where}, language")
        key = (language, entry["en"].strip())
        if key in out:
            raise CultureboardError(where, f"repeats the {language} translation of {key[1]!r}", "keep one entry")
        out[key] = Translation(entry["text"].strip(), entry["back"].strip(), "override",
                               same_as_english=entry.get("same_as_english", False), entry=i)
    return out


def translate_messages(request: Request) -> list[dict[str, str]]:
    """The translation request: the prompt, the language by its BCP 47 tag, the artifact's name to write."""
    name = (f' Write the name "{request.name}" as "{request.label}", its name in that language.'
            if request.label and request.name else "")
    return [{"role": "user", "content":
             f"Translate this text-to-image prompt from English into the language with BCP 47 tag "
             f"'{request.language}', as a native speaker would write it. Keep its meaning and level of detail.{name} "
             f"Answer with the translation only.\n\n{request.text}"}]


def back_messages(text: str, language: str) -> list[dict[str, str]]:
    """The back-translation request (it is never shown the English prompt); names go back to English where
    English has one, so that the check compares like with like."""
    return [{"role": "user", "content":
             f"Translate this text-to-image prompt from the language with BCP 47 tag '{language}' into English. "
             f"Write names in their usual English form where they have one. Answer with the translation only."
             f"\n\n{text}"}]


def clean(answer: str) -> str:
    """An answer without surrounding white space and quotes."""
    return answer.strip().strip("\"'“”«»").strip()


def similarity(first: list[str], second: list[str]) -> list[float]:
    """Cosine similarity of all-MiniLM-L6-v2 embeddings, pair by pair, clipped to [0, 1] and rounded to 4 places."""
    if not first:
        return []
    from .knowledge import embed

    sims = (embed(first) * embed(second)).sum(axis=1)
    return [round(float(s), 4) for s in np.clip(sims, 0.0, 1.0)]


@dataclass
class TranslationResult:
    kept: dict[tuple[str, str], Translation]  # (English prompt id, language) -> checked translation
    decisions: list[dict[str, Any]]
    report: dict[str, Any]
    warnings: list[str]  # one line each, for stderr


def refusal(text: str, request: Request, translation: Translation | None = None) -> str | None:
    """Why the translation ``text`` of ``request`` may not be used whatever its back-translation: a text the dataset
    may not hold, or the English prompt itself (unless ``translation`` is a file entry that says it is meant)."""
    problem = text_problem(text, PROMPT)
    if problem is not None:
        return f"the translation {problem}"
    if comparable(text) == comparable(request.text) and not (translation and translation.same_as_english):
        return ("the translation is the English prompt itself (an entry that is meant so says "
                "same_as_english: true)")
    return None


def translate(requests: list[Request], overrides: dict[tuple[str, str], Translation], llm: CachedLLM | None,
              threshold: float, source: str = "the translation file") -> TranslationResult:
    """Translate and check every request (see the module docstring); the report counts, per language, the rows
    kept from each source, the flagged and the absent, and lists the flagged ones for review and the entries of
    ``overrides`` (read from ``source``) that match no request."""
    made: dict[Request, Translation] = {}
    asked: dict[Request, Reply] = {}  # the translation call of each LLM-made translation
    refused: dict[Request, str] = {}  # translations refused before their back-translation is compared
    decisions: list[dict[str, Any]] = []
    counts: dict[str, Counter] = {}
    used: set[tuple[str, str]] = set()
    calls = hits = 0
    for r in requests:
        counts.setdefault(r.language, Counter())
        found = overrides.get((r.language, r.text))
        if found is not None:
            used.add((r.language, r.text))
        elif llm is not None:
            replies = [llm.chat(translate_messages(r), **TRANSLATE_PARAMS)]
            first = clean(replies[0].text)
            if not replies[0].error and first and refusal(first, r) is None:
                replies.append(llm.chat(back_messages(first, r.language), **TRANSLATE_PARAMS))
            calls, hits = calls + len(replies), hits + sum(x.cached for x in replies)
            failed = next((x for x in replies if x.error or not clean(x.text)), None)
            if failed is not None:
                counts[r.language]["absent"] += 1
                decisions.append(_decision(r, llm, failed, "absent", failed.error or "empty answer"))
                continue
            back = clean(replies[1].text) if len(replies) > 1 else ""
            found, asked[r] = Translation(first, back, f"llm:{llm.name}:{llm.model}"), replies[0]
            why = refusal(first, r) or (text_problem(back, PROMPT) and f"the back-translation {text_problem(back, PROMPT)}")
            if why:
                refused[r] = why
        if found is None:
            counts[r.language]["absent"] += 1
            continue
        if r not in refused and (why := refusal(found.text, r, found)):
            refused[r] = why
        made[r] = found
    compared = [r for r in made if r not in refused]
    scores = dict(zip(compared, similarity([r.text for r in compared], [made[r].back for r in compared])))
    kept, flagged = {}, []
    for r, t in made.items():
        score = scores.get(r)
        reason = refused.get(r) or (f"back-translation similarity {score:.4f} {'>=' if score >= threshold else '<'} "
                                    f"threshold {threshold}")
        passed = r not in refused and score >= threshold
        if passed:
            kept[r.prompt_id, r.language] = Translation(t.text, t.back, t.source, score)
        else:
            flagged.append({"prompt_id": r.prompt_id, "language": r.language, "source": t.source, "score": score,
                            "reason": reason, "text": _stored(t.text), "back": _stored(t.back)})
        counts[r.language][("override" if r not in asked else "llm") if passed else "flagged"] += 1
        if r in asked:
            decisions.append(_decision(r, llm, asked[r], "kept" if passed else "flagged",
                                       f"{reason}; back-translation: {_stored(t.back)}"))
    languages = {r.language for r in requests}  # an entry in another language is for another build
    unmatched = sorted(({"entry": t.entry, "language": language, "en": en} for (language, en), t in overrides.items()
                        if (language, en) not in used and language in languages), key=lambda e: e["entry"] or 0)
    report = {
        "threshold": threshold, "llm": f"{llm.name}:{llm.model}" if llm else None, "calls": calls, "cache_hits": hits,
        "languages": {lang: {k: c[k] for k in ("override", "llm", "flagged", "absent")}
                      for lang, c in sorted(counts.items())},
        "kept": len(kept), "flagged": sorted(flagged, key=lambda f: (f["prompt_id"], f["language"])),
        "absent": sum(c["absent"] for c in counts.values()), "unmatched": unmatched,
        "other_languages": sum(language not in languages for language, _ in overrides),
    }
    warnings = []
    if unmatched:
        named = "; ".join(f"entry {e['entry']}: {e['language']} {printable(e['en'], 50)}"
                          for e in unmatched[:WARNED_ENTRIES])
        more = f"; and {len(unmatched) - WARNED_ENTRIES} more" if len(unmatched) > WARNED_ENTRIES else ""
        warnings.append(f"{source}: {len(unmatched)} of its entries in this build's languages match no English prompt "
                        f"of the build and are not used ({named}{more}) (fix: copy the English prompt verbatim into "
                        "en, check the language, or remove the entry; build.json lists them as translations.unmatched)")
    return TranslationResult(kept, decisions, report, warnings)


def _stored(text: str) -> str:
    """``text`` as the report stores it: as it is when the dataset could hold it, else escaped (a surrogate cannot
    be written as UTF-8, a control character would reach whoever reads the report)."""
    return text if text_problem(text, PROMPT) is None else printable(text, ANSWER_CHARS)


def _decision(r: Request, llm: CachedLLM, reply: Reply, decision: str, reason: str) -> dict[str, Any]:
    return {"stage": "translation", "artifact_id": r.prompt_id, "name": r.language, "country": r.country,
            "concept": r.prompt_set, "decision": decision, "reason": reason, "backend": llm.name, "model": llm.model,
            "cache_key": reply.key, "cached": reply.cached, "answer": reply.text[:ANSWER_CHARS]}


def translation_stage(requests: list[Request], backend, overrides: dict[tuple[str, str], Translation],
                      threshold: float, cache_bytes: bytes, source: str = "the translation file"
                      ) -> tuple[TranslationResult, bytes]:
    """The build's translation stage: (result, the response cache's bytes after it). ``backend`` is the ``--llm``
    backend (None for ``--llm none``: only the translation file's entries ``overrides``, read from ``source``, are
    used)."""
    with tempfile.TemporaryDirectory(prefix="cultureboard-translate-") as scratch:
        path = Path(scratch) / "cache.jsonl"
        path.write_bytes(cache_bytes)
        llm = CachedLLM(backend, ResponseCache(path)) if backend is not None else None
        result = translate(requests, overrides, llm, threshold, source)
        cache_bytes = path.read_bytes()
    return result, cache_bytes
