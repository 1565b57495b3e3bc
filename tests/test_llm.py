"""The LLM refinement stage: backends, the response cache, filter and completion."""

from __future__ import annotations

import json
import string

import pytest

from cultureboard.builder.llm_backends import (
    CachedLLM, LLMCallError, OpenAIChatBackend, TransformersBackend, backend_from_spec,
)
from cultureboard.builder.llm_cache import ResponseCache, request_key
from cultureboard.builder.refine import classify_answer, filter_question, parse_names, refine
from cultureboard.countries import load_countries
from cultureboard.errors import CultureboardError

COUNTRIES = load_countries()


def artifact(name, country="IT", concept="cuisine", subcategory=None, aliases=()):
    return {"qid": f"Q-{name}", "name": name, "aliases": list(aliases), "country": country, "concept": concept,
            "category": concept, "subcategory": subcategory, "source": "wikidata", "popularity": 10}


def openai_llm(server, cache_path, model="test-model", timeout=0.25, max_retries=1):
    backend = OpenAIChatBackend(server.base_url, model, "sk-test", timeout=timeout, max_retries=max_retries,
                                backoff=0)
    return CachedLLM(backend, ResponseCache(cache_path))


def by_name(decisions, stage="filter"):
    return {d["name"]: d for d in decisions if d["stage"] == stage}


# --- filter ----------------------------------------------------------------------------------------


def test_filter_question_follows_cube_d4():
    assert filter_question(artifact("Filone"), COUNTRIES) == (
        "Can you classify if Filone belongs to Italian cuisine? Answer yes or no.")
    assert filter_question(artifact("Colosseum", concept="landmarks"), COUNTRIES).endswith(
        "belongs to Italian landmarks? Answer yes or no.")
    assert "belongs to Italian clothing?" in filter_question(artifact("Toga", concept="art", subcategory="clothing"),
                                                             COUNTRIES)
    assert "belongs to Japanese art?" in filter_question(artifact("Ukiyo-e", "JP", "art"), COUNTRIES)


@pytest.mark.parametrize("text, expected", [
    ("Yes", "yes"), ("yes.", "yes"), ("Yes, it is a bread.", "yes"), ("**YES**", "yes"), ("No.", "no"),
    ("no, it is French", "no"), ("I'm sorry, but I can't answer that.", "refusal"),
    ("As an AI, I do not classify food.", "refusal"), ("I cannot determine this.", "refusal"),
    ("I\u2019m sorry.", "refusal"), ("Maybe.", "garbage"), ("", "garbage"), ("#### ~~", "garbage"),
    ("Yesterday", "garbage"),
])
def test_classify_answer(text, expected):
    assert classify_answer(text) == expected


def test_filter_outcomes_against_the_server(llm_server, tmp_path):
    names = ["Filone", "Bogus Bread", "Refuse Cake", "Garble Pie", "Slow Soup", "Broken Pasta", "Malformed Ragu"]
    result = refine([artifact(n) for n in names], openai_llm(llm_server, tmp_path / "cache.jsonl"), COUNTRIES,
                    complete=False)

    decisions = by_name(result.decisions)
    assert {n: (d["decision"], d["reason"]) for n, d in decisions.items()} == {
        "Filone": ("keep", "yes"), "Bogus Bread": ("drop", "no"),
        "Refuse Cake": ("keep-undecided", "refusal"), "Garble Pie": ("keep-undecided", "garbage"),
        "Slow Soup": ("keep-undecided", "timeout"), "Broken Pasta": ("keep-undecided", "http_error"),
        "Malformed Ragu": ("keep-undecided", "bad_response"),
    }
    assert [a["name"] for a in result.artifacts] == [n for n in names if n != "Bogus Bread"]
    filone = decisions["Filone"]
    assert filone["answer"] == "Yes." and filone["backend"] == "openai" and filone["model"] == "test-model"
    assert filone["cached"] is False and len(filone["cache_key"]) == 64

    first = llm_server.requests[0]
    assert first["messages"] == [{"role": "user", "content":
                                  "Can you classify if Filone belongs to Italian cuisine? Answer yes or no."}]
    assert first["temperature"] == 0 and first["model"] == "test-model"
    # timeouts and HTTP 500 are retried once (max_retries=1); a body that is not JSON is not
    assert llm_server.count == len(names) + 2

    report = result.report
    assert report["filter"] == {
        "yes": 1, "no": 1, "refusal": 1, "garbage": 1, "timeout": 1, "http_error": 1, "bad_response": 1,
        "refused_connection": 0, "errors": 3, "keep": 1, "drop": 1, "keep-undecided": 5,
    }
    assert (report["calls"], report["cache_hits"], report["kept"], report["dropped"], report["added"]) == (
        7, 0, 6, 1, 0)
    assert (report["backend"], report["model"]) == ("openai", "test-model")


def test_refused_connection(tmp_path):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    backend = OpenAIChatBackend(f"http://127.0.0.1:{port}/v1", "m", "k", timeout=1, max_retries=1, backoff=0)
    with pytest.raises(LLMCallError) as err:
        backend.generate([{"role": "user", "content": "hi"}], {})
    assert err.value.kind == "refused_connection"


# --- completion ------------------------------------------------------------------------------------


def test_completion_adds_missing_artifacts(llm_server, tmp_path):
    kb = [artifact("Filone"), artifact("Pizza"), artifact("Bogus Bread"),
          artifact("Sushi", "JP"), artifact("Garble Ramen", "JP")]
    result = refine(kb, openai_llm(llm_server, tmp_path / "cache.jsonl"), COUNTRIES)

    added = [a for a in result.artifacts if a["source"] == "llm"]
    assert added == [
        {"qid": f"llm:it-cuisine-new-italian-cuisine-{n}", "name": f"New Italian cuisine {N}", "aliases": [],
         "country": "IT", "concept": "cuisine", "category": "cuisine", "subcategory": None, "source": "llm",
         "popularity": None, "hop": None, "root": None}
        for n, N in [("one", "One"), ("two", "Two")]
    ]
    completion = [d for d in result.decisions if d["stage"] == "completion"]
    assert [(d["country"], d["decision"], d["reason"], d["name"]) for d in completion] == [
        ("IT", "add", "rewrite", "New Italian cuisine One"), ("IT", "add", "rewrite", "New Italian cuisine Two"),
        ("JP", "none", "garbage", None),
    ]
    # the Italian list holds the kept artifacts only: the filter's "no" is not undone
    rewrite = llm_server.requests[-3]["messages"][0]["content"]
    assert "- Filone\n- Pizza\n\nHere is a critique" in rewrite and "Bogus" not in rewrite
    assert "The list misses some popular artifacts." in rewrite
    assert result.report["completion"] == {
        "lists": 2, "added": 2, "over_cap": 0, "no-new-names": 0, "refusal": 0, "garbage": 1,
        "timeout": 0, "http_error": 0, "bad_response": 0, "refused_connection": 0, "errors": 0,
    }
    assert result.report["calls"] == 5 + 4 and result.report["added"] == 2


def test_completion_transport_error_adds_nothing(llm_server, tmp_path):
    llm = openai_llm(llm_server, tmp_path / "cache.jsonl", max_retries=0)
    result = refine([artifact("Broken Lasagne")], llm, COUNTRIES)
    assert [(d["stage"], d["decision"], d["reason"]) for d in result.decisions] == [
        ("filter", "keep-undecided", "http_error"), ("completion", "none", "http_error")]
    assert result.report["completion"]["errors"] == 1 and llm_server.count == 2  # the rewrite is never asked


class ScriptedBackend:
    """A backend answering every rewrite request with fixed text (and "Yes." to the filter)."""

    name, model = "scripted", "fixed"

    def __init__(self, rewrite):
        self.rewrite = rewrite

    def generate(self, messages, params):
        prompt = messages[-1]["content"]
        return self.rewrite if "rewrite the list" in prompt else "Yes." if "classify" in prompt else "Critique."


@pytest.mark.parametrize("rewrite", [
    '```json\n["Tiramisu", "Cannoli", "tiramisù", "Gelato"]\n```',
    "Here is the rewritten list:\n1. **TIRAMISÙ**\n2) Cannoli - fried pastry tubes\n* Gelato: ice cream\n\n"
    "I added the two most popular desserts that were missing from the list above.",
])
def test_completion_parses_lists_and_skips_known_names(rewrite, tmp_path):
    kb = [artifact("Tiramisu"), artifact("Sfogliatella", aliases=["Cannoli"])]
    llm = CachedLLM(ScriptedBackend(rewrite), ResponseCache(tmp_path / "cache.jsonl"))
    result = refine(kb, llm, COUNTRIES)
    assert [(a["qid"], a["name"]) for a in result.artifacts[2:]] == [("llm:it-cuisine-gelato", "Gelato")]


def test_completion_caps_additions(tmp_path):
    rewrite = "\n".join(["Tiramisu", *(f"Dolce {i}" for i in range(30))])
    llm = CachedLLM(ScriptedBackend(rewrite), ResponseCache(tmp_path / "cache.jsonl"))
    result = refine([artifact("Tiramisu")], llm, COUNTRIES, max_additions=3)
    assert [a["name"] for a in result.artifacts[1:]] == ["Dolce 0", "Dolce 1", "Dolce 2"]
    assert result.report["completion"]["over_cap"] == 27


def test_parse_names():
    assert parse_names("## Breads\n- Pizza\n- Pizza\n\n#### ~~\n- 42") == ["Pizza"]
    assert parse_names('["Pizza", "Pasta"]') == ["Pizza", "Pasta"]
    assert parse_names("#### ~~ 42 !!") == []


# --- the cache -------------------------------------------------------------------------------------


def test_second_run_is_served_from_the_cache(llm_server, tmp_path):
    kb = [artifact("Filone"), artifact("Bogus Bread"), artifact("Refuse Cake"), artifact("Sushi", "JP")]
    first = refine(kb, openai_llm(llm_server, tmp_path / "cache.jsonl"), COUNTRIES)
    requests = llm_server.count
    second = refine(kb, openai_llm(llm_server, tmp_path / "cache.jsonl"), COUNTRIES)  # reopens the file

    assert llm_server.count == requests
    assert second.artifacts == first.artifacts
    assert [{**d, "cached": True} for d in first.decisions] == second.decisions
    assert second.report["cache_hits"] == second.report["calls"] == first.report["calls"]
    assert {k: v for k, v in second.report.items() if k != "cache_hits"} == {
        k: v for k, v in first.report.items() if k != "cache_hits"}


def test_transport_errors_are_recorded_but_not_cached(llm_server, tmp_path):
    cache_path = tmp_path / "cache.jsonl"
    refine([artifact("Broken Bread")], openai_llm(llm_server, cache_path, max_retries=0), COUNTRIES, complete=False)
    records = [json.loads(line) for line in cache_path.read_text().splitlines()]
    assert [(r["response"], r["error"]) for r in records] == [(None, "http_error")]

    second = refine([artifact("Broken Bread")], openai_llm(llm_server, cache_path, max_retries=0), COUNTRIES,
                    complete=False)
    assert llm_server.count == 2 and second.decisions[0]["cached"] is False


def test_cache_key_changes_with_each_part():
    base = {"backend": "openai", "model": "m", "messages": [{"role": "user", "content": "q"}],
            "params": {"temperature": 0, "max_tokens": 8}}
    variants = [
        {**base, "backend": "transformers"}, {**base, "model": "m2"},
        {**base, "messages": [{"role": "user", "content": "q2"}]}, {**base, "params": {"temperature": 0}},
    ]
    keys = {request_key(base), *map(request_key, variants)}
    assert len(keys) == 5
    assert request_key({**base, "params": {"max_tokens": 8, "temperature": 0}}) == request_key(base)


def test_cache_round_trip_and_corrupt_line(tmp_path):
    path = tmp_path / "cache.jsonl"
    request = {"backend": "openai", "model": "m", "messages": [{"role": "user", "content": "q"}], "params": {}}
    ResponseCache(path).put(request, "Yes.")
    assert ResponseCache(path).get(request) == "Yes."

    with path.open("a") as fh:
        fh.write('{"key": "abc", "respon\n')
    with pytest.raises(CultureboardError) as err:
        ResponseCache(path)
    assert f"{path}:2" in str(err.value) and "delete that line" in str(err.value)


# --- backends and --llm none ---------------------------------------------------------------------


def test_llm_none_skips_and_records():
    kb = [artifact("Filone"), artifact("Bogus Bread")]
    assert backend_from_spec("none") is None
    result = refine(kb, None, COUNTRIES)
    assert result.artifacts == kb and result.decisions == []
    assert result.report == {"skipped": True, "reason": "--llm none"}


def test_backend_from_spec(monkeypatch):
    for var in ("CULTUREBOARD_LLM_API_KEY", "OPENAI_API_KEY", "CULTUREBOARD_LLM_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(CultureboardError, match="set CULTUREBOARD_LLM_API_KEY"):
        backend_from_spec("openai:gpt-4-turbo")
    for spec in ("gpt4", "anthropic:claude", "openai:", "transformers:"):
        with pytest.raises(CultureboardError, match="openai:MODEL"):
            backend_from_spec(spec)

    monkeypatch.setenv("OPENAI_API_KEY", "sk-fallback")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://fallback/v1")
    backend = backend_from_spec("openai:gpt-4-turbo")
    assert (backend.name, backend.model, backend.base_url, backend.api_key) == (
        "openai", "gpt-4-turbo", "http://fallback/v1", "sk-fallback")
    monkeypatch.setenv("CULTUREBOARD_LLM_API_KEY", "sk-main")
    monkeypatch.setenv("CULTUREBOARD_LLM_BASE_URL", "http://localhost:8000/v1/")
    backend = backend_from_spec("openai:local")
    assert (backend.base_url, backend.api_key) == ("http://localhost:8000/v1", "sk-main")
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("CULTUREBOARD_LLM_BASE_URL")
    assert backend_from_spec("openai:gpt-4o").base_url == "https://api.openai.com/v1"

    backend = backend_from_spec("transformers:Qwen/Qwen2.5-0.5B-Instruct")  # loads nothing yet
    assert isinstance(backend, TransformersBackend) and (backend.name, backend.model) == (
        "transformers", "Qwen/Qwen2.5-0.5B-Instruct")


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    """A random one-layer GPT-2 with a character-level tokenizer, saved like a Hub checkpoint."""
    import torch
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "[PAD]": 1, "[EOS]": 2}
    for ch in string.printable:
        vocab.setdefault(ch, len(vocab))
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tokenizer.decoder = decoders.Fuse()
    torch.manual_seed(0)
    config = GPT2Config(n_layer=1, n_head=2, n_embd=32, n_positions=256, vocab_size=len(vocab),
                        bos_token_id=2, eos_token_id=2, pad_token_id=1)
    path = tmp_path_factory.mktemp("tiny-lm")
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]",
                            eos_token="[EOS]").save_pretrained(path)
    GPT2LMHeadModel(config).save_pretrained(path)
    return path


def test_transformers_backend_filter_is_greedy_and_fail_open(tiny_lm, tmp_path):
    kb = [artifact("Filone"), artifact("Colosseum", concept="landmarks")]
    runs = [refine(kb, CachedLLM(TransformersBackend(tiny_lm), ResponseCache(tmp_path / f"{i}.jsonl")), COUNTRIES,
                   complete=False) for i in range(2)]

    for result in runs:
        assert result.artifacts == kb  # a random model's answers are garbage: everything is kept
        assert [(d["decision"], d["reason"], d["cached"]) for d in result.decisions] == [
            ("keep-undecided", "garbage", False)] * 2
        assert result.report["filter"]["garbage"] == 2 and result.report["backend"] == "transformers"
    assert [d["answer"] for d in runs[0].decisions] == [d["answer"] for d in runs[1].decisions]


def test_transformers_backend_prompt(tiny_lm):
    backend = TransformersBackend(tiny_lm)
    messages = [{"role": "user", "content": "Is it?"}]
    assert backend.render(messages) == "User: Is it?\nAssistant:"
    backend._tokenizer.chat_template = "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}<assistant>"
    assert backend.render(messages) == "<user>Is it?<assistant>"


def test_rejected_credentials_stop_the_build(llm_server, tmp_path):
    backend = OpenAIChatBackend(llm_server.base_url, "test-model", "revoked-key", timeout=1, max_retries=1, backoff=0)
    llm = CachedLLM(backend, ResponseCache(tmp_path / "cache.jsonl"))
    with pytest.raises(CultureboardError, match="refused the credentials"):
        refine([artifact("Filone")], llm, COUNTRIES)
