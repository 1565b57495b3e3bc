"""Names safe in paths and URLs."""

from __future__ import annotations

import errno
import hashlib
import re
import unicodedata
from pathlib import Path

from cultureboard.errors import CultureboardError

#: The longest path component :func:`path_component` accepts (file systems allow 255 bytes; suffixes are added).
MAX_COMPONENT = 200
#: The longest slug: two of them, joined and given a suffix, still fit a file name of 255 bytes.
MAX_SLUG = 100
#: Hex digits of the hash that ends a shortened slug.
SLUG_HASH = 10


def slug(text: str) -> str:
    """Lower-case ASCII slug: accents dropped, every run of other characters turned into one ``-``; at most
    :data:`MAX_SLUG` characters. A longer one is cut and ends in ``-`` and the first :data:`SLUG_HASH` hex digits of
    the sha256 of the whole slug, so it is the same for the same text, two texts whose slugs differ keep different
    slugs however long their common start, and the slug of a slug is itself."""
    text = unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode("ascii")
    full = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"
    if len(full) <= MAX_SLUG:
        return full
    digest = hashlib.sha256(full.encode("ascii")).hexdigest()[:SLUG_HASH]
    return f"{full[:MAX_SLUG - SLUG_HASH - 1].rstrip('-')}-{digest}"


def component_problem(value) -> str | None:
    """Why ``value`` (an id read from data) cannot be one path component, or None when it can.

    The rule: a non-empty string of at most :data:`MAX_COMPONENT` characters that does not start with a dot
    (``.``, ``..``, hidden names) or with whitespace, and holds no ``/``, no ``\\``, and no control, format,
    surrogate or unassigned character (NUL, newlines, bidi overrides, lone surrogates)."""
    if not isinstance(value, str):
        return f"is a {type(value).__name__}, not a string"
    if not value:
        return "is empty"
    if len(value) > MAX_COMPONENT:
        return f"is {len(value)} characters long; the limit is {MAX_COMPONENT}"
    if value[0] == "." or value[0].isspace() or value[-1].isspace():
        return f"{value[:40]!r} starts with a dot or starts or ends with whitespace"
    bad = next((c for c in value if c in "/\\" or unicodedata.category(c)[0] == "C"), None)
    if bad is not None:
        return f"{value[:40]!r} holds {bad!r}, which a file name must not hold"
    return None


def path_component(value, source: str, fix: str) -> str:
    """``value`` when it is safe as one path component (:func:`component_problem`), else a
    :class:`~cultureboard.errors.CultureboardError` naming ``source``: every id read from data or from a command
    line passes here before it becomes part of a path, so none steers a write outside its output folder."""
    problem = component_problem(value)
    if problem is not None:
        raise CultureboardError(source, f"id {problem}", fix)
    return value


def inside(folder: Path, relative: str, called: str) -> Path:
    """The file ``relative`` names inside ``folder`` (``called`` so in messages), links resolved; else a
    :class:`~cultureboard.errors.CultureboardError` naming ``relative`` and why: an absolute path or one with
    ``..``, a link that leads outside the folder, a loop of links, a path that does not exist or is no file."""
    def refuse(problem: str, fix: str):
        return CultureboardError(relative, problem, fix)

    if Path(relative).is_absolute() or ".." in Path(relative).parts:
        raise refuse(f"is outside {called}", f"give paths relative to {called}, without '..'")
    try:
        root, found = folder.resolve(strict=True), (folder / relative).resolve(strict=True)
    except FileNotFoundError:
        raise refuse(f"does not exist in {folder}", f"give paths relative to {called}") from None
    except (OSError, RuntimeError) as exc:  # RuntimeError: Python 3.11's word for a loop of symbolic links
        if isinstance(exc, RuntimeError) or exc.errno == errno.ELOOP:
            raise refuse("leads into a loop of symbolic links", "replace the links with the file") from None
        raise refuse(f"cannot be reached ({exc.strerror or exc})", "check the path and its permissions") from None
    if not found.is_relative_to(root):
        raise refuse(f"leads outside {called} (through a link, to {found})",
                     f"copy the file into {called} instead of linking to it")
    if not found.is_file():
        raise refuse(f"is not a file in {folder}", f"give paths of files relative to {called}")
    return found
