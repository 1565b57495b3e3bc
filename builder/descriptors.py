"""CULTIVate's reference descriptors and stereotype candidates: the ``cultivate-descriptors`` config.

Malakouti et al. (2025), section 3.1 and appendix A. For every prompt of the ``cultivate`` set and each of five
visual dimensions (:data:`DIMENSIONS`: setting, objects, attire, interaction, spatial) the dataset holds the
*reference descriptors* that a faithful image of the activity in that country would show, each tagged with a
style (:data:`STYLES`: traditional, modern or neutral); and, per prompt (an activity in a country), *stereotype
candidates*: the culture-specific items a text-to-image model may over-use when it depicts that activity there (the
EXAG candidates S_r of eq. 4; a funeral is not asked about the country's wedding finery).

With an LLM (``--llm SPEC``) they come from the paper's proposer-refiner stage:

1. **Propose.** Each proposer (the build's ``descriptor_proposers`` specs; by default the ``--llm`` backend alone;
   the paper used GPT-4o and Gemini 2.5 Flash) is asked, per prompt and dimension, for up to :data:`MAX_ITEMS`
   mutually exclusive descriptors as JSON ``{"descriptors": [{"token", "style"}]}`` (temperature 0.2).
2. **Refine.** The union of the proposals (duplicates merged) goes to the refiner (the ``--llm`` backend,
   temperature 0.1), which keeps the culturally accurate, on-dimension items, merges duplicates and returns at
   most :data:`MAX_ITEMS`. A dimension with no proposal is empty (allowed, and skipped by the metrics); a refiner
   that gives no usable answer is replaced by the union of the proposals (first :data:`MAX_ITEMS`), and counted.
3. **Stereotypes.** One call per prompt, naming its activity and country as the paper's Table 28 does
   (temperature 0.1), for up to :data:`STEREOTYPES` noun phrases on one line, split on ``|`` (``—`` and new lines
   also accepted).

An answer that is not the JSON asked for is asked again with the problem stated, at most :data:`ATTEMPTS` times
in all (a changed request, so the retry is cached and replayed like any call). Items with a style other than the
three are dropped and counted. Every call goes through :class:`~cultureboard.builder.llm_backends.CachedLLM`
(the build's response cache) and every outcome is one row of the ``llm-decisions`` config (stages
``descriptors-propose``, ``descriptors-refine``, ``stereotypes``; ``artifact_id`` holds the prompt id, ``name``
the dimension, ``concept`` the activity category), so a build with a warm cache makes no calls and gives the same
config.

Without an LLM (``--llm none``, the default and the demo) the rows come from a small hand-written seed file
(:data:`SEED_FILE`) for a few prompts of the demo's countries, marked ``source = "seed"``: they are not the
paper's LLM descriptors, and every other prompt has no row (its images are flagged by the evaluator).

The config has one row per prompt (:data:`SCHEMA`): its id, country, category and subcategory, one list of
``{token, style}`` per dimension, the ``stereotypes`` of its activity in its country, ``source`` (``llm`` or ``seed``), and the
``proposers`` and ``refiner`` (``backend:model``) that made it.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import pyarrow as pa
import yaml

from cultureboard.countries import CountryTable
from cultureboard.errors import CultureboardError

from .dataset import Config
from .llm_backends import CachedLLM, LLMCallError, Reply, answer_json, backend_from_spec
from .llm_cache import ResponseCache

CONFIG = "cultivate-descriptors"
PROMPT_SET = "cultivate"
DIMENSIONS = ("setting", "objects", "attire", "interaction", "spatial")
STYLES = ("traditional", "modern", "neutral")
MAX_ITEMS = 10  # per dimension (the authors' max_items)
STEREOTYPES = 15  # candidates per country (the authors' num_elements)
ATTEMPTS = 3  # calls per request, retries with the problem stated included (the authors retry 3 times)
LONG_TOKEN_WORDS = 4  # the paper asks for 1-4 words; longer tokens are kept and counted
MAX_TOKEN_WORDS = 12  # a longer "token" is prose, not a descriptor: dropped
PROPOSE_PARAMS = {"temperature": 0.2, "max_tokens": 1024}
REFINE_PARAMS = {"temperature": 0.1, "max_tokens": 1024}
STEREOTYPE_PARAMS = {"temperature": 0.1, "max_tokens": 512}
ANSWER_CHARS = 500  # the raw answer kept in a decision record
SEED_FILE = "data/cultivate_descriptors_seed.yaml"

#: Per dimension: (title, goal, include, exclude), the paper's guidance (Tables 16-20 and 23-27) in our words.
#: The evaluator's descriptor extraction uses the same guidance, so both sides describe the same things.
GUIDANCE = {
    "setting": ("Setting and background", "the place: location, architecture, art and design, major furnishings",
                ("indoors or outdoors (temple interior, city street, simple home), architectural style, art and "
                 "decoration (calligraphy, tiles, minimalist decor), large furnishings (floor cushions, rugs, "
                 "communal tables)"),
                "people, clothing, handheld objects, actions"),
    "objects": ("Objects", "the objects central to the activity: tools, vessels, foods",
                ("essential items (samovar, board game, bowls of noodle soup, shared hot pot), named as what is "
                 "seen ('bowls of noodle soup', not 'Chinese food')"),
                "people, animals, clothing, architecture, actions, background decor"),
    "attire": ("Attire", "clothing, accessories and appearance",
               ("garments, headwear, accessories, ceremonial markings, uniforms; specific garment names only where "
                "culturally essential (sari), broader categories otherwise; traditional and modern variants"),
               "tools, furniture, actions, gestures"),
    "interaction": ("Interaction and gesture", "the actions, gestures and social dynamics of the activity",
                    ("person-object actions (pouring tea from a samovar), social gestures (sharing food, group "
                     "dancing), typical postures and formations (kneeling rows, circles)"),
                    "static objects, clothing, setting"),
    "spatial": ("Spatial arrangement", "how people and key objects are laid out",
                ("positions of people relative to objects or surfaces (sitting around a sofreh, standing in line), "
                 "meaningful layouts (table seating or floor seating)"),
                "clothing, object details, actions"),
}

DESCRIPTOR_TYPE = pa.list_(pa.struct([("token", pa.string()), ("style", pa.string())]))
SCHEMA = pa.schema(
    [("prompt_id", pa.string()), ("country", pa.string()), ("category", pa.string()), ("subcategory", pa.string())]
    + [(d, DESCRIPTOR_TYPE) for d in DIMENSIONS]
    + [("stereotypes", pa.list_(pa.string())), ("source", pa.string()), ("proposers", pa.list_(pa.string())),
       ("refiner", pa.string())]
)

_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
_BULLET = re.compile(r"^\s*(?:[-*•·]+|\(?\d+[.):])\s*")
_SEPARATORS = re.compile(r"\s*(?:\||—|\n)\s*")


# --------------------------------------------------------------------------------------------- parsing

def parse_descriptors(text: str) -> tuple[list[dict[str, str]], int, str | None]:
    """(descriptors, dropped, problem) of an answer holding ``{"descriptors": [{"token", "style"}, ...]}`` or
    the bare list, optionally in a code fence or surrounded by prose.

    ``problem`` (None when usable) says why the answer as a whole is unusable: no JSON, not that shape, an
    item that is not an object with a string ``token``. Items with a style outside :data:`STYLES`, an empty
    token or one of more than :data:`MAX_TOKEN_WORDS` words are dropped and counted in ``dropped``; repeated
    tokens (case and spacing aside) are kept once."""
    value, problem = _json_value(text)
    if problem:
        return [], 0, problem
    if isinstance(value, dict):
        if not isinstance(value.get("descriptors"), list):
            return [], 0, 'the object has no "descriptors" list'
        value = value["descriptors"]
    if not isinstance(value, list):
        return [], 0, "the answer is not a list of descriptors"
    items, dropped, seen = [], 0, set()
    for k, item in enumerate(value):
        if not isinstance(item, dict) or not isinstance(item.get("token"), str):
            return [], 0, f'descriptor {k} is not an object with a string "token"'
        token = " ".join(item["token"].split())
        style = str(item.get("style", "")).strip().lower()
        if style not in STYLES or not token or len(token.split()) > MAX_TOKEN_WORDS:
            dropped += 1
            continue
        if token.casefold() not in seen:
            seen.add(token.casefold())
            items.append({"token": token, "style": style})
    return items, dropped, None


def _json_value(text: str) -> tuple[Any, str | None]:
    body = _FENCE.sub("", text.strip())
    match = re.search(r"\{.*\}|\[.*\]", body, flags=re.DOTALL)
    if not match:
        return None, "no JSON in the answer"
    try:
        return answer_json(match.group(0)), None
    except ValueError as exc:
        return None, f"invalid JSON ({getattr(exc, 'msg', exc)})"


def parse_stereotypes(text: str, limit: int = STEREOTYPES) -> list[str]:
    """The candidates of a one-line answer: split on ``|`` (the paper's example), ``—`` (its text) or new lines
    (a JSON list of strings is taken as it is);
    bullets, numbering and quotes stripped; items without a letter or of more than :data:`MAX_TOKEN_WORDS`
    words skipped; repeats (case aside) kept once; at most ``limit``."""
    body = _FENCE.sub("", text.strip())
    try:
        value = answer_json(body)
    except ValueError:
        value = None
    parts = value if isinstance(value, list) and all(isinstance(v, str) for v in value) else _SEPARATORS.split(body)
    out, seen = [], set()
    for part in parts:
        item = " ".join(_BULLET.sub("", part).strip().strip("\"'`*.").split())
        if not any(ch.isalpha() for ch in item) or len(item.split()) > MAX_TOKEN_WORDS or item.casefold() in seen:
            continue
        seen.add(item.casefold())
        out.append(item)
    return out[:limit]


# --------------------------------------------------------------------------------------------- prompts

_JSON_FORMAT = '{"descriptors": [{"token": "...", "style": "traditional|modern|neutral"}]}'


def proposer_messages(dimension: str, activity: str, country: str, max_items: int = MAX_ITEMS) -> list[dict]:
    """The proposer's request for one prompt and dimension (the paper's Tables 15-20, in our words)."""
    title, goal, include, exclude = GUIDANCE[dimension]
    system = ("You write visual descriptors used to judge whether an AI-generated image faithfully shows a social "
              "activity as it typically looks in a given country. Answer with JSON only, in the form "
              f"{_JSON_FORMAT}. Use culture-specific terms (samovar, sari) where they are precise and broader "
              "cultural phrases where they suffice. Describe the core scene of the activity, not what happens "
              "before or after it. Cover its common variations, traditional and modern. If the dimension has "
              "nothing representative, return an empty list.")
    user = (f"Dimension: {title}: {goal}.\nInclude: {include}.\nExclude: {exclude}.\n"
            f"Give up to {max_items} mutually exclusive descriptors of 1-4 words each for: {activity} in {country}.")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def refiner_messages(dimension: str, activity: str, country: str, candidates: list[dict[str, str]],
                     max_items: int = MAX_ITEMS) -> list[dict]:
    """The refiner's request (the paper's Table 21, in our words)."""
    title, goal, _, _ = GUIDANCE[dimension]
    system = ("You refine candidate visual descriptors used to judge the cultural faithfulness of AI-generated "
              "images of an activity in a country. Rules: keep only culturally accurate descriptors; keep a diverse "
              "set that covers the typical variations; never add a descriptor that is not among the candidates; "
              "merge duplicates and overly specific items; remove unrelated items and items of another dimension; "
              f"keep each to 1-4 words; return at most {max_items}; return an empty list if none is valid. "
              f"Answer with JSON only, in the form {_JSON_FORMAT}.")
    listing = json.dumps(candidates, ensure_ascii=False)
    user = f"Activity: {activity} in {country}.\nDimension: {title}: {goal}.\nCandidates: {listing}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def stereotype_messages(activity: str, country: str, n: int = STEREOTYPES) -> list[dict]:
    """The stereotype-candidate request for one activity in one country (the paper's Table 28, in our words)."""
    system = ("You name culture-specific visual elements that a text-to-image model may exaggerate when it depicts "
              "a given activity in a given country: unrealistic overuse, oversized forms or out-of-place insertions "
              "of cultural cues. Give concise noun phrases (e.g. 'Persian rugs', 'giant flags') for attire, objects, "
              "symbols, decorations, architecture and interaction styles. No generic items (trees, crowds), no "
              "scenarios.")
    user = (f"Activity: {activity}.\nCountry: {country}.\nList up to {n} such elements on a single line, separated "
            "by ' | ', with no numbering, explanation or other text.")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


# --------------------------------------------------------------------------------------------- the stage

@dataclass
class DescriptorResult:
    """The config rows (one per described prompt), the decision records and the report for build.json."""

    rows: list[dict[str, Any]]
    decisions: list[dict[str, Any]] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)


def describe(prompts: list[dict], countries: CountryTable, refiner: CachedLLM, proposers: list[CachedLLM],
             max_items: int = MAX_ITEMS, n_stereotypes: int = STEREOTYPES) -> DescriptorResult:
    """Reference descriptors and stereotype candidates of every prompt (``cultivate`` rows), from the
    proposer-refiner stage."""
    run = _Run(refiner, proposers, countries, max_items)
    rows = []
    for p in sorted(prompts, key=lambda r: r["prompt_id"]):
        dims = {d: run.dimension(p, d) for d in DIMENSIONS}
        rows.append({"prompt_id": p["prompt_id"], "country": p["country"], "category": p["category"],
                     "subcategory": p["subcategory"], **dims, "stereotypes": run.stereotypes(p, n_stereotypes),
                     "source": "llm", "proposers": [_label(llm) for llm in proposers], "refiner": _label(refiner)})
    return DescriptorResult(rows, run.decisions, run.report(len(rows)))


def seed_rows(prompts: list[dict]) -> DescriptorResult:
    """The rows of the shipped seed file for the prompts of ``prompts`` it covers (``--llm none``)."""
    text = resources.files("cultureboard.builder").joinpath(SEED_FILE).read_text(encoding="utf-8")
    seed = yaml.safe_load(text)
    by_id = {p["prompt_id"]: p for p in prompts}
    rows = []
    for pid in sorted(set(seed["prompts"]) & set(by_id)):
        p, dims = by_id[pid], seed["prompts"][pid]
        rows.append({"prompt_id": pid, "country": p["country"], "category": p["category"],
                     "subcategory": p["subcategory"],
                     **{d: [{"token": i["token"], "style": i["style"]} for i in dims.get(d) or []] for d in DIMENSIONS},
                     "stereotypes": list(seed["stereotypes"].get(pid) or []), "source": "seed",
                     "proposers": [], "refiner": None})
    report = {"source": "seed", "file": Path(SEED_FILE).name, "prompts": len(rows),
              "prompts_without_descriptors": len(prompts) - len(rows),
              "note": "hand-written seed descriptors for a few demo prompts (--llm none), not the LLM stage's"}
    return DescriptorResult(rows, [], report)


def descriptor_stage(prompt_sets: list, backend, proposer_specs: list[str], countries: CountryTable,
                     cache_bytes: bytes, deadlines=None) -> tuple[list[Config], list[dict], dict | None, bytes]:
    """The build's descriptor stage: (configs, decision records, report, the response cache's bytes after it).

    Nothing when the build has no ``cultivate`` prompt set. ``backend`` (the ``--llm`` backend, None for
    ``--llm none``) refines and, unless ``proposer_specs`` names proposers, proposes; the calls are answered from
    and appended to the response cache ``cache_bytes`` (the build's ``llm/cache.jsonl``). The proposers read their
    answers within the build's ``deadlines`` (``cultureboard.http.Deadlines``)."""
    prompts = next((ps.rows for ps in prompt_sets if ps.name == PROMPT_SET), None)
    if prompts is None:
        return [], [], None, cache_bytes
    if backend is None:
        if proposer_specs:
            raise CultureboardError("descriptor_proposers", "needs an LLM to refine the proposals, and --llm is none",
                                    "pass --llm SPEC, or leave descriptor_proposers out")
        result = seed_rows(prompts)
    else:
        with tempfile.TemporaryDirectory(prefix="cultureboard-descriptors-") as scratch:
            path = Path(scratch) / "cache.jsonl"
            path.write_bytes(cache_bytes)
            cache = ResponseCache(path)
            refiner = CachedLLM(backend, cache)
            proposers = [CachedLLM(backend_from_spec(s, deadlines=deadlines), cache)
                         for s in proposer_specs] or [refiner]
            result = describe(prompts, countries, refiner, proposers)
            cache_bytes = path.read_bytes()
    return [descriptor_config(result)], result.decisions, result.report, cache_bytes


def descriptor_config(result: DescriptorResult) -> Config:
    seed = result.report.get("source") == "seed"
    description = ("CULTIVate reference descriptors per prompt in five dimensions (setting, objects, attire, "
                   "interaction, spatial) with a traditional / modern / neutral style, and the stereotype candidates "
                   "of the activity in the country for EXAG" + (": SEED rows written by hand for a few demo prompts (--llm none), not "
                                            "the LLM stage's" if seed else ", from the proposer-refiner LLM stage"))
    if seed:
        notes = [("Built without an LLM: hand-written seed descriptors (builder/data/cultivate_descriptors_seed.yaml) "
                  "for a few prompts only; the other prompts have no row and their images are not scored on ALIGN, "
                  "HAL or EXAG. Build with --llm SPEC for the paper's proposer-refiner descriptors.")]
    else:
        notes = [(f"Proposers {', '.join(result.report['proposers'])}, refiner {result.report['refiner']} (the "
                  "paper: GPT-4o and Gemini 2.5 Flash proposers, GPT-4o refiner); every call is in llm-decisions and "
                  "llm/cache.jsonl.")]
    notes.append("The paper's reference descriptors were checked by annotators at 90.27% precision (Iran lowest, "
                 "85.21%); these were not checked by people.")
    return Config(CONFIG, pa.Table.from_pylist(result.rows, schema=SCHEMA), description, "CC0-1.0", PROMPT_SET, "2",
                  tuple(notes))


def _label(llm: CachedLLM) -> str:
    return f"{llm.name}:{llm.model}"


class _Run:
    """The calls, decisions and counts of one descriptor stage."""

    def __init__(self, refiner: CachedLLM, proposers: list[CachedLLM], countries: CountryTable, max_items: int):
        self.refiner, self.proposers, self.countries, self.max_items = refiner, proposers, countries, max_items
        self.decisions: list[dict[str, Any]] = []
        self.calls = self.cache_hits = 0
        self.counts: dict[str, Counter] = {s: Counter() for s in ("propose", "refine", "stereotypes")}
        self.items: Counter = Counter()

    def ask(self, llm: CachedLLM, messages: list[dict], params: dict, parse) -> tuple[Reply, Any, str | None, int]:
        """(last reply, parsed value, problem or error kind, attempts): asks again with the problem stated, at
        most :data:`ATTEMPTS` times; a transport error (already retried by the backend) is not asked again."""
        for attempt in range(1, ATTEMPTS + 1):
            reply = llm.chat(messages, **params)
            self.calls += 1
            self.cache_hits += reply.cached
            if reply.error:
                return reply, None, reply.error, attempt
            value, problem = parse(reply.text)
            if problem is None or attempt == ATTEMPTS:
                return reply, value, problem, attempt
            messages = [*messages, {"role": "assistant", "content": reply.text},
                        {"role": "user", "content": f"Your answer was not usable: {problem}. Answer again with only "
                                                    "the JSON, nothing else."}]
        raise AssertionError("unreachable")

    def record(self, stage: str, llm: CachedLLM, reply: Reply, decision: str, reason: str, *, prompt: dict | None,
               dimension: str | None, country: str) -> None:
        self.decisions.append({
            "stage": stage, "artifact_id": prompt["prompt_id"] if prompt else None, "name": dimension,
            "country": country, "concept": prompt["category"] if prompt else None, "decision": decision,
            "reason": reason, "backend": llm.name, "model": llm.model, "cache_key": reply.key,
            "cached": reply.cached, "answer": reply.text[:ANSWER_CHARS],
        })

    def dimension(self, prompt: dict, dimension: str) -> list[dict[str, str]]:
        activity = prompt["artifact_name"]
        country = self.countries.by_iso(prompt["country"]).name_in_sentence
        candidates, seen = [], set()
        for llm in self.proposers:
            items = self.propose(llm, prompt, dimension, activity, country)
            for item in items:
                if item["token"].casefold() not in seen:
                    seen.add(item["token"].casefold())
                    candidates.append(item)
        if not candidates:
            self.items["empty_dimensions"] += 1
            return []
        messages = refiner_messages(dimension, activity, country, candidates, self.max_items)
        reply, value, problem, attempts = self.ask(self.refiner, messages, REFINE_PARAMS, _descriptors_or_problem)
        if problem is not None:
            self.counts["refine"]["fallback-union"] += 1
            self.counts["refine"][_kind(problem)] += 1
            self.record("descriptors-refine", self.refiner, reply, "fallback-union", _reason(problem, attempts),
                        prompt=prompt, dimension=dimension, country=prompt["country"])
            return self.finish(candidates)
        items, dropped = value
        self.counts["refine"]["ok"] += 1
        self.items["dropped"] += dropped
        self.items["not_in_candidates"] += sum(i["token"].casefold() not in seen for i in items)
        self.record("descriptors-refine", self.refiner, reply, "refined",
                    f"{len(items)} kept of {len(candidates)} candidates, {dropped} dropped, {attempts} attempt(s)",
                    prompt=prompt, dimension=dimension, country=prompt["country"])
        if not items:
            self.items["empty_dimensions"] += 1
        return self.finish(items)

    def propose(self, llm: CachedLLM, prompt: dict, dimension: str, activity: str, country: str) -> list[dict]:
        messages = proposer_messages(dimension, activity, country, self.max_items)
        reply, value, problem, attempts = self.ask(llm, messages, PROPOSE_PARAMS, _descriptors_or_problem)
        if problem is not None:
            self.counts["propose"][_kind(problem)] += 1
            self.record("descriptors-propose", llm, reply, "none", _reason(problem, attempts), prompt=prompt,
                        dimension=dimension, country=prompt["country"])
            return []
        items, dropped = value
        self.counts["propose"]["ok"] += 1
        self.items["dropped"] += dropped
        self.record("descriptors-propose", llm, reply, "proposed",
                    f"{len(items)} proposed, {dropped} dropped, {attempts} attempt(s)", prompt=prompt,
                    dimension=dimension, country=prompt["country"])
        return items

    def finish(self, items: list[dict[str, str]]) -> list[dict[str, str]]:
        """At most ``max_items`` descriptors; long tokens and cut ones counted."""
        self.items["truncated"] += max(0, len(items) - self.max_items)
        items = items[:self.max_items]
        self.items["descriptors"] += len(items)
        self.items["long_tokens"] += sum(len(i["token"].split()) > LONG_TOKEN_WORDS for i in items)
        return items

    def stereotypes(self, prompt: dict, n: int) -> list[str]:
        code, activity = prompt["country"], prompt["artifact_name"]
        country = self.countries.by_iso(code).name_in_sentence

        def parse(text: str):
            items = parse_stereotypes(text, n)
            return items, None if items else "no noun phrases separated by ' | ' in the answer"

        reply, items, problem, attempts = self.ask(self.refiner, stereotype_messages(activity, country, n),
                                                   STEREOTYPE_PARAMS, parse)
        if problem is not None:
            self.counts["stereotypes"][_kind(problem)] += 1
            self.record("stereotypes", self.refiner, reply, "none", _reason(problem, attempts), prompt=prompt,
                        dimension=None, country=code)
            return []
        self.counts["stereotypes"]["ok"] += 1
        self.record("stereotypes", self.refiner, reply, "listed", f"{len(items)} candidates, {attempts} attempt(s)",
                    prompt=prompt, dimension=None, country=code)
        return items

    def report(self, prompts: int) -> dict[str, Any]:
        return {"source": "llm", "refiner": _label(self.refiner), "proposers": [_label(p) for p in self.proposers],
                "prompts": prompts, "calls": self.calls, "cache_hits": self.cache_hits,
                **{stage: dict(sorted(c.items())) for stage, c in self.counts.items()},
                "items": {k: self.items[k] for k in ("descriptors", "empty_dimensions", "dropped", "truncated",
                                                     "long_tokens", "not_in_candidates")}}


def _descriptors_or_problem(text: str):
    items, dropped, problem = parse_descriptors(text)
    return (items, dropped), problem


def _kind(problem: str) -> str:
    """The counted kind of a failed request: a transport error kind, or ``invalid`` (no usable JSON)."""
    return problem if problem in LLMCallError.KINDS else "invalid"


def _reason(problem: str, attempts: int) -> str:
    return problem if problem in LLMCallError.KINDS else f"invalid after {attempts} attempt(s): {problem}"
