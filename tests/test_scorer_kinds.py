"""The pairwise and judge scorer kinds: tiny stand-ins through the real loaders, the maths they must satisfy,
and their cached use."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from cultureboard.evaluators.engine.batching import BATCH_SIZE
from PIL import Image

from cultureboard.evaluators.engine import judge
from cultureboard.evaluators.engine.cache import Cache
from cultureboard.evaluators.engine.images import ImageSource
from cultureboard.evaluators.engine.pairwise import compare_pairs
from cultureboard.evaluators.engine.scorers import identity_of, load_scorer


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> list[ImageSource]:
    folder = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(3)
    out = []
    for i, size in enumerate([(64, 48), (80, 80), (40, 96), (64, 64)]):
        path = folder / f"{i}.png"
        Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)).save(path)
        out.append(ImageSource(hashlib.sha256(path.read_bytes()).hexdigest(), path, label=path.name))
    return out


@pytest.fixture(scope="module")
def lpips_scorer(tiny_scorers):
    return load_scorer("lpips-alex", config=tiny_scorers)


@pytest.fixture(scope="module")
def vlm(tiny_scorers):
    return load_scorer("qwen2.5-vl-7b", config=tiny_scorers)


# ------------------------------------------------------------------------------------------ pairwise

def test_lpips_loads_through_the_package_and_agrees_with_it(lpips_scorer, tiny_scorers, images):
    import lpips
    import torch

    assert (lpips_scorer.kind, lpips_scorer.backend) == ("pairwise", "lpips")
    assert lpips_scorer.revision.startswith("local:")
    folder = tiny_scorers.parent / "lpips-alex"
    reference = lpips.LPIPS(net="alex", pretrained=False, pnet_rand=True, verbose=False)
    state = {**torch.load(folder / "backbone.pth"), **torch.load(folder / "linear.pth")}
    reference.load_state_dict({**reference.state_dict(), **state})
    reference.eval()
    a = torch.stack([lpips_scorer.image_transform(images[0].open()), lpips_scorer.image_transform(images[1].open())])
    b = torch.stack([lpips_scorer.image_transform(images[2].open()), lpips_scorer.image_transform(images[1].open())])
    with torch.inference_mode():
        expected = reference(a, b).reshape(2).numpy()
    got = lpips_scorer.compare(a, b)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert got[1] == 0.0 and got[0] > 0, "d(x, x) = 0 and distinct images are apart"


def test_lpips_pairs_are_symmetric_cached_and_in_order(lpips_scorer, images, tmp_path):
    calls = []
    compare = lpips_scorer.compare
    lpips_scorer.compare = lambda a, b: (calls.append(len(a)), compare(a, b))[1]
    try:
        pairs = [(images[0], images[1]), (images[1], images[0]), (images[2], images[2]), (images[3], images[0])]
        cache = Cache(tmp_path)
        d = compare_pairs(cache, identity_of(lpips_scorer), lambda: lpips_scorer, pairs)
        assert d[2] == 0 and d[0] == pytest.approx(d[1], abs=1e-6) and d[3] > 0
        again = compare_pairs(Cache(tmp_path), identity_of(lpips_scorer), lambda: pytest.fail("model loaded"), pairs)
        np.testing.assert_array_equal(again, d)
        assert calls == [BATCH_SIZE], "the 4 pairs computed once, in one fixed-shape batch (padded)"
        reversed_order = compare_pairs(Cache(tmp_path), identity_of(lpips_scorer), lambda: lpips_scorer, pairs[::-1])
        np.testing.assert_array_equal(reversed_order, d[::-1])
    finally:
        del lpips_scorer.compare


# --------------------------------------------------------------------------------------------- judge

def test_tiny_judge_loads_and_probability_is_teacher_forced_product(vlm, images):
    import torch

    assert (vlm.kind, vlm.backend) == ("judge", "transformers-vlm")
    prompts = ["Is this a dish? Answer Yes or No.", "Is this a landmark?"]
    pil = [images[0].open(), images[1].open()]
    logp = vlm.answer_logprob(pil, prompts, "Yes")
    assert np.array_equal(logp, vlm.answer_logprob(pil, prompts, "Yes")), "deterministic"
    # the same probability token by token: generation prompt, then each answer token appended in turn
    answer_ids = vlm.processor.tokenizer("Yes", add_special_tokens=False)["input_ids"]
    for k in range(2):
        total = 0.0
        for n in range(len(answer_ids)):
            inputs = vlm._inputs([pil[k]], [prompts[k]], [vlm.processor.tokenizer.decode(answer_ids[:n])])
            with torch.inference_mode():
                logits = vlm.model(**inputs).logits[0, -1].float()
            total += float(torch.log_softmax(logits, -1)[answer_ids[n]])
        assert logp[k] == pytest.approx(total, abs=1e-4)


def test_probabilities_are_cached(vlm, images, tmp_path):
    items = [(images[0], "Is this food?"), (images[1], "Is this food?"), (images[0], "Is this food?")]
    p = judge.answer_probability(Cache(tmp_path), identity_of(vlm), lambda: vlm, items)
    assert ((0 < p) & (p <= 1)).all() and p[0] == p[2]
    again = judge.answer_probability(Cache(tmp_path), identity_of(vlm), lambda: pytest.fail("model loaded"), items)
    np.testing.assert_array_equal(again, p)
    no = judge.answer_probability(Cache(tmp_path), identity_of(vlm), lambda: vlm, items[:1], answer="No")
    assert no[0] != p[0], "the answer is part of the key"


def test_generation_is_deterministic(vlm, images, tmp_path):
    items = [(images[2], "Describe the image as JSON.")]
    first = judge.answers(Cache(tmp_path), identity_of(vlm), lambda: vlm, items, max_new_tokens=6)
    assert first == judge.answers(Cache(tmp_path / "other"), identity_of(vlm), lambda: vlm, items, max_new_tokens=6)


class ScriptedJudge:
    """A judge whose answers are scripted per prompt (the first words of the prompt pick the script)."""

    name, model_id, revision, dtype, device = "fake", "fake/judge", "r1", "float32", "cpu"
    kind, backend, preprocessing = "judge", "fake", "none"
    text_preprocessing = logit_scale = logit_bias = None

    def __init__(self, script):
        self.script, self.prompts = script, []

    def generate(self, images, prompts, max_new_tokens, schema=None):
        self.prompts += prompts
        return [self.script(p) for p in prompts]


def test_json_answers_are_validated_and_retried_with_the_problem(images, tmp_path):
    # an open schema (a closed one is scored by likelihood, never generated): a judge that cannot be constrained
    schema = {"type": "object", "required": ["choice"], "properties": {"choice": {"type": "integer", "minimum": 0}}}

    def script(prompt):
        if prompt.startswith("good"):
            return 'Sure: ```json\n{"choice": 2}\n```'
        if prompt.startswith("late"):
            return '{"choice": 1}' if "not usable" in prompt else '{"choice": -9}'
        return "I cannot tell."

    fake = ScriptedJudge(script)
    items = [(images[0], "good question"), (images[1], "late question"), (images[2], "hopeless question")]
    got = judge.ask_json(Cache(tmp_path), identity_of(fake), lambda: fake, items, schema, retries=2)
    assert got[0] == judge.JudgeAnswer({"choice": 2}, 1)
    assert got[1] == judge.JudgeAnswer({"choice": 1}, 2)
    assert got[2].value is None and got[2].attempts == 3 and got[2].error == "no JSON object in the answer"
    assert any("answer.choice must be between 0 and None" in p for p in fake.prompts), "the retry states the problem"
    hopeless = [p for p in fake.prompts if p.startswith("hopeless")]
    assert len(hopeless) == len(set(hopeless)) == 3, "each attempt asks anew (a repeated prompt would be cached)"
    replay = ScriptedJudge(lambda p: pytest.fail("a cached answer was asked again"))
    assert judge.ask_json(Cache(tmp_path), identity_of(fake), lambda: replay, items, schema, retries=2) == got


@pytest.mark.parametrize("value, schema, problems", [
    ({"a": 1}, {"type": "object", "required": ["a", "b"]}, ["answer lacks 'b'"]),
    ({"a": "x"}, {"type": "object", "properties": {"a": {"type": "integer"}}}, ["answer.a must be an integer"]),
    ({"a": 1.5}, {"type": "object", "properties": {"a": {"type": "integer"}}}, ["answer.a must be an integer"]),
    ({"a": True}, {"type": "object", "properties": {"a": {"type": "number"}}}, ["answer.a must be a number"]),
    (["x", 2], {"type": "array", "items": {"type": "string"}}, ["answer[1] must be a string"]),
    ({"a": "z"}, {"type": "object", "properties": {"a": {"enum": ["x", "y"]}}}, ["answer.a must be one of ['x', 'y']"]),
    ({"a": 1, "b": 2}, {"type": "object", "properties": {"a": {}}, "additionalProperties": False},
     ["answer has the unknown key 'b'"]),
    ({"a": ["x"]}, {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}}, []),
    ([], {"type": "object"}, ["answer must be an object"]),
])
def test_schema_problems(value, schema, problems):
    assert judge.schema_problems(value, schema) == problems


def test_parse_json_finds_the_object_in_prose():
    schema = {"type": "object", "required": ["x"]}
    assert judge.parse_json('Here: {"x": [1, 2]} done', schema) == ({"x": [1, 2]}, None)
    assert judge.parse_json("{'x': 1}", schema)[1].startswith("invalid JSON")
    assert judge.parse_json("nothing", schema) == (None, "no JSON object in the answer")


def test_a_distance_does_not_depend_on_what_the_cache_held(lpips_scorer, images, tmp_path):
    """Every pair is compared alone: with all pairs but one cached, that one gives the bits a fresh run gives (in
    batches the stand-in's AlexNet rounds some lone pairs otherwise than in a batch of many)."""
    pairs = [(a, b) for a in images for b in images if a is not b]
    fresh = compare_pairs(Cache(tmp_path / "fresh"), identity_of(lpips_scorer), lambda: lpips_scorer, pairs)
    for k in range(len(pairs)):
        compare_pairs(Cache(tmp_path / f"warm{k}"), identity_of(lpips_scorer), lambda: lpips_scorer,
                      pairs[:k] + pairs[k + 1:])
        warm = compare_pairs(Cache(tmp_path / f"warm{k}"), identity_of(lpips_scorer), lambda: lpips_scorer, pairs)
        assert fresh.tobytes() == warm.tobytes(), f"pair {k} computed after the others differs"
