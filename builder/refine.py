"""The builder's LLM refinement stage: filter, then completion (CUBE section 3.1 "Refinement", appendix D.4).

1. Filter ("removing noise"). Every artifact is put to the LLM with CUBE's own question, "Can you
   classify if <item> belongs to <country> <concept>? Answer yes or no.": ``yes`` keeps it, ``no``
   drops it. A refusal, an unreadable answer or a failed call keeps it (fail-open: the knowledge base
   is the primary source) and is counted.
2. Completion ("adding missing artifacts"), per artifact list of one country, concept, category and
   subcategory, with the self-critique technique of Lahoti et al. (2023): one call critiques the list
   (what popular artifacts are missing or wrong), a second addresses the critique and rewrites it.
   Names in the rewrite that match no known name or alias of that country and concept become
   ``source="llm"`` artifacts. Names the rewrite leaves out are not dropped: dropping is the filter's job.

Every call goes through :class:`~cultureboard.builder.llm_backends.CachedLLM` and every outcome is one
decision record, so a build with a warm cache makes no calls and gives the same artifacts.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable

from cultureboard.countries import CountryTable
from cultureboard.naming import slug

from .llm_backends import CachedLLM, LLMCallError, Reply, answer_json

FILTER_PARAMS = {"temperature": 0, "max_tokens": 8}
CRITIQUE_PARAMS = {"temperature": 0, "max_tokens": 512}
REWRITE_PARAMS = {"temperature": 0, "max_tokens": 2048}
ANSWER_CHARS = 500  # the raw answer kept in a decision record

ERROR_KINDS = LLMCallError.KINDS
#: Why a filter call kept or dropped its artifact (one count each in the report).
FILTER_REASONS = ("yes", "no", "refusal", "garbage", *ERROR_KINDS)
#: Why a completion list got nothing added (the report also counts lists, added names and names over the cap).
NO_ADDITION_REASONS = ("no-new-names", "refusal", "garbage", *ERROR_KINDS)

_REFUSAL = re.compile(r"\b(i'?m sorry|i am sorry|i can'?t|i cannot|i'?m unable|i am unable|i'?m not able|as an ai)\b")
_BULLET = re.compile(r"^\s*(?:[-*•·]+|\(?\d+[.):])\s*")
_DESCRIPTION = re.compile(r"\s+[-–—]\s+|:\s")  # "Pizza - a flatbread ..." or "Pizza: a flatbread ..."
_MAX_NAME_WORDS = 12  # a longer line is prose, not a name


@dataclass
class RefineResult:
    artifacts: list[dict[str, Any]]
    decisions: list[dict[str, Any]]
    report: dict[str, Any]


def concept_phrase(artifact: dict[str, Any], countries: CountryTable) -> str:
    """``Italian cuisine``, ``Italian landmarks``; art uses its subcategory when known (``Italian clothing``)."""
    adjective = countries.by_iso(artifact["country"]).adjective
    concept = artifact["concept"]
    if concept == "art" and artifact.get("subcategory"):
        concept = artifact["subcategory"]
    return f"{adjective} {concept}"


def filter_question(artifact: dict[str, Any], countries: CountryTable) -> str:
    """CUBE D.4's filter question for one artifact."""
    return f"Can you classify if {artifact['name']} belongs to {concept_phrase(artifact, countries)}? Answer yes or no."


def classify_answer(text: str) -> str:
    """``yes`` / ``no`` (the first word, case and punctuation aside), ``refusal``, or else ``garbage``."""
    words = text.split()
    first = words[0].strip("\"'`*_.,:;!?()[]").lower() if words else ""
    if first in ("yes", "no"):
        return first
    return "refusal" if _is_refusal(text) else "garbage"


def _is_refusal(text: str) -> bool:
    return bool(_REFUSAL.search(text.replace("\u2019", "'").lower()))


def parse_names(text: str) -> list[str]:
    """The artifact names in a rewritten list: a JSON array of strings, or one name per line.

    Bullets, numbering, markdown emphasis and trailing `` - description`` parts are stripped; headers
    (``# ...`` or ending in ``:``), prose lines and lines without a letter are skipped; repeats are dropped.
    """
    lines = _json_array(text)
    if lines is None:
        lines = text.splitlines()
    names, seen = [], set()
    for line in lines:
        name = _BULLET.sub("", line).strip().strip("*_`\"'").strip()
        if name.startswith("#") or name.endswith(":"):
            continue
        name = _DESCRIPTION.split(name, maxsplit=1)[0].strip().strip("*_`\"'").strip()
        if not any(ch.isalpha() for ch in name) or len(name.split()) > _MAX_NAME_WORDS:
            continue
        if _norm(name) not in seen:
            seen.add(_norm(name))
            names.append(name)
    return names


def _json_array(text: str) -> list[str] | None:
    start, end = text.find("["), text.rfind("]")
    if start < 0 or end < start:
        return None
    try:
        value = answer_json(text[start : end + 1])
    except ValueError:
        return None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    return None


def _norm(name: str) -> str:
    """Case-, accent- and punctuation-insensitive form of a name, for matching."""
    text = unicodedata.normalize("NFKD", name)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).casefold()
    return " ".join(re.sub(r"[\W_]+", " ", text).split())


def _llm_qid(country: str, concept: str, name: str) -> str:
    """``llm:it-cuisine-gelato``: country and concept are part of the id, since one dish name may be
    proposed for two countries; a name with no ASCII letters is identified by a hash."""
    tail = slug(name)
    if tail == "x":
        tail = hashlib.sha256(name.encode("utf-8")).hexdigest()[:12]
    return f"llm:{slug(country)}-{slug(concept)}-{tail}"


def refine(
    artifacts: Iterable[dict[str, Any]], llm: CachedLLM | None, countries: CountryTable, *,
    complete: bool = True, max_additions: int = 20,
) -> RefineResult:
    """Filter ``artifacts`` with the LLM, then (``complete``) add up to ``max_additions`` missing
    artifacts per list. With ``llm=None`` (``--llm none``) the artifacts come back unchanged."""
    artifacts = list(artifacts)
    if llm is None:
        return RefineResult(artifacts, [], {"skipped": True, "reason": "--llm none"})
    run = _Run(llm, countries)
    kept = [a for a in artifacts if run.filter_one(a)]
    added = run.complete(kept, artifacts, max_additions) if complete else []
    return RefineResult(kept + added, run.decisions, run.report())


class _Run:
    """The decisions and counts of one refinement run."""

    def __init__(self, llm: CachedLLM, countries: CountryTable):
        self.llm = llm
        self.countries = countries
        self.decisions: list[dict[str, Any]] = []
        self.calls = 0
        self.cache_hits = 0
        self.filter_counts: Counter[str] = Counter()
        self.completion_counts: Counter[str] = Counter()

    def chat(self, prompt: str, params: dict[str, Any]) -> Reply:
        reply = self.llm.chat([{"role": "user", "content": prompt}], **params)
        self.calls += 1
        self.cache_hits += reply.cached
        return reply

    def record(self, stage: str, reply: Reply, decision: str, reason: str, *, artifact_id: str | None,
               name: str | None, country: str, concept: str) -> None:
        self.decisions.append({
            "stage": stage, "artifact_id": artifact_id, "name": name, "country": country, "concept": concept,
            "decision": decision, "reason": reason, "backend": self.llm.name, "model": self.llm.model,
            "cache_key": reply.key, "cached": reply.cached, "answer": reply.text[:ANSWER_CHARS],
        })

    def filter_one(self, artifact: dict[str, Any]) -> bool:
        """Ask the filter question; True unless the answer is ``no``."""
        reply = self.chat(filter_question(artifact, self.countries), FILTER_PARAMS)
        reason = reply.error or classify_answer(reply.text)
        decision = {"yes": "keep", "no": "drop"}.get(reason, "keep-undecided")
        self.filter_counts[reason] += 1
        self.filter_counts[decision] += 1
        self.record("filter", reply, decision, reason, artifact_id=artifact["qid"], name=artifact["name"],
                    country=artifact["country"], concept=artifact["concept"])
        return decision != "drop"

    def complete(self, kept: list[dict[str, Any]], everything: list[dict[str, Any]],
                 max_additions: int) -> list[dict[str, Any]]:
        """Critique and rewrite each list of ``kept``; a name known in ``everything`` (dropped ones
        included, so the filter's no is not undone) is never added."""
        known: dict[tuple[str, str], set[str]] = {}
        qids = {a["qid"] for a in everything}
        for a in everything:
            known.setdefault((a["country"], a["concept"]), set()).update(
                _norm(n) for n in [a["name"], *(a.get("aliases") or [])])
        lists: dict[tuple, list[dict[str, Any]]] = {}
        for a in kept:
            key = (a["country"], a["concept"], a.get("category") or "", a.get("subcategory") or "")
            lists.setdefault(key, []).append(a)
        added = []
        for key in sorted(lists):
            added += self.complete_list(lists[key], known[key[:2]], qids, max_additions)
        return added

    def complete_list(self, members: list[dict[str, Any]], known: set[str], qids: set[str],
                      max_additions: int) -> list[dict[str, Any]]:
        first = members[0]
        country, concept = first["country"], first["concept"]
        phrase = concept_phrase(first, self.countries)
        listing = "\n".join(f"- {a['name']}" for a in members)
        where = {"country": country, "concept": concept}
        self.completion_counts["lists"] += 1

        critique = self.chat(
            f"Here is a list of popular {phrase} artifacts:\n{listing}\n\n"
            f"Critique this list: which popular {phrase} artifacts are missing, and which entries are wrong?",
            CRITIQUE_PARAMS,
        )
        if critique.error:
            return self.no_additions(critique, critique.error, where)
        rewrite = self.chat(
            f"Here is a list of popular {phrase} artifacts:\n{listing}\n\n"
            f"Here is a critique of the list:\n{critique.text}\n\n"
            f"Address the critique and rewrite the list, adding the missing popular {phrase} artifacts. "
            "Answer with one name per line and nothing else.",
            REWRITE_PARAMS,
        )
        if rewrite.error:
            return self.no_additions(rewrite, rewrite.error, where)
        names = parse_names(rewrite.text)
        listed = {_norm(n) for a in members for n in [a["name"], *(a.get("aliases") or [])]}
        if not any(_norm(n) in listed for n in names):  # not a rewrite of this list
            return self.no_additions(rewrite, "refusal" if _is_refusal(rewrite.text) else "garbage", where)

        new = []
        for name in names:
            qid = _llm_qid(country, concept, name)
            if _norm(name) in known or qid in qids:
                continue
            if len(new) == max_additions:
                self.completion_counts["over_cap"] += 1
                continue
            known.add(_norm(name))
            qids.add(qid)
            new.append({
                "qid": qid, "name": name, "aliases": [], "country": country, "concept": concept,
                "category": first.get("category"), "subcategory": first.get("subcategory"),
                "source": "llm", "popularity": None, "hop": None, "root": None,
            })
        if not new:
            return self.no_additions(rewrite, "no-new-names", where)
        self.completion_counts["added"] += len(new)
        for artifact in new:
            self.record("completion", rewrite, "add", "rewrite", artifact_id=artifact["qid"],
                        name=artifact["name"], **where)
        return new

    def no_additions(self, reply: Reply, reason: str, where: dict[str, str]) -> list[dict[str, Any]]:
        """Record a list that got nothing added, and why."""
        self.completion_counts[reason] += 1
        self.record("completion", reply, "none", reason, artifact_id=None, name=None, **where)
        return []

    def report(self) -> dict[str, Any]:
        def errors(counts: Counter[str]) -> int:
            return sum(counts[kind] for kind in ERROR_KINDS)

        return {
            "backend": self.llm.name, "model": self.llm.model,
            "calls": self.calls, "cache_hits": self.cache_hits,
            "filter": {
                **{r: self.filter_counts[r] for r in FILTER_REASONS}, "errors": errors(self.filter_counts),
                **{d: self.filter_counts[d] for d in ("keep", "drop", "keep-undecided")},
            },
            "completion": {
                **{r: self.completion_counts[r] for r in ("lists", "added", "over_cap", *NO_ADDITION_REASONS)},
                "errors": errors(self.completion_counts),
            },
            "kept": self.filter_counts["keep"] + self.filter_counts["keep-undecided"],
            "dropped": self.filter_counts["drop"],
            "added": self.completion_counts["added"],
        }
