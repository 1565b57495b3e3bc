"""Rules on paths and the folder: what may be in a submission folder, and what a ``file_name`` may be.

No symbolic or hard links (links are never followed), no special, hidden or system files (``.*``, ``__MACOSX``,
``Thumbs.db``, ``desktop.ini``), no executables (exec bit, ELF, MZ, ``#!``) or archives (magic or extension), and
nothing but ``submission.yaml``, ``metadata.jsonl``, an optional ``README.md`` and the images ``metadata.jsonl``
lists; a ``file_name`` (and ``package``'s mapping ``file``) is a plain relative path with ``/`` separators.
Text fields (every rule group's strings) are checked by :meth:`.report.Run.text`; their codes are here.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from ..format import METADATA, SUBMISSION_YAML
from .report import Run, open_nofollow, show

README = "README.md"

CODES: dict[str, str] = {
    "folder.missing_file": "submission.yaml or metadata.jsonl is missing",
    "folder.unlisted_file": "a file that is not submission.yaml, metadata.jsonl, README.md or a listed image",
    "safety.symlink": "a symbolic link (never followed)",
    "safety.hardlink": "a file with more than one hard link",
    "safety.special_file": "a device, pipe or socket",
    "safety.hidden_file": "a hidden or system file or folder (.*, __MACOSX, Thumbs.db, desktop.ini)",
    "safety.executable": "an executable: exec bit, or ELF / MZ / #! content",
    "safety.archive": "an archive (zip, gzip, tar, 7z, rar, bzip2, xz, zstd), by content or extension",
    "safety.absolute_path": "a file_name that is an absolute path (a Windows drive included)",
    "safety.path_escape": "a file_name with a '..' component",
    "safety.bad_path": "a file_name with backslashes (a Windows path), empty or '.' components",
    "safety.control_char": "a text field with a control character or lone surrogate (or a line break where one line is expected)",
    "safety.bidi_override": "a text field with a bidirectional override or isolate character (U+202A-E, U+2066-9)",
    "safety.too_long": "a text field longer than its limit",
}

_DRIVE = re.compile(r"[A-Za-z]:")  # a Windows path's drive
_SYSTEM_NAMES = {"__MACOSX", "Thumbs.db", "desktop.ini"}
_ARCHIVE_EXTENSIONS = {".zip", ".tar", ".gz", ".tgz", ".bz2", ".xz", ".7z", ".rar", ".zst"}
_EXECUTABLE_MAGIC = (b"\x7fELF", b"MZ", b"#!")
_ARCHIVE_MAGIC = (b"PK\x03\x04", b"PK\x05\x06", b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"7z\xbc\xaf\x27\x1c",
                  b"Rar!\x1a\x07", b"\x28\xb5\x2f\xfd")
#: The fix of a path problem: the path as the tools write it.
PATH_FIX = "write the path relative to the folder with / separators (not a Windows path), e.g. images/x/0.png"


def path_problem(name: str, what: str = "file_name") -> tuple[str, str] | None:
    """(code, message) when ``name`` is not a plain relative path inside the folder (a Windows path included)."""
    if name.startswith("/") or _DRIVE.match(name):
        return "safety.absolute_path", f"{what} {show(name)} is an absolute path"
    parts = name.split("/")
    if ".." in parts or ".." in name.split("\\"):
        return "safety.path_escape", f"{what} {show(name)} escapes the folder with '..'"
    if "\\" in name:
        return "safety.bad_path", f"{what} {show(name)} has backslashes: a Windows path"
    if "" in parts or "." in parts:
        return "safety.bad_path", f"{what} {show(name)} has empty or '.' components"
    return None


def dangerous(name: str, head: bytes) -> tuple[str, str] | None:
    """(code, message) when a file is an executable or an archive, by its first 512 bytes or extension."""
    if head.startswith(_EXECUTABLE_MAGIC):
        return "safety.executable", "is an executable or a script (ELF, MZ or #! header)"
    if head.startswith(_ARCHIVE_MAGIC) or head[257:262] == b"ustar" or Path(name).suffix.lower() in _ARCHIVE_EXTENSIONS:
        return "safety.archive", "is an archive"
    return None


def check_tree(run: Run) -> None:
    """Walk the folder without following links; report what may not be there, keep the regular files."""
    stack = [""]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(os.path.join(run.root, folder)), key=lambda e: e.name)
        except OSError as exc:
            run.error("file.unreadable", folder or ".", f"cannot be listed ({exc.strerror})", "check its permissions")
            continue
        for entry in entries:
            rel = f"{folder}/{entry.name}" if folder else entry.name
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError as exc:
                run.error("file.unreadable", rel, f"cannot be read ({exc.strerror})", "check its permissions")
                continue
            if stat.S_ISLNK(st.st_mode):
                run.error("safety.symlink", rel, "is a symbolic link", "replace the link with the file it points to")
            elif entry.name.startswith(".") or entry.name in _SYSTEM_NAMES:
                run.error("safety.hidden_file", rel, "is a hidden or system file", "delete it")
            elif stat.S_ISDIR(st.st_mode):
                stack.append(rel)
                continue
            elif not stat.S_ISREG(st.st_mode):
                run.error("safety.special_file", rel, "is not a regular file (device, pipe or socket)", "delete it")
            elif st.st_nlink > 1:
                run.error("safety.hardlink", rel, f"has {st.st_nlink} hard links", "replace it with a plain copy")
            else:
                run.files[rel] = st
                continue
            run.flagged.add(rel)


def open_listed(run: Run, rel: str, limit: int):
    """``submission.yaml`` or ``metadata.jsonl`` opened for reading; None (reported if needed) otherwise."""
    if rel not in run.files:
        if rel not in run.flagged:
            run.error("folder.missing_file", rel, "is missing",
                      f"make the folder with `cultureboard package` or `cultureboard generate`, which write {rel} "
                      "(see submissions/README.md)")
        return None
    if run.files[rel].st_size > limit:
        run.error("file.too_large", rel, f"is {run.files[rel].st_size:,} bytes; the limit is {limit:,}", "shorten it")
        return None
    try:
        return open_nofollow(run.root / rel)
    except OSError as exc:
        run.error("file.unreadable", rel, f"cannot be read ({exc.strerror})", "check its permissions")
        return None


def check_contents(run: Run) -> None:
    """Executables, archives and files that are neither the two files, a README nor a listed image
    (``run.listed`` is None when metadata.jsonl has no usable line: then nothing is called unlisted)."""
    listed = run.listed if run.parsed else None
    allowed = {SUBMISSION_YAML, METADATA, README} | (listed or set())
    for rel, st in sorted(run.files.items()):
        if st.st_mode & 0o111:
            run.error("safety.executable", rel, "has the executable bit set", f"chmod -x {rel}")
            continue
        if listed and rel in listed:
            continue  # its content was checked with the images
        try:
            with open_nofollow(run.root / rel) as fh:
                danger = dangerous(rel, fh.read(512))
        except OSError as exc:
            run.error("file.unreadable", rel, f"cannot be read ({exc.strerror})", "check its permissions")
            continue
        if danger:
            run.error(danger[0], rel, danger[1], "a submission holds only its two files, a README.md and images; delete it")
        elif listed is not None and rel not in allowed:
            run.error("folder.unlisted_file", rel, f"is not listed in {METADATA}",
                      "delete it; if it is an image of the submission, map it and make the folder again "
                      "(`cultureboard package` into a new --out)")
