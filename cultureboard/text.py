"""Whether a text may enter the dataset or the site: one rule, decided by :func:`text_problem`, which every reader
of a text calls (prompts and translations as the builder writes them and as every stage reads them back, the
translation file, an LLM's answers and its response cache, the names and fields of submission.yaml that the site
shows, the ids of a ratings file).

A text is refused when it

1. is not a string, or is longer than its rule's ``max_chars``;
2. holds a lone surrogate (JSON and YAML escapes can carry one; UTF-8 cannot store it);
3. holds a control character: NUL, ESC, DEL, the C1 controls; line breaks too (LF, CR, VT, FF, NEL, U+2028,
   U+2029) and tabs, unless the rule allows several lines;
4. holds a bidirectional embedding, override or isolate (U+202A-U+202E, U+2066-U+2069), which makes a text
   display otherwise than it reads;
5. holds another format character than the few real scripts need (zero-width space, non-joiner and joiner, word
   joiner, soft hyphen, the left-to-right, right-to-left and Arabic letter marks: :data:`SCRIPT_FORMAT`), such as
   tag characters, a byte-order mark or interlinear annotations; an identifier holds none at all, nor white space
   other than a plain space;
6. holds a private-use or unassigned code point (noncharacters included), by the Unicode version of this Python;
7. stacks more than :data:`MAX_MARKS` combining marks on one character (counted in NFD: real scripts need at
   most three; Devanagari, Thai, Arabic, Hebrew, Tibetan and Yoruba with tone marks pass);
8. holds no visible character (a letter, digit, punctuation or symbol): empty, white space or zero-width
   characters only, unless the rule allows a blank text (a negative prompt, a free-text field).

A rule with ``raw`` set (an LLM's answer before it is parsed) refuses only what cannot be stored or passed on
(2 and NUL): what is taken from the answer is checked again by the rule of what it becomes.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from cultureboard.errors import CultureboardError

#: The most combining marks one character may carry (in NFD).
MAX_MARKS = 4
#: Format characters (category Cf) that real scripts need inside words: ZWSP, ZWNJ, ZWJ, word joiner, soft hyphen,
#: LRM, RLM, ALM. Never in an identifier.
SCRIPT_FORMAT = frozenset("\u200b\u200c\u200d\u2060\u00ad\u200e\u200f\u061c")
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
_LINES_ALLOWED = frozenset("\n\r\t")
#: What :func:`printable` escapes: controls, line breaks, bidi and other format characters, surrogates.
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u00ad\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff"
                     r"\ud800-\udfff\U000e0000-\U000e007f]")


@dataclass(frozen=True)
class TextRule:
    """What one kind of text may be (module docstring): ``what`` it is, for messages."""

    what: str
    max_chars: int
    lines: bool = False  # line breaks and tabs allowed
    empty: bool = False  # a blank text allowed ("", white space)
    identifier: bool = False  # no format character at all, no white space but a plain space
    raw: bool = False  # only what cannot be stored is refused (lone surrogates, NUL)


PROMPT = TextRule("a prompt", 2000)
OPTIONAL_PROMPT = TextRule("a prompt", 2000, empty=True)  # a negative prompt
NAME = TextRule("a name", 300)
FIELD = TextRule("a text", 20_000, lines=True, empty=True)
ANSWER = TextRule("an answer", 64 << 20, lines=True, empty=True, raw=True)
IDENTIFIER = TextRule("an id", 300, identifier=True)


def text_problem(value, rule: TextRule = PROMPT) -> str | None:
    """Why ``value`` may not enter the dataset or the site under ``rule`` (module docstring), or None."""
    if not isinstance(value, str):
        return f"is {type(value).__name__}, not text"
    if len(value) > rule.max_chars:
        return f"is {len(value):,} characters long; the limit for {rule.what} is {rule.max_chars:,}"
    if value.isascii() and value.isprintable() and (rule.empty or value.strip()):
        return None  # the common case, decided at C speed
    if rule.raw:
        bad = next((c for c in value if c == "\0" or "\ud800" <= c <= "\udfff"), None)
        return None if bad is None else f"holds {_name(bad)}"
    visible, marks = rule.empty, 0
    for c in unicodedata.normalize("NFD", value):
        kind = unicodedata.category(c)
        if kind == "Cs":
            return f"holds {_name(c)}, which UTF-8 cannot store"
        if c in _LINES_ALLOWED and rule.lines:
            marks = 0
            continue
        if c in _LINE_BREAKS or c == "\t":
            what = "control character" if kind == "Cc" else "line break"
            return f"holds the {what} {_name(c)}: {rule.what} is one line"
        if kind == "Cc":
            return f"holds the control character {_name(c)}"
        if c in _BIDI:
            return f"holds the bidirectional control {_name(c)}, which makes it display otherwise than it reads"
        if kind == "Cf" and (rule.identifier or c not in SCRIPT_FORMAT):
            return f"holds the invisible format character {_name(c)}"
        if kind in ("Co", "Cn"):
            return f"holds the {'private-use' if kind == 'Co' else 'unassigned'} code point {_name(c)}"
        if rule.identifier and kind.startswith("Z") and c != " ":
            return f"holds the white space {_name(c)}; an id holds plain spaces only"
        marks = marks + 1 if kind[0] == "M" else 0
        if marks > MAX_MARKS:
            return f"stacks more than {MAX_MARKS} combining marks on one character"
        visible = visible or kind[0] in "LNPS"
    return None if visible else f"holds no visible character: {rule.what} must say something"


def check_text(value, rule: TextRule, source: str, fix: str) -> str:
    """``value`` when :func:`text_problem` finds nothing, else a :class:`CultureboardError` naming ``source``."""
    problem = text_problem(value, rule)
    if problem is not None:
        raise CultureboardError(source, f"{printable(value, 40)} {problem}" if isinstance(value, str) else problem,
                                fix)
    return value


def printable(text: str, width: int | None = None, quoted: bool = True) -> str:
    """``text`` (``quoted``), safe to print and to embed in a page: controls, line breaks, format characters and
    surrogates escaped as ``\\uXXXX``; cut to ``width`` characters (with "...") when given."""
    cut = text if width is None or len(text) <= width else text[:width]
    shown = _UNSAFE.sub(lambda m: f"\\u{ord(m[0]):04x}" if ord(m[0]) < 0x10000 else f"\\U{ord(m[0]):08x}", cut)
    return (f"'{shown}'" if quoted else shown) + ("..." if cut is not text else "")


def comparable(text: str) -> str:
    """``text`` as compared for sameness: NFKC, case folded, every run of characters other than letters and digits
    one space (so "Jollof rice." and "jollof  RICE" are the same)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(re.sub(r"[\W_]+", " ", folded).split())


def _name(c: str) -> str:
    return f"U+{ord(c):04X}" + (f" ({unicodedata.name(c)})" if unicodedata.name(c, "") else "")
