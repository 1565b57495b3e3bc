"""Faults of the machine and of the other end, through the real CLI: the operating system refusing a write (a file
size limit, a full disk, a read-only folder), a network peer that answers one byte a second (SPARQL, an
OpenAI-protocol LLM server, an official download), and a worker process that is alive but never answers (a
thumbnail worker, the dump's decompressor).

Rules: an ``OSError`` that no command turned into its own error ends any command in one line ``error: PATH:
STRERROR (fix: ...)`` with a fix chosen by the errno (``cultureboard.cli.main``), and no output is left
half-written (outputs are written atomically); every network read has a deadline per answer or file and per run
(``cultureboard.http.read_body``), so a dripping peer ends the command in one line that says so; every wait on a
worker process is bounded by a stall limit (``cultureboard.workers``): a worker that sends nothing for that long
is killed and the command ends in one line.

Corpus count (for the README; ``test_hostile_counts.py`` keeps it true): 11 cases, 11 rejected cleanly, 0 accepted
by design (OS_ERRORS: 5, DRIPS: 3, HUNG_WORKERS: 2, and a dripping SPARQL run past its run deadline).
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
