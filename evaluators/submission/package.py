"""``cultureboard package``: turn images made elsewhere (a closed API, another codebase) into a submission.

The user gives a folder of images with any names, a mapping file that says which prompt and sample each
image answers, and a partial ``submission.yaml`` (the spec). The mapping is the only link between an image
and its prompt: nothing is read from file names and nothing is counted from files. Seeds come from the
prompt set (image k of a prompt uses ``seeds[k]``); a model that cannot take a seed says so with
``seed_honoured=False``.
"""

from __future__ import annotations

import copy
import csv
import datetime as dt
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from PIL import Image

from cultureboard.atomic import MARKER, atomic_dir, check_replaceable
from cultureboard.dataset_folder import local_revision, read_prompt_set
from cultureboard.errors import CultureboardError
from cultureboard.provenance import file_sha256

from .format import FIELDS, FORMAT_VERSION, IMAGES, get, submission_id, write_submission

MAPPING_COLUMNS = ("file", "prompt_id", "sample_idx")
MAPPING_OPTIONAL = ("edit_step", "source_file")
#: PIL format -> the extension the packaged copy gets (the file's real format, whatever its name said).
EXTENSIONS = {"JPEG": ".jpg", "PNG": ".png", "WEBP": ".webp"}
_ABSENT = object()
_MAPPING_FIX = "the mapping needs columns file, prompt_id, sample_idx and may have edit_step, source_file"


@dataclass
class _Image:
    where: str  # mapping file and line, for errors
    file: str  # as written in the mapping, relative to the from-folder
    src: Path
    prompt_id: str
    sample_idx: int
    edit_step: int | None
    source_file: str | None  # as written in the mapping (an input file), until resolved
    ext: str = ""
    size: tuple[int, int] = (0, 0)

    @property
    def file_name(self) -> str:
        return f"{IMAGES}/{self.prompt_id}/{self.sample_idx}{self.ext}"


def package(from_folder: str | Path, mapping: str | Path, out: str | Path, *, dataset: str | Path, prompt_set: str,
            spec: str | Path | dict, seed_honoured: bool = True) -> dict:
    """Copy the mapped images of ``from_folder`` into the submission folder ``out`` and write its
    ``metadata.jsonl`` and ``submission.yaml``; ``out`` is written whole or not at all, and must be new or
    empty (an earlier output holds no marker file, so delete it to package again).

    ``spec`` is a partial submission.yaml (a path or a dict); package fills ``format_version``, ``date``
    (today, UTC), ``seeds.scheme``, ``prompt_set`` (name, dataset folder name, revision),
    ``images.location``, ``generation.width/height`` (from the images, which must share one size) and,
    for closed weights, ``generation.pipeline: api`` and null for unknown settings. ``seed_honoured=False``
    records ``generation.extra.seed_honoured: false``. Returns counts, including the prompt x sample slots
    of the set that no image fills (``missing``); full coverage is the validator's check.
    """
    from_folder, out = Path(from_folder), Path(out)
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
    images = _check_images(read_mapping(mapping), from_folder, prompts, prompt_set)
    width, height = _one_size(images, from_folder)
    _complete_spec(spec, spec_source, dataset=Path(dataset), prompt_set=prompt_set, width=width, height=height,
                   seed_honoured=seed_honoured)
    sid = submission_id(spec)
    if out.name != sid:
        raise CultureboardError(
            out, f"is not named after the submission: the folder must be named {sid} "
            "(<organization>__<model.name>[__<tag>] of the spec, each lower-cased with other characters turned into -)",
            f"use --out {out.parent / sid}",
        )
    order = {pid: i for i, pid in enumerate(prompts)}
    images.sort(key=lambda im: (order[im.prompt_id], im.sample_idx))
    with atomic_dir(out, kind="submission") as tmp:
        for im in images:
            (tmp / im.file_name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(im.src, tmp / im.file_name)
        meta = [{"file_name": im.file_name, "prompt_id": im.prompt_id, "sample_idx": im.sample_idx,
                 "seed": prompts[im.prompt_id]["seeds"][im.sample_idx], "sha256": file_sha256(tmp / im.file_name),
                 "edit_step": im.edit_step, "source_file": im.source_file} for im in images]
        write_submission(tmp, spec, meta)
    (out / MARKER).unlink()  # a submission holds no hidden files (the validator refuses them)
    filled = {(im.prompt_id, im.sample_idx) for im in images}
    missing = [{"prompt_id": r["prompt_id"], "sample_idx": k} for r in rows
               for k in range(r["images_per_prompt"]) if (r["prompt_id"], k) not in filled]
    return {"submission_id": sid, "out": str(out), "images": len(images), "slots": len(filled) + len(missing),
            "missing": len(missing), "missing_slots": missing, "width": width, "height": height}


def load_spec(path: str | Path) -> dict:
    """A user-written partial submission.yaml, as a dict."""
    path = Path(path)
    if not path.is_file():
        raise CultureboardError(path, "does not exist", "pass the spec YAML file with --spec")
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = f"{getattr(exc, 'problem', None) or exc.__class__.__name__}" + (f" at line {mark.line + 1}" if mark else "")
        raise CultureboardError(path, f"is not valid YAML ({problem})", "correct the YAML syntax (see submissions/README.md)") from None
    if not isinstance(spec, dict):
        raise CultureboardError(path, "is not a YAML mapping of submission.yaml fields",
                                "write it as `organization: ...`, `model: {name: ...}` (see submissions/README.md)")
    return spec


def read_mapping(path: str | Path) -> list[tuple[str, dict]]:
    """The rows of a mapping file (``.csv`` with a header, or ``.jsonl``), each with its ``FILE:LINE``."""
    path = Path(path)
    if not path.is_file():
        raise CultureboardError(path, "does not exist", "pass the mapping file with --mapping")
    if path.suffix.lower() == ".csv":
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            _check_columns(path, reader.fieldnames or [])
            rows = [(f"{path}:{reader.line_num}", row) for row in reader]
        for where, row in rows:
            if None in row:
                raise CultureboardError(where, "has more values than the header has columns", "quote values that contain commas")
    elif path.suffix.lower() == ".jsonl":
        rows = []
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CultureboardError(f"{path}:{n}", f"is not valid JSON ({exc.msg})", "write one JSON object per line") from None
            if not isinstance(row, dict):
                raise CultureboardError(f"{path}:{n}", "is not a JSON object", "write one JSON object per line")
            _check_columns(f"{path}:{n}", row)
            rows.append((f"{path}:{n}", row))
    else:
        raise CultureboardError(path, "is neither .csv nor .jsonl", f"write the mapping as CSV or JSON Lines; {_MAPPING_FIX}")
    if not rows:
        raise CultureboardError(path, "lists no images", "add one row per image")
    return rows


def _check_columns(source: Any, columns) -> None:
    missing = [c for c in MAPPING_COLUMNS if c not in columns]
    unknown = [c for c in columns if c not in MAPPING_COLUMNS + MAPPING_OPTIONAL]
    if missing or unknown:
        problem = "; ".join(p for p in (missing and f"lacks column(s) {', '.join(missing)}",
                                        unknown and f"has unknown column(s) {', '.join(map(str, unknown))}") if p)
        raise CultureboardError(source, problem, _MAPPING_FIX)


def _value(where: str, row: dict, column: str, kind: type, required: bool) -> Any:
    """The row's ``column`` as ``kind`` (str or int); empty optional values are None."""
    value = row.get(column)
    if isinstance(value, str):
        value = value.strip()
    if value is None or value == "":
        if required:
            raise CultureboardError(where, f"has no {column}", _MAPPING_FIX)
        return None
    if kind is int:
        if isinstance(value, str):
            try:
                return int(value)
            except ValueError:
                pass
        if not isinstance(value, int) or isinstance(value, bool):
            raise CultureboardError(where, f"{column} {value!r} is not a whole number", f"write {column} as 0, 1, 2, ...")
    elif not isinstance(value, str):
        raise CultureboardError(where, f"{column} {value!r} is not a string", f"write {column} as text")
    return value


def _check_images(mapping: list[tuple[str, dict]], from_folder: Path, prompts: dict[str, dict], prompt_set: str) -> list[_Image]:
    """One checked image per mapping row: known prompt, sample in range, one image per slot, a readable
    image file mapped once, edit chains consistent with the prompt set."""
    images: list[_Image] = []
    by_slot: dict[tuple[str, int], _Image] = {}
    by_file: dict[str, _Image] = {}
    for where, row in mapping:
        im = _Image(where, Path(_value(where, row, "file", str, True)).as_posix(), Path(),
                    _value(where, row, "prompt_id", str, True), _value(where, row, "sample_idx", int, True),
                    _value(where, row, "edit_step", int, False), _value(where, row, "source_file", str, False))
        prompt = prompts.get(im.prompt_id)
        if prompt is None:
            raise CultureboardError(where, f"prompt_id {im.prompt_id!r} is not in prompt set {prompt_set}",
                                    f"use the prompt_id column of prompt set {prompt_set}; check --dataset and --prompt-set")
        n = prompt["images_per_prompt"]
        if not 0 <= im.sample_idx < n:
            raise CultureboardError(where, f"sample_idx {im.sample_idx} is out of range: {im.prompt_id} has {n} images per prompt",
                                    f"use sample_idx 0..{n - 1}")
        if (im.prompt_id, im.sample_idx) in by_slot:
            raise CultureboardError(where, f"maps a second image to {im.prompt_id} sample {im.sample_idx} "
                                    f"(first at {by_slot[im.prompt_id, im.sample_idx].where})", "keep one image per prompt and sample_idx")
        if im.file in by_file:
            raise CultureboardError(where, f"maps {im.file} a second time (first at {by_file[im.file].where})",
                                    "map each image file to one prompt and sample_idx")
        if im.edit_step is not None and im.edit_step != prompt["edit_step"]:
            has = f"edit_step {prompt['edit_step']}" if prompt["edit_step"] is not None else "no edit step (text-to-image)"
            raise CultureboardError(where, f"edit_step {im.edit_step} contradicts prompt {im.prompt_id}, which has {has}",
                                    "leave edit_step empty: package takes it from the prompt set")
        im.edit_step = prompt["edit_step"]
        im.src = from_folder / im.file
        if not im.src.is_file():
            raise CultureboardError(where, f"file {im.file} does not exist in {from_folder}", "give paths relative to --from-folder")
        im.ext, im.size = _inspect(im.src)
        by_slot[im.prompt_id, im.sample_idx] = by_file[im.file] = im
        images.append(im)
    for im in images:
        _resolve_source(im, prompts[im.prompt_id], by_slot)
    return images


def _resolve_source(im: _Image, prompt: dict, by_slot: dict) -> None:
    """Set an edit step's ``source_file`` to the packaged name of the image it edited: the same sample of
    the prompt set's ``source_prompt_id`` (a ``source_file`` in the mapping must name that image)."""
    source_prompt = prompt["source_prompt_id"]
    if source_prompt is None:
        if im.source_file is not None:
            raise CultureboardError(im.where, f"has a source_file but prompt {im.prompt_id} is text-to-image", "leave source_file empty")
        return
    source = by_slot.get((source_prompt, im.sample_idx))
    if source is None:
        raise CultureboardError(im.where, f"edits {source_prompt} sample {im.sample_idx}, which the mapping does not list",
                                "map the image this step edited too")
    if im.source_file is not None and Path(im.source_file).as_posix() != source.file:
        raise CultureboardError(im.where, f"source_file {im.source_file} is not {source.file}, the image of {source_prompt} "
                                f"sample {im.sample_idx}", "each step edits the same sample of its source prompt: "
                                "correct the mapping, or leave source_file empty")
    im.source_file = source.file_name


def _inspect(path: Path) -> tuple[str, tuple[int, int]]:
    """The extension of the file's real format and its size; an error if it is not a PNG, JPEG or WebP image."""
    try:
        with Image.open(path) as img:
            fmt, size = img.format, img.size
            img.verify()
    except Exception as exc:  # PIL reports unreadable and truncated files with many exception types
        raise CultureboardError(path, f"is not a readable image ({exc.__class__.__name__})",
                                "map only image files; if the API refused this prompt, drop the row (the slot is reported missing)") from None
    if fmt not in EXTENSIONS:
        raise CultureboardError(path, f"is a {fmt} image", "convert it to PNG (lossless), JPEG or WebP")
    return EXTENSIONS[fmt], size


def _one_size(images: list[_Image], from_folder: Path) -> tuple[int, int]:
    sizes: dict[tuple[int, int], str] = {}
    for im in images:
        sizes.setdefault(im.size, im.file)
    if len(sizes) > 1:
        shown = ", ".join(f"{w}x{h} ({f})" for (w, h), f in list(sizes.items())[:3])
        raise CultureboardError(from_folder, f"the mapped images differ in size: {shown}",
                                "all images of a submission must share one width and height; regenerate or resize them")
    return next(iter(sizes))


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


def _lacks(spec: dict, field) -> bool:
    value = get(spec, field.path, _ABSENT)
    return value is _ABSENT or (value is None and not field.nullable)


def _default(spec: dict, path: str, value: Any, source: str) -> None:
    node, key = _node(spec, path, source)
    node.setdefault(key, value)


def _complete_spec(spec: dict, source: str, *, dataset: Path, prompt_set: str, width: int, height: int,
                   seed_honoured: bool) -> None:
    """Fill what package knows, then require every field submission.yaml must have."""
    if isinstance(spec.get("date"), dt.date):  # YAML reads an unquoted 2025-01-31 as a date
        spec["date"] = spec["date"].isoformat()
    _fact(spec, "format_version", FORMAT_VERSION, source)
    _default(spec, "date", dt.datetime.now(dt.timezone.utc).date().isoformat(), source)
    _fact(spec, "seeds.scheme", "prompt-set", source)
    _fact(spec, "prompt_set.name", prompt_set, source)
    _default(spec, "prompt_set.dataset", dataset.resolve().name, source)
    _fact(spec, "prompt_set.revision", local_revision(dataset), source)
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
