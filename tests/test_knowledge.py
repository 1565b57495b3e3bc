"""ECB's knowledge stage (builder/knowledge.py): the corpus read and chunked, retrieval filtered by ISO country
(Korea finds Korea's article), questions from the scripted LLM server that succeed, replay from the response
cache, the fallback rate reported and a build that fails above its limit; the build wiring and the CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
import yaml
from cultureboard.builder import build
from cultureboard.builder import knowledge as kn
from cultureboard.builder.llm_backends import CachedLLM, OpenAIChatBackend
from cultureboard.builder.llm_cache import ResponseCache
from cultureboard.builder.prompts_ecb import build_ecb
from llm_server import ScriptedLLMServer

from cultureboard.countries import load_countries
from cultureboard.errors import CultureboardError

#: Words of each country's synthetic article. Nigeria's article is about Korean food as much as Nigeria's,
#: so an unfiltered search would hand Nigerian passages to Korean prompts.
WORDS = {
    "CN": "China Beijing dumplings pagoda silk calligraphy dragon dance lantern festival",
    "IN": "India Delhi curry saree temple rangoli Diwali cricket spices",
    "KE": "Kenya Nairobi ugali maasai savanna beadwork safari runners",
    "KR": "Seoul hanok palace hanbok taekwondo temples mountains rivers",
    "NG": "Nigeria Lagos jollof Korea Korean kimchi bibimbap main dish food Korean food",
    "US": "United States Washington burger skyscraper baseball jazz highway",
}


class QuestionServer(ScriptedLLMServer):
    """Answers ECB question requests with four questions citing passage 1; a first request naming a country of
    ``fail`` gets a refusal, and a retry ("Answer again") gets a usable answer only when ``retry_ok``."""

    def __init__(self, fail=(), retry_ok=True):
        super().__init__()
        self.fail, self.retry_ok = fail, retry_ok

    def answer(self, prompt: str) -> str:
        if "Answer again" in prompt:
            return self._questions("the country") if self.retry_ok else "Sorry."
        match = re.search(r"shows (.+?) faithfully", prompt)
        if match is None:
            return ScriptedLLMServer.answer(prompt)
        if match.group(1) in self.fail:
            return "I'm sorry, but I can't help with that."
        return self._questions(match.group(1))

    @staticmethod
    def _questions(country: str) -> str:
        items = [{"question": f"Is there a {thing} typical of {country}?", "expected_answer": expected,
                  "rationale": "passage 1", "docs": [1, 99]}
                 for thing, expected in (("building", "yes"), ("flag of another country", "no"),
                                         ("dish", "yes"), ("foreign costume", "no"), ("dish", "yes"))]
        return "```json\n" + json.dumps({"questions": items}) + "\n```"


def write_corpus(folder, countries=WORDS, extra: list[dict] | None = None):
    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    for code, words in countries.items():
        body = " ".join([words] * 110)  # about 1,000 words: two chunks in the history section
        (folder / f"{code}.txt").write_text(f"{words}\n== History ==\n{body}\n== Empty ==\n", encoding="utf-8")
        entries.append({"file": f"{code}.txt", "country": code, "title": f"Article {code}",
                        "url": f"https://en.wikipedia.org/wiki/{code}", "licence": "CC-BY-SA-4.0", "revision": "1"})
    (folder / kn.SOURCES_FILE).write_text(yaml.safe_dump(entries + (extra or [])), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="module")
def rows():
    """The main-dish chains of the ecb set: 18 base prompts, 3 of them Kenya's (the ratio of the whole set)."""
    return [r for r in build_ecb([], load_countries()).rows if "/food/main-dish/" in r["prompt_id"]]


def llm_for(server, cache_path):
    return CachedLLM(OpenAIChatBackend(server.base_url, "scripted", "key", timeout=5, max_retries=0),
                     ResponseCache(cache_path))


def test_chunks_of_800_words_overlapping_by_120():
    assert kn.chunk_spans(1000) == [(0, 800), (680, 1000)]
    assert kn.chunk_spans(800) == [(0, 800)]
    assert kn.chunk_spans(1481) == [(0, 800), (680, 1480), (1360, 1481)]
    assert kn.chunk_spans(0) == []
    assert kn.sections("a b\n== History ==\nc\n== Empty ==\n=== Food ===\nd e") == \
        [("lead", ["a", "b"]), ("History", ["c"]), ("Food", ["d", "e"])]


def test_corpus_chunks_carry_their_sources(corpus):
    articles = kn.read_corpus(corpus, load_countries())
    chunks = kn.chunk_articles(articles)
    kr = [c for c in chunks if c["country"] == "KR"]
    assert [c["chunk_id"] for c in kr] == ["KR/KR/0000", "KR/KR/0001", "KR/KR/0002"]
    assert [(c["section"], c["word_start"], c["word_end"]) for c in kr] == \
        [("lead", 0, 8), ("History", 0, 800), ("History", 680, 880)]
    assert kr[1]["url"] == "https://en.wikipedia.org/wiki/KR" and kr[1]["licence"] == "CC-BY-SA-4.0"
    assert len(kr[1]["text"].split()) == 800


@pytest.mark.parametrize("entry, needle", [
    ({"file": "XX.txt", "country": "KR", "title": "t", "url": "u", "licence": "l"}, "not a file"),
    ({"file": "CN.txt", "country": "korea", "title": "t", "url": "u", "licence": "l"}, "ISO 3166-1"),
    ({"file": "CN.txt", "country": "CN"}, "lacks one of"),
])
def test_bad_corpus_entries_are_one_line_errors(tmp_path, entry, needle):
    folder = write_corpus(tmp_path / "c", {"CN": WORDS["CN"]})
    (folder / kn.SOURCES_FILE).write_text(yaml.safe_dump([entry]))
    with pytest.raises(CultureboardError, match=needle):
        kn.read_corpus(folder, load_countries())


def test_unlisted_text_files_and_a_missing_sources_file_are_errors(tmp_path):
    folder = write_corpus(tmp_path / "c", {"CN": WORDS["CN"]})
    (folder / "stray.txt").write_text("words")
    with pytest.raises(CultureboardError, match="no entry for stray.txt"):
        kn.read_corpus(folder, load_countries())
    with pytest.raises(CultureboardError, match="no sources.yaml"):
        kn.read_corpus(tmp_path, load_countries())


def test_retrieval_keeps_to_the_prompt_country(corpus):
    chunks = kn.chunk_articles(kn.read_corpus(corpus, load_countries()))
    vectors = kn.embed([c["text"] for c in chunks])
    codes = [c["country"] for c in chunks]
    query = kn.embed(["Korean food main dish kimchi in Korea"])[0]
    anywhere = kn.retrieve(query, vectors, codes, "NG", top_k=1) + kn.retrieve(query, vectors, codes, "KR", top_k=1)
    assert anywhere[0][1] > anywhere[1][1], "the Nigerian article is the closer one: the filter matters"
    hits = kn.retrieve(query, vectors, codes, "KR", top_k=8)
    assert len(hits) == 3 and {codes[i] for i, _ in hits} == {"KR"}, "no backfill from other countries"
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)


def test_parse_questions():
    good = QuestionServer._questions("Korea")
    questions, problem = kn.parse_questions(good, n_passages=3)
    assert problem is None and len(questions) == 4, "the repeated question is dropped"
    assert questions[0] == {"question": "Is there a building typical of Korea?", "expected": "yes",
                            "rationale": "passage 1", "docs": [1]}, "passage 99 does not exist"
    assert kn.parse_questions("Yes.", 3)[1].startswith("the answer is not a JSON object")
    long = json.dumps({"questions": [{"question": " ".join(["word"] * 26), "expected_answer": "yes"}] * 4})
    assert "0 usable questions" in kn.parse_questions(long, 3)[1]
    no_negative = json.dumps({"questions": [{"question": f"q{k}?", "expected_answer": "yes"} for k in range(5)]})
    assert "5 usable questions (5 yes, 0 no)" in kn.parse_questions(no_negative, 3)[1]


def test_questions_come_from_the_llm_and_replay_from_the_cache(corpus, rows, tmp_path):
    with QuestionServer() as server:
        result = kn.build_knowledge(corpus, rows, llm_for(server, tmp_path / "cache.jsonl"), load_countries())
        calls = server.count
    questions = result.configs[1].table.to_pylist()
    report = result.report["questions"]
    assert report["prompts"] == 18 and report["from_llm"] == 18 and report["fallback_rate"] == 0.0
    assert calls == 18
    kr = [q for q in questions if q["prompt_id"] == "ecb/kr/food/main-dish/modern"]
    assert [q["expected"] for q in kr] == ["yes", "no", "yes", "no"] and {q["source"] for q in kr} == {"llm"}
    assert all(r.startswith("KR/") for r in kr[0]["retrieved"]) and kr[0]["cited"] == [kr[0]["retrieved"][0]]
    assert kr[0]["query"] == "Modern main dish in Korea, photorealistic. food main dish modern"
    with QuestionServer(fail=("South Korea",)) as silent:  # a replay asks nothing: the cache answers
        again = kn.build_knowledge(corpus, rows, llm_for(silent, tmp_path / "cache.jsonl"), load_countries())
        assert silent.count == 0
    assert again.configs[1].table.equals(result.configs[1].table)
    knowledge = result.configs[0].table
    assert knowledge.num_rows == 18 and len(knowledge.column("embedding")[0]) == 384
    assert result.report["embedder"]["model"] == "sentence-transformers/all-MiniLM-L6-v2"


def test_a_retry_with_the_problem_stated_rescues_a_prompt(corpus, rows, tmp_path):
    with QuestionServer(fail=("Kenya",), retry_ok=True) as server:
        result = kn.build_knowledge(corpus, rows, llm_for(server, tmp_path / "cache.jsonl"), load_countries())
        assert server.count == 18 + 3
    assert result.report["questions"]["from_templates"] == 0
    ke = [q for q in result.configs[1].table.to_pylist() if q["country"] == "KE"]
    assert all(len(q["cache_keys"]) == 2 and q["source"] == "llm" for q in ke)


def test_fallback_rate_is_reported_and_bounded(corpus, rows, tmp_path):
    with QuestionServer(fail=("Kenya",), retry_ok=False) as server:
        llm = llm_for(server, tmp_path / "cache.jsonl")
        with pytest.raises(kn.QuestionStageFailed, match=r"3 of 18 prompts \(17%, above the limit of 10%"):
            kn.build_knowledge(corpus, rows, llm, load_countries())
        result = kn.build_knowledge(corpus, rows, llm, load_countries(), max_fallback=0.2)
    report = result.report["questions"]
    assert report["from_templates"] == 3 and report["fallback_rate"] == pytest.approx(3 / 18)
    assert report["fallback_reasons"] == {"not a JSON object": 3}
    ke = [q for q in result.configs[1].table.to_pylist() if q["prompt_id"] == "ecb/ke/food/main-dish/modern"]
    assert [q["source"] for q in ke] == ["template"] * 4 and ke[0]["question"] == \
        "Does the image accurately represent Kenya cultural elements?"
    assert ke[2]["question"] == "Does the image match the prompt: Modern main dish in Kenya, photorealistic?"
    assert "3 of 18 prompts" in result.configs[1].notes[0]


def test_a_country_without_an_article_is_an_error(tmp_path, rows):
    folder = write_corpus(tmp_path / "c", {k: v for k, v in WORDS.items() if k != "US"})
    with pytest.raises(CultureboardError, match="no article for US"):
        kn.build_knowledge(folder, rows, None, load_countries(), max_fallback=1.0)


def test_build_writes_knowledge_and_questions(corpus, tmp_path, monkeypatch):
    with QuestionServer() as server:
        monkeypatch.setenv("CULTUREBOARD_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("CULTUREBOARD_LLM_API_KEY", "key")
        provenance = build(tmp_path / "ds", countries=["KR"], concepts=["cuisine"], prompt_sets=["ecb"],
                           llm="openai:scripted", knowledge=str(corpus),
                           ecb_subset={"subcategories": ["main_dish", "chef"], "steps": 1})
    assert provenance["rows"]["ecb"] == 6 * (4 * 2 + 2) + 4, "per country: 4 chains and the attribute chain, 1 edit " \
        "each; 4 country-agnostic prompts (no questions)"
    assert provenance["rows"][kn.QUESTIONS_CONFIG] == 24 * 4 and provenance["rows"][kn.KNOWLEDGE_CONFIG] == 18
    assert provenance["knowledge"]["questions"]["fallback_rate"] == 0.0
    assert provenance["knowledge"]["corpus"]["folder"] == corpus.name
    questions, passages = kn.read_questions(tmp_path / "ds")
    assert len(questions) == 24 and all(c in passages for c in questions["ecb/kr/food/main-dish/modern"][0]["retrieved"])
    cached = [json.loads(line) for line in (tmp_path / "ds" / "llm" / "cache.jsonl").read_text().splitlines()]
    assert sum("faithfully" in r["messages"][-1]["content"] for r in cached) == 24
    card = (tmp_path / "ds" / "README.md").read_text()
    assert kn.KNOWLEDGE_CONFIG in card and "attribute each chunk" in card
    assert pq.read_schema(tmp_path / "ds" / "data" / kn.QUESTIONS_CONFIG / "test-00000-of-00001.parquet") \
        .names == kn.QUESTIONS_SCHEMA.names


def test_cli_build_without_an_llm_fails_in_one_line(corpus, tmp_path):
    result = subprocess.run([sys.executable, "-m", "cultureboard.cli", "build", "--out", str(tmp_path / "o"),
                             "--prompt-sets", "ecb", "--countries", "KR", "--knowledge", str(corpus)],
                            capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=600,
                            check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    line = result.stderr.strip().splitlines()
    assert len(line) == 1 and line[0].startswith("error: the ECB question stage: fell back to template questions "
                                                 "for 468 of 468 prompts (100%")
    assert "no LLM" in line[0] and not (tmp_path / "o").exists()
