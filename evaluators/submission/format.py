"""The submission format: ``submission.yaml``, ``metadata.jsonl`` and the images.

A submission is a folder ``submissions/<org>__<model>[__<tag>]/`` (see ``submissions/README.md``):

* ``submission.yaml``: who made the images, with which model and settings, from which prompt set and
  dataset revision, and where the images are (:data:`FIELDS` lists every field);
* ``metadata.jsonl``: one line per image (:data:`METADATA_FIELDS`); prompts are never parsed from file
  names and images per prompt are never inferred from file counts. A model that refused a prompt (a closed
  API's safety filter) declares it with a line ``{"prompt_id", "sample_idx", "refused": true, "reason"?}`` and no
  file (:data:`REFUSAL_FORBIDS`): coverage counts the sample as refused, not missing;
* the images, in ``images/`` or in a Hub dataset pinned at a revision (``hf://datasets/ORG/REPO@REV``).

Every stage reads the two files through :func:`read_spec` and :func:`read_metadata` (``validate`` through
the same YAML loader and line reader, with a problem report instead of an exception), so what validate
accepts, evaluate and the site read the same way: ``metadata.jsonl`` is split on ``\n`` only (a U+2028 inside
a JSON string is not a line break), and both files hold JSON values only (no YAML dates, sets, binary,
non-string keys; no NaN or infinity; integers within 64 bits).
"""

from __future__ import annotations

import copy
import datetime
import hashlib
import json
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from cultureboard.atomic import atomic_write_text
from cultureboard.errors import CultureboardError
from cultureboard.hub import OFFICIAL_DATASET
from cultureboard.naming import slug

SUBMISSION_YAML = "submission.yaml"
METADATA = "metadata.jsonl"
IMAGES = "images"
FORMAT_VERSION = 1
#: The longest submission id, in characters (ids are ASCII): every name derived from it must fit the 255-byte
#: file-name limit with room to spare: ``.<id>.shards.tmp-XXXXXXXX``, ``<id>.shards``, ``.<id>.old-<pid>``,
#: lock files, ``<id>.html``, and the same names under the site's ``model/`` and ``thumbs/``.
MAX_SUBMISSION_ID = 128
#: The longest metadata.jsonl line, in bytes (a line is one image's few fields).
MAX_LINE_BYTES = 16 * 2**10
_INT64 = 2**63
#: The control submissions `cultureboard make-control` makes (:mod:`.controls`): shown marked, never ranked.
CONTROL_KINDS = ("reference-photos", "text-only", "category-images", "unedited", "copied-references",
                 "written-prompt")


#: The licence ids ``model.license`` takes (any case): the Hugging Face Hub's licence identifiers (mostly SPDX ids),
#: ``proprietary`` for a closed model's terms, and ``unknown``; ``other`` (with a link) names any other licence.
LICENSES = (
    "apache-2.0", "mit", "openrail", "openrail++", "creativeml-openrail-m", "bigscience-openrail-m",
    "bigscience-bloom-rail-1.0", "bigcode-openrail-m", "proprietary", "other", "unknown", "cc0-1.0", "cc-by-2.0",
    "cc-by-2.5", "cc-by-3.0", "cc-by-4.0", "cc-by-sa-3.0", "cc-by-sa-4.0", "cc-by-nc-2.0", "cc-by-nc-3.0",
    "cc-by-nc-4.0", "cc-by-nd-4.0", "cc-by-nc-nd-3.0", "cc-by-nc-nd-4.0", "cc-by-nc-sa-2.0", "cc-by-nc-sa-3.0",
    "cc-by-nc-sa-4.0", "afl-3.0", "artistic-2.0", "bsl-1.0", "bsd", "bsd-2-clause", "bsd-3-clause",
    "bsd-3-clause-clear", "c-uda", "cdla-sharing-1.0", "cdla-permissive-1.0", "cdla-permissive-2.0", "wtfpl",
    "ecl-2.0", "epl-1.0", "epl-2.0", "etalab-2.0", "eupl-1.1", "agpl-3.0", "gfdl", "gpl", "gpl-2.0", "gpl-3.0",
    "lgpl", "lgpl-2.1", "lgpl-3.0", "isc", "lppl-1.3c", "ms-pl", "apple-ascl", "mpl-2.0", "odc-by", "odbl",
    "osl-3.0", "postgresql", "ofl-1.1", "ncsa", "unlicense", "zlib", "pddl", "lgpl-lr", "deepfloyd-if-license",
    "llama2", "llama3", "llama3.1", "llama3.2", "llama3.3", "gemma", "flux-1-dev-non-commercial-license",
    "stabilityai-ai-community", "sd3-community-license",
)


@dataclass(frozen=True)
class Field:
    path: str  # dotted path in submission.yaml
    type: type | tuple[type, ...]
    required: bool
    help: str
    choices: tuple[str, ...] = ()
    nullable: bool = False  # required key whose value may be null ("unknown"), e.g. steps of a closed API
    #: numbers: the smallest and largest value allowed (None: no bound); ``above`` excludes the smallest itself
    minimum: float | None = None
    maximum: float | None = None
    above: bool = False

    def in_range(self, value: float) -> bool:
        """Whether a number lies in the field's range: minimum <= value (minimum < value when ``above``)
        and value <= maximum."""
        low_ok = self.minimum is None or (value > self.minimum if self.above else value >= self.minimum)
        return low_ok and (self.maximum is None or value <= self.maximum)

    def range_text(self) -> str:
        """The range in words, e.g. "above 0 and at most 1"."""
        parts = [] if self.minimum is None else [f"{'above' if self.above else 'at least'} {self.minimum:g}"]
        parts += [] if self.maximum is None else [f"at most {self.maximum:g}"]
        return " and ".join(parts) or "any number"


FIELDS: tuple[Field, ...] = (
    Field("format_version", int, True, f"submission format version; currently {FORMAT_VERSION}"),
    Field("organization", str, True, "the team or company submitting; first part of the folder name"),
    Field("tag", str, False, "optional variant tag; last part of the folder name (e.g. 'fp16-30steps')"),
    Field("control", str, False, "only for control rows made by `cultureboard control`: shown marked, never ranked",
          CONTROL_KINDS),
    Field("contact", str, True, "a name and e-mail address or a GitHub handle"),
    Field("date", str, True, "when the images were generated, YYYY-MM-DD"),
    Field("model.name", str, True, "short model name; second part of the folder name"),
    Field("model.id", str, True, "Hub model id (open weights) or the API's model name (closed)"),
    Field("model.revision", str, True, "Hub commit hash, or the API version / date for closed models"),
    Field("model.license", str, True, "the model's licence id (see LICENSES), e.g. apache-2.0, openrail++, proprietary"),
    Field("model.weights", str, True, "whether the weights are public", ("open", "closed")),
    Field("model.links", list, False, "links to the model card, paper or API documentation"),
    Field("model.training_data", str, False, "what the model was trained on (used for scorer-entanglement badges)"),
    Field("model.release_date", str, False, "when the model was first released, YYYY-MM-DD (the boards' date filter)"),
    Field("model.parameters", (int, float), False, "the model's size in parameters, e.g. 2.6e+9 (the boards' size "
          "filter)", minimum=0, above=True),
    Field("generation.pipeline", str, True, "diffusers pipeline class, or 'api' for closed models"),
    Field("generation.scheduler", str, True, "scheduler class", nullable=True),
    Field("generation.steps", int, True, "denoising steps", nullable=True, minimum=1),
    Field("generation.guidance_scale", (int, float), True, "classifier-free guidance scale", nullable=True),
    Field("generation.width", int, True, "image width in pixels", minimum=1),
    Field("generation.height", int, True, "image height in pixels", minimum=1),
    Field("generation.negative_prompt", bool, True, "whether the prompt set's negative prompts were used"),
    Field("generation.precision", str, True, "weights dtype, e.g. fp16, bf16, fp32", nullable=True),
    Field("generation.i2i_pipeline", str, False, "pipeline used for image-to-image / edit steps (ecb chains)"),
    Field("generation.i2i_strength", (int, float), False, "img2img strength for edit steps", minimum=0, maximum=1,
          above=True),
    Field("generation.extra", dict, False, "any other setting, as a mapping"),
    Field("seeds.scheme", str, True, "'prompt-set': image k of a prompt uses the prompt set's seeds[k]", ("prompt-set",)),
    Field("prompt_set.name", str, True, "the prompt set's config name, e.g. cube-awareness"),
    Field("prompt_set.dataset", str, True, f"the dataset: the official Hub id {OFFICIAL_DATASET}, or a local folder's "
          "name (validate warns)"),
    Field("prompt_set.revision", str, True, "the dataset revision generated from: Hub commit or sha256: fingerprint"),
    Field("images.location", str, True, "'images' (a folder in the submission) or hf://datasets/ORG/REPO@REVISION"),
    Field("supersedes.submission", str, False, "the submission folder this one replaces: the same model version and "
          "prompt set (its row stays on the site, marked superseded, never ranked)"),
    Field("supersedes.reason", str, False, "why it is replaced (e.g. 'regenerated with the corrected scheduler')"),
)


@dataclass(frozen=True)
class MetaField:
    name: str
    type: type | tuple[type, ...]
    required: bool
    help: str


METADATA_FIELDS: tuple[MetaField, ...] = (
    MetaField("file_name", str, True, "image path relative to the submission folder (or to the Hub repo root)"),
    MetaField("prompt_id", str, True, "the prompt set's prompt_id"),
    MetaField("sample_idx", int, True, "0-based index of the image among the prompt's images_per_prompt"),
    MetaField("seed", int, True, "the seed used: the prompt set's seeds[sample_idx]"),
    MetaField("sha256", str, True, "hex sha256 of the image file"),
    MetaField("edit_step", int, False, "I2I chains: the edit step (1..5); absent or null for text-to-image"),
    MetaField("source_file", str, False, "I2I chains: file_name of the image this step edited"),
    MetaField("refused", bool, False, "true on a declared refusal: the model gave no image for this prompt and sample"),
    MetaField("reason", str, False, "declared refusals: why (e.g. the API's message)"),
)
#: Fields a declared refusal line lacks (there is no image); ``seed`` is optional on it.
REFUSAL_FORBIDS = ("file_name", "sha256", "source_file")


def is_refusal(row: dict) -> bool:
    """Whether a metadata line declares a refusal (``"refused": true``) instead of listing an image."""
    return row.get("refused") is True


def get(spec: dict, path: str, default: Any = None) -> Any:
    """The value at a dotted path of a parsed submission.yaml, or ``default``."""
    node: Any = spec
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def submission_id(spec: dict) -> str:
    """``<org>__<model>[__<tag>]``: the folder name a submission must have."""
    parts = [get(spec, "organization"), get(spec, "model.name"), get(spec, "tag")]
    return "__".join(slug(str(p)) for p in parts if p)


#: submission.yaml fields that every submission of one model must agree on (``validate``): its identity, weights,
#: licence and declared training data; the site shows them once, on the model's page.
MODEL_IDENTITY = ("model.id", "model.revision", "model.weights", "model.license", "model.training_data",
                  "model.release_date", "model.parameters")


def model_key(spec: dict) -> str:
    """``<org>__<model>``: the model a submission is of, shared by its submissions for other prompt sets (and
    its tagged variants); the folder name without its tag."""
    return "__".join(slug(str(p)) for p in (get(spec, "organization"), get(spec, "model.name")) if p)


def parse_submission_id(name: str) -> dict | None:
    """``{"organization", "model", "tag"}`` of a folder named ``<org>__<model>[__<tag>]`` (each part a slug:
    ``submission_id`` of the result is ``name`` again; tag None when absent), or None for any other name."""
    parts = name.split("__")
    if len(parts) not in (2, 3) or any(not p or slug(p) != p for p in parts):
        return None
    return {"organization": parts[0], "model": parts[1], "tag": parts[2] if len(parts) == 3 else None}


def submission_id_problem(sid: str) -> str | None:
    """Why ``sid`` cannot name a submission (too long for the names derived from it), or None."""
    if len(sid) > MAX_SUBMISSION_ID:
        return f"the submission id {sid[:40]}... is {len(sid)} characters long; the limit is {MAX_SUBMISSION_ID}"
    return None


def json_problems(value: Any, path: str = "") -> list[tuple[str, str]]:
    """(dotted path, what it is) of every part of ``value`` that JSON cannot hold as it is: dates and times,
    sets, binary data, tuples (YAML ``!!omap`` / ``!!pairs``), non-string keys, NaN or infinity, integers
    beyond 64 bits. Shared or recursive containers are visited once."""
    found: list[tuple[str, str]] = []
    seen: set[int] = set()
    stack = [(value, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, (dict, list)):
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, dict):
                for key, child in node.items():
                    child_path = f"{where}.{key}" if where else str(key)
                    if not isinstance(key, str):
                        found.append((child_path, f"has a key of type {type(key).__name__}, not a string"))
                    stack.append((child, child_path))
            else:
                stack += [(child, f"{where}[{i}]") for i, child in enumerate(node)]
        elif isinstance(node, bool) or node is None or isinstance(node, str):
            continue
        elif isinstance(node, int):
            if not -_INT64 <= node < _INT64:
                found.append((where, f"is an integer of {len(str(abs(node)))} digits, beyond 64 bits"))
        elif isinstance(node, float):
            if not math.isfinite(node):
                found.append((where, f"is {node}, not a finite number"))
        else:
            kind = {datetime.datetime: "a date and time", datetime.date: "a date", set: "a set", bytes: "binary data",
                    tuple: "a list of pairs (!!omap / !!pairs)"}.get(type(node), f"a {type(node).__name__}")
            found.append((where, f"is {kind}, which JSON cannot hold"))
    return sorted(found)


class YamlLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing aliases (``*name``): the building block of YAML bombs and cycles; a
    value it cannot convert (``2025-02-30``, ``!!int 0x_``) is a YAML error with its line, as a syntax error is."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(None, None, f"uses the alias *{event.anchor}", event.start_mark)
        return super().compose_node(parent, index)

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as exc:  # PyYAML's converters raise these for some malformed scalars
            raise yaml.constructor.ConstructorError(None, None, f"has a value that cannot be read ({exc})",
                                                    node.start_mark) from None


def check_json_values(spec: dict, source: str | Path) -> None:
    """A :class:`CultureboardError` naming ``source`` and the first value of ``spec`` JSON cannot hold (see
    :func:`json_problems`), if any."""
    bad = json_problems(spec)
    if bad:
        where, what = bad[0]
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise CultureboardError(source, f"{where} {what}{more}", "quote dates and other values as strings ('2025-01-31'), "
                                "use string keys and finite numbers")


def read_spec(path: str | Path, *, partial: bool = False) -> dict:
    """``submission.yaml`` as a dict of JSON values; a :class:`CultureboardError` naming the file, line and
    problem otherwise (unreadable, not UTF-8, bad YAML, aliases, not a mapping, a value JSON cannot hold).
    ``partial``: a user's partial spec for ``package``, whose unquoted top-level ``date`` (which YAML reads
    as a date) becomes its ``YYYY-MM-DD`` text."""
    path = Path(path)
    fix = "correct it (see submissions/README.md), then run `cultureboard validate` on the submission"
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CultureboardError(path, f"cannot be read ({exc.strerror})", "check that the file exists and is readable") from None
    key = (hashlib.sha256(data).digest(), partial)
    if key not in _SPECS:
        if len(_SPECS) >= _SPECS_KEPT:
            _SPECS.clear()
        _SPECS[key] = _parse_spec(path, data, partial, fix)
    return copy.deepcopy(_SPECS[key])


#: The specs read lately (:func:`read_spec`), by the sha256 of the file's bytes and ``partial``: the validator reads
#: every sibling submission's spec for each submission it checks, so a folder of n submissions of one model reads
#: n^2 files; parsing (pure-Python YAML) is the cost, and the same bytes give the same spec. Cleared when full.
_SPECS: dict[tuple[bytes, bool], dict] = {}
_SPECS_KEPT = 4096


def _parse_spec(path: Path, data: bytes, partial: bool, fix: str) -> dict:
    """:func:`read_spec` of the bytes ``data`` read from ``path``."""
    try:
        spec = yaml.load(data.decode("utf-8"), Loader=YamlLoader)
    except UnicodeDecodeError as exc:
        raise CultureboardError(path, f"is not UTF-8 text (byte {exc.start})", "save it as UTF-8") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise CultureboardError(where, f"is not valid YAML ({getattr(exc, 'problem', None) or exc.__class__.__name__})",
                                fix) from None
    except RecursionError:
        raise CultureboardError(path, "nests too deeply", fix) from None
    if not isinstance(spec, dict):
        raise CultureboardError(path, "is not a YAML mapping of submission.yaml fields",
                                "write it as `organization: ...`, `model: {name: ...}` (see submissions/README.md)")
    if partial and type(spec.get("date")) is datetime.date:
        spec["date"] = spec["date"].isoformat()
    check_json_values(spec, path)
    return spec


class DuplicateKeyError(ValueError):
    """A JSON object with a key given twice."""


class NotFiniteError(ValueError):
    """A JSON line with NaN or Infinity (which Python's json accepts and JSON does not)."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        keys = [k for k, _ in pairs]
        raise DuplicateKeyError(next(k for k in keys if keys.count(k) > 1))
    return out


def _not_finite(name: str) -> None:
    raise NotFiniteError(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999
        raise NotFiniteError(text)
    return value


#: The decoder of :func:`parse_metadata_line`, made once (``json.loads`` with these options makes one a call).
_LINE_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_constant=_not_finite, parse_float=_finite_float)


def parse_metadata_line(raw: bytes) -> Any:
    """One metadata.jsonl line as strict JSON: UTF-8, no repeated keys, no NaN / Infinity (nor 1e999). Raises
    UnicodeDecodeError, json.JSONDecodeError, :class:`DuplicateKeyError`, :class:`NotFiniteError`, or
    ValueError / RecursionError (integers too long to convert, nesting too deep)."""
    text = raw.decode("utf-8")
    if text.startswith("\ufeff"):  # refused with json.loads's own words (the decoder alone says "Expecting value")
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _LINE_DECODER.decode(text)


def metadata_lines(fh: BinaryIO, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[tuple[int, bytes | None, int]]:
    """(line number, bytes without the ``\n``, length) of every line of an open metadata.jsonl, split on
    ``\n`` only; a line longer than ``max_line_bytes`` comes as (n, None, length), its bytes skipped,
    never held (so memory stays bounded whatever the file holds)."""
    n = 0
    while raw := fh.readline(max_line_bytes + 2):
        n += 1
        line = raw[:-1] if raw.endswith(b"\n") else raw
        if len(line) <= max_line_bytes:
            yield n, line, len(line)
            continue
        length = len(line)
        while not raw.endswith(b"\n") and (raw := fh.readline(2**16)):
            length += len(raw) - raw.endswith(b"\n")
        yield n, None, length


def read_metadata(path: str | Path, max_line_bytes: int = MAX_LINE_BYTES) -> list[dict]:
    """The rows of ``metadata.jsonl`` (blank lines skipped), read as validate reads them; a
    :class:`CultureboardError` naming ``FILE:LINE`` on the first line that is not a strict JSON object."""
    path = Path(path)
    fix = f"run `cultureboard validate {path.parent}` and fix what it reports"
    rows = []
    try:
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as fh:
            for n, line, length in metadata_lines(fh, max_line_bytes):
                if line is None:
                    raise CultureboardError(f"{path}:{n}", f"is {length:,} bytes; a line may have {max_line_bytes:,}", fix)
                if not line.strip():
                    continue
                try:
                    row = parse_metadata_line(line)
                except (ValueError, RecursionError) as exc:
                    raise CultureboardError(f"{path}:{n}", f"is not a strict JSON line ({exc.__class__.__name__}: "
                                            f"{str(exc)[:80]})", fix) from None
                if not isinstance(row, dict):
                    raise CultureboardError(f"{path}:{n}", "is not a JSON object", fix)
                rows.append(row)
    except OSError as exc:
        raise CultureboardError(path, f"cannot be read ({exc.strerror})", "check that the file exists and is readable") from None
    return rows


_HF = re.compile(r"^hf://datasets/(?P<repo>[\w.-]+/[\w.-]+)@(?P<revision>[\w.-]+)$")


@dataclass(frozen=True)
class ImageLocation:
    kind: str  # "local" or "hub"
    path: str  # local folder (relative to the submission) or Hub repo id
    revision: str | None = None


def parse_location(value: str) -> ImageLocation | None:
    """``images`` (or another relative folder) or ``hf://datasets/ORG/REPO@REVISION``; None if neither."""
    if value.startswith("hf://"):
        m = _HF.match(value)
        return ImageLocation("hub", m["repo"], m["revision"]) if m else None
    p = Path(value)
    if value and not p.is_absolute() and ".." not in p.parts:
        return ImageLocation("local", p.as_posix())
    return None


#: The overall time limit of downloading a submission's Hub images (one download a run).
HUB_SECONDS = 3 * 3600.0


def fetch_hub_images(location: ImageLocation, files: list[str], cache_dir: str | Path | None = None) -> Path:
    """Download ``files`` from the Hub dataset at the pinned revision, within :data:`HUB_SECONDS`; returns the
    local root."""
    from huggingface_hub import snapshot_download

    from cultureboard.http import finish_within

    try:
        return Path(finish_within(HUB_SECONDS, lambda: snapshot_download(
            location.path, repo_type="dataset", revision=location.revision, allow_patterns=files, cache_dir=cache_dir)))
    except Exception as exc:  # offline mode, missing repo or revision, network, a download past HUB_SECONDS
        raise CultureboardError(
            f"hf://datasets/{location.path}@{location.revision}", f"cannot be fetched ({exc.__class__.__name__}: {exc})",
            "check the repository and revision exist and are public, and that this machine can reach the Hub",
        ) from None


def write_submission(folder: str | Path, spec: dict, rows: list[dict]) -> None:
    """Write ``submission.yaml`` and ``metadata.jsonl`` (each atomically); images are already in place."""
    folder = Path(folder)
    atomic_write_text(folder / SUBMISSION_YAML, yaml.safe_dump(spec, sort_keys=False, allow_unicode=True))
    lines = (json.dumps({k: v for k, v in r.items() if v is not None}, ensure_ascii=False) for r in rows)
    atomic_write_text(folder / METADATA, "".join(line + "\n" for line in lines))
