"""``cultureboard package``: turn images made elsewhere (a closed API, another codebase) into a submission.

The user gives a folder of images with any names, a mapping file that says which prompt and sample each
image answers, and a partial ``submission.yaml`` (the spec). A prompt and sample the model refused (a closed
API's safety filter) is a mapping row with ``refused`` true, no ``file`` and an optional ``reason``: it becomes a
declared refusal line of ``metadata.jsonl``. The mapping is the only link between an image and its prompt:
nothing is read from file names and nothing is counted from files. Seeds come from the prompt set (image k of a
prompt uses ``seeds[k]``); a model that cannot take a seed says so with ``seed_honoured=False``. The table
``cultureboard export-prompts`` writes is a mapping once a ``file`` column is added: its ``seed``, ``dataset``
and ``revision`` columns are checked against the prompt set and the pin of ``--dataset``.

One rule set. The mapping's rows go through validate's own row rules (:mod:`.rules.metadata`,
:mod:`.rules.coverage`: known prompts with the closest ids offered, samples counted from 0, seeds, one row per
slot and file, every slot an image or a declared refusal) and its paths through :mod:`.rules.paths`; each image
through :func:`cultureboard.images.inspect_image` (what validate checks, except the extension, which package sets
from the real format). Then the folder is written into a work folder and the whole of ``validate`` runs on it
(with the dataset, under the folder's final name); only a folder that validate accepts is put in place. Every
problem is reported at once, named by the input it is fixed in (the mapping's line, the spec, the image file),
as :class:`~.rules.report.ProblemsError` (one problem: a plain one-line error).
"""

from __future__ import annotations

import copy
import csv
import datetime as dt
import io
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cultureboard.atomic import MARKER, atomic_dir, check_replaceable
from cultureboard.dataset_folder import pin, prompt_sets, read_prompt_set
from cultureboard.errors import CultureboardError
from cultureboard.images import SUFFIX_OF_FORMAT, inspect_image
from cultureboard.naming import inside
from cultureboard.provenance import file_sha256

from .export import COLUMNS as EXPORT_COLUMNS
from .format import (
    FIELDS,
    FORMAT_VERSION,
    IMAGES,
    METADATA,
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
from .rules import coverage, metadata, paths
from .rules.report import Limits, Problem, ProblemsError, Run
from .validate import validate

MAPPING_COLUMNS = ("file", "prompt_id", "sample_idx")
MAPPING_OPTIONAL = ("edit_step", "source_file", "refused", "reason")
#: Columns of an export (``cultureboard export-prompts``) a mapping may keep: seed, dataset and revision are checked.
MAPPING_EXPORTED = tuple(c for c in EXPORT_COLUMNS if c not in MAPPING_COLUMNS + MAPPING_OPTIONAL)
#: PIL format -> the extension the packaged copy gets (the file's real format, whatever its name said).
EXTENSIONS = SUFFIX_OF_FORMAT
_MAPPING_FIX = ("the mapping needs columns file, prompt_id, sample_idx and may have edit_step, source_file, refused, "
                "reason (a refused row leaves file empty) and the columns of `cultureboard export-prompts`")
_AGAIN = "correct each as its line says, then run package again"

CODES: dict[str, str] = {
    "mapping.bad_row": "a mapping row that cannot be read (a value of the wrong kind, too many values, not JSON)",
    "mapping.no_file": "a mapping row with neither a file nor refused true",
    "mapping.missing_file": "a mapped file that does not exist in --from-folder, or lies outside it",
    "mapping.bad_source": "an edit step whose source image the mapping does not give as the prompt set says",
    "mapping.wrong_pin": "a mapping exported from another dataset or revision than --dataset",
    "mapping.sizes_differ": "mapped images of different sizes",
}


class _RowError(ValueError):
    """A mapping row that cannot be read (reported with the row's line)."""

    def __init__(self, problem: str, fix: str, code: str = "mapping.bad_row"):
        super().__init__(problem)
        self.problem, self.fix, self.code = problem, fix, code


@dataclass
class _Image:
    where: str  # mapping file and line, for errors
    line: int
    file: str  # as written in the mapping, relative to the from-folder ("" on a refusal)
    src: Path
    prompt_id: str
    sample_idx: int
    edit_step: int | None
    source_file: str | None  # as written in the mapping (an input file), until resolved
    ext: str = ""
    size: tuple[int, int] = (0, 0)
    reason: str | None = None  # a declared refusal's reason (refused rows have file "")
    seed: int | None = None  # a seed column's value (an export's), checked against the prompt set

    @property
    def file_name(self) -> str:
        return f"{IMAGES}/{self.prompt_id}/{self.sample_idx}{self.ext}"


def package(from_folder: str | Path, mapping: str | Path, out: str | Path, *, dataset: str | Path, prompt_set: str,
            spec: str | Path | dict, seed_honoured: bool = True) -> dict:
    """Copy the mapped images of ``from_folder`` into the submission folder ``out`` and write its
    ``metadata.jsonl`` and ``submission.yaml``; ``out`` is written whole or not at all, only when ``validate``
    accepts it, and must be new or empty: a submission holds no marker file, so an earlier output (of package or
    generate, whose images may exist nowhere else) is never replaced, and the error says to delete it.

    ``spec`` is a partial submission.yaml (a path or a dict); the ``organization``, ``model.name`` and ``tag`` it
    leaves out are read from ``out``'s name when that is a submission id ``<org>__<model>[__<tag>]`` (those it
    gives must agree with the name); package fills ``format_version``, ``date`` (today, UTC), ``seeds.scheme``,
    ``prompt_set`` (name, and the dataset and revision of :func:`cultureboard.dataset_folder.pin`: the official
    Hub id and commit for a Hub download), ``images.location``, ``generation.width/height`` (from the images,
    which must share one size) and, for closed weights, ``generation.pipeline: api`` and null for unknown
    settings. ``seed_honoured=False`` records ``generation.extra.seed_honoured: false``. Returns counts (``slots``
    = images + declared refusals: every slot of the set), the ``dataset`` pin and the validator's ``warnings``.
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
    dataset_pin = pin(dataset)
    run = Run(from_folder, Limits(), Path(dataset))
    run.prompts, run.prompt_set = prompts, prompt_set
    run.other_sets = [s for s in prompt_sets(dataset) if s != prompt_set]
    images = _check_mapping(run, Path(mapping), from_folder, dataset_pin)
    _raise_errors(run.problems, Path(mapping))
    refusals = [im for im in images if not im.file]
    images = [im for im in images if im.file]
    width, height = _one_size(run, images, from_folder)
    _raise_errors(run.problems, Path(mapping))
    _names_from_folder(spec, out, spec_source)
    _complete_spec(spec, spec_source, dataset_pin=dataset_pin, prompt_set=prompt_set, width=width, height=height,
                   seed_honoured=seed_honoured)
    check_json_values(spec, spec_source)
    sid = submission_id(spec)
    if too_long := submission_id_problem(sid):
        raise CultureboardError(spec_source, too_long, "shorten organization, model.name or tag")
    if get(spec, "organization") is not None and get(spec, "model.name") is not None and out.name != sid:
        raise CultureboardError(
            out, f"is not named after the submission: the folder must be named {sid} "
            "(<organization>__<model.name>[__<tag>] of the spec, each lower-cased with other characters turned into -)",
            f"use --out {out.parent / sid}",
        )
    order = {pid: i for i, pid in enumerate(prompts)}
    made = sorted(images + refusals, key=lambda im: (order[im.prompt_id], im.sample_idx))
    with atomic_dir(out, kind="submission") as tmp:
        for im in images:
            (tmp / im.file_name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(im.src, tmp / im.file_name)
        meta = [{"file_name": im.file_name, "prompt_id": im.prompt_id, "sample_idx": im.sample_idx,
                 "seed": prompts[im.prompt_id]["seeds"][im.sample_idx], "sha256": file_sha256(tmp / im.file_name),
                 "edit_step": im.edit_step, "source_file": im.source_file} if im.file else
                {"prompt_id": im.prompt_id, "sample_idx": im.sample_idx, "seed": prompts[im.prompt_id]["seeds"][im.sample_idx],
                 "edit_step": im.edit_step, "refused": True, "reason": im.reason} for im in made]
        write_submission(tmp, spec, meta)
        report = validate(tmp, dataset, name=out.name)  # the whole rule set, on what is about to be put in place
        found = [_where_made(p, made, spec_source, from_folder) for p in report.problems]
        _raise_errors(found, Path(mapping))
    (out / MARKER).unlink()  # a submission holds no hidden files (the validator refuses them)
    warnings = [p.line() for p in found if p.code != "schema.unofficial_dataset"]  # the CLI notes a local pin itself
    return {"submission_id": sid, "out": str(out), "images": len(images), "refused": len(refusals),
            "slots": len(images) + len(refusals), "width": width, "height": height, "dataset": dataset_pin,
            "warnings": warnings}


def _raise_errors(problems: list[Problem], mapping: Path) -> None:
    """Raise the errors among ``problems`` (with the warnings beside them): one as a one-line error, several as a
    :class:`ProblemsError` naming the mapping."""
    errors = [p for p in problems if p.severity == "error"]
    if len(errors) == 1:
        raise CultureboardError(errors[0].file, errors[0].message, errors[0].fix)
    if errors:
        raise ProblemsError(mapping, errors, _AGAIN)


def _where_made(p: Problem, made: list[_Image], spec_source: str, from_folder: Path) -> Problem:
    """A problem the validator found in the written folder, named by the input it is fixed in: a metadata.jsonl
    line by the mapping row that made it, submission.yaml by the spec, an image by its file in --from-folder."""
    file = p.file
    if file.startswith(f"{METADATA}:") and file[len(METADATA) + 1:].isdigit():
        file = made[int(file[len(METADATA) + 1:]) - 1].where
    elif file.split(":")[0] == SUBMISSION_YAML:
        file = spec_source
    else:
        source = next((im for im in made if im.file and im.file_name == file), None)
        file = str(from_folder / source.file) if source else file
    return Problem(p.code, p.severity, file, p.message, p.fix)


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


# ----------------------------------------------------------------------------------- the mapping

def read_mapping(path: str | Path, run: Run) -> list[tuple[int, dict]]:
    """(line, row) of each row of a mapping file (``.csv`` with a header, or ``.jsonl``). A file that cannot
    be read as a mapping at all is an error at once; a row that cannot be read is added to ``run``'s problems."""
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
    rows = _csv_rows(path, text, run) if path.suffix.lower() == ".csv" else _jsonl_rows(path, data, run)
    if not rows and not run.problems:
        raise CultureboardError(path, "lists no images", "add one row per image")
    return rows


def _csv_rows(path: Path, text: str, run: Run) -> list[tuple[int, dict]]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows = []
    try:
        _check_columns(path, reader.fieldnames or [])
        for row in reader:
            if None in row:
                run.error("mapping.bad_row", f"{path}:{reader.line_num}", "has more values than the header has columns",
                          "quote values that contain commas")
            else:
                rows.append((reader.line_num, row))
    except csv.Error as exc:  # a NUL byte, an unterminated quote, a field over the csv module's limit
        raise CultureboardError(f"{path}:{reader.line_num}", f"is not readable CSV ({exc})",
                                "write plain CSV: a header line, then one row per image") from None
    return rows


def _jsonl_rows(path: Path, data: bytes, run: Run) -> list[tuple[int, dict]]:
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
            run.error(exc.code, f"{path}:{n}", exc.problem, exc.fix)
            continue
        _check_columns(f"{path}:{n}", {"file": None, **row} if row.get("refused") is True else row)
        rows.append((n, row))
    return rows


def _check_columns(source: Any, columns) -> None:
    missing = [c for c in MAPPING_COLUMNS if c not in columns]
    unknown = [c for c in columns if c not in MAPPING_COLUMNS + MAPPING_OPTIONAL + MAPPING_EXPORTED]
    if missing or unknown:
        problem = "; ".join(p for p in (missing and f"lacks column(s) {', '.join(missing)}",
                                        unknown and f"has unknown column(s) {', '.join(map(str, unknown))}") if p)
        raise CultureboardError(source, problem, _MAPPING_FIX)


def _value(row: dict, column: str, kind: type, required: bool) -> Any:
    """The row's ``column`` as ``kind`` (str, int or bool); empty optional values are None."""
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
        if isinstance(value, str) and value.isascii() and re.fullmatch(r"-?\d{1,18}", value):
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
    if bad := paths.path_problem(file, "file"):
        raise _RowError(bad[1], "give the path relative to --from-folder with / separators (not a Windows path)",
                        bad[0])
    try:
        return inside(from_folder, file, "--from-folder")
    except CultureboardError as exc:
        raise _RowError(f"file {file} {exc.problem}", exc.fix, "mapping.missing_file") from None


def _read_row(run: Run, where: str, n: int, row: dict, from_folder: Path, dataset_pin: dict,
              unfilled: dict) -> _Image | None:
    """The row as an image (or a refusal) with its values typed; None (reported) when it cannot be read. A row of a
    slot without a file (an export's row not filled in) is reported once, and its slot put in ``unfilled``."""
    slot = None
    try:
        for column, expected in (("dataset", dataset_pin["dataset"]), ("revision", dataset_pin["revision"])):
            given = _value(row, column, str, False)
            if given is not None and given != expected:
                raise _RowError(f"was exported from {column} {given}, but --dataset is at {expected}",
                                "package with --dataset the folder the prompts were exported from (export-prompts "
                                "--dataset), or export the prompts again from this one", "mapping.wrong_pin")
        pid, k = _value(row, "prompt_id", str, True), _value(row, "sample_idx", int, True)
        slot = (pid, k)
        refused = _value(row, "refused", bool, False)
        file, reason = _value(row, "file", str, False), _value(row, "reason", str, False)
        source = _value(row, "source_file", str, False)
        im = _Image(where, n, file or "", Path(), pid, k, _value(row, "edit_step", int, False), source, reason=reason,
                    seed=_value(row, "seed", int, False))
        if refused:
            if file is not None or source is not None:
                raise _RowError("is refused but names a file", "leave file and source_file empty on a refused row")
            return im
        if reason is not None:
            raise _RowError("has a reason but is not refused", "give a reason only on a row with refused true")
        if file is None:
            raise _RowError(f"has no file: the image of {pid} sample {k} is missing",
                            "put the image's path in file, or declare the sample refused (refused true, the API's "
                            "reason) if the model gave none; then run package again", "mapping.no_file")
        im.file = Path(file).as_posix() if "\\" not in file else file
        im.src = _source_path(from_folder, im.file)
        return im
    except _RowError as exc:
        run.error(exc.code, where, exc.problem, exc.fix)
        if slot is not None:
            unfilled[slot] = (n, {})  # reported: not missing as well
        return None


def _check_mapping(run: Run, mapping: Path, from_folder: Path, dataset_pin: dict) -> list[_Image]:
    """Every mapping row through validate's row rules (duplicates, coverage, missing slots) and each mapped image
    through inspect_image; returns the images (and refusals) of the rows that pass."""
    read: dict[int, _Image] = {}
    rows, unfilled = [], {}
    for n, raw in read_mapping(mapping, run):
        im = _read_row(run, f"{mapping}:{n}", n, raw, from_folder, dataset_pin, unfilled)
        if im is None:
            continue
        prompt = run.prompts.get(im.prompt_id)
        edit_step = prompt["edit_step"] if im.edit_step is None and prompt is not None else im.edit_step
        row = {"prompt_id": im.prompt_id, "sample_idx": im.sample_idx, "edit_step": edit_step,
               "file": im.file or None, **({"refused": True} if not im.file else {}),
               **({"seed": im.seed} if im.seed is not None else {})}
        read[n] = im
        rows.append((n, row))
    unique = metadata.check_duplicates(run, rows, str(mapping), file_key="file")
    present = coverage.check_rows(run, unique, str(mapping))
    images = [read[n] for n, _ in present.values()]
    coverage.check_missing(run, {**unfilled, **present}, str(mapping))
    for im in images:
        im.edit_step = run.prompts[im.prompt_id]["edit_step"]
    by_slot = {(im.prompt_id, im.sample_idx): im for im in images}
    for im in images:
        if not im.file:
            continue  # a refusal: no file, and it edits nothing
        info = inspect_image(im.src, check_extension=False)
        for p in info.problems:
            run.error(p.code, str(from_folder / im.file), p.message, p.fix)
        if not info.problems:
            im.ext, im.size = EXTENSIONS[info.format], (info.width, info.height)
    for im in images:
        if im.file:
            try:
                _resolve_source(im, run.prompts[im.prompt_id], by_slot)
            except _RowError as exc:
                run.error(exc.code, im.where, exc.problem, exc.fix)
    return [im for im in images if not im.file or im.ext]


def _resolve_source(im: _Image, prompt: dict, by_slot: dict) -> None:
    """Set an edit step's ``source_file`` to the packaged name of the image it edited: the same sample of
    the prompt set's ``source_prompt_id`` (a ``source_file`` in the mapping must name that image)."""
    source_prompt = prompt["source_prompt_id"]
    if source_prompt is None:
        if im.source_file is not None:
            raise _RowError(f"has a source_file but prompt {im.prompt_id} is text-to-image", "leave source_file empty",
                            "mapping.bad_source")
        return
    source = by_slot.get((source_prompt, im.sample_idx))
    if source is None:
        raise _RowError(f"edits {source_prompt} sample {im.sample_idx}, which the mapping does not list",
                        "map the image this step edited too", "mapping.bad_source")
    if not source.file:
        raise _RowError(f"edits {source_prompt} sample {im.sample_idx}, which the mapping declares refused",
                        "declare this step refused too: nothing was there to edit", "coverage.edits_refused")
    if im.source_file is not None and Path(im.source_file).as_posix() != source.file:
        raise _RowError(f"source_file {im.source_file} is not {source.file}, the image of {source_prompt} "
                        f"sample {im.sample_idx}", "each step edits the same sample of its source prompt: "
                        "correct the mapping, or leave source_file empty", "mapping.bad_source")
    im.source_file = source.file_name


def _one_size(run: Run, images: list[_Image], from_folder: Path) -> tuple[int, int]:
    """The one size the good images share (a problem when they differ)."""
    sizes: dict[tuple[int, int], str] = {}
    for im in images:
        sizes.setdefault(im.size, im.file)
    if len(sizes) > 1:
        shown = ", ".join(f"{w}x{h} ({f})" for (w, h), f in list(sizes.items())[:3])
        run.error("mapping.sizes_differ", str(from_folder), f"the mapped images differ in size: {shown}",
                  "all images of a submission must share one width and height; regenerate or resize them")
    return next(iter(sizes), (0, 0))


# ----------------------------------------------------------------------------------- the spec

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


def _default(spec: dict, path: str, value: Any, source: str) -> None:
    node, key = _node(spec, path, source)
    node.setdefault(key, value)


def _complete_spec(spec: dict, source: str, *, dataset_pin: dict, prompt_set: str, width: int, height: int,
                   seed_honoured: bool) -> None:
    """Fill what package knows; what the spec still lacks or gets wrong is the validator's to report."""
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
    if str(get(spec, "model.weights")).strip().lower() == "closed":  # "Closed" too: its case is the validator's error
        _default(spec, "generation.pipeline", "api", source)
        for field in FIELDS:
            if field.nullable:
                _default(spec, field.path, None, source)
    if not seed_honoured:
        _fact(spec, "generation.extra.seed_honoured", False, source)
