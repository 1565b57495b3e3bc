"""Names safe in paths and URLs."""

from __future__ import annotations

import re
import unicodedata

from cultureboard.errors import CultureboardError

#: The longest path component :func:`path_component` accepts (file systems allow 255 bytes; suffixes are added).
MAX_COMPONENT = 200


def slug(text: str) -> str:
    """Lower-case ASCII slug: accents dropped, every run of other characters turned into one ``-``."""
    text = unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


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
