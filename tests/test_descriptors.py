"""CULTIVate's reference descriptors (builder/descriptors.py): answer parsing, the proposer-refiner stage with
two proposers, its retries, fallback and replay from the response cache, the --llm none seed rows, and a build
against the scripted OpenAI-protocol server whose cultivate-descriptors config loads with `datasets`."""

from __future__ import annotations

import json
import re
from importlib import resources

import pytest
import yaml

from cultureboard.builder import build, prompts_cultivate
from cultureboard.builder.descriptors import (CONFIG, DIMENSIONS, SEED_FILE, describe, descriptor_stage,
                                              parse_descriptors, parse_stereotypes, seed_rows)
from cultureboard.builder.llm_backends import CachedLLM
from cultureboard.builder.llm_cache import ResponseCache
from cultureboard.builder.prompt_sets import PromptSet
from cultureboard.builder.prompts_cultivate import build_cultivate
from cultureboard.countries import load_countries
from cultureboard.errors import CultureboardError
from llm_server import ScriptedLLMServer


@pytest.mark.parametrize("text, items, dropped, problem", [
    ('{"descriptors": [{"token": "samovar", "style": "traditional"}]}', [("samovar", "traditional")], 0, None),
    ('Here:\n```json\n[{"token": " floor  cushions ", "style": "Neutral"}]\n```', [("floor cushions", "neutral")], 0,
     None),
    ('{"descriptors": []}', [], 0, None),
    (('[{"token": "rugs", "style": "traditional|modern"}, {"token": "", "style": "modern"}, '
      '{"token": "Rugs", "style": "modern"}, {"token": "rugs", "style": "neutral"}]'), [("Rugs", "modern")], 2, None),
    ('{"descriptors": [{"token": "a", "style": "neutral"}', [], 0, "invalid JSON (Expecting ',' delimiter)"),
    ("The scene shows a table.", [], 0, "no JSON in the answer"),
    ("{'descriptors': []}", [], 0, "invalid JSON (Expecting property name enclosed in double quotes)"),
    ('{"items": []}', [], 0, 'the object has no "descriptors" list'),
    ('["samovar"]', [], 0, 'descriptor 0 is not an object with a string "token"'),
])
def test_parse_descriptors(text, items, dropped, problem):
    got, n_dropped, got_problem = parse_descriptors(text)
    assert [(i["token"], i["style"]) for i in got] == items and n_dropped == dropped and got_problem == problem


def test_parse_stereotypes():
    assert parse_stereotypes("Persian rugs | oversize lanterns | giant religious symbols\n| people in robes") == [
        "Persian rugs", "oversize lanterns", "giant religious symbols", "people in robes"]
    assert parse_stereotypes("1. minarets — giant domes — Minarets") == ["minarets", "giant domes"]
    assert parse_stereotypes('["flags", "rugs"]') == ["flags", "rugs"]
    assert parse_stereotypes("a | b | c", limit=2) == ["a", "b"]
    assert parse_stereotypes("42 | !!") == []


class FakeBackend:
    """An LLM whose answers are scripted by the request; ``calls`` counts what reached it."""

    name = "fake"

    def __init__(self, model: str, answer):
        self.model, self.answer, self.calls, self.requests = model, answer, 0, []

    def generate(self, messages, params):
        self.calls += 1
        self.requests.append(messages)
        return self.answer(messages)


def proposer(prefix: str):
    """Proposes two descriptors per dimension, one shared with the other proposer; 'Garble' in the activity makes
    the first answer unusable (a usable one follows when asked again)."""

    def answer(messages):
        last = messages[-1]["content"]
        if "List up to" in last:
            return f"{prefix} flags | {prefix} rugs"
        if "Dimension:" not in last:
            return json.dumps({"descriptors": [{"token": f"{prefix} retry", "style": "modern"}]})
        if "Garble" in last and len(messages) == 2:
            return "I think the scene has a table."
        dimension = re.search(r"Dimension: ([^:]+):", last).group(1).split()[0].lower()
        return json.dumps({"descriptors": [{"token": f"shared {dimension}", "style": "traditional"},
                                           {"token": f"{prefix} {dimension}", "style": "modern"}]})
    return answer


def refiner(messages):
    request = messages[1]["content"]  # later messages are retries
    if "List up to" in request:
        return "giant flags | oversized rugs"
    if "Garble" in request:
        return "no json, ever"
    candidates = json.loads(request.split("Candidates: ", 1)[1])
    return json.dumps({"descriptors": candidates[:2] + [{"token": "invented thing", "style": "neutral"}]})


def prompts(n_garbled: int = 0) -> list[dict]:
    every = build_cultivate([], load_countries()).rows
    rows = [r for r in every if r["country"] == "IT"][:2] + [r for r in every if r["country"] == "NG"][:1]
    for r in rows[:n_garbled]:
        r["artifact_name"] = "Garble " + r["artifact_name"]
    return rows


def test_two_proposers_and_the_refiner(tmp_path):
    cache = ResponseCache(tmp_path / "cache.jsonl")
    a, b, ref = FakeBackend("model-a", proposer("alpha")), FakeBackend("model-b", proposer("beta")), FakeBackend(
        "model-r", refiner)
    result = describe(prompts(n_garbled=1), load_countries(), CachedLLM(ref, cache), [CachedLLM(a, cache),
                                                                                      CachedLLM(b, cache)])
    garbled, clean = result.rows[0], result.rows[1]  # sorted by prompt id; the garbled one is first in the catalogue
    assert "Garble" not in json.dumps(clean)
    # the refiner saw the union (shared once) and kept the first two, plus one it invented (counted)
    assert [i["token"] for i in clean["objects"]] == ["shared objects", "alpha objects", "invented thing"]
    assert clean["stereotypes"] == ["giant flags", "oversized rugs"] and clean["source"] == "llm"
    assert clean["proposers"] == ["fake:model-a", "fake:model-b"] and clean["refiner"] == "fake:model-r"
    # the garbled prompt: proposals came on the second attempt; the refiner never answered: union of the proposals
    assert [i["token"] for i in garbled["setting"]] == ["alpha retry", "beta retry"]
    report = result.report
    assert report["refine"] == {"ok": 10, "fallback-union": 5, "invalid": 5}
    assert report["propose"] == {"ok": 30}
    assert report["items"]["not_in_candidates"] == 10 and report["stereotypes"] == {"ok": 3}, "one call per prompt"
    asked = [d for d in result.decisions if d["stage"] == "stereotypes"]
    assert sorted(d["artifact_id"] for d in asked) == sorted(r["prompt_id"] for r in result.rows)
    requests = [m[1]["content"] for m in ref.requests if "List up to" in m[1]["content"]]
    assert {r.split("\n", 1)[0] for r in requests} == {f"Activity: {p['artifact_name']}." for p in prompts(1)}
    stages = {(d["stage"], d["decision"]) for d in result.decisions}
    assert stages == {("descriptors-propose", "proposed"), ("descriptors-refine", "refined"),
                      ("descriptors-refine", "fallback-union"), ("stereotypes", "listed")}
    assert all(d["cache_key"] and d["backend"] == "fake" for d in result.decisions)
    calls = a.calls + b.calls + ref.calls
    # replay: a new run on the same cache asks nothing and gives the same rows
    again = describe(prompts(n_garbled=1), load_countries(), CachedLLM(ref, cache), [CachedLLM(a, cache),
                                                                                     CachedLLM(b, cache)])
    assert a.calls + b.calls + ref.calls == calls and again.rows == result.rows
    assert again.report["cache_hits"] == again.report["calls"] == result.report["calls"]


def test_transport_errors_leave_the_dimension_empty(tmp_path):
    class Down(FakeBackend):
        def generate(self, messages, params):
            from cultureboard.builder.llm_backends import LLMCallError

            raise LLMCallError("timeout", "no answer")

    llm = CachedLLM(Down("m", None), ResponseCache(tmp_path / "c.jsonl"))
    result = describe(prompts()[:1], load_countries(), llm, [llm])
    assert all(result.rows[0][d] == [] for d in DIMENSIONS) and result.rows[0]["stereotypes"] == []
    assert result.report["propose"] == {"timeout": 5} and result.report["items"]["empty_dimensions"] == 5
    assert {d["reason"] for d in result.decisions} == {"timeout"}


def test_seed_rows_without_an_llm():
    rows = build_cultivate([], load_countries()).rows
    result = seed_rows(rows)
    assert len(result.rows) == 6 and all(r["source"] == "seed" and r["proposers"] == [] for r in result.rows)
    assert result.report["prompts_without_descriptors"] == len(rows) - 6
    home = next(r for r in result.rows if r["prompt_id"] == "cultivate/ng/eating/home")
    assert {"token": "jollof rice", "style": "traditional"} in home["objects"]
    assert "palm trees everywhere" in home["stereotypes"] and home["country"] == "NG"
    wedding = next(r for r in result.rows if r["prompt_id"] == "cultivate/ng/wedding/wedding")
    assert "palm trees everywhere" not in wedding["stereotypes"], "stereotype candidates per activity and country"
    assert all(r[d] for r in result.rows for d in DIMENSIONS), "every seed prompt describes every dimension"


def test_the_demo_catalogue_is_covered_by_the_seed_and_matches_the_full_set():
    """The demo builds cultivate from its small catalogue: the same ids and texts as the full set, all seeded."""
    path = resources.files("cultureboard.builder").joinpath("data/cultivate_demo_activities.yaml")
    demo = build_cultivate([], load_countries(), prompts_cultivate.load_activities(str(path))).rows
    full = {r["prompt_id"]: r for r in build_cultivate([], load_countries()).rows}
    assert len(demo) == 6 and all(full[r["prompt_id"]]["text"] == r["text"] for r in demo)
    seed = yaml.safe_load(resources.files("cultureboard.builder").joinpath(SEED_FILE).read_text())
    assert {r["prompt_id"] for r in demo} == set(seed["prompts"])


def test_descriptor_stage_needs_a_cultivate_set_and_an_llm_for_proposers():
    assert descriptor_stage([], None, [], load_countries(), b"x") == ([], [], None, b"x")
    ps = PromptSet("cultivate", "1", "cultivate", "", build_cultivate([], load_countries()).rows)
    with pytest.raises(CultureboardError, match="descriptor_proposers"):
        descriptor_stage([ps], None, ["openai:gpt-4o"], load_countries(), b"")


class DescriptorServer(ScriptedLLMServer):
    """The scripted server, answering descriptor requests too: per dimension a descriptor named after the model."""

    def respond(self, prompt: str):
        model = self.requests[-1]["model"]
        if "Give up to" in prompt:
            dimension = re.search(r"Dimension: ([^:]+):", prompt).group(1).split()[0].lower()
            return self.reply(json.dumps({"descriptors": [{"token": f"{model} {dimension}", "style": "neutral"}]}))
        if "Candidates: " in prompt:
            return self.reply(json.dumps({"descriptors": json.loads(prompt.split("Candidates: ", 1)[1])}))
        if "List up to" in prompt:
            return self.reply("giant flags | oversized rugs")
        return super().respond(prompt)

    @staticmethod
    def reply(content: str):
        return 200, json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]})


def test_build_records_and_replays_the_stage(tmp_path, monkeypatch):
    """A build of a two-prompt cultivate set (wedding in Italy and Nigeria) through the HTTP server."""
    small = {"categories": {"wedding": {"category_type": "single-variant", "generic": "a wedding"}},
             "countries": {"IT": {}, "NG": {}}}
    monkeypatch.setattr(prompts_cultivate, "build_cultivate",
                        lambda artifacts, countries, real=prompts_cultivate.build_cultivate: real(artifacts, countries,
                                                                                                  small))
    monkeypatch.setenv("CULTUREBOARD_LLM_API_KEY", "test-key")
    with DescriptorServer() as server:
        monkeypatch.setenv("CULTUREBOARD_LLM_BASE_URL", server.base_url)
        options = {"countries": ["IT"], "concepts": ["cuisine"], "prompt_sets": ["cultivate"], "llm": "openai:refiner-x",
                   "descriptor_proposers": ["openai:proposer-a", "openai:proposer-b"]}
        first = build(tmp_path / "one", **options)
        asked = server.count
        build(tmp_path / "two", llm_cache=str(tmp_path / "one" / "llm" / "cache.jsonl"), **options)
        assert server.count == asked, "a build with the cache asks nothing again"
    assert first["descriptors"]["proposers"] == ["openai:proposer-a", "openai:proposer-b"]
    assert first["descriptors"]["prompts"] == first["rows"][CONFIG] == 2
    shard = f"data/{CONFIG}/test-00000-of-00001.parquet"
    assert (tmp_path / "one" / shard).read_bytes() == (tmp_path / "two" / shard).read_bytes()
    import datasets

    rows = datasets.load_dataset(str(tmp_path / "one"), CONFIG, split="test")
    row = rows.filter(lambda r: r["prompt_id"] == "cultivate/it/wedding/wedding")[0]
    assert row["objects"] == [{"token": "proposer-a objects", "style": "neutral"},
                              {"token": "proposer-b objects", "style": "neutral"}]
    assert row["stereotypes"] == ["giant flags", "oversized rugs"] and row["refiner"] == "openai:refiner-x"
    decisions = datasets.load_dataset(str(tmp_path / "one"), "llm-decisions", split="test")
    stages = set(decisions["stage"])
    assert {"descriptors-propose", "descriptors-refine", "stereotypes"} <= stages
    card = (tmp_path / "one" / "README.md").read_text()
    assert "proposer-refiner" in card and "SEED" not in card


def test_build_without_an_llm_writes_the_seed_rows(tmp_path):
    report = build(tmp_path / "ds", countries=["IT"], concepts=["cuisine"], prompt_sets=["cultivate"])
    assert report["descriptors"]["source"] == "seed" and report["rows"][CONFIG] == 6
    assert report["rows"]["cultivate"] == 576 and "cultivate_activities" not in report
    assert "SEED rows written by hand" in (tmp_path / "ds" / "README.md").read_text()


def test_build_with_another_activity_catalogue(tmp_path):
    path = resources.files("cultureboard.builder").joinpath("data/cultivate_demo_activities.yaml")
    report = build(tmp_path / "ds", countries=["IT"], concepts=["cuisine"], prompt_sets=["cultivate"],
                   cultivate_activities=str(path))
    assert report["rows"]["cultivate"] == 6 == report["rows"][CONFIG]
    assert report["cultivate_activities"]["file"] == "cultivate_demo_activities.yaml"
    (tmp_path / "bad.yaml").write_text("categories: {}\n", encoding="utf-8")
    with pytest.raises(CultureboardError, match="not a valid activity catalogue"):
        build(tmp_path / "ds2", prompt_sets=["cultivate"], cultivate_activities=str(tmp_path / "bad.yaml"))
