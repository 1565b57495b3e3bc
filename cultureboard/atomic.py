"""Write outputs so that a reader never sees them half-written: build in a temporary path, then rename."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

from .errors import CultureboardError

#: Written into every output folder, so that a rerun may replace it but nothing else is ever replaced.
MARKER = ".cultureboard-output"


def check_replaceable(target: Path) -> None:
    """Fail early (before any work) if ``target`` exists and is not an earlier cultureboard output."""
    if target.exists() and (not target.is_dir() or (any(target.iterdir()) and not (target / MARKER).exists())):
        raise CultureboardError(
            target, "exists and is not an earlier cultureboard output, so it will not be overwritten",
            "choose a new or empty folder for --out",
        )


@contextlib.contextmanager
def atomic_dir(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a fresh temporary folder next to ``target``; on success it replaces ``target``.

    On any exception the temporary folder is removed and ``target`` is left as it was. An existing
    ``target`` is replaced only if it is empty or an earlier cultureboard output (it has the marker).
    """
    target = Path(target)
    check_replaceable(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    (tmp / MARKER).write_text("This folder was written by cultureboard and may be replaced by a rerun.\n")
    old = None
    if target.exists():
        old = target.parent / f".{target.name}.old-{os.getpid()}"
        os.replace(target, old)
    os.replace(tmp, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))
