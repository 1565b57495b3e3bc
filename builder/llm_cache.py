"""An on-disk LLM response cache: the build's record of every LLM call (DESIGN principle 2).

The cache is one append-only JSONL file, one record per call::

    {"key", "backend", "model", "messages", "params", "response", "error", "created_at"}

``key`` is the sha256 of the canonical JSON of ``{backend, model, messages, params}``, so the same
request always finds the same answer and a change to any of the four is a new request. A call that
failed in transport is recorded with its ``error`` kind and a null ``response``, but it is never
served back: a rerun asks again.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import threading
from pathlib import Path
from typing import Any

from cultureboard.errors import CultureboardError
from cultureboard.text import ANSWER, text_problem

_REQUEST_FIELDS = ("backend", "model", "messages", "params")


def request_key(request: dict[str, Any]) -> str:
    """sha256 of the canonical JSON (sorted keys, no spaces, UTF-8) of the request's four fields."""
    body = {field: request[field] for field in _REQUEST_FIELDS}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    """Responses by request key, loaded from ``path`` on open; each :meth:`put` appends one line."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._responses: dict[str, str] = {}
        self._lock = threading.Lock()
        if self.path.exists():
            self._load()

    def _load(self) -> None:
        with self.path.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    key, response, error = record["key"], record["response"], record["error"]
                    if error is None and (problem := text_problem(response, ANSWER)) is not None:
                        raise ValueError(f"its response {problem}")
                except (ValueError, TypeError, KeyError, RecursionError) as exc:
                    detail = "nested deeper than the JSON parser goes" if isinstance(exc, RecursionError) else exc
                    raise CultureboardError(
                        f"{self.path}:{lineno}", f"is not a valid cache record ({exc.__class__.__name__}: "
                        f"{str(detail)[:200]})",
                        "delete that line (the call is made again on the next build) or restore the file",
                    ) from None
                if error is None:
                    self._responses[key] = response

    def __len__(self) -> int:
        return len(self._responses)

    def get(self, request: dict[str, Any]) -> str | None:
        """The cached response text for ``request``, or None when it was never answered."""
        return self._responses.get(request_key(request))

    def put(self, request: dict[str, Any], response: str | None, error: str | None = None) -> str:
        """Append the record of one call (a response, or the kind of transport error) and return its key."""
        key = request_key(request)
        record = {
            "key": key,
            **{field: request[field] for field in _REQUEST_FIELDS},
            "response": response,
            "error": error,
            "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        }
        line = json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line)
            if error is None:
                self._responses[key] = response
        return key
