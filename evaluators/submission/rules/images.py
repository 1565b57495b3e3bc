"""Rules on the image files (local location), by :func:`cultureboard.images.inspect_image`: size cap, format
matches the extension, dimensions within :class:`~.report.Limits` (read from the header, before any pixel is
decoded), intact file, no PNG text bomb, 8 bits a sample, one frame, the displayed size (after EXIF orientation)
equal to ``generation.width`` x ``generation.height``; then sha256 matches, and no image submitted for two prompts
with different texts.

Decoding trade-off. Each image is read once, hashed and opened from memory (the header only), so validation
costs little more than reading and hashing. The recorded sha256, computed when the image was written, catches
any change after that (transfer, storage, copying, truncation). What it cannot catch is a file already broken
when it was hashed; for that the structure is checked: a PNG's chunks walked to IEND, which must end the file, a
JPEG's end-of-image marker, a WebP's RIFF length (a crash mid-write, a cut download, appended data). Corrupt pixel
data inside an intact structure (an encoder bug, a crafted file) is found only by decoding: ``full_decode=True``
also checks every PNG chunk's CRC-32 and decodes every pixel, at about 20x the cost of hashing for 512 px PNGs;
the evaluator decodes every image when scoring anyway.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path, PurePosixPath

from cultureboard.images import IMAGE_CODES, inspect_image

from ..format import METADATA, SUBMISSION_YAML
from .paths import dangerous
from .report import Limits, Problem, Run, open_nofollow, problem, remake, show

CODES: dict[str, str] = {
    "file.skipped": "images on the Hub are not downloaded by validate, so files were not checked (warning)",
    "file.missing": "a listed file does not exist",
    **IMAGE_CODES,  # file.unreadable, file.too_large, ... of cultureboard.images.inspect_image
    "file.sha256_mismatch": "the file's sha256 is not the one metadata.jsonl records",
    "file.duplicate_image": "the same image for prompts with different texts (warning without a dataset)",
}


def check(run: Run) -> None:
    """Check each listed local image once, in a thread pool (with an unknown location: those that exist), against
    the displayed size of the spec when known; sets ``run.listed``, the file names that are listed and local."""
    rows, spec = run.parsed, run.spec
    location = spec.location if spec is not None else None
    run.listed = {row["file_name"] for _, row in rows if "file_name" in row}
    if location is not None and location.kind == "hub":
        run.warn("file.skipped", SUBMISSION_YAML, f"images are on the Hub ({location.path}@{location.revision}) "
                 "and were not checked", "the evaluator checks them after downloading; validate a local copy to check now")
        run.listed = set()
        return
    todo, seen = [], set()
    for n, row in rows:
        name = row.get("file_name")
        if name is None or name in seen:
            continue
        seen.add(name)
        if location is not None and location.path != "." and not name.startswith(location.path.rstrip("/") + "/"):
            run.error("metadata.outside_location", f"{METADATA}:{n}", f"file_name {show(name)} is not in the "
                      f"images.location folder {location.path}/", remake("let the tools name the images"))
        elif name in run.files:
            todo.append((name, n, row.get("sha256")))
        elif location is not None and not run.flagged.intersection(map(str, (name, *PurePosixPath(name).parents))):
            run.error("file.missing", f"{METADATA}:{n}", f"lists {show(name)}, which does not exist",
                      remake("keep every image the tools wrote (a sample the model refused is a declared refusal in "
                             "the mapping)"))
    threads = run.workers or min(8, os.cpu_count() or 1)
    step = max(1, -(-len(todo) // (4 * threads)))  # a few batches a thread: small images cost less than handing out one
    size = spec.size if spec is not None else None
    one = partial(_check_batch, run.root, run.limits, size, run.full_decode)
    with ThreadPoolExecutor(threads) as pool:
        for problems in pool.map(one, [todo[i: i + step] for i in range(0, len(todo), step)]):
            for p in problems:
                run.add(p)
    run.checked_images = len(todo)


def _check_image(root: Path, limits: Limits, size: tuple[int, int] | None, full_decode: bool,
                 item: tuple[str, int, str | None]) -> list[Problem]:
    """Every problem of one listed image file (:func:`~cultureboard.images.inspect_image`: read once,
    checked from its header and structure), its sha256, and whether it is an executable or an archive."""
    name, line, declared = item
    info = inspect_image(os.path.join(root, name), name=name, limits=limits.image, size=size, full_decode=full_decode)
    out = [problem("error", p.code, name, p.message, p.fix) for p in info.problems]
    if info.format is None and info.sha256 is not None:  # read, but not an image: say what it is, if dangerous
        try:
            with open_nofollow(os.path.join(root, name)) as fh:
                danger = dangerous(name, fh.read(512))
        except OSError:
            danger = None
        if danger:
            out = [problem("error", danger[0], name, danger[1], "submit only PNG, JPEG or WebP images")]
    if declared and info.sha256 is not None and info.sha256 != declared:
        out.insert(0, problem("error", "file.sha256_mismatch", name, f"its sha256 differs from the one {METADATA}:{line} "
                              "records: the file changed after it was written",
                              remake("restore the file as the tools wrote it, or correct the image")))
    return out


def _check_batch(root: Path, limits: Limits, size: tuple[int, int] | None, full_decode: bool,
                 items: list[tuple[str, int, str | None]]) -> list[Problem]:
    """:func:`_check_image` of each item, their problems in the items' order."""
    return [p for item in items for p in _check_image(root, limits, size, full_decode, item)]


def check_copies(run: Run) -> None:
    """One image content listed for prompts whose texts differ (without a dataset: whose ids differ)."""
    prompts = run.prompts
    if prompts is None and run.dataset is not None:
        return  # a dataset that could not be used is reported already
    first: dict[str, tuple[int, dict]] = {}
    for n, row in run.rows:
        sha, pid = row.get("sha256"), row.get("prompt_id")
        if sha is None or pid is None:
            continue
        if sha not in first:
            first[sha] = (n, row)
            continue
        m, other = first[sha]
        if prompts is None:
            if other["prompt_id"] != pid:
                run.warn("file.duplicate_image", f"{METADATA}:{n}", f"has the same image as line {m} (prompt "
                         f"{show(other['prompt_id'])}) for prompt {show(pid)}", "pass --dataset to compare the prompt texts")
            continue
        a, b = prompts.get(other["prompt_id"]), prompts.get(pid)
        if a and b and (a["text"], a["negative_prompt"]) != (b["text"], b["negative_prompt"]):
            run.error("file.duplicate_image", f"{METADATA}:{n}", f"has the same image as line {m} (prompt "
                      f"{show(other['prompt_id'])}), but prompt {show(pid)} has a different text",
                      remake("generate each prompt's own image"))
