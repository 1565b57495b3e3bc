"""The site's image files: a WebP thumbnail of every local image and the full-size file it links to.

* ``thumbs/<submission>/<sha256>.webp``: longer side at most ``px``, pixels read as the scorers read them
  (:func:`~cultureboard.images.open_rgb`: EXIF orientation applied);
* ``images/<submission>/<sha256><suffix>``: the submitted file itself (a hard link where the file system allows,
  else a copy), for the gallery's "full size" links.

A thumbnail of an earlier build with the same settings is linked, not remade, when it is a regular file in
real folders (a link is never followed nor copied). Sources are resolved and must lie inside their submission
folder. New thumbnails are made by a pool of worker *processes*, each ``python -m cultureboard.site.thumbs``
reading its jobs from its own stdin pipe: unlike ``multiprocessing``, this never re-imports the caller's
``__main__``, so a build started from a script read on stdin (``python - < build.py``) or without a
``__main__`` guard works the same; few jobs run in threads instead (a process costs about a tenth of a second
to start).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

THUMB = {"format": "WEBP", "quality": 80, "method": 2}  # method 2: near the speed of 0, files near the size of 4
#: Below this many new thumbnails the pool is threads (no process start-up).
PROCESS_THRESHOLD = 200


def make_media(results, old: Path, new: Path, px: int, *, workers: int | None = None) -> dict[tuple[str, str], dict]:
    """Thumbnails and full-size files of every local image of ``results`` (:class:`~.load.Result` objects) into
    ``new``, reusing the thumbnails of ``old``: (sid, sha256) -> {status: "ok" | "missing" | "unreadable",
    full: site path of the full-size file or None}."""
    from cultureboard.evaluators.submission.format import get, parse_location

    from cultureboard.images import IMAGE_SUFFIXES

    params = {**THUMB, "max_side": px}
    reuse = _real_dir(old) and _regular(old / "params.json") and _json_or_none(old / "params.json") == params
    out: dict[tuple[str, str], dict] = {}
    todo: list[tuple[tuple[str, str], str, str]] = []
    for r in results:
        location = parse_location(str(get(r.spec, "images.location", "")))
        if location is None or location.kind != "local":
            continue
        root = r.folder.resolve()
        (new / "thumbs" / r.sid).mkdir(parents=True, exist_ok=True)
        reusable = reuse and _real_dir(old / r.sid)
        for im in r.images:
            key, sha = (r.sid, im["sha256"]), im["sha256"]
            if key in out:
                continue
            source = (r.folder / im["file_name"]).resolve()
            inside = source.is_relative_to(root) and source.is_file()
            suffix = Path(im["file_name"]).suffix.lower()
            full = None
            if inside and suffix in IMAGE_SUFFIXES:
                full = f"images/{r.sid}/{sha}{suffix}"
                _link_or_copy(source, new / full)
            target, earlier = new / "thumbs" / r.sid / f"{sha}.webp", old / r.sid / f"{sha}.webp"
            if reusable and _regular(earlier):
                _link_or_copy(earlier, target)
                out[key] = {"status": "ok", "full": full}
            elif not inside:
                out[key] = {"status": "missing", "full": None}
            else:
                out[key] = {"status": None, "full": full}
                todo.append((key, str(source), str(target)))
    for (key, _, _), status in zip(todo, _run([(s, t) for _, s, t in todo], px, workers)):
        out[key]["status"] = status
    (new / "thumbs").mkdir(parents=True, exist_ok=True)
    (new / "thumbs" / "params.json").write_text(json.dumps(params, sort_keys=True) + "\n")
    return out


def thumbnail(source: str, target: str, px: int) -> str:
    """Write one thumbnail; "ok", or "unreadable" when the decoder rejects the file."""
    from cultureboard.images import open_rgb

    try:
        img = open_rgb(Path(source))
        img.thumbnail((px, px))
        img.save(target, **THUMB)
    except Exception:  # noqa: BLE001 - a decoder's reaction to hostile bytes can be any exception
        return "unreadable"
    return "ok"


def _run(jobs: list[tuple[str, str]], px: int, workers: int | None) -> list[str]:
    workers = max(1, workers or os.cpu_count() or 1)
    if len(jobs) < PROCESS_THRESHOLD or workers == 1:
        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(lambda job: thumbnail(*job, px), jobs))
    parts = [jobs[k::workers] for k in range(workers)]
    procs = [subprocess.Popen([sys.executable, "-m", "cultureboard.site.thumbs"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) for _ in parts]
    try:
        for proc, part in zip(procs, parts):  # each job list is written whole before reading: no pipe deadlock
            proc.stdin.write(json.dumps({"px": px, "jobs": part}).encode())
            proc.stdin.close()
        answers = []
        for proc, part in zip(procs, parts):
            text = proc.stdout.read()
            code = proc.wait()
            done = json.loads(text) if code == 0 and text else None
            if not isinstance(done, list) or len(done) != len(part):  # a worker died: redo its part here
                done = [thumbnail(*job, px) for job in part]
            answers.append(done)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    statuses = [""] * len(jobs)
    for k, done in enumerate(answers):
        statuses[k::workers] = done
    return statuses


def _link_or_copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target, follow_symlinks=False)  # same file system: no copy
    except OSError:
        shutil.copyfile(source, target, follow_symlinks=False)


def _real_dir(path: Path) -> bool:
    return stat.S_ISDIR(st.st_mode) if (st := _lstat(path)) else False


def _regular(path: Path) -> bool:
    return stat.S_ISREG(st.st_mode) if (st := _lstat(path)) else False


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def _json_or_none(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def main() -> None:
    """Worker: {px, jobs: [[source, target], ...]} on stdin -> the statuses as a JSON list on stdout."""
    task = json.load(sys.stdin)
    json.dump([thumbnail(source, target, task["px"]) for source, target in task["jobs"]], sys.stdout)


if __name__ == "__main__":
    main()
