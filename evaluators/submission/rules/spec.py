"""Rules on ``submission.yaml``, read once into the typed record :class:`Spec`.

Safe YAML without aliases, JSON values only anywhere (no dates, sets, binary, non-string keys, NaN or infinity:
evaluate and the site read the file as JSON data), the fields of :data:`~..format.FIELDS` (required, types,
choices and licences with the allowed values named, null), keys: a near miss of a field's name (an edit or two
away, a British spelling, ``model_name`` for ``model.name``) is an error naming the field meant, another unknown
key a warning; format version, date (real, not in the future), folder name and its length
(:data:`~..format.MAX_SUBMISSION_ID`), image location, revision format, a dataset pin other than the official Hub
dataset at a commit (warning); and the model's other submissions: a sibling folder of the same ``<org>__<model>``
gives the same :data:`~..format.MODEL_IDENTITY` fields.
"""

from __future__ import annotations

import datetime
import math
import os
import re
import stat
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from cultureboard.dataset_folder import DidYouMean
from cultureboard.errors import CultureboardError
from cultureboard.hub import DOWNLOAD_COMMAND, OFFICIAL_DATASET

from ..format import (
    FIELDS,
    FORMAT_VERSION,
    LICENSES,
    MODEL_IDENTITY,
    SUBMISSION_YAML,
    Field,
    ImageLocation,
    YamlLoader,
    get,
    json_problems,
    model_key,
    parse_location,
    parse_submission_id,
    read_spec,
    submission_id,
    submission_id_problem,
)
from .report import Run, remake, show, type_name, type_ok

CODES: dict[str, str] = {
    "schema.yaml_syntax": "submission.yaml is not UTF-8 YAML",
    "schema.not_mapping": "submission.yaml is not a mapping of fields",
    "schema.yaml_alias": "submission.yaml uses aliases (*name), the building block of YAML bombs and cycles",
    "schema.not_json": "a value JSON cannot hold: a date or time, set, binary, non-string key, NaN, infinity, integer beyond 64 bits",
    "schema.duplicate_key": "a key repeated in one mapping of submission.yaml",
    "schema.missing_field": "a required field is missing or null",
    "schema.wrong_type": "a field (or section) has the wrong type",
    "schema.bad_choice": "a field's value is not one of its choices",
    "schema.bad_license": "model.license is a near miss of a licence id (another case, spacing or spelling)",
    "schema.unknown_license": "model.license is not a licence id the leaderboard knows (warning)",
    "schema.out_of_range": "a number outside its field's range (a width, height or steps below 1, an i2i_strength outside (0, 1])",
    "schema.misspelt_field": "a key that is a near miss of a field's name (did you mean ...)",
    "schema.unknown_field": "a field that the format does not define, far from any (warning)",
    "schema.format_version": "format_version is not the current version",
    "schema.bad_date": "date or model.release_date is not a valid YYYY-MM-DD date, or is in the future",
    "schema.folder_name": "the folder name is not <org>__<model>[__<tag>] of the yaml",
    "schema.id_too_long": "the submission id <org>__<model>[__<tag>] is longer than its limit",
    "schema.bad_location": "images.location is neither a relative folder nor hf://datasets/ORG/REPO@REV",
    "schema.bad_revision": "prompt_set.revision is neither a 40-hex Hub commit nor sha256:<hex>",
    "schema.model_mismatch": "a sibling submission of the same <org>__<model> gives another model id, revision, weights, licence, training data, release date or size",
    "schema.unofficial_dataset": "prompt_set pins a local dataset folder or another Hub dataset, not the official one at a commit (warning)",
}

_MISSING = object()
_HEX40 = re.compile(r"[0-9a-f]{40}")
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")  # as CI reads prompt_set.dataset
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
SECTIONS = sorted({f.path.split(".")[0] for f in FIELDS if "." in f.path})
_KNOWN = {f.path for f in FIELDS} | set(SECTIONS)
_FREE = {f.path for f in FIELDS if f.type is dict}  # mappings whose keys are the submitter's
#: British spellings (and other variants) of the words of field names, and the one the format uses.
_SPELLINGS = (("isation", "ization"), ("ise", "ize"), ("licence", "license"), ("colour", "color"), ("centre", "center"),
              ("behaviour", "behavior"), ("grey", "gray"), ("-", "_"), (" ", "_"))


# ----------------------------------------------------------------------------------- the typed record

@dataclass(frozen=True)
class Model:
    name: str | None = None
    id: str | None = None
    revision: str | None = None
    license: str | None = None
    weights: str | None = None
    links: list | None = None
    training_data: str | None = None
    release_date: str | None = None
    parameters: float | None = None


@dataclass(frozen=True)
class Generation:
    pipeline: str | None = None
    scheduler: str | None = None
    steps: int | None = None
    guidance_scale: float | None = None
    width: int | None = None
    height: int | None = None
    negative_prompt: bool | None = None
    precision: str | None = None
    i2i_pipeline: str | None = None
    i2i_strength: float | None = None
    extra: dict | None = None


@dataclass(frozen=True)
class Seeds:
    scheme: str | None = None


@dataclass(frozen=True)
class PromptSetPin:
    name: str | None = None
    dataset: str | None = None
    revision: str | None = None


@dataclass(frozen=True)
class Images:
    location: str | None = None


@dataclass(frozen=True)
class Supersedes:
    submission: str | None = None
    reason: str | None = None


_SECTION_TYPES = {"model": Model, "generation": Generation, "seeds": Seeds, "prompt_set": PromptSetPin, "images": Images,
                  "supersedes": Supersedes}


@dataclass(frozen=True)
class Spec:
    """``submission.yaml`` read once: every field of :data:`~..format.FIELDS` as a typed attribute (``spec.model.weights``,
    ``spec.generation.width``), None where it is absent, null or of the wrong type (reported by :func:`check`);
    ``raw`` is the parsed mapping."""

    raw: dict
    format_version: int | None = None
    organization: str | None = None
    tag: str | None = None
    control: str | None = None
    contact: str | None = None
    date: str | None = None
    model: Model = Model()
    generation: Generation = Generation()
    seeds: Seeds = Seeds()
    prompt_set: PromptSetPin = PromptSetPin()
    images: Images = Images()
    supersedes: Supersedes = Supersedes()

    @classmethod
    def from_mapping(cls, raw: dict) -> Spec:
        values: dict[str, Any] = {}
        sections: dict[str, dict] = {name: {} for name in _SECTION_TYPES}
        for f in FIELDS:
            value = get(raw, f.path)
            typed = value if value is not None and type_ok(value, f.type) else None
            section, _, name = f.path.rpartition(".")
            (sections[section] if section else values)[name] = typed
        return cls(raw, **values, **{name: kind(**sections[name]) for name, kind in _SECTION_TYPES.items()})

    @property
    def id(self) -> str | None:
        """``<org>__<model>[__<tag>]``, the folder's name, when organization and model.name are strings."""
        return submission_id(self.raw) if self.organization is not None and self.model.name is not None else None

    @property
    def model_key(self) -> str:
        return model_key(self.raw)

    @property
    def size(self) -> tuple[int, int] | None:
        """(generation.width, generation.height), the size every image must have, when both are positive."""
        w, h = self.generation.width, self.generation.height
        return (w, h) if w is not None and h is not None and w > 0 and h > 0 else None

    @property
    def location(self) -> ImageLocation | None:
        return parse_location(self.images.location) if self.images.location is not None else None


def _record_matches_fields() -> None:
    """Every field of FIELDS has its attribute in the record (checked at import: a field added to the format
    without one would be silently dropped)."""
    paths = {f.name for f in fields(Spec) if f.name != "raw" and f.name not in _SECTION_TYPES}
    paths |= {f"{s}.{f.name}" for s, kind in _SECTION_TYPES.items() for f in fields(kind)}
    assert paths == {f.path for f in FIELDS}, sorted(paths ^ {f.path for f in FIELDS})


_record_matches_fields()


# ----------------------------------------------------------------------------------- reading

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


def check(run: Run) -> None:
    """Read submission.yaml (its lines into ``run.lines``), check it, and set ``run.spec``."""
    from .paths import open_listed

    fh = open_listed(run, SUBMISSION_YAML, run.limits.max_yaml_bytes)
    if fh is None:
        return
    try:
        with fh:
            data = fh.read(run.limits.max_yaml_bytes + 1)
    except OSError as exc:
        run.error("file.unreadable", SUBMISSION_YAML, f"cannot be read ({exc.strerror})", "check its permissions")
        return
    try:
        loader = YamlLoader(data.decode("utf-8"))
        try:
            node = loader.get_single_node()
            raw = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except UnicodeDecodeError as exc:
        run.error("schema.yaml_syntax", SUBMISSION_YAML, f"is not UTF-8 text (byte {exc.start})", "save it as UTF-8")
        return
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{SUBMISSION_YAML}:{mark.line + 1}" if mark else SUBMISSION_YAML
        if str(getattr(exc, "problem", "")).startswith("uses the alias"):
            run.error("schema.yaml_alias", where, f"{exc.problem} (YAML aliases are not allowed)",
                      "write every value out in full")
            return
        detail = getattr(exc, "problem", None) or str(exc)
        column = f" at column {mark.column + 1}" if mark else ""
        run.error("schema.yaml_syntax", where, f"is not valid YAML: {detail}{column}",
                  "fix the YAML there (indentation, quotes, colons; no !! tags); a YAML linter shows the spot")
        return
    except RecursionError:
        run.error("schema.yaml_syntax", SUBMISSION_YAML, "nests too deeply", "write plain fields as in submissions/README.md")
        return
    if not isinstance(raw, dict):
        what = "empty" if raw is None else f"a {type(raw).__name__}"
        run.error("schema.not_mapping", SUBMISSION_YAML, f"is {what}, not a mapping of fields",
                  "write `field: value` lines as in submissions/README.md")
        return
    run.lines, dupes = _yaml_lines(node)
    for path, line in dupes:
        run.error("schema.duplicate_key", f"{SUBMISSION_YAML}:{line}", f"{path} is given twice", "keep one of them")
    check_mapping(run, raw)


def check_mapping(run: Run, raw: dict) -> None:
    """Every rule on a parsed submission.yaml; sets ``run.spec``."""
    spec = Spec.from_mapping(raw)
    _check_fields(run, raw)
    _check_keys(run, raw)
    _check_values(run, spec)
    _check_json(run, raw)
    _check_text(run, raw, "", set())
    run.spec = spec


# ----------------------------------------------------------------------------------- fields and values

def _check_fields(run: Run, raw: dict) -> None:
    bad_sections = set()
    for section in SECTIONS:
        if section in raw and not isinstance(raw[section], dict):
            bad_sections.add(section)
            run.error("schema.wrong_type", run.at(section), f"{section} is {show(raw[section])}, not a mapping",
                      remake(f"write {section}: followed by indented `field: value` lines in the spec"))
    for f in FIELDS:
        if f.path.split(".")[0] in bad_sections:
            continue
        value = get(raw, f.path, _MISSING)
        if value is _MISSING or (value is None and not f.nullable):
            if f.required:
                state = "is missing" if value is _MISSING else "is null"
                run.error("schema.missing_field", run.at(f.path), f"{f.path} {state} ({f.help})",
                          remake(f"add {f.path}: {type_name(f.type)}" + (", or null if unknown" if f.nullable else "")
                                 + " to the spec"))
        elif value is not None and not type_ok(value, f.type):
            fix = f"make {f.path} {type_name(f.type)} in the spec"
            if isinstance(value, datetime.date):
                fix = f"quote it in the spec: {f.path.split('.')[-1]}: '{value.isoformat()}'"
            elif isinstance(value, str) and _number_text(value) is not None:
                fix = (f"write it as a YAML number in the spec, with a sign in the exponent or in full: "
                       f"{f.path.split('.')[-1]}: {_number_text(value)} (YAML reads {value} as text)")
            run.error("schema.wrong_type", run.at(f.path), f"{f.path} is {show(value)}, not {type_name(f.type)}", remake(fix))
        elif f.choices and value not in f.choices:
            _choice(run, f, value)
        elif value is not None and not f.in_range(value):
            run.error("schema.out_of_range", run.at(f.path), f"{f.path} is {show(value)}, not {f.range_text()}",
                      remake(f"write the value used, {f.range_text()}, in the spec"))
        elif f.path == "model.license":
            _license(run, f, value)


def _choice(run: Run, f: Field, value: str) -> None:
    guess = DidYouMean(f.choices)(value)
    run.error("schema.bad_choice", run.at(f.path), f"{f.path} is {show(value)}, not one of {', '.join(f.choices)}{guess}",
              remake(f"write {f.path}: one of {', '.join(f.choices)} in the spec"))


def _normal_license(text: str) -> str:
    """A licence name as an id would spell it: lower case, words joined by '-', 'license' and 'v' dropped."""
    words = re.findall(r"[a-z0-9+.]+", text.lower().replace("licence", "license"))
    words = [w.removeprefix("v") if re.fullmatch(r"v\d[\d.]*", w) else w for w in words if w != "license"]
    return "-".join(words)


def _license(run: Run, f: Field, value: str) -> None:
    """A licence id of :data:`~..format.LICENSES` (any case); a near miss is an error naming the id, anything else
    a warning (a licence of its own: ``other`` and a link say it better)."""
    if value.lower() in {lic.lower() for lic in LICENSES}:
        return
    normal = _normal_license(value).replace("-", "")
    near = next((lic for lic in LICENSES if _normal_license(lic).replace("-", "") == normal), None)
    near = near or next(iter(DidYouMean(LICENSES).names(_normal_license(value))), None)
    where, shown = run.at(f.path), ", ".join(LICENSES[:12])
    if near:
        run.error("schema.bad_license", where, f"{f.path} is {show(value)}, not a licence id (did you mean {near}?)",
                  remake(f"write {f.path}: {near} in the spec"))
    else:
        run.warn("schema.unknown_license", where, f"{f.path} is {show(value)}, not one of the licence ids the site "
                 f"filters by ({shown}, ...; see submissions/README.md)",
                 remake(f"write one of them, or {f.path}: other with the licence's link in model.links, in the spec"))


def edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours, each 1."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[-1][-1]


def _american(key: str) -> str:
    key = key.lower()
    for british, american in _SPELLINGS:
        key = key.replace(british, american)
    return key


def near_miss(key: str, known: list[str]) -> str | None:
    """The known name ``key`` most likely misspells: the same in American spelling or with ``_`` for ``.``, else one
    edit away (two for names of 8 characters or more); None when none is that close."""
    spelled = _american(key)
    for name in known:
        if spelled in (_american(name), _american(name).replace(".", "_")):
            return name
    scored = sorted((edit_distance(spelled, _american(name)), name) for name in known)
    if scored and scored[0][0] <= (2 if len(key) >= 8 else 1):
        return scored[0][1]
    return None


def _check_keys(run: Run, raw: dict) -> None:
    """Keys the format does not define: a near miss of a field of the same mapping (or of a dotted path written
    as a top-level key) is an error naming it; another is a warning."""
    top = sorted({p.split(".")[0] for p in _KNOWN} | {f.path for f in FIELDS if "." in f.path})
    for key, value in raw.items():
        if key in SECTIONS and isinstance(value, dict):
            names = sorted(f.path.split(".", 1)[1] for f in FIELDS if f.path.startswith(f"{key}."))
            found = [(f"{key}.{k}", (m := near_miss(str(k), names)) and f"{key}.{m}") for k in value]
        else:
            found = [(str(key), near_miss(str(key), top))]
        for path, meant in found:
            if path in _KNOWN or any(path.startswith(free + ".") for free in _FREE):
                continue
            if meant:
                run.error("schema.misspelt_field", run.at(path), f"{path} is not a field of the format (did you mean "
                          f"{meant}?)", remake(f"rename {path} to {meant} in the spec"))
            else:
                run.warn("schema.unknown_field", run.at(path), f"{path} is not a field of the format (ignored)",
                         "check its spelling (submissions/README.md lists the fields); settings without a field go "
                         "under generation.extra")


def _check_values(run: Run, spec: Spec) -> None:
    if spec.format_version is not None and spec.format_version != FORMAT_VERSION:
        run.error("schema.format_version", run.at("format_version"), f"format_version is {spec.format_version}",
                  remake(f"use format_version: {FORMAT_VERSION} and the fields it defines"))
    if spec.date is not None:
        _check_date(run, "date", spec.date, "the generation date", "(or leave it out: package writes today's)")
    if spec.model.release_date is not None:
        _check_date(run, "model.release_date", spec.model.release_date, "the date the model was first released",
                    "(or leave it out: the boards' date filter then keeps the model only when no range is set)")
    if spec.id is not None:
        if too_long := submission_id_problem(spec.id):
            run.error("schema.id_too_long", run.at("organization"), too_long, remake(
                "shorten organization, model.name or tag in the spec: the id names folders and files of the results "
                "and the site"))
        if spec.id != run.name:
            run.error("schema.folder_name", SUBMISSION_YAML, f"the folder is named {show(run.name)}, but organization, "
                      f"model.name and tag make {show(spec.id)}",
                      f"name the folder submissions/{spec.id} (`cultureboard package --out submissions/{spec.id}`), "
                      "or correct organization, model.name and tag in the spec and make the folder again")
    location = spec.images.location
    if location is not None and spec.location is None:
        run.error("schema.bad_location", run.at("images.location"), f"images.location {show(location)} is not a "
                  "relative folder or hf://datasets/ORG/REPO@REVISION", "use `images` or hf://datasets/ORG/REPO@REVISION")
    revision = spec.prompt_set.revision
    if revision is not None and not (_HEX40.fullmatch(revision) or re.fullmatch(r"sha256:[0-9a-f]{64}", revision)):
        run.error("schema.bad_revision", run.at("prompt_set.revision"), f"prompt_set.revision {show(revision)} "
                  "is not a pinned revision", remake("make the folder from a dataset download at a commit (--dataset "
                                                     "of package or generate records it)"))
    _check_dataset_pin(run, spec.prompt_set.dataset, revision)


def _check_date(run: Run, path: str, date: str, what: str, otherwise: str) -> None:
    """``date`` (the field at ``path``: ``what`` it is) is a real YYYY-MM-DD date, not after tomorrow (UTC)."""
    try:
        ok = bool(_DATE.fullmatch(date)) and datetime.date.fromisoformat(date) is not None
    except ValueError:
        ok = False
    name = path.split(".")[-1]
    if not ok:
        run.error("schema.bad_date", run.at(path), f"{path} {show(date)} is not a YYYY-MM-DD date",
                  remake(f"write {what} as YYYY-MM-DD, e.g. {name}: '2025-01-31', in the spec {otherwise}"))
    elif datetime.date.fromisoformat(date) > datetime.datetime.now(datetime.UTC).date() + datetime.timedelta(days=1):
        run.error("schema.bad_date", run.at(path), f"{path} {date} is in the future",
                  remake(f"write {what} in the spec {otherwise}"))


def _number_text(value: str) -> str | None:
    """A number written as text that YAML does not read as a number (``2.6e9``: PyYAML's floats need a sign in the
    exponent), as YAML would read it (``2.6e+9``); None for any other text."""
    try:
        number = float(value)
    except ValueError:
        return None
    if not math.isfinite(number):
        return None
    mantissa, exponent = f"{number:.6e}".split("e")
    mantissa = mantissa.rstrip("0")
    return f"{mantissa}{'0' if mantissa.endswith('.') else ''}e{int(exponent):+d}"


def _check_dataset_pin(run: Run, dataset: Any, revision: Any) -> None:
    """A warning unless the submission pins the official Hub dataset at a commit (CI evaluates only that;
    it checks a local folder's pin against the shipped sample build)."""
    if dataset is None or revision is None:
        return  # reported with the fields
    fix = f"download the official dataset ({DOWNLOAD_COMMAND}) and run package or generate again with --dataset dataset"
    if not _HUB_ID.fullmatch(dataset):
        run.warn("schema.unofficial_dataset", run.at("prompt_set.dataset"), f"the submission pins the local "
                 f"dataset folder {show(dataset)}, not the official Hub dataset {OFFICIAL_DATASET} at a commit, "
                 "so the leaderboard cannot evaluate it", fix)
    elif not _HEX40.fullmatch(revision):
        run.warn("schema.unofficial_dataset", run.at("prompt_set.revision"), f"the submission pins {show(dataset)} "
                 f"by {show(revision)}, the fingerprint of a local folder, not a Hub commit, so the leaderboard "
                 "cannot evaluate it", fix)
    elif dataset != OFFICIAL_DATASET:
        run.warn("schema.unofficial_dataset", run.at("prompt_set.dataset"), f"the submission pins the Hub dataset "
                 f"{show(dataset)}, not the leaderboard's {OFFICIAL_DATASET}", fix)


def _check_json(run: Run, raw: dict) -> None:
    """Values JSON cannot hold, anywhere (a typed field of the wrong type is reported by _check_fields)."""
    typed = {f.path: f for f in FIELDS}
    for path, what in json_problems(raw):
        f = typed.get(path)
        if f is not None and not type_ok(get(raw, f.path), f.type):
            continue
        value = get(raw, path) if "[" not in path else None
        fix = (f"quote it: '{value.isoformat()}'" if isinstance(value, datetime.date)
               else "write it as a string (quoted), a finite number or a mapping with string keys")
        run.error("schema.not_json", run.at(path), f"{path} {what}", remake(fix + " in the spec"))


def _check_text(run: Run, node: Any, path: str, seen: set[int]) -> None:
    """Every string (keys too) of submission.yaml; shared or recursive YAML nodes are visited once."""
    if isinstance(node, str):
        limit = {"model.training_data": run.limits.max_training_data_chars}.get(
            path, run.limits.max_name_chars if path in _KNOWN else run.limits.max_text_chars)
        run.text(run.at(path), path or "a value", node, limit, multiline=path == "model.training_data")
    elif isinstance(node, (dict, list)) and id(node) not in seen:
        seen.add(id(node))
        items = node.items() if isinstance(node, dict) else ((f"[{i}]", v) for i, v in enumerate(node))
        for key, value in items:
            if isinstance(node, dict) and isinstance(key, str):
                run.text(run.at(path), f"key {show(key, 30)}", key, run.limits.max_name_chars)
            child = f"{path}{key}" if isinstance(node, list) else f"{path}.{key}" if path else str(key)
            _check_text(run, value, child, seen)


# ----------------------------------------------------------------------------------- the model's other submissions

def check_siblings(run: Run) -> None:
    """The submissions of the same model (:func:`~..format.model_key`) beside this one, for other prompt sets or
    as tagged variants, describe the same model: each field of :data:`MODEL_IDENTITY` equal in both. A sibling
    whose submission.yaml cannot be read is skipped (its own validation reports it); so are controls."""
    spec = run.spec
    if spec is None or spec.control is not None or not (key := spec.model_key):
        return
    parent = run.root.parent
    names = sorted(n for n in os.listdir(parent) if n.startswith(key)) if parent.is_dir() else []
    for sibling in (parent / n for n in names):  # a sibling's name is the model's key, with a tag or without
        other = _sibling_spec(sibling, run.name, key, run.limits.max_yaml_bytes)
        if other is None:
            continue
        for path in MODEL_IDENTITY:
            mine, theirs = get(spec.raw, path), get(other, path)
            if mine != theirs:
                run.error("schema.model_mismatch", run.at(path), f"{path} is {show(mine)} here but {show(theirs)} in "
                          f"{show(sibling.name)}, another submission of the model {key}",
                          f"make {path} the same in {run.name} and {sibling.name} (one model, several prompt sets); a "
                          "different model, revision or API version needs its own model.name")


def _sibling_spec(folder: Path, own: str, key: str, max_bytes: int) -> dict | None:
    """The submission.yaml of ``folder`` when it is another real submission folder of the model ``key`` and
    readable (a regular file within ``max_bytes``, valid YAML, not a control), else None."""
    named = parse_submission_id(folder.name)
    if (named is None or f"{named['organization']}__{named['model']}" != key or folder.name == own
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
