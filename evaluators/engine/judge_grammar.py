"""Constrained decoding of a judge's JSON answer: whatever the model's weights, the answer is valid JSON that
matches its schema, and it is complete within the token budget.

A :class:`SchemaConstraint` is a ``transformers`` ``LogitsProcessor`` over the tokenizer's vocabulary. Each
row of the batch walks the schema as a small machine (:func:`_walk`) that asks, token by token, for one of two
things:

* :class:`Literal` -- the next token's text must be a non-empty prefix of one of ``options`` (the JSON skeleton
  ``{"key": [``, a separator ``", "`` or a closing ``]``, an enum value): every other token is masked;
* :class:`Content` -- characters of a JSON string (no quote, backslash or control character, at most
  ``max_chars``), or, where allowed, the closing quote.

The walk knows the tokens left and, at every choice (another array item, another character of a string, a longer
enum value), offers only what can still be closed within them: the shortest completion from any point is known from
the schema (:func:`min_chars`), and a token adds at least one character. So the answer never stops half-written;
when the JSON is complete only the end-of-sequence token is allowed. Decoding stays greedy: among the allowed
tokens the model's most likely one is taken.

Why our own processor and not a library (lm-format-enforcer, outlines, xgrammar, llguidance are on PyPI): they
keep every prefix valid, but none closes the answer when the token budget runs out, and a model that rambles (the
random stand-in always; a real VLM listing descriptors sometimes) is then cut mid-string, which is the failure this
module exists to remove. The schemas a judge is asked are small (objects of arrays of strings, enums), so the
subset below is a hundred lines with no native dependency and no coupling to a transformers version.

Supported schema subset (anything else is a ``ValueError``, a programming error): ``object`` (``properties``, all
emitted in order; their values any supported node), ``array`` of ``string`` (``minItems``, ``maxItems``), ``string``
(``minLength``, ``maxLength``), and ``enum`` / ``boolean`` (the serialized values as literal options; they must be
prefix-free, as JSON strings and ``true``/``false`` are). The output is compact JSON with ``", "`` and ``": "``
separators.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Mapping
from dataclasses import dataclass

import numpy as np

#: The longest string a judge may write when its schema sets no maxLength.
DEFAULT_MAX_LENGTH = 80


@dataclass(frozen=True)
class Literal:
    options: tuple[str, ...]


@dataclass(frozen=True)
class Content:
    max_chars: int  # 0: no content token allowed
    may_close: bool


class Budget:
    """Tokens left to generate, the current one included (set by the processor before each step)."""

    left = 0


Walk = Generator[Literal | Content, str, str]


def _literals(schema: Mapping) -> list[str] | None:
    """The serialized values of an enum or boolean node (None for other nodes)."""
    if "enum" in schema:
        values = [json.dumps(v, ensure_ascii=False) for v in schema["enum"]]
    elif schema.get("type") == "boolean":
        values = ["true", "false"]
    else:
        return None
    if any(a != b and b.startswith(a) for a in values for b in values):
        raise ValueError(f"enum values must be prefix-free when serialized: {values}")
    return values


def _check(schema: Mapping, in_array: bool = False) -> None:
    if _literals(schema) is not None:
        return
    kind = schema.get("type")
    if kind == "string":
        if schema.get("minLength", 0) > schema.get("maxLength", DEFAULT_MAX_LENGTH):
            raise ValueError("minLength exceeds maxLength")
        return
    if kind == "array" and not in_array:
        _check(schema.get("items", {}), in_array=True)
        if schema.get("items", {}).get("type") != "string" and _literals(schema.get("items", {})) is None:
            raise ValueError("constrained arrays hold strings or enum values")
        return
    if kind == "object" and not in_array:
        for sub in schema.get("properties", {}).values():
            _check(sub)
        return
    raise ValueError(f"constrained decoding does not support the schema node {dict(schema)}")


def min_chars(schema: Mapping) -> int:
    """The length of the shortest answer matching ``schema`` (compact form)."""
    literals = _literals(schema)
    if literals is not None:
        return min(map(len, literals))
    kind = schema.get("type")
    if kind == "string":
        return 2 + schema.get("minLength", 0)
    if kind == "array":
        n = schema.get("minItems", 0)
        return 2 + n * min_chars(schema["items"]) + max(0, n - 1) * 2
    properties = schema.get("properties", {})
    keys = sum(len(json.dumps(k, ensure_ascii=False)) + 2 + min_chars(v) for k, v in properties.items())
    return 2 + keys + max(0, len(properties) - 1) * 2


def _literal(budget: Budget, options: Mapping[str, int]) -> Walk:
    """One of ``options`` (option -> characters of room it needs after it), token by token; only the options that
    still fit in the tokens left are offered (a token holds at least one character)."""
    done = ""
    while done not in options:
        done += yield Literal(tuple(o[len(done):] for o, after in options.items()
                                    if o.startswith(done) and len(o) - len(done) + after <= budget.left))
    return done


def _content(budget: Budget, schema: Mapping, tail: int) -> Walk:
    """A string's characters after its opening quote, then the closing quote (``tail``: room needed after it)."""
    lo, hi = schema.get("minLength", 0), schema.get("maxLength", DEFAULT_MAX_LENGTH)
    text = ""
    while True:
        fits = budget.left >= 2 + tail  # this token, then the quote and the tail
        piece = yield Content(hi - len(text) if fits else 0, len(text) >= lo)
        if piece == '"':
            return text
        text += piece


def _value(budget: Budget, schema: Mapping, tail: int) -> Walk:
    literals = _literals(schema)
    if literals is not None:
        yield from _literal(budget, dict.fromkeys(literals, tail))
    elif schema.get("type") == "string":
        yield from _literal(budget, {'"': schema.get("minLength", 0) + 1 + tail})
        yield from _content(budget, schema, tail)
    elif schema.get("type") == "array":
        yield from _array(budget, schema, tail)
    else:
        yield from _object(budget, schema, tail)
    return ""


def _array(budget: Budget, schema: Mapping, tail: int) -> Walk:
    item = schema["items"]
    literals = _literals(item)
    lo, hi, size = schema.get("minItems", 0), schema.get("maxItems", 10 ** 6), min_chars(item)
    yield from _literal(budget, {"[": min_chars(schema) - 1 + tail})
    count = 0
    while True:
        after = 1 + tail + max(0, lo - count - 1) * (2 + size)  # after this item: the items still owed, "]", tail
        options = {"]": tail} if count >= lo else {}
        if count < hi:
            sep = ", " if count else ""
            heads = literals if literals is not None else ['"']
            rest = 0 if literals is not None else size - 1  # a free string's content and closing quote
            options.update({sep + h: rest + after for h in heads})
        if (yield from _literal(budget, options)) == "]":
            return ""
        if literals is None:
            yield from _content(budget, item, after)
        count += 1


def _object(budget: Budget, schema: Mapping, tail: int) -> Walk:
    properties = list(schema.get("properties", {}).items())
    for k, (key, sub) in enumerate(properties):
        head = ("{" if k == 0 else ", ") + json.dumps(key, ensure_ascii=False) + ": "
        after = sum(2 + len(json.dumps(key2, ensure_ascii=False)) + 2 + min_chars(sub2)
                    for key2, sub2 in properties[k + 1:]) + 1 + tail
        yield from _literal(budget, {head: min_chars(sub) + after})
        yield from _value(budget, sub, after)
    yield from _literal(budget, {"}" if properties else "{}": tail})
    return ""


class TokenTexts:
    """What each token id adds to a decoded text, and which ids may appear inside a JSON string."""

    def __init__(self, tokenizer, size: int):
        special = set(tokenizer.all_special_ids) | {i for i, t in tokenizer.added_tokens_decoder.items() if t.special}
        anchor = tokenizer("a", add_special_tokens=False)["input_ids"]
        base = tokenizer.decode(anchor)
        texts = tokenizer.batch_decode([anchor + [i] for i in range(len(tokenizer))], clean_up_tokenization_spaces=False)
        self.text = ["" if i in special or not t.startswith(base) else t[len(base):] for i, t in enumerate(texts)]
        self.text += [""] * max(0, size - len(self.text))
        self.by_text: dict[str, list[int]] = {}
        for i, t in enumerate(self.text):
            if t and "\ufffd" not in t:
                self.by_text.setdefault(t, []).append(i)
        lengths = np.array([len(t) for t in self.text])
        safe = np.array([bool(t) and "\ufffd" not in t and '"' not in t and "\\" not in t
                         and all(ord(c) >= 0x20 for c in t) for t in self.text])
        self.content_length = np.where(safe, lengths, 10 ** 9)  # a string-safe token's length, else too long
        if '"' not in self.by_text:
            raise ValueError("the tokenizer has no token for a lone double quote")

    def literal_ids(self, options: tuple[str, ...]) -> list[int]:
        return [i for o in options for k in range(1, len(o) + 1) for i in self.by_text.get(o[:k], [])]


class SchemaConstraint:
    """``transformers`` LogitsProcessor: every row's generated tokens spell a JSON answer to ``schema`` that is
    complete within ``max_new_tokens``; then only ``eos`` is allowed. :meth:`answer` spells a row's generated ids."""

    def __init__(self, schema: Mapping, vocab: TokenTexts, prompt_length: int, max_new_tokens: int, eos: int,
                 rows: int):
        _check(schema)
        if schema.get("type") not in ("object", "array"):
            raise ValueError("a constrained answer is a JSON object or list (a closed set is scored, not decoded)")
        if min_chars(schema) > max_new_tokens:
            raise ValueError(f"{max_new_tokens} new tokens cannot hold the shortest answer ({min_chars(schema)} "
                             "characters)")
        self.vocab, self.prompt_length, self.max_new, self.eos = vocab, prompt_length, max_new_tokens, eos
        self.budgets = [Budget() for _ in range(rows)]
        self.walks = [_value(b, schema, 0) for b in self.budgets]
        self.needs: list[Literal | Content | None] = [None] * rows

    def _advance(self, row: int, token: int | None, step: int) -> None:
        self.budgets[row].left = self.max_new - step
        try:
            if token is None:
                self.needs[row] = next(self.walks[row])
            else:
                self.needs[row] = self.walks[row].send(self.vocab.text[token])
        except StopIteration:
            self.needs[row] = None

    def _allowed(self, need: Literal | Content | None) -> list[int] | np.ndarray:
        if need is None:
            return [self.eos]
        if isinstance(need, Literal):
            return self.vocab.literal_ids(need.options)
        ids = np.flatnonzero(self.vocab.content_length <= need.max_chars) if need.max_chars > 0 else np.zeros(0, int)
        return np.concatenate([ids, self.vocab.by_text['"']]) if need.may_close else ids

    def __call__(self, input_ids, scores):
        import torch

        step = input_ids.shape[1] - self.prompt_length
        mask = torch.full_like(scores, float("-inf"))
        for row in range(scores.shape[0]):
            if step == 0:
                self._advance(row, None, 0)
            elif self.needs[row] is not None:
                self._advance(row, int(input_ids[row, -1]), step)
            allowed = np.asarray(self._allowed(self.needs[row]), dtype=np.int64)
            if not len(allowed):
                raise ValueError(f"no token can continue the answer ({self.needs[row]})")
            allowed = torch.as_tensor(allowed, device=scores.device)
            mask[row, allowed] = 0.0
        return scores + mask

    def answer(self, generated) -> str:
        """The text of one row's generated ids (special tokens, such as the end and the padding, spell nothing)."""
        return "".join(self.vocab.text[int(t)] for t in generated)
