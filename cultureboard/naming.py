"""Names safe in paths and URLs."""

from __future__ import annotations

import re
import unicodedata


def slug(text: str) -> str:
    """Lower-case ASCII slug: accents dropped, every run of other characters turned into one ``-``."""
    text = unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"
