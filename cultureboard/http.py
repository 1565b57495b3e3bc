"""One retry helper for every HTTP client of the project (SPARQL endpoints, LLM servers, Commons downloads).

A call is retried when it failed in a way another attempt may fix (a timeout, a refused or dropped
connection, HTTP 429 or 5xx); the wait doubles from ``backoff`` seconds, is capped at ``max_wait``,
and a server's ``Retry-After`` (seconds) is honoured up to that cap. Anything else is raised at once.

A socket timeout bounds one read only: a server that sends a byte a second never trips it. A body is
therefore read with :func:`read_body`, which also bounds the whole read by a deadline on the monotonic clock;
:class:`Deadlines` gives each answer (or file) its deadline within the run's: every client that reads the
network (Commons, SPARQL, the LLM server, the official downloads) reads through both.
"""

from __future__ import annotations

import http.client
import threading
import time
import urllib.error
from typing import Any, Callable, TypeVar

T = TypeVar("T")

#: HTTP statuses another attempt may fix.
RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})


class DeadlinePassed(TimeoutError):
    """A read that went on past its overall deadline (``str()`` says which)."""


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` is a failure that a later attempt may not repeat (an overall deadline that passed is not)."""
    if isinstance(exc, DeadlinePassed):
        return False
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code in RETRYABLE_STATUS
    return isinstance(exc, (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException))


def _retry_after(exc: BaseException) -> float | None:
    headers = getattr(exc, "headers", None)
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:  # an HTTP date: fall back to the exponential wait
        return None


class Deadlines:
    """A client's overall time limits: ``per_answer`` seconds for one answer or file (all its attempts together)
    and ``per_run`` seconds for everything it reads, counted from its creation (the start of the run)."""

    def __init__(self, per_answer: float, per_run: float):
        self.per_answer, self.per_run = per_answer, per_run
        self.run_ends = time.monotonic() + per_run

    def next(self) -> float:
        """The deadline of the next answer (a ``time.monotonic()`` value): ``per_answer`` from now, or the end of
        the run if that is earlier; :class:`DeadlinePassed` once the run's end has passed."""
        now = time.monotonic()
        if now > self.run_ends:
            raise DeadlinePassed(f"the run went on past its time limit of {self.per_run:g} s")
        return min(now + self.per_answer, self.run_ends)

    def limits(self) -> str:
        """The limits in words, for an error line."""
        return f"the limits are {self.per_answer:g} s an answer and {self.per_run:g} s a run"


def read_body(response, *, max_bytes: int, deadline: float, chunk: int = 65536) -> bytes:
    """At most ``max_bytes + 1`` bytes of ``response`` (a caller compares the length with ``max_bytes``), read
    in pieces of at most ``chunk`` bytes until the end or :class:`DeadlinePassed` once ``time.monotonic()`` is past
    ``deadline``: each piece waits at most the socket timeout, so the whole read ends by ``deadline`` plus one
    timeout whatever the server's pace. A connection that ends before its Content-Length is
    ``http.client.IncompleteRead``, as ``response.read()`` says it."""
    parts, n = [], 0
    while n <= max_bytes:
        if time.monotonic() > deadline:
            raise DeadlinePassed(f"still sending after its time limit ({n:,} bytes so far)")
        piece = response.read1(min(chunk, max_bytes + 1 - n))
        if not piece:
            if getattr(response, "length", None):  # http.client: bytes the Content-Length promised and never came
                raise http.client.IncompleteRead(b"".join(parts), response.length)
            break
        parts.append(piece)
        n += len(piece)
    return b"".join(parts)


def finish_within(seconds: float, call: Callable[[], T]) -> T:
    """``call()`` -- a library's download that reads the network with per-read timeouts only (the Hugging Face
    Hub client) -- waited for at most ``seconds``: :class:`DeadlinePassed` after that. The call goes on in a daemon
    thread, which ends with the process once its command has ended on the error (the Hub client writes each file
    under a temporary name and renames it when complete, so nothing half-downloaded is ever used)."""
    box: dict = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise DeadlinePassed(f"still downloading after its time limit of {seconds:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def open_by(opener: Callable[..., Any], request, *, timeout: float, deadline: float):
    """``opener(request, timeout=timeout)`` (``urllib.request.urlopen`` or an opener's ``open``) whose status line
    and headers must have arrived by ``deadline`` (a ``time.monotonic()`` value), or :class:`DeadlinePassed`: a
    server that drips them a byte at a time, each within the socket timeout, would otherwise hold the read for as
    long as it likes. The body is then read by :func:`read_body` under the same deadline."""
    try:
        return finish_within(max(0.0, deadline - time.monotonic()), lambda: opener(request, timeout=timeout))
    except DeadlinePassed:
        raise DeadlinePassed("still sending its headers after its time limit") from None


def with_retries(call: Callable[[], T], *, retries: int = 3, backoff: float = 1.0, max_wait: float = 30.0,
                 transient: Callable[[BaseException], bool] = is_transient,
                 sleep: Callable[[float], None] = time.sleep) -> T:
    """``call()``, attempted up to ``retries + 1`` times while it fails with a ``transient`` exception.

    The last exception is re-raised unchanged, so the caller turns it into its own one-line error.
    """
    for attempt in range(retries + 1):
        try:
            return call()
        except Exception as exc:
            if attempt >= retries or not transient(exc):
                raise
            wait = _retry_after(exc)
            sleep(min(max_wait, backoff * 2**attempt if wait is None else wait))
    raise AssertionError("unreachable")
