"""A scripted OpenAI-protocol chat-completions server for tests (``POST /v1/chat/completions``).

The answer depends on words in the last message:

- a filter question ("Can you classify if ..."): ``Yes.``, or ``No.`` when the prompt contains "Bogus";
- a critique request ("Critique this list"): a short critique;
- a rewrite request ("rewrite the list"): the listed names, numbered, plus two new ones;

and, whatever the request, "Refuse" gives a refusal, "Garble" an answer with no words, "Slow" an
answer after ``slow_seconds`` (past the client's timeout), "Broken" HTTP 500 and "Malformed" a body
that is not JSON. ``requests`` holds every request body received, so tests can count HTTP calls.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ScriptedLLMServer:
    def __init__(self, slow_seconds: float = 1.0):
        self.slow_seconds = slow_seconds
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> "ScriptedLLMServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def respond(self, prompt: str) -> tuple[int, str]:
        """(HTTP status, response body) for one prompt."""
        if "Broken" in prompt:
            return 500, "internal error"
        if "Malformed" in prompt:
            return 200, "this is not json"
        if "Slow" in prompt:
            time.sleep(self.slow_seconds)
        return 200, json.dumps({
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": self.answer(prompt)},
                         "finish_reason": "stop"}],
        })

    @staticmethod
    def answer(prompt: str) -> str:
        if "Refuse" in prompt:
            return "I'm sorry, but I can't help with that."
        if "Garble" in prompt:
            return "#### ~~ 42 !!"
        if "Critique this list" in prompt:
            return "The list misses some popular artifacts."
        if "rewrite the list" in prompt:
            listed = re.findall(r"^- (.+)$", prompt.split("Here is a critique")[0], flags=re.M)
            phrase = re.search(r"popular (.+?) artifacts", prompt).group(1)
            names = [*listed, f"New {phrase} One", f"New {phrase} Two"]
            return "\n".join(f"{i}. {name}" for i, name in enumerate(names, 1))
        return "No." if "Bogus" in prompt else "Yes."


def _handler(server: ScriptedLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with server._lock:
                server.requests.append(body)
            if self.headers.get("Authorization") == "Bearer revoked-key":
                status, text = 401, json.dumps({"error": {"message": "Incorrect API key provided"}})
            else:
                status, text = server.respond(body["messages"][-1]["content"])
            payload = text.encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting ("Slow")
                pass

        def log_message(self, *args) -> None:  # keep test output quiet
            pass

    return Handler
