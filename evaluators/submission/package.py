"""``cultureboard package``: turn images made elsewhere (a closed API, another codebase) into a submission.

The user gives a folder of images with any names, a mapping file that says which prompt and sample each
image answers, and a partial ``submission.yaml`` (the spec). A prompt and sample the model refused (a closed
API's safety filter) is a mapping row with ``refused`` true, no ``file`` and an optional ``reason``: it becomes a
declared refusal line of ``metadata.jsonl``. The mapping is the only link between an image
and its prompt: nothing is read from file names and nothing is counted from files. Seeds come from the
prompt set (image k of a prompt uses ``seeds[k]``); a model that cannot take a seed says so with
``seed_honoured=False``.

Every problem of the mapping's rows and of the images they name is reported at once, as one error naming
the mapping file (a mapped path outside ``--from-folder``, also through a link, is one of them); each image
is checked by :func:`cultureboard.images.inspect_image` (what validate will check, except the extension,
which package sets from the real format).
"""

from __future__ import annotations

import copy
import csv
import datetime as dt
import io
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cultureboard.atomic import MARKER, atomic_dir, check_replaceable
from cultureboard.dataset_folder import DidYouMean, pin, read_prompt_set
from cultureboard.errors import CultureboardError
from cultureboard.images import SUFFIX_OF_FORMAT, inspect_image
from cultureboard.naming import inside
from cultureboard.provenance import file_sha256

from .format import (
    FIELDS,
    FORMAT_VERSION,
    IMAGES,
    SUBMISSION_YAML,
    check_json_values,
    get,
    metadata_lines,
    parse_metadata_line,
    parse_submission_id,
    read_spec,
    submission_id,
    submission_id_problem,
    write_submission,
)

MAPPING_COLUMNS = ("file", "prompt_id", "sample_idx")
MAPPING_OPTIONAL = ("edit_step", "source_file", "refused", "reason")
#: PIL format -> the extension the packaged copy gets (the file's real format, whatever its name said).
EXTENSIONS = SUFFIX_OF_FORMAT
_ABSENT = object()
_MAPPING_FIX = ("the mapping needs columns file, prompt_id, sample_idx and may have edit_step, source_file, refused, "
                "reason (a refused row leaves file empty)")
_SHOWN = 20  # problems spelled out in the one error; the rest are counted


class _Problems:
    """The mapping's problems, raised together as one error naming the mapping file (or, when there is
    one, as that problem's own error)."""

    def __init__(self, mapping: Path):
        self.mapping = mapping
        self.items: list[tuple[str, str, str, str]] = []  # (source, label in a list, problem, fix)

    def add(self, source: str, label: str, problem: str, fix: str) -> None:
        self.items.append((source, label, problem, fix))

    def raise_any(self) -> None:
        if len(self.items) == 1:
            source, _, problem, fix = self.items[0]
            raise CultureboardError(source, problem, fix)
        if self.items:
            shown = "; ".join(f"{label}: {problem}" for _, label, problem, _ in self.items[:_SHOWN])
            more = f"; and {len(self.items) - _SHOWN} more" if len(self.items) > _SHOWN else ""
            fixes = list(dict.fromkeys(fix for *_, fix in self.items))
            raise CultureboardError(self.mapping, f"has {len(self.items)} problems: {shown}{more}",
                                    "; ".join(fixes[:4]) + ("; ..." if len(fixes) > 4 else ""))


class _RowError(ValueError):
    """A mapping row that cannot be read (reported with the row's line)."""

    def __init__(self, problem: str, fix: str):
        super().__init__(problem)
        self.problem, self.fix = problem, fix


@dataclass
class _Image:
    where: str  # mapping file and line, for errors
    line: int
    file: str  # as written in the mapping, relative to the from-folder
    src: Path
    prompt_id: str
    sample_idx: int
    edit_step: int | None
    source_file: str | None  # as written in the mapping (an input file), until resolved
    ext: str = ""
    size: tuple[int, int] = (0, 0)
    reason: str | None = None  # a declared refusal's reason (refused rows have file "")

    @property
    def file_name(self) -> str:
        return f"{IMAGES}/{self.prompt_id}/{self.sample_idx}{self.ext}"


def package(from_folder: str | Path, mapping: str | Path, out: str | Path, *, dataset: str | Path, prompt_set: str,
            spec: str | Path | dict, seed_honoured: bool = True) -> dict:
    """Copy the mapped images of ``from_folder`` into the submission folder ``out`` and write its
    ``metadata.jsonl`` and ``submission.yaml``; ``out`` is written whole or not at all, and must be new or
    empty: a submission holds no marker file, so an earlier output (of package or generate, whose images
    may exist nowhere else) is never replaced, and the error says to delete it to package again.

    ``spec`` is a partial submission.yaml (a path or a dict); the ``organization``, ``model.name`` and ``tag`` it
    leaves out are read from ``out``'s name when that is a submission id ``<org>__<model>[__<tag>]`` (those it
    gives must agree with the name); package fills ``format_version``, ``date``
    (today, UTC), ``seeds.scheme``, ``prompt_set`` (name, and the dataset and revision of
    :func:`cultureboard.dataset_folder.pin`: the official Hub id and commit for a Hub download),
    ``images.location``, ``generation.width/height`` (from the images, which must share one size) and,
    for closed weights, ``generation.pipeline: api`` and null for unknown settings. ``seed_honoured=False``
    records ``generation.extra.seed_honoured: false``. Returns counts, including the prompt x sample slots
    of the set that neither an image nor a declared refusal fills (``missing``; slots = images + declared
    refusals + missing), and the ``dataset`` pin; full coverage is the validator's check.
    """
    from_folder, out = Path(from_folder), Path(out)
    _check_not_a_submission(out)
    check_replaceable(out, kind="submission")  # before the work
    spec_source = "spec" if isinstance(spec, dict) else str(spec)
    spec = copy.deepcopy(spec) if isinstance(spec, dict) else load_spec(spec)
    if not from_folder.is_dir():
        raise CultureboardError(from_folder, "is not a folder", "pass the folder that holds the images with --from-folder")
    rows = read_prompt_set(dataset, prompt_set)
    prompts = {r["prompt_id"]: r for r in rows}
    for pid in prompts:  # each id becomes a path under images/
        if any(part in ("", ".", "..") for part in pid.split("/")):
            raise CultureboardError(f"{dataset}: prompt set {prompt_set}", f"prompt id {pid!r} is not a relative path of slugs",
                                    "rebuild the prompt set: prompt ids are slugs joined by '/'")
    problems = _Problems(Path(mapping))
    images = _check_images(read_mapping(mapping, problems), Path(mapping), from_folder, prompts, prompt_set, problems)
    refusals = [im for im in images if not im.file]
    images = [im for im in images if im.file]
    width, height = _one_size(images, from_folder, problems)
    problems.raise_any()
    _names_from_folder(spec, out, spec_source)
    dataset_pin = pin(dataset)
    _complete_spec(spec, spec_source, dataset_pin=dataset_pin, prompt_set=prompt_set, width=width, height=height,
                   seed_honoured=seed_honoured)
    check_json_values(spec, spec_source)
    sid = submission_id(spec)
    if too_long := submission_id_problem(sid):
        raise CultureboardError(spec_source, too_long, "shorten organization, model.name or tag")
    if out.name != sid:
        raise CultureboardError(
            out, f"is not named after the submission: the folder must be named {sid} "
            "(<organization>__<model.name>[__<tag>] of the spec, each lower-cased with other characters turned into -)",
            f"use --out {out.parent / sid}",
        )
    order = {pid: i for i, pid in enumerate(prompts)}
    with atomic_dir(out, kind="submission") as tmp:
        for im in images:
            (tmp / im.file_name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(im.src, tmp / im.file_name)
        meta = [{"file_name": im.file_name, "prompt_id": im.prompt_id, "sample_idx": im.sample_idx,
                 "seed": prompts[im.prompt_id]["seeds"][im.sample_idx], "sha256": file_sha256(tmp / im.file_name),
                 "edit_step": im.edit_step, "source_file": im.source_file} for im in images]
        meta += [{"prompt_id": im.prompt_id, "sample_idx": im.sample_idx, "seed": prompts[im.prompt_id]["seeds"][im.sample_idx],
                  "edit_step": im.edit_step, "refused": True, "reason": im.reason} for im in refusals]
        meta.sort(key=lambda m: (order[m["prompt_id"]], m["sample_idx"]))
        write_submission(tmp, spec, meta)
    (out / MARKER).unlink()  # a submission holds no hidden files (the validator refuses them)
    filled = {(im.prompt_id, im.sample_idx) for im in images + refusals}
    missing = [{"prompt_id": r["prompt_id"], "sample_idx": k} for r in rows
               for k in range(r["images_per_prompt"]) if (r["prompt_id"], k) not in filled]
    return {"submission_id": sid, "out": str(out), "images": len(images), "slots": len(filled) + len(missing),
            "missing": len(missing), "missing_slots": missing, "width": width, "height": height, "dataset": dataset_pin}


def _check_not_a_submission(out: Path) -> None:
    """Refuse, with what to do, an ``out`` that holds a submission: a submission folder has no marker file,
    so it is not replaced like the other outputs (generate's images may exist nowhere else)."""
    if not out.is_symlink() and (out / SUBMISSION_YAML).is_file():
        raise CultureboardError(out, "already holds a submission (an earlier package or generate output), and "
                                "package never replaces one", f"to package again, delete it first (rm -r {out}; "
                                "package copies the images again from --from-folder), or choose another --out")


def load_spec(path: str | Path) -> dict:
    """A user-written partial submission.yaml, as a dict of JSON values (an unquoted ``date`` is taken as its text)."""
    path = Path(path)
    if not path.is_file():
        raise CultureboardError(path, "does not exist", "pass the spec YAML file with --spec")
    return read_spec(path, partial=True)


def read_mapping(path: str | Path, problems: _Problems) -> list[tuple[int, dict]]:
    """(line, row) of each row of a mapping file (``.csv`` with a header, or ``.jsonl``). A file that cannot
    be read as a mapping at all is an error at once; a row that cannot be read is added to ``problems``."""
    path = Path(path)
    if not path.is_file():
        raise CultureboardError(path, "does not exist", "pass the mapping file with --mapping")
    if path.suffix.lower() not in (".csv", ".jsonl"):
        raise CultureboardError(path, "is neither .csv nor .jsonl", f"write the mapping as CSV or JSON Lines; {_MAPPING_FIX}")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CultureboardError(path, f"is not UTF-8 text (byte {exc.start})", "save the mapping as UTF-8") from None
    rows = _csv_rows(path, text, problems) if path.suffix.lower() == ".csv" else _jsonl_rows(path, data, problems)
    if not rows and not problems.items:
        raise CultureboardError(path, "lists no images", "add one row per image")
    return rows


def _csv_rows(path: Path, text: str, problems: _Problems) -> list[tuple[int, dict]]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows = []
    try:
        _check_columns(path, reader.fieldnames or [])
        for row in reader:
            if None in row:
                problems.add(f"{path}:{reader.line_num}", f"line {reader.line_num}", "has more values than the header has "
                             "columns", "quote values that contain commas")
            else:
                rows.append((reader.line_num, row))
    except csv.Error as exc:  # a NUL byte, an unterminated quote, a field over the csv module's limit
        raise CultureboardError(f"{path}:{reader.line_num}", f"is not readable CSV ({exc})",
                                "write plain CSV: a header line, then one row per image") from None
    return rows


def _jsonl_rows(path: Path, data: bytes, problems: _Problems) -> list[tuple[int, dict]]:
    rows = []
    for n, line, length in metadata_lines(io.BytesIO(data.removeprefix(b"\xef\xbb\xbf"))):
        if line is not None and not line.strip():
            continue
        try:
            if line is None:
                raise _RowError(f"is {length:,} bytes long", "write one short JSON object per line")
            try:
                row = parse_metadata_line(line)
            except (ValueError, RecursionError) as exc:
                raise _RowError(f"is not strict JSON ({exc.__class__.__name__}: {str(exc)[:60]})",
                                "write one JSON object per line (no NaN or Infinity)") from None
            if not isinstance(row, dict):
                raise _RowError("is not a JSON object", "write one JSON object per line")
        except _RowError as exc:
            problems.add(f"{path}:{n}", f"line {n}", exc.problem, exc.fix)
            continue
        _check_columns(f"{path}:{n}", {"file": None, **row} if row.get("refused") is True else row)
        rows.append((n, row))
    return rows


def _check_columns(source: Any, columns) -> None:
    missing = [c for c in MAPPING_COLUMNS if c not in columns]
    unknown = [c for c in columns if c not in MAPPING_COLUMNS + MAPPING_OPTIONAL]
    if missing or unknown:
        problem = "; ".join(p for p in (missing and f"lacks column(s) {', '.join(missing)}",
                                        unknown and f"has unknown column(s) {', '.join(map(str, unknown))}") if p)
        raise CultureboardError(source, problem, _MAPPING_FIX)


def _value(row: dict, column: str, kind: type, required: bool) -> Any:
    """The row's ``column`` as ``kind`` (str or int); empty optional values are None."""
    value = row.get(column)
    if isinstance(value, str):
        value = value.strip()
    if value is None or value == "":
        if required:
            raise _RowError(f"has no {column}", _MAPPING_FIX)
        return None
    if kind is bool:
        text = str(value).lower() if isinstance(value, (bool, str)) else None
        if text not in ("true", "false", "1", "0", "yes", "no"):
            raise _RowError(f"{column} {value!r:.40} is not true or false", f"write {column} as true or false")
        return text in ("true", "1", "yes")
    if kind is int:
        if isinstance(value, str) and value.isascii() and value.lstrip("-").isdigit() and len(value) < 19:
            return int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise _RowError(f"{column} {value!r:.40} is not a whole number", f"write {column} as 0, 1, 2, ...")
    elif not isinstance(value, str):
        raise _RowError(f"{column} {value!r:.40} is not a string", f"write {column} as text")
    elif "\0" in value:
        raise _RowError(f"{column} {value!r:.40} has a NUL byte", f"remove it from {column}")
    return value


def _source_path(from_folder: Path, file: str) -> Path:
    """``file`` of the mapping inside ``from_folder`` (links resolved); an error when it is not."""
    try:
        return inside(from_folder, file, "--from-folder")
    except CultureboardError as exc:
        raise _RowError(f"file {file} {exc.problem}", exc.fix) from None


def _check_images(mapping: list[tuple[int, dict]], path: Path, from_folder: Path, prompts: dict[str, dict],
                  prompt_set: str, problems: _Problems) -> list[_Image]:
    """One checked image per good mapping row: known prompt, sample in range, one image per slot, an image
    file inside the folder mapped once, edit chains consistent with the prompt set; the rest go to ``problems``."""
    images: list[_Image] = []
    by_slot: dict[tuple[str, int], _Image] = {}
    by_file: dict[str, _Image] = {}
    guess = DidYouMean(prompts, prefix=prompt_set)
    for n, row in mapping:
        where = f"{path}:{n}"
        try:
            if _value(row, "refused", bool, False):  # a declared refusal: no file, maybe a reason
                if _value(row, "file", str, False) is not None or _value(row, "source_file", str, False) is not None:
                    raise _RowError("is refused but names a file", "leave file and source_file empty on a refused row")
                im = _Image(where, n, "", Path(), _value(row, "prompt_id", str, True), _value(row, "sample_idx", int, True),
                            _value(row, "edit_step", int, False), None, reason=_value(row, "reason", str, False))
                _check_slot(im, prompts, prompt_set, guess, by_slot, by_file)
                by_slot[im.prompt_id, im.sample_idx] = im
                images.append(im)
                continue
            if _value(row, "reason", str, False) is not None:
                raise _RowError("has a reason but is not refused", "give a reason only on a row with refused true")
            im = _Image(where, n, Path(_value(row, "file", str, True)).as_posix(), Path(),
                        _value(row, "prompt_id", str, True), _value(row, "sample_idx", int, True),
                        _value(row, "edit_step", int, False), _value(row, "source_file", str, False))
            _check_slot(im, prompts, prompt_set, guess, by_slot, by_file)
            im.src = _source_path(from_folder, im.file)
        except _RowError as exc:
            problems.add(where, f"line {n}", exc.problem, exc.fix)
            continue
        info = inspect_image(im.src, check_extension=False)
        for p in info.problems:
            problems.add(str(from_folder / im.file), im.file, p.message, p.fix)
        if info.problems:
            continue
        im.ext, im.size = EXTENSIONS[info.format], (info.width, info.height)
        by_slot[im.prompt_id, im.sample_idx] = by_file[im.file] = im
        images.append(im)
    for im in images:
        if not im.file:
            continue  # a refusal edits nothing
        try:
            _resolve_source(im, prompts[im.prompt_id], by_slot)
        except _RowError as exc:
            problems.add(im.where, f"line {im.line}", exc.problem, exc.fix)
    return images


def _check_slot(im: _Image, prompts: dict[str, dict], prompt_set: str, guess: DidYouMean, by_slot: dict,
                by_file: dict) -> None:
    """The row names a prompt of the set (else the closest ids are offered), a sample in range, a slot and
    a file not mapped before, and no edit step other than the prompt's (which it then takes)."""
    prompt = prompts.get(im.prompt_id)
    if prompt is None:
        raise _RowError(f"prompt_id {im.prompt_id!r} is not in prompt set {prompt_set}{guess(im.prompt_id)}",
                        f"use the prompt_id column of prompt set {prompt_set}, whole and case-sensitive; check --dataset "
                        "and --prompt-set")
    n = prompt["images_per_prompt"]
    if not 0 <= im.sample_idx < n:
        raise _RowError(f"sample_idx {im.sample_idx} is out of range: {im.prompt_id} has {n} images per prompt",
                        f"use sample_idx 0..{n - 1}")
    if (im.prompt_id, im.sample_idx) in by_slot:
        raise _RowError(f"maps a second image to {im.prompt_id} sample {im.sample_idx} "
                        f"(first at line {by_slot[im.prompt_id, im.sample_idx].line})", "keep one image per prompt and sample_idx")
    if im.file in by_file:
        raise _RowError(f"maps {im.file} a second time (first at line {by_file[im.file].line})",
                        "map each image file to one prompt and sample_idx")
    if im.edit_step is not None and im.edit_step != prompt["edit_step"]:
        has = f"edit_step {prompt['edit_step']}" if prompt["edit_step"] is not None else "no edit step (text-to-image)"
        raise _RowError(f"edit_step {im.edit_step} contradicts prompt {im.prompt_id}, which has {has}",
                        "leave edit_step empty: package takes it from the prompt set")
    im.edit_step = prompt["edit_step"]


def _resolve_source(im: _Image, prompt: dict, by_slot: dict) -> None:
    """Set an edit step's ``source_file`` to the packaged name of the image it edited: the same sample of
    the prompt set's ``source_prompt_id`` (a ``source_file`` in the mapping must name that image)."""
    source_prompt = prompt["source_prompt_id"]
    if source_prompt is None:
        if im.source_file is not None:
            raise _RowError(f"has a source_file but prompt {im.prompt_id} is text-to-image", "leave source_file empty")
        return
    source = by_slot.get((source_prompt, im.sample_idx))
    if source is None:
        raise _RowError(f"edits {source_prompt} sample {im.sample_idx}, which the mapping does not list",
                        "map the image this step edited too")
    if not source.file:
        raise _RowError(f"edits {source_prompt} sample {im.sample_idx}, which the mapping declares refused",
                        "declare this step refused too: nothing was there to edit")
    if im.source_file is not None and Path(im.source_file).as_posix() != source.file:
        raise _RowError(f"source_file {im.source_file} is not {source.file}, the image of {source_prompt} "
                        f"sample {im.sample_idx}", "each step edits the same sample of its source prompt: "
                        "correct the mapping, or leave source_file empty")
    im.source_file = source.file_name


def _one_size(images: list[_Image], from_folder: Path, problems: _Problems) -> tuple[int, int]:
    """The one size the good images share (a problem when they differ)."""
    sizes: dict[tuple[int, int], str] = {}
    for im in images:
        sizes.setdefault(im.size, im.file)
    if len(sizes) > 1:
        shown = ", ".join(f"{w}x{h} ({f})" for (w, h), f in list(sizes.items())[:3])
        problems.add(str(from_folder), str(from_folder), f"the mapped images differ in size: {shown}",
                     "all images of a submission must share one width and height; regenerate or resize them")
    return next(iter(sizes), (0, 0))


def _node(spec: dict, path: str, source: str) -> tuple[dict, str]:
    """The mapping that holds ``path``'s last key (created when absent), and that key."""
    *parents, key = path.split(".")
    node = spec
    for part in parents:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise CultureboardError(source, f"{part} is not a mapping", "write it as nested keys (see submissions/README.md)")
    return node, key


def _fact(spec: dict, path: str, value: Any, source: str) -> None:
    """Set a field package knows for certain; a different value in the spec is an error."""
    node, key = _node(spec, path, source)
    if node.get(key) is not None and node[key] != value:
        raise CultureboardError(source, f"says {path}: {node[key]!r} but package found {value!r}",
                                f"remove {path} from the spec; package fills it")
    node[key] = value


def _names_from_folder(spec: dict, out: Path, source: str) -> None:
    """The organization, model name and tag the spec leaves out, from ``out``'s name when it is a submission id."""
    named = parse_submission_id(out.name)
    if named is None:
        return
    for path, value in (("organization", named["organization"]), ("model.name", named["model"]), ("tag", named["tag"])):
        if value is not None and get(spec, path) is None:
            node, key = _node(spec, path, source)
            node[key] = value


def _lacks(spec: dict, field) -> bool:
    value = get(spec, field.path, _ABSENT)
    return value is _ABSENT or (value is None and not field.nullable)


def _default(spec: dict, path: str, value: Any, source: str) -> None:
    node, key = _node(spec, path, source)
    node.setdefault(key, value)


def _complete_spec(spec: dict, source: str, *, dataset_pin: dict, prompt_set: str, width: int, height: int,
                   seed_honoured: bool) -> None:
    """Fill what package knows, then require every field submission.yaml must have."""
    if type(spec.get("date")) is dt.date:  # YAML reads an unquoted 2025-01-31 as a date
        spec["date"] = spec["date"].isoformat()
    _fact(spec, "format_version", FORMAT_VERSION, source)
    _default(spec, "date", dt.datetime.now(dt.timezone.utc).date().isoformat(), source)
    _fact(spec, "seeds.scheme", "prompt-set", source)
    _fact(spec, "prompt_set.name", prompt_set, source)
    _default(spec, "prompt_set.dataset", dataset_pin["dataset"], source)
    _fact(spec, "prompt_set.revision", dataset_pin["revision"], source)
    _fact(spec, "images.location", IMAGES, source)
    _fact(spec, "generation.width", width, source)
    _fact(spec, "generation.height", height, source)
    if get(spec, "model.weights") == "closed":
        _default(spec, "generation.pipeline", "api", source)
        for field in FIELDS:
            if field.nullable:
                _default(spec, field.path, None, source)
    if not seed_honoured:
        _fact(spec, "generation.extra.seed_honoured", False, source)
    missing = [f.path for f in FIELDS if f.required and _lacks(spec, f)]
    if missing:
        raise CultureboardError(source, f"lacks required field(s) {', '.join(missing)}",
                                "add them to the spec (see submissions/README.md; settings a closed API does not expose may be null)")
