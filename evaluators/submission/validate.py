"""Validate a submission folder before it is merged (``cultureboard validate``): every problem at once,
each naming the file (``metadata.jsonl:12``, ``images/x.png``), the problem and the fix.

Checks, in the order they are reported:

* folder and safety: no symbolic or hard links (links are never followed), no special, hidden or
  system files (``.*``, ``__MACOSX``, ``Thumbs.db``, ``desktop.ini``), no executables (exec bit, ELF,
  MZ, ``#!``) or archives (magic or extension), and nothing but ``submission.yaml``,
  ``metadata.jsonl``, an optional ``README.md`` and the images that ``metadata.jsonl`` lists;
* ``submission.yaml``: safe YAML without aliases, JSON values only anywhere (no dates, sets, binary,
  non-string keys, NaN or infinity: evaluate and the site read the file as JSON data), the fields of
  :data:`~.submission.FIELDS` (required, types, choices, null), unknown fields (warning), format
  version, date (not in the future), folder name and its length (:data:`~.format.MAX_SUBMISSION_ID`),
  image location, revision format, a dataset pin other than the official Hub dataset at a commit
  (warning); with a dataset folder, the prompt set exists (else the closest names are offered) and the
  revision matches it (a Hub commit: the commit the folder was downloaded at, when it records one);
* the model's other submissions: a sibling folder of the same ``<org>__<model>`` (another prompt set, a
  tagged variant) gives the same :data:`MODEL_IDENTITY` fields (id, revision, weights, licence, training data);
* ``metadata.jsonl``: read as every stage reads it (:func:`~.format.metadata_lines`: split on ``\n``
  only, streamed, at most ``max_metadata_lines`` lines), strict JSON objects with the fields of
  :data:`~.submission.METADATA_FIELDS`, no duplicated lines, prompt/sample pairs or files, paths that
  stay inside the folder;
* coverage (needs the dataset): every prompt x sample present exactly once with the prompt set's
  seed, no unknown prompt ids, complete I2I chains with the right edit steps and source files;
* images (local location), by :func:`cultureboard.images.inspect_image`: size cap, format matches the
  extension, dimensions within :class:`Limits` (read from the header, before any pixel is decoded),
  intact file, no PNG text bomb, 8 bits a sample, one frame, the displayed size (after EXIF orientation)
  equal to ``generation.width`` x ``generation.height``; then sha256 matches, and no image submitted for
  two prompts with different texts;
* text: every string in both files is free of control and bidirectional-override characters and
  within a length limit (the site shows them).

Decoding trade-off. Each image is read once, hashed and opened from memory (the header only), so
validation costs little more than reading and hashing. The recorded sha256, computed when the image
was written, catches any change after that (transfer, storage, copying, truncation). What it cannot
catch is a file already broken when it was hashed; for that the structure is checked: a PNG's chunks
walked to IEND, which must end the file, a JPEG's end-of-image marker, a WebP's RIFF length (a crash
mid-write, a cut download, appended data). Corrupt pixel data inside an intact structure (an encoder
bug, a crafted file) is found only by decoding: ``full_decode=True`` also checks every PNG chunk's
CRC-32 and decodes every pixel, at about 20x the cost of hashing for 512 px PNGs; the evaluator
decodes every image when scoring anyway.

:data:`CODES` lists the problem codes; they are stable (CI, PR comments and tests key on them).
Validation never writes anything and never raises on a bad submission; a bad ``--dataset`` or a
missing submission folder is a usage error (:class:`CultureboardError` with exit code 2). A report keeps
the first ``max_problems`` problems and counts the rest by code (:attr:`Report.omitted`), so a huge
broken file gives a short report in bounded memory.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import stat
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from PIL import Image

from cultureboard.dataset_folder import DidYouMean, configs, hub_commit, local_revision, prompt_sets, read_prompt_set
from cultureboard.errors import CultureboardError
from cultureboard.hub import DOWNLOAD_COMMAND, OFFICIAL_DATASET
from cultureboard.images import IMAGE_CODES, ImageLimits, inspect_image

from .format import (
    FIELDS,
    FORMAT_VERSION,
    MAX_LINE_BYTES,
    MAX_SUBMISSION_ID,
    METADATA,
    METADATA_FIELDS,
    MODEL_IDENTITY,
    REFUSAL_FORBIDS,
    SUBMISSION_YAML,
    DuplicateKeyError,
    NotFiniteError,
    YamlLoader,
    get,
    is_refusal,
    json_problems,
    metadata_lines,
    model_key,
    parse_location,
    parse_metadata_line,
    parse_submission_id,
    read_spec,
    submission_id,
    submission_id_problem,
)

README = "README.md"

CODES: dict[str, str] = {
    # the folder and what is in it
    "folder.missing_file": "submission.yaml or metadata.jsonl is missing",
    "folder.unlisted_file": "a file that is not submission.yaml, metadata.jsonl, README.md or a listed image",
    "safety.symlink": "a symbolic link (never followed)",
    "safety.hardlink": "a file with more than one hard link",
    "safety.special_file": "a device, pipe or socket",
    "safety.hidden_file": "a hidden or system file or folder (.*, __MACOSX, Thumbs.db, desktop.ini)",
    "safety.executable": "an executable: exec bit, or ELF / MZ / #! content",
    "safety.archive": "an archive (zip, gzip, tar, 7z, rar, bzip2, xz, zstd), by content or extension",
    "safety.absolute_path": "a file_name that is an absolute path",
    "safety.path_escape": "a file_name with a '..' component",
    "safety.bad_path": "a file_name with backslashes, empty or '.' components",
    "safety.control_char": "a text field with a control character or lone surrogate (or a line break where one line is expected)",
    "safety.bidi_override": "a text field with a bidirectional override or isolate character (U+202A-E, U+2066-9)",
    "safety.too_long": "a text field longer than its limit",
    # submission.yaml
    "schema.yaml_syntax": "submission.yaml is not UTF-8 YAML",
    "schema.not_mapping": "submission.yaml is not a mapping of fields",
    "schema.yaml_alias": "submission.yaml uses aliases (*name), the building block of YAML bombs and cycles",
    "schema.not_json": "a value JSON cannot hold: a date or time, set, binary, non-string key, NaN, infinity, integer beyond 64 bits",
    "schema.duplicate_key": "a key repeated in one mapping of submission.yaml",
    "schema.missing_field": "a required field is missing or null",
    "schema.wrong_type": "a field (or section) has the wrong type",
    "schema.bad_choice": "a field's value is not one of its choices",
    "schema.out_of_range": "a number outside its field's range (a width, height or steps below 1, an i2i_strength outside (0, 1])",
    "schema.unknown_field": "a field that the format does not define (warning)",
    "schema.format_version": "format_version is not the current version",
    "schema.bad_date": "date is not a valid YYYY-MM-DD date, or is in the future",
    "schema.folder_name": "the folder name is not <org>__<model>[__<tag>] of the yaml",
    "schema.id_too_long": f"the submission id <org>__<model>[__<tag>] is longer than {MAX_SUBMISSION_ID} characters",
    "schema.bad_location": "images.location is neither a relative folder nor hf://datasets/ORG/REPO@REV",
    "schema.bad_revision": "prompt_set.revision is neither a 40-hex Hub commit nor sha256:<hex>",
    "schema.unknown_prompt_set": "the dataset has no such prompt set",
    "schema.wrong_revision": "prompt_set.revision is not the dataset folder's revision",
    "schema.revision_unchecked": "a Hub commit cannot be compared with a dataset folder that is not a Hub download (warning)",
    "schema.model_mismatch": "a sibling submission of the same <org>__<model> gives another model id, revision, weights, licence or training data",
    "schema.unofficial_dataset": "prompt_set pins a local dataset folder or another Hub dataset, not the official one at a commit (warning)",
    # metadata.jsonl
    "metadata.bad_json": "a line that is not strict UTF-8 JSON (NaN, infinity, integers beyond 64 bits) or is too long",
    "metadata.too_many_lines": "metadata.jsonl has more lines than the limit (the rest is not read)",
    "metadata.not_object": "a line that is not a JSON object",
    "metadata.duplicate_key": "a key repeated within one line",
    "metadata.empty": "metadata.jsonl lists no images",
    "metadata.missing_field": "a required key is missing or null",
    "metadata.wrong_type": "a key's value has the wrong type",
    "metadata.unknown_field": "a key that the format does not define (warning, once per key)",
    "metadata.bad_sha256": "sha256 is not 64 lower-case hex digits",
    "metadata.duplicate_line": "a line repeating an earlier line",
    "metadata.duplicate_sample": "a (prompt_id, sample_idx) pair listed twice",
    "metadata.duplicate_file": "a file_name listed twice",
    "metadata.outside_location": "a file_name outside the images.location folder",
    "metadata.sample_out_of_range": "sample_idx is negative or not below the prompt's images_per_prompt",
    "metadata.wrong_seed": "seed is not the prompt set's seeds[sample_idx]",
    "metadata.bad_refusal": "refused given but not true, a reason without a refusal, or a refusal that lists a file",
    # coverage (with a dataset)
    "coverage.skipped": "no dataset was given, so coverage, seeds and chains were not checked (warning)",
    "coverage.unknown_prompt": "a prompt_id that the prompt set does not have",
    "coverage.missing_image": "a text-to-image prompt without all its images",
    "coverage.broken_chain": "an I2I chain (base prompt, sample) missing edit steps",
    "coverage.wrong_edit_step": "edit_step differs from the prompt's (or is set on a text-to-image prompt)",
    "coverage.wrong_source_file": "source_file is not the image of the source prompt's same sample",
    "coverage.edits_refused": "an I2I step with an image whose source sample was declared refused",
    # image files
    "file.skipped": "images on the Hub are not downloaded by validate, so files were not checked (warning)",
    "file.missing": "a listed file does not exist",
    **IMAGE_CODES,  # file.unreadable, file.too_large, ... of cultureboard.images.inspect_image
    "file.sha256_mismatch": "the file's sha256 is not the one metadata.jsonl records",
    "file.duplicate_image": "the same image for prompts with different texts (warning without a dataset)",
    # pull-request scope
    "scope.outside_submission": "a changed path outside submissions/<id>/",
    "scope.other_submission": "a changed path in a submission folder other than the one validated",
    "scope.multiple_submissions": "a pull request changing several submission folders",
    "scope.empty": "a pull request changing no files (warning)",
}


#: The codes of the one finding that reads the clock: a date in the future (``schema.bad_date``, whose code also
#: covers a malformed date). Such a date becomes a past one as days pass, never the reverse, so a report without
#: these codes is the report of any later day (:attr:`Report.dated`).
DATED_CODES = frozenset({"schema.bad_date"})


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


@dataclass
class Report:
    """The outcome: ``valid`` when no problem is an error. ``omitted`` counts the problems left out of
    ``problems`` (beyond :attr:`Limits.max_problems`): {"error" | "warning": {code: count}}."""

    submission: str
    problems: list[Problem] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=dict)
    omitted: dict[str, dict[str, int]] = field(default_factory=dict)

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
        return cls(reports[-1].submission, [p for r in reports for p in r.problems], reports[-1].checked, omitted)

    def to_json(self) -> str:
        return json.dumps({"submission": self.submission, "valid": self.valid, "errors": self.count("error"),
                           "warnings": self.count("warning"), "checked": self.checked,
                           "problems": [asdict(p) for p in self.problems], "omitted": self.omitted}, indent=2)

    @classmethod
    def from_json(cls, text: str) -> Report:
        data = json.loads(text)
        return cls(data["submission"], [Problem(**p) for p in data["problems"]], data["checked"], data.get("omitted", {}))

    def to_text(self) -> str:
        """One line per problem, errors first, a line for the problems left out, then a summary line."""
        lines = [f"{p.severity.upper()} {p.file}: {p.message} (fix: {p.fix}) [{p.code}]" for p in self.errors + self.warnings]
        left = {code: n for codes in self.omitted.values() for code, n in codes.items()}
        if left:
            top = sorted(left.items(), key=lambda kv: -kv[1])
            lines.append(f"... and {sum(left.values()):,} more problems not shown: "
                         + ", ".join(f"{code} x {n:,}" for code, n in top[:8]) + (", ..." if len(top) > 8 else ""))
        counts = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in self.checked.items())
        verdict = "valid" if self.valid else "INVALID"
        lines.append(f"{self.submission}: {verdict}: {self.count('error')} errors, {self.count('warning')} warnings ({counts})")
        return "\n".join(lines)


# ----------------------------------------------------------------------------------- text and paths

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")  # C0, DEL, C1, line / paragraph separators, lone surrogates
_BIDI = re.compile(r"[\u202a-\u202e\u2066-\u2069]")
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\u202a-\u202e\u2066-\u2069]")
_HEX40 = re.compile(r"[0-9a-f]{40}")
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")  # as CI reads prompt_set.dataset
_SHA256 = re.compile(r"[0-9a-f]{64}")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DRIVE = re.compile(r"[A-Za-z]:")  # a Windows path's drive
#: 19 digits in a row: the least an integer beyond 64 bits has, the one value that parse_metadata_line lets through
#: and json_problems finds (JSON keys are strings; NaN and infinity are refused while parsing), so a line
#: without it needs no json_problems walk
_LONG_NUMBER = re.compile(rb"[0-9]{19}")


def _printable(text: str) -> str:
    """``text`` with control, bidi and surrogate characters escaped, safe to print and to embed."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


def _show(value: Any, width: int = 60) -> str:
    """A user-supplied value for a message: repr, shortened."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _problem(severity: str, code: str, file: str, message: str, fix: str) -> Problem:
    return Problem(code, severity, _printable(file), _printable(message), fix)


def _path_problem(name: str) -> tuple[str, str] | None:
    """(code, message) when a file_name is not a plain relative path inside the folder."""
    if name.startswith("/") or _DRIVE.match(name):
        return "safety.absolute_path", f"file_name {_show(name)} is an absolute path"
    parts = name.split("/")
    if ".." in parts:
        return "safety.path_escape", f"file_name {_show(name)} escapes the submission folder with '..'"
    if "\\" in name or "" in parts or "." in parts:
        return "safety.bad_path", f"file_name {_show(name)} has backslashes, empty or '.' components"
    return None


_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false", list: "a list", dict: "a mapping"}


def _type_ok(value: Any, types: type | tuple[type, ...]) -> bool:
    types = types if isinstance(types, tuple) else (types,)
    return bool in types if isinstance(value, bool) else isinstance(value, types)  # YAML/JSON true is not an int


def _type_name(types: type | tuple[type, ...]) -> str:
    return " or ".join(_TYPE_NAMES[t] for t in (types if isinstance(types, tuple) else (types,)))


# ------------------------------------------------------------------------------------ file contents

_SYSTEM_NAMES = {"__MACOSX", "Thumbs.db", "desktop.ini"}
_ARCHIVE_EXTENSIONS = {".zip", ".tar", ".gz", ".tgz", ".bz2", ".xz", ".7z", ".rar", ".zst"}
_EXECUTABLE_MAGIC = (b"\x7fELF", b"MZ", b"#!")
_ARCHIVE_MAGIC = (b"PK\x03\x04", b"PK\x05\x06", b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"7z\xbc\xaf\x27\x1c",
                  b"Rar!\x1a\x07", b"\x28\xb5\x2f\xfd")


def _dangerous(name: str, head: bytes) -> tuple[str, str] | None:
    """(code, message) when a file is an executable or an archive, by its first 512 bytes or extension."""
    if head.startswith(_EXECUTABLE_MAGIC):
        return "safety.executable", "is an executable or a script (ELF, MZ or #! header)"
    if head.startswith(_ARCHIVE_MAGIC) or head[257:262] == b"ustar" or Path(name).suffix.lower() in _ARCHIVE_EXTENSIONS:
        return "safety.archive", "is an archive"
    return None


def _open_nofollow(path: str | Path):
    """Open a regular file for reading, refusing links (and never blocking on a pipe)."""
    return open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), "rb")


def _check_image(root: Path, limits: Limits, size: tuple[int, int] | None, full_decode: bool,
                 item: tuple[str, int, str | None]) -> list[Problem]:
    """Every problem of one listed image file (:func:`~cultureboard.images.inspect_image`: read once,
    checked from its header and structure), its sha256, and whether it is an executable or an archive."""
    name, line, declared = item
    info = inspect_image(os.path.join(root, name), name=name, limits=limits.image, size=size, full_decode=full_decode)
    out = [_problem("error", p.code, name, p.message, p.fix) for p in info.problems]
    if info.format is None and info.sha256 is not None:  # read, but not an image: say what it is, if dangerous
        try:
            with _open_nofollow(os.path.join(root, name)) as fh:
                danger = _dangerous(name, fh.read(512))
        except OSError:
            danger = None
        if danger:
            out = [_problem("error", danger[0], name, danger[1], "submit only PNG, JPEG or WebP images")]
    if declared and info.sha256 is not None and info.sha256 != declared:
        out.insert(0, _problem("error", "file.sha256_mismatch", name, f"its sha256 differs from the one {METADATA}:{line} "
                               f"records", f"recompute the sha256 of the file (sha256sum {name}) and update {METADATA}, "
                               "or restore the file"))
    return out


def _check_images(root: Path, limits: Limits, size: tuple[int, int] | None, full_decode: bool,
                  items: list[tuple[str, int, str | None]]) -> list[Problem]:
    """:func:`_check_image` of each item, their problems in the items' order."""
    return [problem for item in items for problem in _check_image(root, limits, size, full_decode, item)]


# ------------------------------------------------------------------------------------ the validation

_MISSING = object()
_SECTIONS = sorted({f.path.split(".")[0] for f in FIELDS if "." in f.path})
_KNOWN = {f.path for f in FIELDS} | set(_SECTIONS)
_FREE = {f.path for f in FIELDS if f.type is dict}  # mappings whose keys are the submitter's
_METADATA_NAMES = frozenset(f.name for f in METADATA_FIELDS)


def _yaml_lines(root: yaml.Node) -> tuple[dict[str, int], list[tuple[str, int]]]:
    """{dotted path: line} of every mapping key, and (path, line) of keys repeated within their mapping
    (the loader refuses aliases, so the nodes form a tree)."""
    lines: dict[str, int] = {}
    dupes: list[tuple[str, int]] = []
    stack = [(root, "")]
    while stack:
        node, prefix = stack.pop()
        if isinstance(node, yaml.SequenceNode):
            stack += [(item, prefix) for item in node.value]
        elif isinstance(node, yaml.MappingNode):
            keys = set()
            for key, value in node.value:
                path = f"{prefix}{key.value}" if isinstance(key, yaml.ScalarNode) else prefix
                if isinstance(key, yaml.ScalarNode):
                    if key.value in keys:
                        dupes.append((path, key.start_mark.line + 1))
                    keys.add(key.value)
                    lines.setdefault(path, key.start_mark.line + 1)
                stack += [(key, prefix), (value, path + ".")]
    return lines, sorted(dupes, key=lambda d: d[1])


class _Validation:
    def __init__(self, root: Path, limits: Limits):
        self.root, self.limits = root, limits
        self.problems: list[Problem] = []
        self.files: dict[str, os.stat_result] = {}  # regular files, by relative path
        self.flagged: set[str] = set()  # links, hidden and special entries: reported, never read
        self.lines: dict[str, int] = {}  # submission.yaml: dotted path -> line
        self.prompt_set = ""
        self.checked_images = 0
        self.omitted: dict[str, dict[str, int]] = {}

    def add(self, problem: Problem) -> None:
        """Keep the problem, or count it once :attr:`Limits.max_problems` are kept."""
        if self.full(problem.severity, problem.code):
            return
        self.problems.append(problem)

    def full(self, severity: str, code: str) -> bool:
        """Whether :attr:`Limits.max_problems` are kept (then the problem is counted, not kept)."""
        if len(self.problems) < self.limits.max_problems:
            return False
        codes = self.omitted.setdefault(severity, {})
        codes[code] = codes.get(code, 0) + 1
        return True

    def error(self, code: str, file: str, message: str, fix: str) -> None:
        if not self.full("error", code):
            self.problems.append(_problem("error", code, file, message, fix))

    def warn(self, code: str, file: str, message: str, fix: str) -> None:
        if not self.full("warning", code):
            self.problems.append(_problem("warning", code, file, message, fix))

    def at(self, path: str) -> str:
        """``submission.yaml:LINE`` of a dotted path (or of its nearest parent that exists)."""
        path = re.sub(r"\[\d+\]", "", path)
        while path and path not in self.lines:
            path = path.rpartition(".")[0]
        return f"{SUBMISSION_YAML}:{self.lines[path]}" if path else SUBMISSION_YAML

    # --- the folder

    def scan(self) -> None:
        """Walk the folder without following links; report what may not be there, keep the regular files."""
        stack = [""]
        while stack:
            folder = stack.pop()
            try:
                entries = sorted(os.scandir(os.path.join(self.root, folder)), key=lambda e: e.name)
            except OSError as exc:
                self.error("file.unreadable", folder or ".", f"cannot be listed ({exc.strerror})", "check its permissions")
                continue
            for entry in entries:
                rel = f"{folder}/{entry.name}" if folder else entry.name
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError as exc:
                    self.error("file.unreadable", rel, f"cannot be read ({exc.strerror})", "check its permissions")
                    continue
                if stat.S_ISLNK(st.st_mode):
                    self.error("safety.symlink", rel, "is a symbolic link", "replace the link with the file it points to")
                elif entry.name.startswith(".") or entry.name in _SYSTEM_NAMES:
                    self.error("safety.hidden_file", rel, "is a hidden or system file", "delete it")
                elif stat.S_ISDIR(st.st_mode):
                    stack.append(rel)
                    continue
                elif not stat.S_ISREG(st.st_mode):
                    self.error("safety.special_file", rel, "is not a regular file (device, pipe or socket)", "delete it")
                elif st.st_nlink > 1:
                    self.error("safety.hardlink", rel, f"has {st.st_nlink} hard links", "replace it with a plain copy")
                else:
                    self.files[rel] = st
                    continue
                self.flagged.add(rel)

    def open_listed(self, rel: str, limit: int):
        """``submission.yaml`` or ``metadata.jsonl`` opened for reading; None (reported if needed) otherwise."""
        if rel not in self.files:
            if rel not in self.flagged:
                self.error("folder.missing_file", rel, "is missing", f"add {rel} (see submissions/README.md)")
            return None
        if self.files[rel].st_size > limit:
            self.error("file.too_large", rel, f"is {self.files[rel].st_size:,} bytes; the limit is {limit:,}", "shorten it")
            return None
        try:
            return _open_nofollow(self.root / rel)
        except OSError as exc:
            self.error("file.unreadable", rel, f"cannot be read ({exc.strerror})", "check its permissions")
            return None

    def read_whole(self, rel: str, limit: int) -> bytes | None:
        """The bytes of ``submission.yaml``; None (reported if needed) otherwise."""
        fh = self.open_listed(rel, limit)
        if fh is None:
            return None
        try:
            with fh:
                return fh.read(limit + 1)
        except OSError as exc:
            self.error("file.unreadable", rel, f"cannot be read ({exc.strerror})", "check its permissions")
            return None

    def check_folder(self, listed: set[str] | None) -> None:
        """Executables, archives and files that are neither the two files, a README nor a listed image
        (``listed`` is None when metadata.jsonl has no usable line: then nothing is called unlisted)."""
        allowed = {SUBMISSION_YAML, METADATA, README} | (listed or set())
        for rel, st in sorted(self.files.items()):
            if st.st_mode & 0o111:
                self.error("safety.executable", rel, "has the executable bit set", f"chmod -x {rel}")
                continue
            if listed and rel in listed:
                continue  # its content was checked with the images
            try:
                with _open_nofollow(self.root / rel) as fh:
                    danger = _dangerous(rel, fh.read(512))
            except OSError as exc:
                self.error("file.unreadable", rel, f"cannot be read ({exc.strerror})", "check its permissions")
                continue
            if danger:
                self.error(danger[0], rel, danger[1], "a submission holds only its two files, a README.md and images; delete it")
            elif listed is not None and rel not in allowed:
                self.error("folder.unlisted_file", rel, f"is not listed in {METADATA}",
                           f"delete it, or add its line to {METADATA} if it is an image of the submission")

    # --- text

    def text(self, where: str, name: str, value: str, limit: int, multiline: bool = False) -> None:
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

    def yaml_text(self, node: Any, path: str, seen: set[int]) -> None:
        """Check every string (keys too) of submission.yaml; shared or recursive YAML nodes are visited once."""
        if isinstance(node, str):
            limit = {"model.training_data": self.limits.max_training_data_chars}.get(
                path, self.limits.max_name_chars if path in _KNOWN else self.limits.max_text_chars)
            self.text(self.at(path), path or "a value", node, limit, multiline=path == "model.training_data")
        elif isinstance(node, (dict, list)) and id(node) not in seen:
            seen.add(id(node))
            items = node.items() if isinstance(node, dict) else ((f"[{i}]", v) for i, v in enumerate(node))
            for key, value in items:
                if isinstance(node, dict) and isinstance(key, str):
                    self.text(self.at(path), f"key {_show(key, 30)}", key, self.limits.max_name_chars)
                child = f"{path}{key}" if isinstance(node, list) else f"{path}.{key}" if path else str(key)
                self.yaml_text(value, child, seen)

    # --- submission.yaml

    def check_spec(self) -> dict | None:
        data = self.read_whole(SUBMISSION_YAML, self.limits.max_yaml_bytes)
        if data is None:
            return None
        try:
            loader = YamlLoader(data.decode("utf-8"))
            try:
                node = loader.get_single_node()
                spec = loader.construct_document(node) if node is not None else None
            finally:
                loader.dispose()
        except UnicodeDecodeError as exc:
            self.error("schema.yaml_syntax", SUBMISSION_YAML, f"is not UTF-8 text (byte {exc.start})", "save it as UTF-8")
            return None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"{SUBMISSION_YAML}:{mark.line + 1}" if mark else SUBMISSION_YAML
            if str(getattr(exc, "problem", "")).startswith("uses the alias"):
                self.error("schema.yaml_alias", where, f"{exc.problem} (YAML aliases are not allowed)",
                           "write every value out in full")
                return None
            detail = getattr(exc, "problem", None) or str(exc)
            column = f" at column {mark.column + 1}" if mark else ""
            self.error("schema.yaml_syntax", where, f"is not valid YAML: {detail}{column}",
                       "fix the YAML there (indentation, quotes, colons; no !! tags); a YAML linter shows the spot")
            return None
        except RecursionError:
            self.error("schema.yaml_syntax", SUBMISSION_YAML, "nests too deeply",
                       "write plain fields as in submissions/README.md")
            return None
        if not isinstance(spec, dict):
            what = "empty" if spec is None else f"a {type(spec).__name__}"
            self.error("schema.not_mapping", SUBMISSION_YAML, f"is {what}, not a mapping of fields",
                       "write `field: value` lines as in submissions/README.md")
            return None
        self.lines, dupes = _yaml_lines(node)
        for path, line in dupes:
            self.error("schema.duplicate_key", f"{SUBMISSION_YAML}:{line}", f"{path} is given twice", "keep one of them")
        self.check_fields(spec)
        self.check_json(spec)
        self.yaml_text(spec, "", set())
        return spec

    def check_json(self, spec: dict) -> None:
        """Values JSON cannot hold, anywhere (a typed field of the wrong type is reported by check_fields)."""
        typed = {f.path: f for f in FIELDS}
        for path, what in json_problems(spec):
            f = typed.get(path)
            if f is not None and not _type_ok(get(spec, f.path), f.type):
                continue
            value = get(spec, path) if "[" not in path else None
            fix = (f"quote it: '{value.isoformat()}'" if isinstance(value, datetime.date)
                   else "write it as a string (quoted), a finite number or a mapping with string keys")
            self.error("schema.not_json", self.at(path), f"{path} {what}", fix)

    def check_fields(self, spec: dict) -> None:
        bad_sections = set()
        for section in _SECTIONS:
            if section in spec and not isinstance(spec[section], dict):
                bad_sections.add(section)
                self.error("schema.wrong_type", self.at(section), f"{section} is {_show(spec[section])}, not a mapping",
                           f"write {section}: followed by indented `field: value` lines")
        for f in FIELDS:
            if f.path.split(".")[0] in bad_sections:
                continue
            value = get(spec, f.path, _MISSING)
            if value is _MISSING or (value is None and not f.nullable):
                if f.required:
                    state = "is missing" if value is _MISSING else "is null"
                    self.error("schema.missing_field", self.at(f.path), f"{f.path} {state} ({f.help})",
                               f"add {f.path}: {_type_name(f.type)}" + (", or null if unknown" if f.nullable else ""))
            elif value is not None and not _type_ok(value, f.type):
                fix = f"make {f.path} {_type_name(f.type)}"
                if isinstance(value, datetime.date):
                    fix = f"quote it: {f.path.split('.')[-1]}: '{value.isoformat()}'"
                self.error("schema.wrong_type", self.at(f.path), f"{f.path} is {_show(value)}, not {_type_name(f.type)}", fix)
            elif f.choices and value not in f.choices:
                self.error("schema.bad_choice", self.at(f.path), f"{f.path} is {_show(value)}",
                           f"use one of {', '.join(f.choices)}")
            elif value is not None and not f.in_range(value):
                self.error("schema.out_of_range", self.at(f.path), f"{f.path} is {_show(value)}, not "
                           f"{f.range_text()}", f"write the value used, {f.range_text()}")
        self.check_unknown(spec)
        self.check_values(spec)

    def check_unknown(self, spec: dict) -> None:
        for key, value in spec.items():
            paths = [str(key)]
            if key in _SECTIONS and isinstance(value, dict):
                paths = [f"{key}.{k}" for k in value]
            for path in paths:
                if path not in _KNOWN and not any(path.startswith(free + ".") for free in _FREE):
                    self.warn("schema.unknown_field", self.at(path), f"{path} is not a field of the format (ignored)",
                              "check its spelling; settings without a field go under generation.extra")

    def check_values(self, spec: dict) -> None:
        version = get(spec, "format_version")
        if _type_ok(version, int) and version != FORMAT_VERSION:
            self.error("schema.format_version", self.at("format_version"), f"format_version is {version}",
                       f"use format_version: {FORMAT_VERSION} and the fields it defines")
        date = get(spec, "date")
        if isinstance(date, str):
            try:
                ok = bool(_DATE.fullmatch(date)) and datetime.date.fromisoformat(date) is not None
            except ValueError:
                ok = False
            if not ok:
                self.error("schema.bad_date", self.at("date"), f"date {_show(date)} is not a YYYY-MM-DD date",
                           "write the generation date as YYYY-MM-DD, e.g. 2025-01-31")
            elif datetime.date.fromisoformat(date) > datetime.datetime.now(datetime.UTC).date() + datetime.timedelta(days=1):
                self.error("schema.bad_date", self.at("date"), f"date {date} is in the future",
                           "write the date the images were generated, YYYY-MM-DD")
        if isinstance(get(spec, "organization"), str) and isinstance(get(spec, "model.name"), str):
            expected, actual = submission_id(spec), self.root.resolve().name
            if too_long := submission_id_problem(expected):
                self.error("schema.id_too_long", self.at("organization"), too_long, "shorten organization, model.name or "
                           "tag: the id names folders and files of the results and the site")
            if expected != actual:
                self.error("schema.folder_name", SUBMISSION_YAML, f"the folder is named {_show(actual)}, but "
                           f"organization, model.name and tag make {_show(expected)}",
                           f"name the folder submissions/{expected}, or correct organization, model.name and tag")
        location = get(spec, "images.location")
        if isinstance(location, str) and parse_location(location) is None:
            self.error("schema.bad_location", self.at("images.location"), f"images.location {_show(location)} is not a "
                       "relative folder or hf://datasets/ORG/REPO@REVISION", "use `images` or hf://datasets/ORG/REPO@REVISION")
        revision = get(spec, "prompt_set.revision")
        if isinstance(revision, str) and not (_HEX40.fullmatch(revision) or re.fullmatch(r"sha256:[0-9a-f]{64}", revision)):
            self.error("schema.bad_revision", self.at("prompt_set.revision"), f"prompt_set.revision {_show(revision)} "
                       "is not a pinned revision", "use the dataset's 40-hex Hub commit or its sha256:<hex> fingerprint")
        self.check_dataset_pin(get(spec, "prompt_set.dataset"), revision)

    def check_dataset_pin(self, dataset: Any, revision: Any) -> None:
        """A warning unless the submission pins the official Hub dataset at a commit (CI evaluates only that;
        it checks a local folder's pin against the shipped sample build)."""
        if not (isinstance(dataset, str) and isinstance(revision, str)):
            return  # reported with the fields
        fix = f"download the official dataset ({DOWNLOAD_COMMAND}) and run package or generate again with --dataset dataset"
        if not _HUB_ID.fullmatch(dataset):
            self.warn("schema.unofficial_dataset", self.at("prompt_set.dataset"), f"the submission pins the local "
                      f"dataset folder {_show(dataset)}, not the official Hub dataset {OFFICIAL_DATASET} at a commit, "
                      "so the leaderboard cannot evaluate it", fix)
        elif not _HEX40.fullmatch(revision):
            self.warn("schema.unofficial_dataset", self.at("prompt_set.revision"), f"the submission pins {_show(dataset)} "
                      f"by {_show(revision)}, the fingerprint of a local folder, not a Hub commit, so the leaderboard "
                      "cannot evaluate it", fix)
        elif dataset != OFFICIAL_DATASET:
            self.warn("schema.unofficial_dataset", self.at("prompt_set.dataset"), f"the submission pins the Hub dataset "
                      f"{_show(dataset)}, not the leaderboard's {OFFICIAL_DATASET}", fix)

    # --- the model's other submissions

    def check_siblings(self, spec: dict | None) -> None:
        """The submissions of the same model (:func:`~.format.model_key`) beside this one, for other prompt sets or
        as tagged variants, describe the same model: each field of :data:`MODEL_IDENTITY` equal in both. A sibling
        whose submission.yaml cannot be read is skipped (its own validation reports it); so are controls."""
        if not isinstance(spec, dict) or get(spec, "control") is not None or not (key := model_key(spec)):
            return
        parent = self.root.parent
        names = sorted(n for n in os.listdir(parent) if n.startswith(key)) if parent.is_dir() else []
        for sibling in (parent / n for n in names):  # a sibling's name is the model's key, with a tag or without
            other = _sibling_spec(sibling, self.root, key, self.limits.max_yaml_bytes)
            if other is None:
                continue
            for path in MODEL_IDENTITY:
                mine, theirs = get(spec, path), get(other, path)
                if mine != theirs:
                    self.error("schema.model_mismatch", self.at(path), f"{path} is {_show(mine)} here but "
                               f"{_show(theirs)} in {_show(sibling.name)}, another submission of the model {key}",
                               f"make {path} the same in {self.root.name} and {sibling.name} (one model, several "
                               "prompt sets); a different model, revision or API version needs its own model.name")

    # --- the prompt set

    def load_prompts(self, spec: dict | None, dataset: Path | None) -> dict[str, dict] | None:
        """The prompt set's rows by prompt_id, or None when coverage cannot be checked (reported)."""
        if dataset is None:
            self.warn("coverage.skipped", METADATA, "prompt coverage, seeds and I2I chains were not checked",
                      "pass --dataset DIR, the dataset folder at the submission's revision")
            return None
        name, revision = get(spec or {}, "prompt_set.name"), get(spec or {}, "prompt_set.revision")
        if not isinstance(name, str):
            return None  # reported with the fields
        self.prompt_set = name
        if name not in configs(dataset):
            sets = prompt_sets(dataset)
            self.error("schema.unknown_prompt_set", self.at("prompt_set.name"), f"prompt set {_show(name)} is not in "
                       f"dataset {dataset.name}{DidYouMean(sets)(name)}", f"use one of its prompt sets: {', '.join(sets)}")
            return None
        try:
            rows = _prompt_rows(dataset, name)
        except CultureboardError as exc:
            self.error("schema.unknown_prompt_set", self.at("prompt_set.name"), f"{exc.source}: {exc.problem}", exc.fix)
            return None
        if isinstance(revision, str) and revision.startswith("sha256:"):
            actual = local_revision(dataset)
            if revision != actual:
                self.error("schema.wrong_revision", self.at("prompt_set.revision"), f"the images were generated from "
                           f"dataset revision {revision}, but {dataset.name} is {actual}; coverage was not checked",
                           "pass --dataset with the dataset at the submission's revision, or regenerate from this one")
                return None
        elif isinstance(revision, str) and _HEX40.fullmatch(revision):
            downloaded = hub_commit(dataset)
            if downloaded is None:
                self.warn("schema.revision_unchecked", self.at("prompt_set.revision"), f"Hub commit {revision} cannot be "
                          f"compared with {dataset.name}, which is not an unchanged Hub download",
                          "make sure --dataset is a download of that commit (hf download ... --local-dir DIR)")
            elif downloaded != revision:
                self.error("schema.wrong_revision", self.at("prompt_set.revision"), f"the images were generated from "
                           f"Hub commit {revision}, but {dataset.name} is a download of commit {downloaded}; coverage "
                           "was not checked", "pass --dataset with a download of the submission's commit "
                           f"(hf download {get(spec, 'prompt_set.dataset')} --repo-type dataset --revision {revision} "
                           "--local-dir DIR), or regenerate from this one")
                return None
        return {r["prompt_id"]: r for r in rows}

    # --- metadata.jsonl

    def read_metadata(self) -> list[tuple[int, dict]]:
        """(line number, the row's well-formed fields) of every distinct line, read line by line as
        :func:`~.format.read_metadata` reads them (memory: the rows, a 16-byte digest a line, the problems kept)."""
        fh = self.open_listed(METADATA, self.limits.max_metadata_bytes)
        if fh is None:
            return []
        rows: list[tuple[int, dict]] = []
        seen: dict[bytes, int] = {}
        unknown: dict[str, list[int]] = {}  # key -> [first line, lines]; at most _UNKNOWN_KEYS keys, the rest counted
        more_unknown = 0
        with fh:
            for n, raw, length in metadata_lines(fh, self.limits.max_line_bytes):
                where = f"{METADATA}:{n}"
                if n > self.limits.max_metadata_lines:
                    self.error("metadata.too_many_lines", where, f"is beyond the limit of {self.limits.max_metadata_lines:,} "
                               "lines; the rest of the file was not read", "submit one line per image of the prompt set")
                    break
                if raw is None:
                    self.error("metadata.bad_json", where, f"is {length:,} bytes; a line may have "
                               f"{self.limits.max_line_bytes:,}", "write one short JSON object per image")
                    continue
                if not raw.strip():
                    continue
                obj = self.parse_line(where, raw)
                if obj is None:
                    continue
                digest = hashlib.blake2b(_CANONICAL.encode(obj).encode(), digest_size=16).digest()
                if digest in seen:
                    self.error("metadata.duplicate_line", where, f"repeats line {seen[digest]}", "delete the repeated line")
                    continue
                seen[digest] = n
                for key in obj:
                    if key in _METADATA_NAMES:
                        continue
                    if key in unknown:
                        unknown[key][1] += 1
                    elif len(unknown) < _UNKNOWN_KEYS:
                        unknown[key] = [n, 1]
                    else:
                        more_unknown += 1
                rows.append((n, self.check_row(where, obj)))
        for key, (first, count) in unknown.items():
            self.warn("metadata.unknown_field", f"{METADATA}:{first}", f"key {_show(key)} is not a field of the "
                      f"format (on {count} lines; ignored)", f"use only {', '.join(f.name for f in METADATA_FIELDS)}")
        if more_unknown:
            self.warn("metadata.unknown_field", METADATA, f"{more_unknown:,} more uses of keys that are not fields of "
                      "the format (ignored)", f"use only {', '.join(f.name for f in METADATA_FIELDS)}")
        if not rows and not any(p.file.startswith(METADATA) for p in self.problems) and not self.omitted:
            self.error("metadata.empty", METADATA, "lists no images", "add one line per image")
        return rows

    def parse_line(self, where: str, raw: bytes) -> dict | None:
        """One line as a JSON object of JSON values; None (reported) otherwise."""
        try:
            obj = parse_metadata_line(raw)
        except DuplicateKeyError as exc:
            self.error("metadata.duplicate_key", where, f"gives {_show(exc.args[0])} twice", "keep one of them")
            return None
        except UnicodeDecodeError as exc:
            self.error("metadata.bad_json", where, f"is not UTF-8 (byte {exc.start})", f"save {METADATA} as UTF-8")
            return None
        except json.JSONDecodeError as exc:
            self.error("metadata.bad_json", where, f"is not valid JSON: {exc.msg} at column {exc.colno}",
                       "write one JSON object per line")
            return None
        except NotFiniteError as exc:
            self.error("metadata.bad_json", where, f"has the number {_show(exc.args[0])}, which JSON does not allow",
                       "write finite numbers only")
            return None
        except (ValueError, RecursionError) as exc:
            self.error("metadata.bad_json", where, f"is not usable JSON ({exc.__class__.__name__})",
                       "write one JSON object per line")
            return None
        if not isinstance(obj, dict):
            self.error("metadata.not_object", where, f"is {type(obj).__name__}, not a JSON object",
                       'write {"file_name": ..., "prompt_id": ..., ...} objects, one per line')
            return None
        bad = json_problems(obj) if _LONG_NUMBER.search(raw) else None
        if bad:
            self.error("metadata.bad_json", where, f"{bad[0][0]} {bad[0][1]}", "write integers within 64 bits")
            return None
        return obj

    def check_row(self, where: str, obj: dict) -> dict:
        """The fields of one line that are present, typed right and safe."""
        row = {}
        refusal = is_refusal(obj)
        for f in METADATA_FIELDS:
            value = obj.get(f.name)
            if refusal and value is not None and f.name in REFUSAL_FORBIDS:
                self.error("metadata.bad_refusal", where, f"declares a refusal but has {f.name}",
                           "a refused sample has no image: remove file_name, sha256 and source_file, or \"refused\"")
            elif value is None:
                if f.required and not (refusal and f.name in (*REFUSAL_FORBIDS, "seed")):
                    self.error("metadata.missing_field", where, f"has no {f.name} ({f.help})", f"add \"{f.name}\" to the line")
            elif not _type_ok(value, f.type):
                self.error("metadata.wrong_type", where, f"{f.name} is {_show(value)}, not {_type_name(f.type)}",
                           f"write {f.name} as {_type_name(f.type)}")
            else:
                row[f.name] = value
        for key, value in obj.items():
            if key not in _METADATA_NAMES:  # the format's own names are short and printable
                self.text(where, f"key {_show(key, 30)}", key, self.limits.max_name_chars)
            if isinstance(value, str):
                self.text(where, key if key in row else f"key {_show(key, 30)}'s value", value, self.limits.max_name_chars)
        if row.get("refused") is False or (row.get("reason") is not None and not refusal):
            self.error("metadata.bad_refusal", where, "has \"refused\": false or a reason without \"refused\": true",
                       "write \"refused\": true (and a reason) only on the line of a refused sample")
            row.pop("refused", None)
        if "sha256" in row and not _SHA256.fullmatch(row["sha256"]):
            self.error("metadata.bad_sha256", where, f"sha256 {_show(row.pop('sha256'))} is not 64 lower-case hex digits",
                       "write the hex sha256 of the file (sha256sum)")
        if row.get("sample_idx", 0) < 0:
            self.error("metadata.sample_out_of_range", where, f"sample_idx {row.pop('sample_idx')} is negative",
                       "number a prompt's images 0, 1, ... images_per_prompt - 1")
        if "file_name" in row and (bad := _path_problem(row["file_name"])):
            self.error(bad[0], where, bad[1], "write the path relative to the submission folder with / separators, "
                       "e.g. images/x/0.png")
            del row["file_name"]
        return row

    def check_duplicates(self, rows: list[tuple[int, dict]]) -> list[tuple[int, dict]]:
        """Report repeated (prompt_id, sample_idx) pairs and file names; return the rows that came first."""
        samples: dict[tuple, int] = {}
        files: dict[str, int] = {}
        unique = []
        for n, row in rows:
            where, sample, name = f"{METADATA}:{n}", (row.get("prompt_id"), row.get("sample_idx")), row.get("file_name")
            repeated = False
            if None not in sample and sample in samples:
                self.error("metadata.duplicate_sample", where, f"prompt {_show(sample[0])} sample {sample[1]} is also on "
                           f"line {samples[sample]}", "keep one line (and one image) per prompt and sample")
                repeated = True
            if name is not None and name in files:
                self.error("metadata.duplicate_file", where, f"file {_show(name)} is also on line {files[name]}",
                           "give every image its own file")
                repeated = True
            if not repeated:
                if None not in sample:
                    samples[sample] = n
                if name is not None:
                    files[name] = n
                unique.append((n, row))
        return unique

    # --- coverage

    def check_coverage(self, rows: list[tuple[int, dict]], prompts: dict[str, dict]) -> None:
        present: dict[tuple[str, int], tuple[int, dict]] = {}
        guess = DidYouMean(prompts, prefix=self.prompt_set)
        for n, row in rows:
            where, pid, k = f"{METADATA}:{n}", row.get("prompt_id"), row.get("sample_idx")
            if pid is None:
                continue
            prompt = prompts.get(pid)
            if prompt is None:
                self.error("coverage.unknown_prompt", where, f"prompt_id {_show(pid)} is not in prompt set "
                           f"{self.prompt_set}{guess(pid)}",
                           "use the prompt set's prompt ids (never parse them from file names), or delete the line")
                continue
            if k is None:
                continue
            count, seeds = prompt["images_per_prompt"] or 0, prompt["seeds"] or []
            if k >= count:
                self.error("metadata.sample_out_of_range", where, f"sample_idx {k} is out of range: prompt {_show(pid)} "
                           f"has {count} images (0..{count - 1})", "delete the line and its image")
                continue
            if "seed" in row and k < len(seeds) and row["seed"] != seeds[k]:
                self.error("metadata.wrong_seed", where, f"seed {row['seed']} is not seeds[{k}] = {seeds[k]} of prompt "
                           f"{_show(pid)}", "generate image k of each prompt with the prompt set's seeds[k]")
            if row.get("edit_step") != prompt["edit_step"]:
                has = f"edit step {prompt['edit_step']}" if prompt["kind"] == "i2i" else "no edit step (text-to-image)"
                self.error("coverage.wrong_edit_step", where, f"edit_step is {_show(row.get('edit_step'))} but prompt "
                           f"{_show(pid)} has {has}", "copy edit_step from the prompt set (leave it out for text-to-image)")
            present[(pid, k)] = (n, row)
        for (pid, k), (n, row) in present.items():
            prompt = prompts[pid]
            source = present.get((prompt["source_prompt_id"], k)) if prompt["kind"] == "i2i" else None
            if source and is_refusal(source[1]) and not is_refusal(row):
                self.error("coverage.edits_refused", f"{METADATA}:{n}", f"edits {prompt['source_prompt_id']} sample {k}, "
                           f"which line {source[0]} declares refused", "declare this step refused too: nothing was there to edit")
            elif source and not is_refusal(row) and row.get("source_file") != source[1].get("file_name"):
                self.error("coverage.wrong_source_file", f"{METADATA}:{n}", f"source_file is "
                           f"{_show(row.get('source_file'))}, but this step edits "
                           f"{_show(source[1].get('file_name'))} (line {source[0]})",
                           "set source_file to the file_name of the image this step edited")
        self.check_missing(present, prompts)

    def check_missing(self, present: dict, prompts: dict[str, dict]) -> None:
        """Text-to-image prompts lacking images; I2I chains (base prompt x sample) lacking steps, once per chain."""
        chains: dict[str, list[dict]] = {}
        for pid, prompt in prompts.items():
            count = prompt["images_per_prompt"] or 0
            if prompt["kind"] == "i2i":
                chains.setdefault(_chain_root(pid, prompts), []).append(prompt)
                continue
            missing = [k for k in range(count) if (pid, k) not in present]
            if missing:
                self.error("coverage.missing_image", METADATA, f"prompt {_show(pid)} has no image for sample "
                           f"{', '.join(map(str, missing))} of {count}", "generate the missing images and add their lines")
        for root, steps in chains.items():
            steps.sort(key=lambda p: p["edit_step"] or 0)
            for k in range(max(p["images_per_prompt"] or 0 for p in steps)):
                gaps = [p for p in steps if k < (p["images_per_prompt"] or 0) and (p["prompt_id"], k) not in present]
                if gaps:
                    which = ", ".join(f"{p['edit_step']} ({p['prompt_id']})" for p in gaps)
                    self.error("coverage.broken_chain", METADATA, f"the I2I chain from {_show(root)}, sample {k}, is "
                               f"missing step {which}", "generate every edit step: each step edits the previous step's image")

    def check_same_images(self, rows: list[tuple[int, dict]], prompts: dict[str, dict] | None) -> None:
        """One image content listed for prompts whose texts differ (without a dataset: whose ids differ)."""
        first: dict[str, tuple[int, dict]] = {}
        for n, row in rows:
            sha, pid = row.get("sha256"), row.get("prompt_id")
            if sha is None or pid is None:
                continue
            if sha not in first:
                first[sha] = (n, row)
                continue
            m, other = first[sha]
            if prompts is None:
                if other["prompt_id"] != pid:
                    self.warn("file.duplicate_image", f"{METADATA}:{n}", f"has the same image as line {m} (prompt "
                              f"{_show(other['prompt_id'])}) for prompt {_show(pid)}",
                              "pass --dataset to compare the prompt texts")
                continue
            a, b = prompts.get(other["prompt_id"]), prompts.get(pid)
            if a and b and (a["text"], a["negative_prompt"]) != (b["text"], b["negative_prompt"]):
                self.error("file.duplicate_image", f"{METADATA}:{n}", f"has the same image as line {m} (prompt "
                           f"{_show(other['prompt_id'])}), but prompt {_show(pid)} has a different text",
                           "generate each prompt's own image")

    # --- images

    def check_images(self, rows: list[tuple[int, dict]], location: Any, size: tuple[int, int] | None, full_decode: bool,
                     workers: int | None) -> set[str]:
        """Check each listed local image once, in a thread pool (with an unknown location: those that exist),
        against the displayed ``size`` (width, height) when known; returns the file names that are listed and local."""
        listed = {row["file_name"] for _, row in rows if "file_name" in row}
        if location is not None and location.kind == "hub":
            self.warn("file.skipped", SUBMISSION_YAML, f"images are on the Hub ({location.path}@{location.revision}) "
                      "and were not checked", "the evaluator checks them after downloading; validate a local copy to check now")
            return set()
        todo, seen = [], set()
        for n, row in rows:
            name = row.get("file_name")
            if name is None or name in seen:
                continue
            seen.add(name)
            if location is not None and location.path != "." and not name.startswith(location.path.rstrip("/") + "/"):
                self.error("metadata.outside_location", f"{METADATA}:{n}", f"file_name {_show(name)} is not in the "
                           f"images.location folder {location.path}/", f"put the image under {location.path}/")
            elif name in self.files:
                todo.append((name, n, row.get("sha256")))
            elif location is not None and not self.flagged.intersection(map(str, (name, *PurePosixPath(name).parents))):
                self.error("file.missing", f"{METADATA}:{n}", f"lists {_show(name)}, which does not exist",
                           "add the image, or correct file_name")
        threads = workers or min(8, os.cpu_count() or 1)
        step = max(1, -(-len(todo) // (4 * threads)))  # a few batches a thread: small images cost less than handing out one
        check = partial(_check_images, self.root, self.limits, size, full_decode)
        with ThreadPoolExecutor(threads) as pool:
            for problems in pool.map(check, [todo[i: i + step] for i in range(0, len(todo), step)]):
                for problem in problems:
                    self.add(problem)
        self.checked_images = len(todo)
        return listed


_UNKNOWN_KEYS = 100  # distinct unknown metadata keys reported one by one
_CANONICAL = json.JSONEncoder(sort_keys=True)  # a line's content, whatever its key order (json.dumps's own encoding)


#: The rows of the prompt sets read lately (:func:`_prompt_rows`), at most _PROMPT_SETS_KEPT.
_PROMPT_SETS: dict[tuple, list[dict]] = {}
_PROMPT_SETS_KEPT = 8


def _prompt_rows(dataset: Path, name: str) -> list[dict]:
    """:func:`~cultureboard.dataset_folder.read_prompt_set`, read once for the folders validated against one
    dataset (a site build validates hundreds). Remembered under the dataset folder's real path, ``name`` and the
    entries of ``data/<name>/`` (name, type, size, times, inode and link count of each): read_prompt_set reads
    the parquet files there, so any change to what it reads changes the key. An error is never remembered. The
    rows are shared by the validations that use them, which only read them."""
    try:
        with os.scandir(dataset / "data" / name) as it:
            files = sorted((e.name, _signature(e.stat(follow_symlinks=False))) for e in it)
        key = (os.path.realpath(dataset), name, tuple(files))
    except OSError:
        return read_prompt_set(dataset, name)  # it says what is wrong
    if key not in _PROMPT_SETS:
        rows = read_prompt_set(dataset, name)
        if len(_PROMPT_SETS) >= _PROMPT_SETS_KEPT:
            _PROMPT_SETS.clear()
        _PROMPT_SETS[key] = rows
    return _PROMPT_SETS[key]


def _signature(st: os.stat_result) -> tuple[int, ...]:
    return st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_nlink


def _chain_root(pid: str, prompts: dict[str, dict]) -> str:
    """The text-to-image prompt an I2I chain starts from (the last id reached, if the chain is broken or cyclic)."""
    seen = set()
    while pid in prompts and prompts[pid]["kind"] == "i2i" and pid not in seen:
        seen.add(pid)
        pid = prompts[pid]["source_prompt_id"]
    return pid


def validate(submission_dir: str | Path, dataset: str | Path | None = None, limits: Limits = Limits(), *,
             full_decode: bool = False, workers: int | None = None) -> Report:
    """Every problem of the submission folder ``submission_dir``; coverage needs ``dataset`` (a dataset folder).

    ``full_decode`` decodes every pixel as well (see the module's decoding trade-off); ``workers`` threads
    read, hash and check images (default: the CPU count, at most 8). Nothing is written.
    """
    root = Path(submission_dir)
    if root.is_symlink():
        return Report(root.name, [_problem("error", "safety.symlink", root.name, "the submission folder is a symbolic link",
                                           "replace it with a real folder")], {})
    if not root.is_dir():
        raise CultureboardError(root, "is not a folder", "pass a submission folder, e.g. submissions/ORG__MODEL", exit_code=2)
    if dataset is not None and not (Path(dataset) / "data").is_dir():
        raise CultureboardError(dataset, "is not a cultureboard dataset folder (no data/ folder)",
                                "pass the --out folder of `cultureboard build`, or a download of the Hub dataset", exit_code=2)
    v = _Validation(root, limits)
    with warnings.catch_warnings():
        # the pixel limits are checked from the header before the image library sees a file; limits raised
        # above the library's own warning threshold are still checked, and reported, so its warning is noise
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        v.scan()
        spec = v.check_spec()
        v.check_siblings(spec)
        parsed = v.read_metadata()
        rows = v.check_duplicates(parsed)
        prompts = v.load_prompts(spec, Path(dataset) if dataset is not None else None)
        if prompts is not None and rows:  # without usable lines, "everything is missing" says nothing new
            v.check_coverage(rows, prompts)
        location = get(spec or {}, "images.location")
        listed = v.check_images(parsed, parse_location(location) if isinstance(location, str) else None,
                                _generated_size(spec), full_decode, workers)
        if prompts is not None or dataset is None:  # a dataset that could not be used is reported already
            v.check_same_images(rows, prompts)
        v.check_folder(listed if parsed else None)
    checked = {"files": len(v.files), "metadata_lines": len(parsed), "images": v.checked_images}
    if refused := sum(is_refusal(row) for _, row in parsed):
        checked["refused"] = refused  # declared refusals: counted in coverage as refused, not missing
    if prompts is not None:
        checked["prompts"] = len(prompts)
    return Report(root.resolve().name, v.problems, checked, v.omitted)


def _sibling_spec(folder: Path, root: Path, key: str, max_bytes: int) -> dict | None:
    """The submission.yaml of ``folder`` when it is another real submission folder of the model ``key`` and
    readable (a regular file within ``max_bytes``, valid YAML, not a control), else None."""
    named = parse_submission_id(folder.name)
    if (named is None or f"{named['organization']}__{named['model']}" != key or folder.name == root.name
            or folder.is_symlink() or not folder.is_dir()):
        return None
    path = folder / SUBMISSION_YAML
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return None
        other = read_spec(path)
    except (OSError, CultureboardError):
        return None
    return None if get(other, "control") is not None else other


def _generated_size(spec: dict | None) -> tuple[int, int] | None:
    """(generation.width, generation.height), the size every image must have, when both are positive integers
    (any other value is a schema.wrong_type or schema.out_of_range error of check_fields)."""
    size = (get(spec or {}, "generation.width"), get(spec or {}, "generation.height"))
    return size if all(_type_ok(x, int) and x > 0 for x in size) else None


def check_pr_scope(changed_files: list[str], submission_dir: str | Path | None = None) -> Report:
    """Check that a pull request changes only one submission folder (``submission_dir``'s, when given).

    ``changed_files`` are repository-relative paths as ``git diff --name-only`` prints them; a path git
    quotes (unusual characters) does not start with ``submissions/`` and so fails, as it should.
    """
    paths = [p.rstrip("\r\n") for p in changed_files if p.strip()]
    owners = {}
    for p in paths:
        parts = PurePosixPath(p).parts
        inside = len(parts) >= 3 and parts[0] == "submissions" and ".." not in parts
        owners[p] = parts[1] if inside else None
    ids = sorted({o for o in owners.values() if o})
    expected = Path(submission_dir).name if submission_dir is not None else ids[0] if len(ids) == 1 else None
    problems = []
    for p, owner in owners.items():
        if owner is None:
            problems.append(_problem("error", "scope.outside_submission", p, "is outside submissions/<id>/; a submission "
                                     "pull request changes only its own folder",
                                     "move this change to its own pull request (results/ is written by the evaluator)"))
        elif expected is None:
            problems.append(_problem("error", "scope.multiple_submissions", p, f"is in submission {owner}, one of "
                                     f"{len(ids)} this pull request changes ({', '.join(ids)})",
                                     "open one pull request per submission"))
        elif owner != expected:
            problems.append(_problem("error", "scope.other_submission", p, f"is in submission {owner}, not {expected}",
                                     f"change only submissions/{expected}/ in this pull request"))
    if not paths:
        problems.append(_problem("warning", "scope.empty", "(changed files)", "the pull request changes no files",
                                 "check the list of changed files given to --changed-files"))
    return Report(expected or "", problems, {"changed_files": len(paths)})
