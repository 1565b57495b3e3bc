"""The judge always answers: JSON decoded within its schema (a random-weight judge included), closed sets scored by
likelihood, and P(yes) / P(no) over both spellings from one forward pass."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from PIL import Image

from cultureboard.errors import CultureboardError
from cultureboard.evaluators.engine import judge
from cultureboard.evaluators.engine.cache import Cache
from cultureboard.evaluators.engine.images import ImageSource
from cultureboard.evaluators.engine.judge_grammar import min_chars
from cultureboard.evaluators.engine.scorers import identity_of, load_scorer

LIST = {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 12}, "maxItems": 3}
OBJECT = {"type": "object", "properties": {"kind": {"enum": ["a", "bb"]}, "items": LIST, "ok": {"type": "boolean"},
                                           "note": {"type": "string", "minLength": 2}}}


@pytest.fixture(scope="module")
def vlm(tiny_scorers):
    scorer = load_scorer("qwen2.5-vl-7b", config=tiny_scorers)
    scorer.max_new_tokens = None  # the stand-in config caps answers at 16 tokens; these tests set their budgets
    return scorer


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> list[ImageSource]:
    folder = tmp_path_factory.mktemp("judge-images")
    rng = np.random.default_rng(5)
    out = []
    for i in range(4):
        path = folder / f"{i}.png"
        Image.fromarray(rng.integers(0, 256, (48, 48, 3), dtype=np.uint8)).save(path)
        out.append(ImageSource(hashlib.sha256(path.read_bytes()).hexdigest(), path, label=path.name))
    return out


QUESTIONS = ["List the objects.", "What is the setting?", "Attire?", "Describe the arrangement of people."]


def test_min_chars_is_the_shortest_compact_answer():
    assert min_chars(LIST) == len("[]")
    assert min_chars({**LIST, "minItems": 2}) == len('["x", "y"]')
    assert min_chars(OBJECT) == len('{"kind": "a", "items": [], "ok": true, "note": "xx"}')


def test_a_random_judge_writes_invalid_json_unless_constrained(vlm, images):
    pil = [im.open() for im in images]
    free = vlm.generate(pil, QUESTIONS, 24)
    assert all(judge.parse_json(text, LIST)[1] is not None for text in free), "the stand-in rambles"
    for schema in (LIST, OBJECT):
        for budget in (min_chars(schema), min_chars(schema) + 1, min_chars(schema) + 7, 80):
            texts = vlm.generate(pil, QUESTIONS, budget, schema)
            for text in texts:
                value, problem = judge.parse_json(text, schema)
                assert problem is None, (budget, text)
                assert len(text) <= budget and value is not None
    shortest = vlm.generate(pil, QUESTIONS, min_chars(LIST), LIST)
    assert shortest == ["[]"] * 4, "at the shortest budget the only answer fits"
    some = vlm.generate(pil, QUESTIONS, 40, LIST)
    assert any(judge.parse_json(t, LIST)[0] for t in some), "items are written when they fit"
    assert all(len(judge.parse_json(t, LIST)[0]) <= 3 for t in some), "maxItems holds"


def test_a_budget_shorter_than_the_shortest_answer_is_a_clear_error(vlm, images):
    with pytest.raises(CultureboardError, match="cannot answer in the JSON form asked"):
        vlm.generate([images[0].open()], QUESTIONS[:1], min_chars(OBJECT) - 1, OBJECT)
    with pytest.raises(CultureboardError, match="a JSON object or list"):
        vlm.generate([images[0].open()], QUESTIONS[:1], 20, {"type": "string"})


def test_ask_json_is_valid_and_cached(vlm, images, tmp_path):
    items = list(zip(images, QUESTIONS))
    got = judge.ask_json(Cache(tmp_path), identity_of(vlm), lambda: vlm, items, LIST, max_new_tokens=30)
    assert all(a.value is not None and a.attempts == 1 and a.error is None for a in got)
    again = judge.ask_json(Cache(tmp_path), identity_of(vlm), lambda: pytest.fail("model loaded"), items, LIST,
                           max_new_tokens=30)
    assert again == got


def test_yes_no_sums_both_spellings_from_one_forward_pass(vlm, images, tmp_path):
    items = list(zip(images, QUESTIONS))
    calls = []
    forward = vlm.model.forward
    vlm.model.forward = lambda *a, **kw: calls.append(1) or forward(*a, **kw)
    try:
        p_yes, p_no = judge.yes_no(Cache(tmp_path), identity_of(vlm), lambda: vlm, items)
    finally:
        vlm.model.forward = forward
    assert len(calls) == 1, "one forward pass for the batch of questions"
    # the stand-in's tokenizer is byte-level: each spelling's first token is its first letter
    pil = [im.open() for im in images]
    first = {w: np.exp(vlm.answer_logprob(pil, QUESTIONS, w)) for w in ("Y", "y", "N", "n")}
    np.testing.assert_allclose(p_yes, first["Y"] + first["y"], rtol=1e-5)
    np.testing.assert_allclose(p_no, first["N"] + first["n"], rtol=1e-5)
    assert (p_yes > first["Y"]).all() and (p_no > first["N"]).all(), "the lower-case spelling counts"
    cached = judge.yes_no(Cache(tmp_path), identity_of(vlm), lambda: pytest.fail("model loaded"), items)
    np.testing.assert_allclose(cached[0], p_yes, rtol=1e-6)


def test_first_tokens_shared_within_a_side_count_once(vlm, images, monkeypatch):
    pil, question = [images[0].open()], QUESTIONS[:1]
    before = vlm.yes_no(pil, question)
    monkeypatch.setattr(judge, "YES", ("Yes", "Yeah", "yes"))  # "Yeah" starts as "Yes" does: counted once
    np.testing.assert_array_equal(vlm.yes_no(pil, question), before)
    monkeypatch.setattr(judge, "NO", ("No", "yo"))
    with pytest.raises(CultureboardError, match="starts a yes and a no answer with the same token"):
        vlm.yes_no(pil, question)


def test_closed_sets_are_scored_by_likelihood_never_generated(vlm, images, tmp_path):
    schema = {"type": "object", "required": ["choice"], "properties": {"choice": {"type": "integer", "minimum": 0,
                                                                                 "maximum": 3}}}
    assert judge.closed_answers(schema) == [{"choice": n} for n in range(4)]
    assert judge.closed_answers({"enum": ["x", "y"]}) == ["x", "y"]
    assert judge.closed_answers(LIST) is None and judge.closed_answers({"type": "integer", "minimum": 0}) is None
    generate = vlm.generate
    vlm.generate = lambda *a, **kw: pytest.fail("a closed question was generated")
    try:
        items = list(zip(images, QUESTIONS))
        got = judge.ask_json(Cache(tmp_path), identity_of(vlm), lambda: vlm, items, schema)
    finally:
        vlm.generate = generate
    pil = [im.open() for im in images]
    likelihood = np.stack([vlm.answer_logprob(pil, QUESTIONS, f'{{"choice": {n}}}') for n in range(4)], axis=1)
    assert [a.value["choice"] for a in got] == list(likelihood.argmax(axis=1))


def test_asked_alone_a_value_does_not_depend_on_what_the_cache_held(vlm, images, tmp_path, monkeypatch):
    """By default (batch_size 1) each question is its own pass: a cache warmed with some of the questions (another
    submission's, a killed run's) gives the same bits as an empty one. (In batches the rest would be computed beside
    other batch-mates, with other padding; the stand-in shows that only outside the cache, so this test holds the
    property, not the difference.)"""
    monkeypatch.setattr(vlm, "batch_size", 1)
    questions = ("Is this food?", "Does the image show a building from Japan, or a house from a country near it?")
    items = [(im, q) for im in images for q in questions]

    def ask(cache: Cache, chosen=slice(None)):
        return (*judge.yes_no(cache, identity_of(vlm), lambda: vlm, items[chosen]),
                judge.answer_probability(cache, identity_of(vlm), lambda: vlm, items[chosen], "Yes"),
                np.array(judge.answers(cache, identity_of(vlm), lambda: vlm, items[chosen], max_new_tokens=3)))

    fresh = ask(Cache(tmp_path / "fresh"))
    ask(Cache(tmp_path / "warm"), slice(1, None, 2))  # the long questions: in a batch, the short ones lose their padding
    warm = ask(Cache(tmp_path / "warm"))
    assert all(a.tobytes() == b.tobytes() for a, b in zip(fresh, warm))


def test_one_question_per_pass_unless_a_batch_size_is_set(tiny_scorers):
    """The default asks each question alone; ``batch_size: N`` is an opt-in that the preprocessing (so the identity
    and the cache key) records, so batched values never stand in for values asked alone."""
    import yaml

    entry = yaml.safe_load(tiny_scorers.read_text())["qwen2.5-vl-7b"]
    entry["path"] = str(tiny_scorers.parent / entry["path"])
    alone, batched = (load_scorer("qwen2.5-vl-7b", config={"qwen2.5-vl-7b": {**entry, "settings": settings}})
                      for settings in ({}, {"batch_size": 4}))
    assert alone.batch_size == 1 and alone.preprocessing.endswith("; one question per forward pass")
    assert batched.batch_size == 4 and "; 4 questions per forward pass" in batched.preprocessing
    assert judge._key(identity_of(alone), "judge-yes-no") != judge._key(identity_of(batched), "judge-yes-no")
