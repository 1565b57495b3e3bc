"""Where a number came from: the code version, its git commit and the versions of the packages used."""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from . import __version__


def git_commit() -> dict:
    """The commit of the cultureboard checkout in use, and whether it had uncommitted changes (None outside git)."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if commit.returncode != 0:
            return {"commit": None, "dirty": None}
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10)
        return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def code_provenance(packages: tuple[str, ...]) -> dict:
    """The cultureboard version, its git commit, the Python version and the installed version of each of
    ``packages`` (None where one is not installed)."""
    versions = {name: package_version(name) for name in packages}
    return {"cultureboard": __version__, "git": git_commit(), "python": platform.python_version(), "packages": versions}


@functools.cache
def package_version(name: str) -> str | None:
    """The installed version of the distribution ``name`` (None when not installed), read once a process: each
    look-up scans every folder of the import path's distributions (tens of ms on a large environment), and a
    process keeps the modules it imported whatever is installed after."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def file_sha256(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def folder_sha256(path: str | Path, suffixes: set[str] | frozenset[str] | None = None,
                  memo: "FingerprintMemo | None" = None, exclude: frozenset[str] = frozenset()) -> str:
    """A content fingerprint: the sha256 of a file, or for a folder the sha256 over its files' relative
    paths and sha256s (sorted; hidden files and folders left out, and the top-level entries named in
    ``exclude``; only ``suffixes`` when given).

    With a ``memo``, a file whose path, size and modification time are unchanged since it was last hashed
    is not read again (model folders of several GB are fingerprinted once, not on every run)."""
    path = Path(path)
    digest = memo.sha256 if memo is not None else file_sha256
    if path.is_file():
        return digest(path)
    h = hashlib.sha256()
    for f in sorted(path.rglob("*")):
        rel = f.relative_to(path)
        if f.is_file() and not any(part.startswith(".") for part in rel.parts) and rel.parts[0] not in exclude and (
                suffixes is None or f.suffix.lower() in suffixes):
            h.update(rel.as_posix().encode() + b"\0" + bytes.fromhex(digest(f)))
    return h.hexdigest()


class FingerprintMemo:
    """sha256 of files remembered by (absolute path, size, mtime in ns) in a JSON file; :meth:`save` writes it."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self.entries = json.loads(self.path.read_text(encoding="utf-8"))
            assert isinstance(self.entries, dict)
        except (OSError, ValueError, AssertionError):  # absent or unreadable: start afresh
            self.entries = {}
        self.changed = False

    def sha256(self, file: Path) -> str:
        st = file.stat()
        key, stamp = str(file.resolve()), [st.st_size, st.st_mtime_ns]
        known = self.entries.get(key)
        if isinstance(known, list) and known[:2] == stamp and isinstance(known[2], str):
            return known[2]
        digest = file_sha256(file)
        self.entries[key] = [*stamp, digest]
        self.changed = True
        return digest

    def save(self) -> None:
        if self.changed:
            from .atomic import atomic_write_text

            atomic_write_text(self.path, json.dumps(self.entries, sort_keys=True))
            self.changed = False
