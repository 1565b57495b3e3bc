"""Judge scorers: a vision-language model that answers a question about an image, and its cached use.

Backend ``transformers-vlm``: ``AutoModelForImageTextToText`` + ``AutoProcessor`` (Qwen2.5-VL, LLaVA,
Idefics, ...); each question is one user turn holding the image and the text, rendered with the
processor's chat template and a generation prompt. Three ways to ask, none of which can fail to parse:

* :func:`yes_no`: P(yes) and P(no) of a yes/no question from ONE forward pass: the next-token distribution at the
  generation position, summed over both spellings ("Yes" + "yes", "No" + "no"). A spelling that the tokenizer
  splits into several tokens counts by its first token (the mass of answers that start that way; one pass cannot
  score the rest), a first token shared by two spellings of one side counts once, and one shared by a yes and a
  no spelling is an error (the pass could not tell them apart).
* :func:`answer_probability`: P(answer | image, question) of a fixed answer, the product of the answer tokens'
  next-token probabilities under teacher forcing (one forward pass per answer).
* :func:`ask_json`: a JSON answer matching a schema. A closed set of answers (every field an enum, a boolean or a
  bounded integer: "which of these candidates") is scored by the likelihood of each allowed answer
  (:func:`answer_probability`), the most likely one taken, never generated; an open answer (lists of strings) is
  decoded greedily under :class:`.judge_grammar.SchemaConstraint`, so any model, a random one included, writes valid
  JSON complete within the token budget. The answer is still parsed and checked (:func:`parse_json`), and a judge
  that cannot be constrained (a scripted test judge) is asked again with the problem stated.

By default each question is asked alone, one forward pass (or one greedy decoding) per question: in a batch, left
padding to the longest batch-mate and the batch's shape change the logits' last bits and can even turn a greedy
answer, so what a run computed would depend on what the cache already held (see :mod:`.cache`). The registry
setting ``batch_size: N`` asks N questions per pass instead (faster on a GPU; its values then depend on the cache's
contents in their last bits). The preprocessing (so the identity and the cache key) says which, so the two are never
mixed. Everything goes through the
cache: keyed by the image's sha256, the full prompt text, the answer or the decoding parameters (the schema
included), and the model's identity (its preprocessing includes the chat template's hash).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from cultureboard.errors import CultureboardError

from .cache import Cache, each_alone, item_sha256
from .embedding import check_transformers, hf_image_settings, locate_transformers
from .images import ImageSource
from .judge_grammar import SchemaConstraint, TokenTexts
from .scorers import Backend, register_backend


#: The spellings of each side of a yes/no answer (ECB's prompt asks in lower case, VQAScore's template too).
YES, NO = ("Yes", "yes"), ("No", "no")


class JudgeScorer:
    """A transformers vision-language model used as a judge (deterministic: eval mode, greedy decoding)."""

    def __init__(self, name: str, model_id: str, revision: str, device: str, dtype: str, folder, settings: Mapping):
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        self.name, self.model_id, self.revision, self.device, self.dtype = name, model_id, revision, device, dtype
        self.processor = AutoProcessor.from_pretrained(folder)
        self.processor.tokenizer.padding_side = "left"
        self.model = AutoModelForImageTextToText.from_pretrained(folder, dtype=getattr(torch, dtype),
                                                                 device_map=device).eval()  # read straight to the device
        template = self.processor.chat_template or ""
        self.preprocessing = (f"{hf_image_settings(self.processor.image_processor)}; chat template sha256 "
                              f"{hashlib.sha256(template.encode()).hexdigest()[:16]}")
        self.batch_size = int(settings.get("batch_size", 1))
        self.preprocessing += ("; one question per forward pass" if self.batch_size == 1 else
                               f"; {self.batch_size} questions per forward pass (values depend on batch-mates)")
        # a cap on generated tokens (a stand-in that never stops on its own); part of the identity when set
        self.max_new_tokens = settings.get("max_new_tokens")
        if self.max_new_tokens is not None:
            self.preprocessing += f"; answers capped at {int(self.max_new_tokens)} tokens"

    def _inputs(self, images: list, prompts: list[str], answers: list[str] | None = None):
        texts = []
        for k, prompt in enumerate(prompts):
            messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]}]
            text = self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            texts.append(text + (answers[k] if answers else ""))
        return self.processor(images=images, text=texts, return_tensors="pt", padding=True).to(self.device)

    def answer_logprob(self, images: list, prompts: list[str], answer: str) -> np.ndarray:
        """log P(answer | image, prompt) for each pair, by teacher forcing."""
        import torch

        answer_ids = self.processor.tokenizer(answer, add_special_tokens=False)["input_ids"]
        inputs = self._inputs(images, prompts, [answer] * len(prompts))
        with torch.inference_mode():
            logits = self.model(**inputs).logits.float()
        n = len(answer_ids)
        if inputs["input_ids"].shape[1] <= n or any(row[-n:].tolist() != answer_ids for row in inputs["input_ids"]):
            raise CultureboardError(f"scorer {self.name}", f"its tokenizer does not keep the answer {answer!r} as "
                                    "separate tokens after the chat template", "choose another answer word or judge")
        # with left padding the answer's tokens are the last n; each is predicted at the position before it
        logp = torch.log_softmax(logits[:, -n - 1:-1], dim=-1)
        targets = torch.tensor(answer_ids, device=logp.device).expand(len(prompts), n)
        return logp.gather(-1, targets[..., None])[..., 0].sum(-1).cpu().numpy()

    def yes_no(self, images: list, prompts: list[str]) -> np.ndarray:
        """(n, 2): [P(yes), P(no)] of each question from one forward pass, each the sum over :data:`YES` / :data:`NO`
        of the spellings' first tokens at the generation position (a first token two spellings of one side share
        counted once; one shared by a yes and a no spelling is an error)."""
        import torch

        tokenizer = self.processor.tokenizer
        sides = [sorted({tokenizer(w, add_special_tokens=False)["input_ids"][0] for w in words}) for words in (YES, NO)]
        if set(sides[0]) & set(sides[1]):
            raise CultureboardError(f"scorer {self.name}", "its tokenizer starts a yes and a no answer with the same "
                                    "token, so one pass cannot tell them apart", "choose another judge")
        inputs = self._inputs(images, prompts)
        with torch.inference_mode():
            logits = self.model(**inputs).logits[:, -1].float()  # left padding: the last position is the next token
        probs = torch.softmax(logits, dim=-1)
        return torch.stack([probs[:, ids].sum(-1) for ids in sides], dim=1).cpu().numpy()

    def generate(self, images: list, prompts: list[str], max_new_tokens: int, schema: Mapping | None = None) -> list[str]:
        """Greedy answers; with ``schema``, decoded under :class:`.judge_grammar.SchemaConstraint` (always a complete,
        valid JSON answer)."""
        import torch

        inputs = self._inputs(images, prompts)
        if self.max_new_tokens is not None:
            max_new_tokens = min(max_new_tokens, int(self.max_new_tokens))
        constraint = None
        if schema is not None:
            if getattr(self, "_token_texts", None) is None:
                self._token_texts = TokenTexts(self.processor.tokenizer, self.model.get_output_embeddings().weight.shape[0])
            eos = self.model.generation_config.eos_token_id
            try:
                constraint = SchemaConstraint(schema, self._token_texts, inputs["input_ids"].shape[1], max_new_tokens,
                                              eos[0] if isinstance(eos, list) else eos, len(prompts))
            except ValueError as exc:
                raise CultureboardError(f"scorer {self.name}", f"cannot answer in the JSON form asked ({exc})",
                                        "raise max_new_tokens (the family option, or the scorer's settings)") from None
        with torch.inference_mode():
            out = self.model.generate(**inputs, do_sample=False, max_new_tokens=max_new_tokens,
                                      logits_processor=[constraint] if constraint else None)
        generated = out[:, inputs["input_ids"].shape[1]:]
        if constraint is not None:
            return [constraint.answer(row) for row in generated]
        return self.processor.batch_decode(generated, skip_special_tokens=True)


register_backend("transformers-vlm", Backend(
    kind="judge", locate=locate_transformers, check=check_transformers,
    build=lambda name, entry, files, model_id, revision, device, dtype: JudgeScorer(
        name, model_id, revision, device, dtype, files, entry.get("settings") or {})))


# --------------------------------------------------------------------------------------- cached use

#: How many answers are stored in the cache together (one shard) when each question is asked alone.
STORED_TOGETHER = 16


def _key(identity: Mapping, kind: str) -> dict:
    return {"kind": kind, **{k: identity[k] for k in ("model_id", "revision", "dtype", "preprocessing")}}


def _cached(cache: Cache, identity: Mapping, kind: str, keys: list[str], items: list[tuple[ImageSource, str]],
            model: Callable, compute: Callable) -> dict:
    """{key: value} for every key: from the cache, the rest computed ``compute(scorer, images, texts)`` one question
    at a time (:func:`.cache.each_alone`; in the judge's ``batch_size`` where that is set above 1), stored
    :data:`STORED_TOGETHER` (or a batch) at a time: a killed run loses at most those in flight."""
    store = cache.store(_key(identity, kind))
    found = store.get(keys)
    todo = list({k: item for k, item in zip(keys, items) if k not in found}.items())
    if todo:
        scorer = model()
        batch_size = getattr(scorer, "batch_size", 1)
        ask = functools.partial(compute, scorer)
        step = batch_size if batch_size > 1 else STORED_TOGETHER
        for start in range(0, len(todo), step):
            part = todo[start:start + step]
            images, texts = [src.open() for _, (src, _t) in part], [text for _, (_s, text) in part]
            values = store.put([k for k, _ in part], ask(images, texts) if batch_size > 1 else
                               each_alone(ask, images, texts))
            found.update(zip((k for k, _ in part), values))
    return found


def answer_probability(cache: Cache, identity: Mapping, model: Callable, items: list[tuple[ImageSource, str]],
                       answer: str = "Yes") -> np.ndarray:
    """P(``answer``) for each (image, question), in [0, 1]."""
    keys = [item_sha256(src.sha256, question, answer) for src, question in items]
    found = _cached(cache, identity, "judge-probability", keys, items, model,
                    lambda scorer, images, texts: scorer.answer_logprob(images, texts, answer))
    return np.exp(np.array([float(found[k]) for k in keys]))


def yes_no(cache: Cache, identity: Mapping, model: Callable,
           items: list[tuple[ImageSource, str]]) -> tuple[np.ndarray, np.ndarray]:
    """(P(yes), P(no)) for each (image, question), over both spellings, from one forward pass per question (the
    pair cached per question)."""
    keys = [item_sha256(src.sha256, question, "first-token", *YES, *NO) for src, question in items]
    found = _cached(cache, identity, "judge-yes-no", keys, items, model,
                    lambda scorer, images, texts: scorer.yes_no(images, texts))
    probs = np.array([found[k] for k in keys], dtype=np.float64).reshape(len(keys), 2)
    return probs[:, 0], probs[:, 1]


def answers(cache: Cache, identity: Mapping, model: Callable, items: list[tuple[ImageSource, str]],
            max_new_tokens: int = 256, schema: Mapping | None = None) -> list[str]:
    """The judge's greedy answer to each (image, prompt); with ``schema``, decoded within it."""
    form = json.dumps(schema, sort_keys=True) if schema is not None else None
    keys = [item_sha256(src.sha256, prompt, max_new_tokens, *([form] if form else [])) for src, prompt in items]
    found = _cached(cache, identity, "judge-answer" if form is None else "judge-json", keys, items, model,
                    lambda scorer, images, texts: scorer.generate(images, texts, max_new_tokens, schema))
    return [str(found[k]) for k in keys]


@dataclass(frozen=True)
class JudgeAnswer:
    """A validated JSON answer (``value``), or ``value`` None with the ``error`` of the last attempt."""

    value: Any
    attempts: int
    error: str | None = None


#: The most answers a closed set may have to be scored one by one (more: decoded under the constraint).
MAX_CLOSED_ANSWERS = 64


def closed_answers(schema: Mapping) -> list | None:
    """Every answer ``schema`` allows when they are few (an enum, a boolean, an integer between a minimum and a
    maximum, or an object whose properties all are, every one required): at most :data:`MAX_CLOSED_ANSWERS`;
    else None."""
    if "enum" in schema:
        values = list(schema["enum"])
    elif schema.get("type") == "boolean":
        values = [True, False]
    elif schema.get("type") == "integer" and "minimum" in schema and "maximum" in schema:
        values = list(range(int(schema["minimum"]), int(schema["maximum"]) + 1))
    elif schema.get("type") == "object" and set(schema.get("required", ())) == set(schema.get("properties", {})):
        keys = list(schema["properties"])
        parts = [closed_answers(schema["properties"][k]) for k in keys]
        if any(p is None for p in parts) or np.prod([len(p) for p in parts]) > MAX_CLOSED_ANSWERS:
            return None
        values = [dict(zip(keys, combo)) for combo in itertools.product(*parts)]
    else:
        return None
    return values if 0 < len(values) <= MAX_CLOSED_ANSWERS else None


def _choose(cache: Cache, identity: Mapping, model: Callable, items: list[tuple[ImageSource, str]],
            candidates: list) -> list[JudgeAnswer]:
    """The most likely of ``candidates`` (written as compact JSON) for each item, by teacher-forced likelihood."""
    likelihood = np.stack([answer_probability(cache, identity, model, items, json.dumps(c, ensure_ascii=False))
                           for c in candidates], axis=1)
    return [JudgeAnswer(candidates[int(np.argmax(row))], 1) for row in likelihood]


def ask_json(cache: Cache, identity: Mapping, model: Callable, items: list[tuple[ImageSource, str]],
             schema: Mapping, retries: int = 2, max_new_tokens: int = 256) -> list[JudgeAnswer]:
    """Ask each (image, question) for a JSON answer that matches ``schema`` (see :func:`schema_problems`): a
    closed set (:func:`closed_answers`) by likelihood, else decoded within the schema; an answer that still fails
    the check is asked again, with the problem stated, up to ``retries`` more times."""
    candidates = closed_answers(schema)
    if candidates is not None:
        return _choose(cache, identity, model, items, candidates)
    results: list[JudgeAnswer | None] = [None] * len(items)
    prompts = [question for _, question in items]
    pending = list(range(len(items)))
    for attempt in range(retries + 1):
        texts = answers(cache, identity, model, [(items[i][0], prompts[i]) for i in pending], max_new_tokens, schema)
        still = []
        for i, text in zip(pending, texts):
            value, problem = parse_json(text, schema)
            if problem is None:
                results[i] = JudgeAnswer(value, attempt + 1)
                continue
            results[i] = JudgeAnswer(None, attempt + 1, problem)
            # the attempt number keeps each retry's prompt new: decoding is greedy, the same prompt gives the same answer
            prompts[i] = (f"{items[i][1]}\n\nYour previous answer was not usable: {problem}. Answer again with "
                          f"only a JSON object, nothing else (attempt {attempt + 2} of {retries + 1}).")
            still.append(i)
        pending = still
        if not pending:
            break
    return results  # type: ignore[return-value]


def parse_json(text: str, schema: Mapping) -> tuple[Any, str | None]:
    """(value, None) when ``text`` holds a JSON value (optionally fenced or surrounded by prose) matching
    ``schema``; else (None, problem)."""
    match = re.search(r"\{.*\}|\[.*\]", text, flags=re.DOTALL)
    if not match:
        return None, "no JSON object in the answer"
    try:
        value = json.loads(match.group(0))
    except ValueError as exc:
        return None, f"invalid JSON ({exc.msg})"
    problems = schema_problems(value, schema)
    return (value, None) if not problems else (None, "; ".join(problems[:3]))


_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


def schema_problems(value: Any, schema: Mapping, where: str = "answer") -> list[str]:
    """What makes ``value`` fail ``schema``: a small JSON-Schema subset (type object / array / string / number /
    integer / boolean, properties, required, items, enum, minimum, maximum, additionalProperties false)."""
    kind = schema.get("type")
    if kind in ("number", "integer"):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
        if kind == "integer":
            ok = ok and float(value).is_integer()
        if not ok:
            return [f"{where} must be {'an integer' if kind == 'integer' else 'a number'}"]
        if "minimum" in schema and value < schema["minimum"] or "maximum" in schema and value > schema["maximum"]:
            return [f"{where} must be between {schema.get('minimum')} and {schema.get('maximum')}"]
    elif kind in _TYPES and not isinstance(value, _TYPES[kind]):
        return [f"{where} must be {'an' if kind[0] in 'ao' else 'a'} {kind}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where} must be one of {schema['enum']}"]
    problems = []
    if kind == "object":
        problems += [f"{where} lacks {key!r}" for key in schema.get("required", ()) if key not in value]
        properties = schema.get("properties", {})
        if schema.get("additionalProperties") is False:
            problems += [f"{where} has the unknown key {key!r}" for key in value if key not in properties]
        for key, sub in properties.items():
            if key in value:
                problems += schema_problems(value[key], sub, f"{where}.{key}")
    elif kind == "array" and "items" in schema:
        for k, item in enumerate(value):
            problems += schema_problems(item, schema["items"], f"{where}[{k}]")
    return problems
