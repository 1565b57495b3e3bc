"""What every rule group shares: the limits, a problem, the report, and :class:`Run`, the one validation in
progress (the problems kept so far and what the earlier groups found).

A problem's fix names the change and the command that makes it: a submission folder is written by ``package``
or ``generate``, so a problem of a file they write is fixed in their input (the mapping, the spec, the images)
and the folder made again (:func:`remake`), never by editing ``submission.yaml`` or ``metadata.jsonl`` by hand.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cultureboard.errors import CultureboardError
from cultureboard.images import ImageLimits

from ..format import MAX_LINE_BYTES, SUBMISSION_YAML

#: The codes of the one finding that reads the clock: a date in the future (``schema.bad_date``, whose code also
#: covers a malformed date). Such a date becomes a past one as days pass, never the reverse, so a report without
#: these codes is the report of any later day (:attr:`Report.dated`).
DATED_CODES = frozenset({"schema.bad_date"})
#: How a problem of a folder that ``package`` or ``generate`` wrote is fixed: in their input, then a new folder.
AGAIN = "then make the folder again: `cultureboard package` into a new --out (or `cultureboard generate` again)"


def remake(change: str) -> str:
    """The fix of a problem in a file ``package`` or ``generate`` writes: ``change`` (in the spec, the mapping or
    the images), then the folder made again."""
    return f"{change}; {AGAIN}"


@dataclass(frozen=True)
class Limits:
    """Limits on files and text; the defaults fit 512-2048 px generations."""

    max_file_bytes: int = 20 * 2**20
    min_side: int = 64
    max_side: int = 4096
    max_pixels: int = 4096 * 4096
    max_text_bytes: int = 2**20  # an image's PNG text chunks, decompressed
    max_yaml_bytes: int = 2**20
    max_metadata_bytes: int = 256 * 2**20
    max_metadata_lines: int = 500_000
    max_line_bytes: int = MAX_LINE_BYTES
    max_name_chars: int = 200  # fields of FIELDS and METADATA_FIELDS, keys
    max_text_chars: int = 500  # other strings: links, generation.extra, unknown fields
    max_training_data_chars: int = 2000  # model.training_data, the one field that may span lines
    max_problems: int = 200  # problems kept in a report; the rest are counted by code

    @property
    def image(self) -> ImageLimits:
        return ImageLimits(self.max_file_bytes, self.min_side, self.max_side, self.max_pixels, self.max_text_bytes)


@dataclass(frozen=True)
class Problem:
    code: str  # a key of CODES
    severity: str  # "error" | "warning"
    file: str  # relative to the submission folder, with ":LINE" where one applies
    message: str
    fix: str

    def line(self) -> str:
        return f"{self.severity.upper()} {self.file}: {self.message} (fix: {self.fix}) [{self.code}]"


@dataclass
class Report:
    """The outcome: ``valid`` when no problem is an error; ``accepted`` when it is valid and nothing went unchecked
    (``unchecked``: what could not be checked, e.g. coverage without a dataset). ``omitted`` counts the problems
    left out of ``problems`` (beyond :attr:`Limits.max_problems`): {"error" | "warning": {code: count}}."""

    submission: str
    problems: list[Problem] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=dict)
    omitted: dict[str, dict[str, int]] = field(default_factory=dict)
    unchecked: list[str] = field(default_factory=list)
    #: what the OCR found (``validate --read-text``: :func:`~cultureboard.evaluators.engine.written.check_submission`)
    written: dict | None = None

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    def count(self, severity: str) -> int:
        """Problems of ``severity``, the omitted ones included."""
        return sum(p.severity == severity for p in self.problems) + sum(self.omitted.get(severity, {}).values())

    @property
    def valid(self) -> bool:
        return self.count("error") == 0

    @property
    def accepted(self) -> bool:
        """Valid, and every check ran: what CI and the exit code 0 require."""
        return self.valid and not self.unchecked

    @property
    def verdict(self) -> str:
        return "INVALID" if not self.valid else "NOT VALIDATED" if self.unchecked else "valid"

    @property
    def dated(self) -> bool:
        """Whether a later day could report otherwise: a problem of :data:`DATED_CODES`, kept or omitted."""
        return (any(p.code in DATED_CODES for p in self.problems)
                or any(code in DATED_CODES for codes in self.omitted.values() for code in codes))

    @classmethod
    def combined(cls, reports: list[Report]) -> Report:
        """One report of several (PR scope and submission): the last one's name and counts."""
        omitted: dict[str, dict[str, int]] = {}
        for r in reports:
            for severity, codes in r.omitted.items():
                for code, n in codes.items():
                    omitted.setdefault(severity, {})[code] = omitted.get(severity, {}).get(code, 0) + n
        return cls(reports[-1].submission, [p for r in reports for p in r.problems], reports[-1].checked, omitted,
                   [u for r in reports for u in r.unchecked])

    def to_json(self) -> str:
        return json.dumps({"submission": self.submission, "valid": self.accepted, "verdict": self.verdict,
                           "errors": self.count("error"), "warnings": self.count("warning"), "checked": self.checked,
                           "unchecked": self.unchecked, "problems": [asdict(p) for p in self.problems],
                           "omitted": self.omitted, "written": self.written}, indent=2)

    @classmethod
    def from_json(cls, text: str) -> Report:
        data = json.loads(text)
        return cls(data["submission"], [Problem(**p) for p in data["problems"]], data["checked"], data.get("omitted", {}),
                   data.get("unchecked", []), data.get("written"))

    def to_text(self) -> str:
        """Errors, then warnings, grouped by code (a line ``CODE: N errors`` before each group of several), one
        line per problem; a line for the problems left out, what was not checked, then the verdict."""
        lines = problem_lines(self.problems)
        left = {code: n for codes in self.omitted.values() for code, n in codes.items()}
        if left:
            top = sorted(left.items(), key=lambda kv: -kv[1])
            lines.append(f"... and {sum(left.values()):,} more problems not shown: "
                         + ", ".join(f"{code} x {n:,}" for code, n in top[:8]) + (", ..." if len(top) > 8 else ""))
        lines += [f"NOT CHECKED: {what}" for what in self.unchecked]
        if self.written is not None:
            w = self.written
            lines.append(f"WRITTEN ANSWERS: {w['counts']['spells']} of {w['checked']} checked images"
                         + (f" ({w['share']:.0%})" if w["checked"] else "") + " spell their prompt's artifact or "
                         f"country; {w['counts']['not checked']} not checked (OCR {w['ocr']['package']} "
                         f"{w['ocr']['version']}); metrics whose scorers read text are also reported without them")
        counts = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in self.checked.items())
        lines.append(f"{self.submission}: {self.verdict}: {self.count('error')} errors, {self.count('warning')} warnings "
                     f"({counts})")
        return "\n".join(lines)


# ----------------------------------------------------------------------------------- text and values

_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\u202a-\u202e\u2066-\u2069]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")  # C0, DEL, C1, line / paragraph separators, lone surrogates
_BIDI = re.compile(r"[\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with control, bidi and surrogate characters escaped, safe to print and to embed."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


def show(value: Any, width: int = 60) -> str:
    """A user-supplied value for a message: repr, shortened."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def problem(severity: str, code: str, file: str, message: str, fix: str) -> Problem:
    return Problem(code, severity, printable(file), printable(message), fix)


_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false", list: "a list", dict: "a mapping"}


def type_ok(value: Any, types: type | tuple[type, ...]) -> bool:
    types = types if isinstance(types, tuple) else (types,)
    return bool in types if isinstance(value, bool) else isinstance(value, types)  # YAML/JSON true is not an int


def type_name(types: type | tuple[type, ...]) -> str:
    return " or ".join(_TYPE_NAMES[t] for t in (types if isinstance(types, tuple) else (types,)))


def open_nofollow(path: str | Path):
    """Open a regular file for reading, refusing links (and never blocking on a pipe)."""
    return open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), "rb")


# ----------------------------------------------------------------------------------- the run

class Run:
    """One validation in progress: the problems kept (at most :attr:`Limits.max_problems`, the rest counted by
    code), and what the rule groups found, each group reading what the earlier ones set:

    ``files`` and ``flagged`` (paths), ``spec`` (the typed :class:`~.spec.Spec`) and ``lines`` (spec), ``parsed``
    and ``rows`` (metadata: every distinct line, and the lines that came first of each slot and file),
    ``prompts`` and ``prompt_set`` (coverage), ``listed`` and ``checked_images`` (images), ``hashed_images``
    (copies: the images compared by perceptual hash)."""

    def __init__(self, root: Path, limits: Limits, dataset: Path | None = None, name: str | None = None,
                 full_decode: bool = False, workers: int | None = None):
        self.root, self.limits, self.dataset = root, limits, dataset
        self.name = name or root.resolve().name  # the folder's name (package validates its work folder under it)
        self.full_decode, self.workers = full_decode, workers
        self.problems: list[Problem] = []
        self.omitted: dict[str, dict[str, int]] = {}
        self.unchecked: list[str] = []
        self.files: dict[str, os.stat_result] = {}  # regular files, by relative path
        self.flagged: set[str] = set()  # links, hidden and special entries: reported, never read
        self.lines: dict[str, int] = {}  # submission.yaml: dotted path -> line
        self.spec = None  # the typed spec (.spec.Spec), when submission.yaml is a mapping
        self.parsed: list[tuple[int, dict]] = []
        self.rows: list[tuple[int, dict]] = []
        self.prompts: dict[str, dict] | None = None
        self.prompt_set = ""
        self.other_sets: list[str] = []  # the dataset's other prompt sets (images from another set are named so)
        self.listed: set[str] | None = None
        self.checked_images = 0
        self.hashed_images = 0

    def add(self, p: Problem) -> None:
        """Keep the problem, or count it once :attr:`Limits.max_problems` are kept."""
        if not self.full(p.severity, p.code):
            self.problems.append(p)

    def full(self, severity: str, code: str) -> bool:
        """Whether :attr:`Limits.max_problems` are kept (then the problem is counted, not kept)."""
        if len(self.problems) < self.limits.max_problems:
            return False
        codes = self.omitted.setdefault(severity, {})
        codes[code] = codes.get(code, 0) + 1
        return True

    def error(self, code: str, file: str, message: str, fix: str) -> None:
        if not self.full("error", code):
            self.problems.append(problem("error", code, file, message, fix))

    def warn(self, code: str, file: str, message: str, fix: str) -> None:
        if not self.full("warning", code):
            self.problems.append(problem("warning", code, file, message, fix))

    def at(self, path: str) -> str:
        """``submission.yaml:LINE`` of a dotted path (or of its nearest parent that exists)."""
        path = re.sub(r"\[\d+\]", "", path)
        while path and path not in self.lines:
            path = path.rpartition(".")[0]
        return f"{SUBMISSION_YAML}:{self.lines[path]}" if path else SUBMISSION_YAML

    def text(self, where: str, name: str, value: str, limit: int, multiline: bool = False) -> None:
        """A string shown on the site: no bidirectional controls, no control characters (a line break only where
        ``multiline``), at most ``limit`` characters."""
        if len(value) <= limit and not _UNSAFE.search(value):
            return  # nothing to report (_UNSAFE is _CONTROL and _BIDI together): one search for most strings
        if m := _BIDI.search(value):
            self.error("safety.bidi_override", where, f"{name} contains the bidirectional control U+{ord(m[0]):04X}",
                       "remove it; it can make the text display differently from what it says")
        bad = [c for c in _CONTROL.findall(value) if not (multiline and c == "\n")]
        if bad:
            self.error("safety.control_char", where, f"{name} contains the control (or invalid) character U+{ord(bad[0]):04X}",
                       "remove it" + ("" if multiline else "; this field is a single line"))
        if len(value) > limit:
            self.error("safety.too_long", where, f"{name} is {len(value):,} characters long; the limit is {limit:,}",
                       "shorten it")

    def report(self, submission: str) -> Report:
        checked = {"files": len(self.files), "metadata_lines": len(self.parsed), "images": self.checked_images}
        if refused := sum(row.get("refused") is True for _, row in self.parsed):
            checked["refused"] = refused  # declared refusals: counted in coverage as refused, not missing
        if self.prompts is not None:
            checked["prompts"] = len(self.prompts)
        if self.hashed_images:
            checked["hashed_images"] = self.hashed_images
        return Report(submission, self.problems, checked, self.omitted, self.unchecked)


def problem_lines(problems: list[Problem]) -> list[str]:
    """Errors, then warnings, grouped by code (a line ``CODE: N errors`` before each group of several), one line
    per problem."""
    lines = []
    for severity in ("error", "warning"):
        groups: dict[str, list[Problem]] = {}
        for p in problems:
            if p.severity == severity:
                groups.setdefault(p.code, []).append(p)
        for code, group in groups.items():
            if len(group) > 1:
                lines.append(f"{code}: {len(group)} {severity}s")
            lines += [p.line() for p in group]
    return lines


class ProblemsError(CultureboardError):
    """Several problems of one input (``package``'s mapping, spec and images), reported together: :attr:`message`
    is one line saying how many, :meth:`lines` one line per problem, grouped by code."""

    def __init__(self, source: str, problems: list[Problem], fix: str):
        self.problems = problems
        errors = sum(p.severity == "error" for p in problems)
        super().__init__(source, f"has {errors} problems, one a line below", fix)

    def __reduce__(self):
        return (type(self), (self.source, self.problems, self.fix))

    def __str__(self) -> str:
        return "\n".join([self.message, *self.lines()])

    def lines(self) -> list[str]:
        return problem_lines(self.problems)
