"""Rules on ``metadata.jsonl``, read as every stage reads it (:func:`~..format.metadata_lines`: split on ``\\n``
only, streamed, at most ``max_metadata_lines`` lines): strict JSON objects with the fields of
:data:`~..format.METADATA_FIELDS`, no duplicated lines, prompt/sample pairs or files, paths that stay inside the
folder, declared refusals without a file. The row rules (:func:`check_duplicates`) take any source of rows, so
``package`` applies them to its mapping.
"""

from __future__ import annotations

import hashlib
import json
import re

from ..format import (
    METADATA,
    METADATA_FIELDS,
    REFUSAL_FORBIDS,
    DuplicateKeyError,
    NotFiniteError,
    is_refusal,
    json_problems,
    metadata_lines,
    parse_metadata_line,
)
from .paths import PATH_FIX, open_listed, path_problem
from .report import Run, remake, show, type_name, type_ok

CODES: dict[str, str] = {
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
}

_UNKNOWN_KEYS = 100  # distinct unknown metadata keys reported one by one
_CANONICAL = json.JSONEncoder(sort_keys=True)  # a line's content, whatever its key order (json.dumps's own encoding)
_NAMES = frozenset(f.name for f in METADATA_FIELDS)
_SHA256 = re.compile(r"[0-9a-f]{64}")
#: 19 digits in a row: the least an integer beyond 64 bits has, the one value that parse_metadata_line lets through
#: and json_problems finds (JSON keys are strings; NaN and infinity are refused while parsing), so a line
#: without it needs no json_problems walk
_LONG_NUMBER = re.compile(rb"[0-9]{19}")
#: The fix of a problem of one line: in the mapping (or generate's run) that made it.
LINE_FIX = "correct the image's row in the mapping"


def check(run: Run) -> None:
    """Read every line into ``run.parsed`` (line number, its well-formed fields), then keep in ``run.rows`` the
    lines that came first of each slot and file."""
    run.parsed = read(run)
    run.rows = check_duplicates(run, run.parsed)


def read(run: Run) -> list[tuple[int, dict]]:
    """(line number, the row's well-formed fields) of every distinct line, read line by line as
    :func:`~..format.read_metadata` reads them (memory: the rows, a 16-byte digest a line, the problems kept)."""
    fh = open_listed(run, METADATA, run.limits.max_metadata_bytes)
    if fh is None:
        return []
    rows: list[tuple[int, dict]] = []
    seen: dict[bytes, int] = {}
    unknown: dict[str, list[int]] = {}  # key -> [first line, lines]; at most _UNKNOWN_KEYS keys, the rest counted
    more_unknown = 0
    with fh:
        for n, raw, length in metadata_lines(fh, run.limits.max_line_bytes):
            where = f"{METADATA}:{n}"
            if n > run.limits.max_metadata_lines:
                run.error("metadata.too_many_lines", where, f"is beyond the limit of {run.limits.max_metadata_lines:,} "
                          "lines; the rest of the file was not read", "submit one line per image of the prompt set")
                break
            if raw is None:
                run.error("metadata.bad_json", where, f"is {length:,} bytes; a line may have "
                          f"{run.limits.max_line_bytes:,}", remake("write short values in the mapping"))
                continue
            if not raw.strip():
                continue
            obj = _parse_line(run, where, raw)
            if obj is None:
                continue
            digest = hashlib.blake2b(_CANONICAL.encode(obj).encode(), digest_size=16).digest()
            if digest in seen:
                run.error("metadata.duplicate_line", where, f"repeats line {seen[digest]}",
                          remake("map each image once"))
                continue
            seen[digest] = n
            for key in obj:
                if key in _NAMES:
                    continue
                if key in unknown:
                    unknown[key][1] += 1
                elif len(unknown) < _UNKNOWN_KEYS:
                    unknown[key] = [n, 1]
                else:
                    more_unknown += 1
            rows.append((n, check_row(run, where, obj)))
    for key, (first, count) in unknown.items():
        run.warn("metadata.unknown_field", f"{METADATA}:{first}", f"key {show(key)} is not a field of the "
                 f"format (on {count} lines; ignored)", f"use only {', '.join(f.name for f in METADATA_FIELDS)}")
    if more_unknown:
        run.warn("metadata.unknown_field", METADATA, f"{more_unknown:,} more uses of keys that are not fields of "
                 "the format (ignored)", f"use only {', '.join(f.name for f in METADATA_FIELDS)}")
    if not rows and not any(p.file.startswith(METADATA) for p in run.problems) and not run.omitted:
        run.error("metadata.empty", METADATA, "lists no images", remake("map every image of the prompt set"))
    return rows


def _parse_line(run: Run, where: str, raw: bytes) -> dict | None:
    """One line as a JSON object of JSON values; None (reported) otherwise."""
    fix = remake("write the mapping as the tools expect (see submissions/README.md)")
    try:
        obj = parse_metadata_line(raw)
    except DuplicateKeyError as exc:
        run.error("metadata.duplicate_key", where, f"gives {show(exc.args[0])} twice", "keep one of them")
        return None
    except UnicodeDecodeError as exc:
        run.error("metadata.bad_json", where, f"is not UTF-8 (byte {exc.start})", fix)
        return None
    except json.JSONDecodeError as exc:
        run.error("metadata.bad_json", where, f"is not valid JSON: {exc.msg} at column {exc.colno}", fix)
        return None
    except NotFiniteError as exc:
        run.error("metadata.bad_json", where, f"has the number {show(exc.args[0])}, which JSON does not allow", fix)
        return None
    except (ValueError, RecursionError) as exc:
        run.error("metadata.bad_json", where, f"is not usable JSON ({exc.__class__.__name__})", fix)
        return None
    if not isinstance(obj, dict):
        run.error("metadata.not_object", where, f"is {type(obj).__name__}, not a JSON object", fix)
        return None
    bad = json_problems(obj) if _LONG_NUMBER.search(raw) else None
    if bad:
        run.error("metadata.bad_json", where, f"{bad[0][0]} {bad[0][1]}", remake("write integers within 64 bits"))
        return None
    return obj


def check_row(run: Run, where: str, obj: dict) -> dict:
    """The fields of one line that are present, typed right and safe."""
    row = {}
    refusal = is_refusal(obj)
    for f in METADATA_FIELDS:
        value = obj.get(f.name)
        if refusal and value is not None and f.name in REFUSAL_FORBIDS:
            run.error("metadata.bad_refusal", where, f"declares a refusal but has {f.name}",
                      remake("a refused sample has no image: leave its file empty in the mapping, or drop refused"))
        elif value is None:
            if f.required and not (refusal and f.name in (*REFUSAL_FORBIDS, "seed")):
                run.error("metadata.missing_field", where, f"has no {f.name} ({f.help})", remake(LINE_FIX))
        elif not type_ok(value, f.type):
            run.error("metadata.wrong_type", where, f"{f.name} is {show(value)}, not {type_name(f.type)}",
                      remake(f"write {f.name} as {type_name(f.type)} in the mapping"))
        else:
            row[f.name] = value
    for key, value in obj.items():
        if key not in _NAMES:  # the format's own names are short and printable
            run.text(where, f"key {show(key, 30)}", key, run.limits.max_name_chars)
        if isinstance(value, str):
            run.text(where, key if key in row else f"key {show(key, 30)}'s value", value, run.limits.max_name_chars)
    if row.get("refused") is False or (row.get("reason") is not None and not refusal):
        run.error("metadata.bad_refusal", where, "has \"refused\": false or a reason without \"refused\": true",
                  remake("give refused true (and a reason) only on the mapping row of a refused sample"))
        row.pop("refused", None)
    if "sha256" in row and not _SHA256.fullmatch(row["sha256"]):
        run.error("metadata.bad_sha256", where, f"sha256 {show(row.pop('sha256'))} is not 64 lower-case hex digits",
                  remake("let the tools compute it"))
    if row.get("sample_idx", 0) < 0:
        run.error("metadata.sample_out_of_range", where, f"sample_idx {row.pop('sample_idx')} is negative",
                  remake("number a prompt's images 0, 1, ... images_per_prompt - 1 in the mapping"))
    if "file_name" in row and (bad := path_problem(row["file_name"])):
        run.error(bad[0], where, bad[1], remake(PATH_FIX))
        del row["file_name"]
    return row


def check_duplicates(run: Run, rows: list[tuple[int, dict]], source: str = METADATA,
                     file_key: str = "file_name") -> list[tuple[int, dict]]:
    """Report repeated (prompt_id, sample_idx) pairs and files (``file_key``) among ``rows`` (line, row) of
    ``source``; return the rows that came first."""
    samples: dict[tuple, int] = {}
    files: dict[str, int] = {}
    unique = []
    for n, row in rows:
        where, sample, name = f"{source}:{n}", (row.get("prompt_id"), row.get("sample_idx")), row.get(file_key)
        repeated = False
        if None not in sample and sample in samples:
            run.error("metadata.duplicate_sample", where, f"prompt {show(sample[0])} sample {sample[1]} is also on "
                      f"line {samples[sample]}", remake("keep one mapping row (and one image) per prompt and sample"))
            repeated = True
        if name is not None and name in files:
            run.error("metadata.duplicate_file", where, f"file {show(name)} is also on line {files[name]}",
                      remake("map each image file to one prompt and sample"))
            repeated = True
        if not repeated:
            if None not in sample:
                samples[sample] = n
            if name is not None:
                files[name] = n
            unique.append((n, row))
    return unique
