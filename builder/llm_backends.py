"""LLM backends for the builder's refinement stage, and the cached front end every call goes through.

A backend has ``.name`` and ``.model`` (both part of the cache key and of every recorded decision)
and ``.generate(messages, params) -> str``; it raises :class:`LLMCallError` when the call fails in
transport. Two backends exist:

- ``openai:MODEL``: any server speaking the OpenAI chat-completions protocol (OpenAI, vLLM, llama.cpp,
  Ollama, ...), over the standard library's ``urllib``;
- ``transformers:PATH_OR_HUB_ID``: a local causal LM with greedy decoding.

:class:`CachedLLM` puts a :class:`~cultureboard.builder.llm_cache.ResponseCache` in front of a backend.
"""

from __future__ import annotations

import http.client
import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from cultureboard.device import choose_device, choose_dtype
from cultureboard.errors import CultureboardError
from cultureboard.http import Deadlines, DeadlinePassed, open_by, read_body, with_retries
from cultureboard.text import ANSWER, text_problem

from .llm_cache import ResponseCache, request_key

Messages = list[dict[str, str]]

#: Overall limits on reading answers (``cultureboard.http.Deadlines``): one call's answer, all its attempts together,
#: and, by default, the whole run (every call of every backend of one build, counted from its start: ``build
#: --llm-deadline``); and the largest answer.
CALL_SECONDS, RUN_SECONDS = 600.0, 1800.0
MAX_ANSWER_BYTES = 64 << 20

SPEC_FORMS = "'none', 'openai:MODEL' or 'transformers:PATH_OR_HUB_ID'"


class LLMCallError(Exception):
    """A call that failed in transport, after its retries. ``kind`` is one of :attr:`KINDS`."""

    KINDS = ("timeout", "http_error", "bad_response", "refused_connection")

    def __init__(self, kind: str, detail: str, retryable: bool = False):
        assert kind in self.KINDS, kind
        self.kind = kind
        self.retryable = retryable  # whether another attempt may succeed (timeouts, 429 / 5xx, connections)
        super().__init__(f"{kind}: {detail}")


class OpenAIChatBackend:
    """POST ``{base_url}/chat/completions`` and return ``choices[0].message.content``.

    Timeouts, HTTP 429 / 5xx and connection errors are retried ``max_retries`` times, waiting
    ``backoff * 2**attempt`` seconds in between; other HTTP errors and unreadable bodies are not. An answer still
    arriving after :data:`CALL_SECONDS`, or once the run's deadline has passed (``deadlines``, shared by every
    backend of one build; default: :data:`RUN_SECONDS` from this backend's creation), ends the build in one line (a
    server that slow is not fixed by asking again).
    """

    name = "openai"

    def __init__(self, base_url: str, model: str, api_key: str, timeout: float = 60.0, max_retries: int = 2,
                 backoff: float = 1.0, deadlines: Deadlines | None = None):
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.deadlines = deadlines or run_deadlines()

    def generate(self, messages: Messages, params: dict[str, Any]) -> str:
        body = json.dumps({"model": self.model, "messages": messages, **params}).encode("utf-8")
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions", data=body, method="POST",
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"},
        )
        try:
            deadline = self.deadlines.next()
            return with_retries(lambda: self._post(request, deadline), retries=self.max_retries, backoff=self.backoff,
                                transient=lambda exc: isinstance(exc, LLMCallError) and exc.retryable)
        except DeadlinePassed as exc:
            raise CultureboardError(f"--llm openai:{self.model} at {self.base_url}",
                                    f"answered too slowly ({exc}; {self.deadlines.limits()})",
                                    "check the server's load and network, give the build more time with "
                                    "--llm-deadline SECONDS, or build with --llm none") from None

    def _post(self, request: urllib.request.Request, deadline: float) -> str:
        """One attempt; every failure becomes an :class:`LLMCallError`, except a deadline that passed."""
        try:
            with open_by(urllib.request.urlopen, request, timeout=self.timeout, deadline=deadline) as response:
                raw = read_body(response, max_bytes=MAX_ANSWER_BYTES, deadline=deadline)
        except DeadlinePassed:
            raise
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):  # every later call would fail the same way: stop the build
                raise CultureboardError(
                    f"--llm openai:{self.model} at {self.base_url}", f"refused the credentials (HTTP {exc.code})",
                    "set CULTUREBOARD_LLM_API_KEY (or OPENAI_API_KEY) to a key that may use this model",
                ) from None
            detail = f"HTTP {exc.code} from {request.full_url}: {_snippet(exc.read())}"
            raise LLMCallError("http_error", detail, retryable=exc.code == 429 or exc.code >= 500) from None
        except TimeoutError:
            raise LLMCallError("timeout", f"no answer from {request.full_url} in {self.timeout} s",
                                retryable=True) from None
        except urllib.error.URLError as exc:
            kind = "timeout" if isinstance(exc.reason, TimeoutError) else "refused_connection"
            raise LLMCallError(kind, f"{request.full_url}: {exc.reason}", retryable=True) from None
        except OSError as exc:  # connection reset or closed mid-answer
            raise LLMCallError("refused_connection", f"{request.full_url}: {exc}", retryable=True) from None
        except http.client.HTTPException as exc:  # a truncated or malformed HTTP answer
            raise LLMCallError("bad_response", f"{request.full_url}: {exc!r}", retryable=True) from None
        if len(raw) > MAX_ANSWER_BYTES:
            raise LLMCallError("bad_response", f"an answer larger than {MAX_ANSWER_BYTES:,} bytes from {request.full_url}")
        try:
            content = answer_json(raw)["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise LLMCallError("bad_response", f"no choices[0].message.content in {_snippet(raw)}") from None
        if not isinstance(content, str):
            raise LLMCallError("bad_response", f"choices[0].message.content is {content!r}")
        return content


def _snippet(raw: bytes, limit: int = 200) -> str:
    return raw[:limit].decode("utf-8", "replace")


def answer_json(text: str | bytes):
    """``text`` (an LLM's answer, or a part of it) parsed as JSON; ``ValueError`` when it is not JSON, including
    JSON nested deeper than the parser goes (which Python's parser raises as ``RecursionError``)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested deeper than the JSON parser goes") from None


class TransformersBackend:
    """A local causal LM through ``AutoTokenizer`` / ``AutoModelForCausalLM``, loaded on first use.

    Decoding is greedy (``do_sample=False``), so the same prompt always gives the same answer;
    ``params["max_tokens"]`` sets ``max_new_tokens`` and ``temperature`` is ignored. The prompt is
    the tokenizer's chat template when it has one, else ``"User: ...\\nAssistant:"`` lines.
    """

    name = "transformers"

    def __init__(self, model_path: str | os.PathLike, device: str | None = None, dtype: str | None = None):
        self.model = str(model_path)
        self.device, self.dtype = device, dtype
        self._tokenizer = None
        self._lm = None

    def _load(self) -> None:
        """Device and dtype from :mod:`cultureboard.device` (cuda, then mps, then cpu; float16 on cuda)."""
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.device = choose_device(self.device)
        self.dtype = choose_dtype(self.device, self.dtype)
        self._tokenizer = AutoTokenizer.from_pretrained(self.model)
        self._lm = AutoModelForCausalLM.from_pretrained(self.model, dtype=getattr(torch, self.dtype)).to(self.device).eval()

    def render(self, messages: Messages) -> str:
        """The prompt text the model sees for ``messages``."""
        if self._tokenizer is None:
            self._load()
        if self._tokenizer.chat_template:
            return self._tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        lines = [f"{m['role'].capitalize()}: {m['content']}" for m in messages]
        return "\n".join([*lines, "Assistant:"])

    def generate(self, messages: Messages, params: dict[str, Any]) -> str:
        import torch

        prompt = self.render(messages)
        inputs = self._tokenizer(prompt, return_tensors="pt", add_special_tokens=False).to(self.device)
        pad_id = self._tokenizer.pad_token_id
        with torch.no_grad():
            output = self._lm.generate(
                **inputs, do_sample=False, max_new_tokens=int(params.get("max_tokens", 64)),
                pad_token_id=self._tokenizer.eos_token_id if pad_id is None else pad_id,
            )
        new_tokens = output[0, inputs["input_ids"].shape[1]:]
        return self._tokenizer.decode(new_tokens, skip_special_tokens=True).strip()


def run_deadlines(seconds: float | None = None) -> Deadlines:
    """The deadlines of one build's LLM calls, every backend together: :data:`CALL_SECONDS` an answer, ``seconds``
    (default :data:`RUN_SECONDS`) from now for all of them."""
    return Deadlines(CALL_SECONDS, RUN_SECONDS if seconds is None else seconds)


def _env(*names: str) -> str | None:
    return next((os.environ[n] for n in names if os.environ.get(n)), None)


def backend_from_spec(spec: str, *, timeout: float = 60.0, max_retries: int = 2, deadlines: Deadlines | None = None):
    """The backend named by a ``--llm`` spec: ``none`` (None), ``openai:MODEL`` or ``transformers:PATH_OR_HUB_ID``.

    ``openai`` reads its base URL from ``CULTUREBOARD_LLM_BASE_URL`` (else ``OPENAI_BASE_URL``, else
    ``https://api.openai.com/v1``) and its key from ``CULTUREBOARD_LLM_API_KEY`` (else ``OPENAI_API_KEY``);
    ``deadlines`` are the run's (:class:`OpenAIChatBackend`).
    """
    kind, _, target = spec.strip().partition(":")
    if kind == "none" and not target:
        return None
    if kind in ("openai", "transformers") and not target:
        raise CultureboardError(f"--llm {spec}", f"names no {'model' if kind == 'openai' else 'model path'}",
                                f"use {SPEC_FORMS}")
    if kind == "openai":
        api_key = _env("CULTUREBOARD_LLM_API_KEY", "OPENAI_API_KEY")
        if api_key is None:
            raise CultureboardError(f"--llm {spec}", "needs an API key and none is set",
                                    "set CULTUREBOARD_LLM_API_KEY (or OPENAI_API_KEY)")
        base_url = _env("CULTUREBOARD_LLM_BASE_URL", "OPENAI_BASE_URL") or "https://api.openai.com/v1"
        return OpenAIChatBackend(base_url, target, api_key, timeout=timeout, max_retries=max_retries,
                                 deadlines=deadlines)
    if kind == "transformers":
        return TransformersBackend(target)
    raise CultureboardError(f"--llm {spec}", "is not a known LLM backend", f"use {SPEC_FORMS}")


@dataclass(frozen=True)
class Reply:
    """One answer: ``text`` ("" on error), whether it came from the cache, the error kind, the cache key."""

    text: str
    cached: bool
    error: str | None
    key: str


class CachedLLM:
    """A backend behind a response cache: a request answered before is never sent again.

    Transport errors are returned (``Reply.error``) and recorded in the cache file, but not served
    from it, so a rerun retries them. So is an answer that is not storable text (``cultureboard.text.ANSWER``: a
    lone surrogate, a NUL), as ``bad_response``.
    """

    def __init__(self, backend, cache: ResponseCache):
        self.backend = backend
        self.cache = cache

    @property
    def name(self) -> str:
        return self.backend.name

    @property
    def model(self) -> str:
        return self.backend.model

    def chat(self, messages: Messages, **params: Any) -> Reply:
        request = {"backend": self.name, "model": self.model, "messages": messages, "params": params}
        text = self.cache.get(request)
        if text is not None:
            return Reply(text, cached=True, error=None, key=request_key(request))
        try:
            text = self.backend.generate(messages, params)
            if text_problem(text, ANSWER) is not None:
                raise LLMCallError("bad_response", f"an answer that {text_problem(text, ANSWER)}")
        except LLMCallError as exc:
            return Reply("", cached=False, error=exc.kind, key=self.cache.put(request, None, error=exc.kind))
        return Reply(text, cached=False, error=None, key=self.cache.put(request, text))
