"""Faults of the machine and of the other end, through the real CLI: the operating system refusing a write (a file
size limit, a full disk, a read-only folder), a network peer that answers one byte a second, in its body or in its
headers (SPARQL, an OpenAI-protocol LLM server, an official download), and a worker process that is alive but never answers (a
thumbnail worker, the dump's decompressor).

Rules: an ``OSError`` that no command turned into its own error ends any command in one line ``error: PATH:
STRERROR (fix: ...)`` with a fix chosen by the errno (``cultureboard.cli.main``), and no output is left
half-written (outputs are written atomically); every network read has a deadline per answer or file and per run
(``cultureboard.http.open_by`` for the headers, ``read_body`` for the body), so a dripping peer ends the command in one line that says so; every wait on a
worker process is bounded by a stall limit (``cultureboard.workers``): a worker that sends nothing for that long
is killed and the command ends in one line.

Corpus count (for the README; ``test_hostile_counts.py`` keeps it true): 14 cases, 14 rejected cleanly, 0 accepted
by design (OS_ERRORS, DRIPS, a dripping SPARQL endpoint past the run's deadline, an LLM server whose slow answers
outlast the build's deadline, a hung decompressor; the hung thumbnail worker is a case of
``test_hostile_submissions.py``).
"""

from __future__ import annotations

import errno
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from cultureboard.builder.build import sample_dump_path
from cultureboard.cli import main
from test_hostile_references import finishes
from test_outputs import read_only  # noqa: F401 (a fixture: a read-only folder, or a skip where none can be made)

DUMP = str(sample_dump_path())


def _file_size_limit() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))


def cli_limited(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``cultureboard ARGS`` in a process whose files may not grow past 2,000 bytes (``ulimit -f``: EFBIG)."""
    return subprocess.run([sys.executable, "-c", "import sys; from cultureboard.cli import main; sys.exit(main())",
                           *args], cwd=cwd, capture_output=True, text=True, preexec_fn=_file_size_limit, timeout=300)


def one_line(err: str) -> str:
    assert "Traceback" not in err, err
    [line] = err.strip().splitlines()
    assert line.startswith("error: ") and "(fix: " in line, err
    return line


EXTRACT = ["extract-artifacts", "--dump", DUMP, "--concepts", "cuisine", "--countries", "JP,IT"]

# (id, the command's arguments after the output path's folder OUT, the words of the fix)
OS_ERRORS = [
    ("file-too-large-extract-artifacts", "efbig", EXTRACT + ["--out", "OUT/artifacts"], "ulimit -f"),
    ("file-too-large-convert-dump", "efbig", ["convert-dump", DUMP, "OUT/dump.nt"], "ulimit -f"),
    ("disk-full-extract-artifacts", "enospc", EXTRACT + ["--out", "OUT/artifacts"], "free space"),
    ("read-only-extract-artifacts", "read-only", EXTRACT + ["--out", "OUT/artifacts"], "remount"),
    ("read-only-convert-dump", "read-only", ["convert-dump", DUMP, "OUT/dump.nt"], "remount"),
]


@pytest.mark.parametrize("fault, args, fix", [pytest.param(*c[1:], id=c[0]) for c in OS_ERRORS])
def test_a_refused_write_ends_any_command_in_one_line(capsys, tmp_path, request, monkeypatch, fault, args, fix):
    out = request.getfixturevalue("read_only") if fault == "read-only" else tmp_path / "out"
    out.mkdir(exist_ok=True)
    args = [a.replace("OUT", str(out)) for a in args]
    if fault == "efbig":
        done = cli_limited(args, tmp_path)
        code, err = done.returncode, done.stderr
    else:
        if fault == "enospc":  # the dump index's spill file, on a full disk
            def full(*_, **__):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), tempfile.gettempdir())
            monkeypatch.setattr(tempfile, "TemporaryFile", full)
        code, err = main(args), capsys.readouterr().err
    line = one_line(err)
    assert code != 0 and fix in line, line
    assert not [p for p in out.iterdir() if not p.name.startswith(".")] and not list(out.glob(".*tmp*")), \
        list(out.iterdir())


# --- network peers that drip


class DripServer:
    """An HTTP server on 127.0.0.1 that answers every request 200 with a long body sent one byte at a time,
    ``pause`` seconds apart (never tripping a per-read socket timeout), until the client goes away; with
    ``headers=True`` it drips a header line instead, so the body never starts."""

    def __init__(self, pause: float = 0.5, headers: bool = False):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        stop = self.stop = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            def _drip(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if headers:  # the status line and one header sent; the next header never ends
                    self.flush_headers()
                    self.wfile.write(b"X-Drip: ")
                else:
                    self.send_header("Content-Length", str(10**6))
                    self.end_headers()
                try:
                    while not stop.wait(pause):
                        self.wfile.write(b" ")
                        self.wfile.flush()
                except OSError:  # the client gave up: what the deadline is for
                    pass

            do_GET = do_POST = _drip

            def log_message(self, *args):
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> "DripServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()


# (id, module, its per-answer and per-run limits as set for the test, the command with URL for the server's)
PEERS = [
    ("sparql-answer", "kb_sparql", {"QUERY_SECONDS": 1.0}, EXTRACT[:1] + ["--sparql", "URL/sparql"] + EXTRACT[3:]),
    ("llm-answer", "llm_backends", {"CALL_SECONDS": 1.0},
     ["build", "--llm", "openai:drip", "--countries", "IT", "--concepts", "cuisine", "--prompt-sets", "cube-awareness"]),
    ("official-download", "importers", {"FILE_SECONDS": 1.0}, ["import", "cube-1k", "URL/cube_1k.json"]),
]
#: Each peer dripping its body, then its headers: (id, module, limits, args, headers)
DRIPS = [(f"{c[0]}{'-headers' if headers else ''}", *c[1:], headers) for headers in (False, True) for c in PEERS]


@pytest.mark.parametrize("module, limits, args, headers", [pytest.param(*c[1:], id=c[0]) for c in DRIPS])
def test_a_dripping_peer_ends_the_command_at_its_deadline(capsys, tmp_path, monkeypatch, module, limits, args, headers):
    import importlib

    target = importlib.import_module(f"cultureboard.builder.{module}")
    for name, seconds in limits.items():
        monkeypatch.setattr(target, name, seconds)
    with DripServer(headers=headers) as server:
        monkeypatch.setenv("CULTUREBOARD_LLM_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("CULTUREBOARD_LLM_API_KEY", "sk-test")
        code = finishes(lambda: main([a.replace("URL", server.url) for a in args] + ["--out", str(tmp_path / "out")]))
    line = one_line(capsys.readouterr().err)
    assert code == 1 and "too slowly" in line and "time limit" in line, line
    assert not (tmp_path / "out").exists()


def test_a_dripping_sparql_endpoint_ends_at_the_run_deadline(capsys, tmp_path, monkeypatch):
    """Each answer may take long, the run may not."""
    from cultureboard.builder import kb_sparql

    monkeypatch.setattr(kb_sparql, "RUN_SECONDS", 1.0)
    with DripServer() as server:
        code = finishes(lambda: main(EXTRACT[:1] + ["--sparql", server.url + "/sparql"] + EXTRACT[3:]
                                     + ["--out", str(tmp_path / "out")]))
    line = one_line(capsys.readouterr().err)
    assert code == 1 and "too slowly" in line and "1 s a run" in line, line


def test_an_llm_answering_slowly_ends_the_build_at_its_deadline(capsys, tmp_path, monkeypatch):
    """Each answer comes whole, a byte every 20 ms (well within the per-answer limit), so only the build's one
    deadline (``--llm-deadline``, every call together) stops a server that would otherwise hold it for hours."""
    import json
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    answer = json.dumps({"choices": [{"message": {"role": "assistant", "content": "Yes."}}]}).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            try:
                for k in range(len(answer)):
                    self.wfile.write(answer[k:k + 1])
                    self.wfile.flush()
                    time.sleep(0.02)
            except OSError:
                pass

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("CULTUREBOARD_LLM_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/v1")
    monkeypatch.setenv("CULTUREBOARD_LLM_API_KEY", "sk-test")
    try:
        code = finishes(lambda: main(["build", "--llm", "openai:slow", "--llm-deadline", "3", "--countries", "IT,JP",
                                      "--prompt-sets", "cube-awareness", "--out", str(tmp_path / "out")]))
    finally:
        server.shutdown()
        server.server_close()
    line = one_line(capsys.readouterr().err)
    assert code == 1 and "answered too slowly" in line and "3 s a run" in line and "--llm-deadline" in line, line
    assert not (tmp_path / "out").exists()


# --- a worker process alive but never answering (the site's thumbnail workers: tests/test_hostile_submissions.py)

def test_a_hung_decompressor_ends_the_command_in_one_line(capsys, tmp_path, monkeypatch):
    """The .gz dump's decompressing child sleeps instead: killed once it has been silent for the stall limit."""
    import gzip
    import shutil

    from cultureboard import workers
    from cultureboard.builder import kb_dump

    dump = tmp_path / "dump.json.gz"
    with open(DUMP, "rb") as source, gzip.open(dump, "wb") as target:
        shutil.copyfileobj(source, target)
    monkeypatch.setattr(workers, "STALL_SECONDS", 1.0)
    monkeypatch.setattr(kb_dump, "_decompress_command",
                        lambda path: [sys.executable, "-c", "import time; time.sleep(3600)"])
    code = finishes(lambda: main(["extract-artifacts", "--dump", str(dump), *EXTRACT[3:], "--out", str(tmp_path / "out")]))
    line = one_line(capsys.readouterr().err)
    assert code == 1 and line.startswith(f"error: {dump}: ") and "the process decompressing it is alive but sent nothing" in line, line
    assert not (tmp_path / "out").exists()


def test_a_hung_image_decoding_worker_ends_in_one_error(tmp_path, monkeypatch):
    """The scoring engine's DataLoader workers (not counted above: through the engine's image loading, which
    ``evaluate`` uses): a worker that sleeps instead of decoding ends the loading with one error at the stall limit."""
    import time

    from PIL import Image

    from cultureboard import workers
    from cultureboard.errors import CultureboardError
    from cultureboard.evaluators.engine.images import ImageSource, decode_batches

    Image.new("RGB", (8, 8)).save(tmp_path / "a.png")
    monkeypatch.setattr(workers, "STALL_SECONDS", 2.0)
    items = [ImageSource("0" * 64, path=tmp_path / "a.png")] * 2

    def sleeps(_image):
        time.sleep(3600)

    def load():
        try:
            return list(decode_batches(items, sleeps, batch_size=1, num_workers=1))
        except CultureboardError as exc:
            return exc.message

    message = finishes(load)
    assert isinstance(message, str) and message.startswith("an image decoding worker process: failed ("), message
    assert "timed out" in message, message
