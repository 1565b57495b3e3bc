"""The site's image files: a WebP thumbnail of every local image and the full-size file it links to.

* ``thumbs/<submission>/<sha256>.webp``: longer side at most ``px``, pixels read as the scorers read them
  (:func:`~cultureboard.images.open_rgb`: EXIF orientation applied);
* ``images/<submission>/<sha256><suffix>``: a copy of the submitted file, for the gallery's "full size" links
  (never a hard link: the validator refuses a submission file with more than one link). Only verified bytes are
  published (:func:`verified_bytes`: one link, validate's image checks, the declared sha256); any other image is
  left out, with status "unverified" and a problem naming the submission. Each image is read once, by a worker
  (:func:`media`): its bytes checked, written as the copy and thumbnailed from memory.

A submission whose images are unchanged since the previous build keeps that build's folders whole (moved in
at the very end, see :func:`start_media`); otherwise a thumbnail of the previous build with the same settings is
linked, not remade, when it is a regular file in real folders (a link is never followed nor copied). A source
must be a regular file inside its submission folder (found by listing the folder; links are neither followed
nor listed). The images are published and new thumbnails made by a pool of worker *processes*, each
``python -m cultureboard.site.thumbs`` reading its jobs from its stdin (a temporary file, never a pipe the parent
could block on writing to a worker that does not read): unlike ``multiprocessing``, this
never re-imports the caller's ``__main__``, so a build started from a script read on stdin (``python - <
build.py``) or without a ``__main__`` guard works the same; few jobs run in threads instead (a process costs about
a tenth of a second to start). The workers run while the build renders the pages that show no image; each
submission's pages follow as soon as its images are done (:func:`start_media`).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from cultureboard.workers import WorkerStalled, read_all, wait_for
from cultureboard.errors import CultureboardError

THUMB = {"format": "WEBP", "quality": 80, "method": 2}  # method 2: near the speed of 0, files near the size of 4
#: Below this many images to publish the pool is threads (no process start-up).
PROCESS_THRESHOLD = 200


def start_media(results, previous: Path, new: Path, px: int, *, workers: int | None = None) -> "Media":
    """Start making the thumbnails and full-size files of every local image of ``results`` (:class:`~.load.Result`
    objects) into ``new``, reusing those of the site ``previous``. Returns at once, the workers running, so that the
    caller renders what needs no image meanwhile; :meth:`Media.ready` waits for one submission's images,
    :meth:`Media.result` for all. Use the :class:`Media` as a context manager: leaving the block (an error raised
    or not) kills and waits for every worker still running.

    A submission whose ``metadata.jsonl`` and image location are unchanged since ``previous`` was built (its
    ``thumbs/<id>/manifest.json`` says so, with the same thumbnail settings) keeps its folders whole: ``finish()``
    moves them into ``new`` (call it last, just before ``new`` replaces ``previous``: until then ``previous`` is
    untouched). Any other submission gets fresh folders, thumbnails of unchanged images linked from ``previous``
    one by one, new ones made by the worker pool."""
    from cultureboard.evaluators.submission.format import get, parse_location

    params = {**THUMB, "max_side": px}
    out: dict[tuple[str, str], dict] = {}
    jobs: list[tuple[dict, str | None, list]] = []  # (the image's entry, an earlier thumbnail to link, the job)
    moves: list[tuple[Path, Path]] = []
    fresh: dict[str, tuple[str, dict[str, dict]]] = {}  # sid -> (fingerprint, sha256 -> entry)
    ends: dict[str, int] = {}  # sid -> the number of jobs up to its last one
    reusable = _old_params(previous) == params
    for r in results:
        location = str(get(r.spec, "images.location", ""))
        parsed = parse_location(location)
        if parsed is None or parsed.kind != "local":
            continue
        fingerprint = _fingerprint(r, location, params)
        kept = _manifest(previous, r.sid, fingerprint, r) if reusable else None
        if kept is not None:
            for sha, entry in kept.items():
                out[(r.sid, sha)] = entry
            moves += [(previous / part / r.sid, new / part / r.sid) for part in ("thumbs", "images")]
            continue
        files = _regular_files(r.folder)
        for part in ("thumbs", "images"):
            (new / part / r.sid).mkdir(parents=True, exist_ok=True)
        earlier = f"{previous}/thumbs/{r.sid}" if reusable and _real_dir(previous / "thumbs" / r.sid) else None
        entries: dict[str, dict] = {}
        for im in r.images:
            sha = im["sha256"]
            if sha in entries:
                continue
            name = os.path.normpath(im["file_name"])
            if name not in files:
                out[(r.sid, sha)] = entries[sha] = {"status": "missing", "full": None}
                continue
            full = f"images/{r.sid}/{sha}{os.path.splitext(name)[1].lower()}"
            out[(r.sid, sha)] = entries[sha] = {"status": None, "full": full}
            old = f"{earlier}/{sha}.webp" if earlier and _regular(Path(earlier, f"{sha}.webp")) else None
            thumb = None if old else f"{new}/thumbs/{r.sid}/{sha}.webp"
            jobs.append((entries[sha], old, [f"{r.folder}/{name}", name, sha, f"{new}/{full}", thumb]))
        fresh[r.sid] = (fingerprint, entries)
        ends[r.sid] = len(jobs)
    workers = max(1, workers or os.cpu_count() or 1)
    tasks = [job for _, _, job in jobs]
    pool = _Threads if len(tasks) < PROCESS_THRESHOLD or workers == 1 else _Processes
    return Media(new, params, out, jobs, fresh, moves, ends, pool(tasks, px, workers))


@dataclass
class Media:
    """The image files of one build, being made by ``pool`` (:func:`start_media`)."""

    new: Path
    params: dict
    out: dict  # (sid, sha256) -> {status, full}; the status of a job's image set once it is done (_apply)
    jobs: list  # (the image's entry in out, an earlier thumbnail to link or None, the job)
    fresh: dict  # sid -> (fingerprint, sha256 -> entry): the submissions whose folders are made anew
    moves: list  # (previous folder, new folder) of the submissions whose folders are kept whole
    ends: dict  # sid -> the number of jobs up to its last one (a submission's jobs follow each other)
    pool: "_Threads | _Processes"
    problems: list = field(default_factory=list)  # the images left out, of the jobs done
    applied: int = 0  # the jobs whose statuses are in ``out``: the first ``applied``
    waited: float = 0.0  # seconds the caller spent waiting for the workers

    def ready(self, sid: str) -> dict:
        """``out``, the images of ``sid`` in it done (and those of the submissions before it): its pages can be
        rendered while the workers make the rest. Raises as :meth:`result` does."""
        self._apply(self.ends.get(sid, 0))
        return self.out

    def result(self):
        """Wait for the workers; returns ((sid, sha256) -> {status: "ok" | "missing" | "unreadable" | "unverified",
        full: site path of the full-size file or None}, finish, problems: [{submission, file, problem}] of the
        images left out because their bytes are not the declared, valid ones). A worker that died or hung, or a
        failed write, raises one :class:`CultureboardError`."""
        self._apply(len(self.jobs))
        for sid, (fingerprint, entries) in self.fresh.items():
            (self.new / "thumbs" / sid / MANIFEST).write_text(json.dumps(
                {"fingerprint": fingerprint, "params": self.params, "images": entries}, sort_keys=True) + "\n")
        (self.new / "thumbs").mkdir(parents=True, exist_ok=True)
        (self.new / "thumbs" / "params.json").write_text(json.dumps(self.params, sort_keys=True) + "\n")
        return self.out, self._finish, self.problems

    def _apply(self, end: int) -> None:
        """Wait for the jobs up to ``end`` and set their images' entries."""
        if end <= self.applied:
            return
        waiting_at = time.perf_counter()
        statuses = self.pool.statuses(self.applied, end)
        self.waited += time.perf_counter() - waiting_at
        for (entry, old, job), (status, problem) in zip(self.jobs[self.applied:end], statuses):
            if problem is not None:  # neither published nor thumbnailed
                entry.update(status="unverified", full=None)
                self.problems.append({"submission": Path(job[3]).parent.name, "file": job[1], "problem": problem})
            elif old is not None:  # the earlier build's thumbnail of these very bytes (the same sha256, verified)
                _link_or_copy(Path(old), Path(self.new, "thumbs", Path(job[3]).parent.name, f"{job[2]}.webp"))
                entry["status"] = "ok"
            else:
                entry["status"] = status
        self.applied = end

    def _finish(self) -> None:
        for source, target in self.moves:
            if _real_dir(source):
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(source, target)

    def __enter__(self) -> "Media":
        return self

    def __exit__(self, *exc) -> None:
        self.pool.close()


def media(source: str, name: str, sha256: str, full: str, thumb: str | None, px: int) -> tuple[str, str | None]:
    """One image's job: publish the submission file ``source`` (``name`` in its metadata) as ``full`` and make its
    thumbnail ``thumb`` (None: the caller links an earlier one) from the same bytes, read once. Returns (status,
    problem): the problem (and nothing written) when the file is not what a site may publish
    (:func:`verified_bytes`), else the status of :func:`thumbnail` ("ok" without a thumbnail to make)."""
    data, problem = verified_bytes(source, name, sha256)
    if problem is not None:
        return "unverified", problem
    with open(full, "wb") as fh:  # a failing write is raised: not the image's fault, it ends the build
        fh.write(data)
    return (thumbnail(io.BytesIO(data), thumb, px) if thumb is not None else "ok"), None


def verified_bytes(source: str, name: str, sha256: str) -> tuple[bytes | None, str | None]:
    """The bytes of ``source`` when they are what a site may publish: a regular file (never through a link) with one
    link (a hard link may share bytes with a file outside the submission), that passes the checks ``validate``
    applies (:func:`~cultureboard.images.inspect_image` with validate's limits: format, header size before
    decoding, structure) and hashes to the declared ``sha256``; otherwise (None, the problem). The bytes checked
    are the bytes published: what a writer changes afterwards never reaches the site."""
    from cultureboard.evaluators.submission.validate import Limits
    from cultureboard.images import inspect_image

    limits = Limits().image
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # never a link, never blocks on a pipe
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror})"
    with open(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, "is not a regular file"
        if st.st_nlink > 1:
            return None, f"has {st.st_nlink} hard links (it may be a file outside the submission)"
        if st.st_size > limits.max_file_bytes:
            return None, f"is {st.st_size:,} bytes; the limit is {limits.max_file_bytes:,}"
        try:
            data = fh.read(limits.max_file_bytes + 1)
        except OSError as exc:
            return None, f"cannot be read ({exc.strerror})"
    info = inspect_image(data, name=name, limits=limits)
    problem = ("; ".join(p.message for p in info.problems) or
               (None if info.sha256 == sha256 else "differs from the sha256 metadata.jsonl declares"))
    return (None, problem) if problem is not None else (data, None)


MANIFEST = "manifest.json"


def _fingerprint(r, location: str, params: dict) -> str:
    """What a submission's media folders depend on: its metadata.jsonl, image location and thumbnail settings."""
    from cultureboard.evaluators.submission.format import METADATA

    h = hashlib.sha256(json.dumps([location, params], sort_keys=True).encode())
    h.update((r.folder / METADATA).read_bytes())
    return h.hexdigest()


def _manifest(previous: Path, sid: str, fingerprint: str, r) -> dict | None:
    """The previous build's entries of ``sid`` when its folders can be kept whole: the same fingerprint, real
    folders holding only regular files, and a file for every thumbnail and full-size image the manifest names."""
    folder, images = previous / "thumbs" / sid, previous / "images" / sid
    if not (_real_dir(folder) and _regular(folder / MANIFEST)):
        return None
    found = _json_or_none(folder / MANIFEST)
    if not isinstance(found, dict) or found.get("fingerprint") != fingerprint or not isinstance(found.get("images"), dict):
        return None
    entries = found["images"]
    if {im["sha256"] for im in r.images} != set(entries):
        return None
    thumbs = _listing(folder)
    fulls = _listing(images) if os.path.lexists(images) else set()
    if thumbs is None or fulls is None:
        return None
    for sha, entry in entries.items():
        if not isinstance(entry, dict) or entry.get("status") not in ("ok", "missing", "unreadable"):
            return None
        if entry["status"] == "ok" and f"{sha}.webp" not in thumbs:
            return None
        full = entry.get("full")
        if full is not None and (not isinstance(full, str) or not full.startswith(f"images/{sid}/")
                                 or full.rsplit("/", 1)[-1] not in fulls):
            return None
    return {sha: {"status": e["status"], "full": e.get("full")} for sha, e in entries.items()}


def _listing(folder: Path) -> set[str] | None:
    """The names in ``folder`` when it is a real folder of regular files only (no link, no sub-folder), else None."""
    if not _real_dir(folder):
        return None
    names = set()
    with os.scandir(folder) as entries:
        for entry in entries:
            if not entry.is_file(follow_symlinks=False):
                return None
            names.add(entry.name)
    return names


def _regular_files(root: Path) -> set[str]:
    """Relative paths of the regular files under ``root``, links neither followed nor listed (one scandir per
    folder: no per-image resolve)."""
    found, stack = set(), [("", str(root))]
    while stack:
        prefix, folder = stack.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    rel = prefix + entry.name
                    if entry.is_dir(follow_symlinks=False):
                        stack.append((rel + "/", entry.path))
                    elif entry.is_file(follow_symlinks=False):
                        found.add(rel)
        except OSError:
            continue
    return found


def _old_params(previous: Path):
    return _json_or_none(previous / "thumbs" / "params.json") if _regular(previous / "thumbs" / "params.json") else None


def thumbnail(source, target: str, px: int) -> str:
    """Write one thumbnail of ``source`` (a path or a file object); "ok", or "unreadable" when the decoder rejects
    it. A failing write (a full disk, a file size limit) is raised: it is not the image's fault, and ends the build."""
    from cultureboard.images import open_rgb

    try:
        img = open_rgb(source)
        img.thumbnail((px, px))
    except Exception:  # noqa: BLE001 - a decoder's reaction to hostile bytes can be any exception
        return "unreadable"
    img.save(target, **THUMB)
    return "ok"


#: The command of a thumbnail worker process (:func:`main`).
WORKER = [sys.executable, "-m", "cultureboard.site.thumbs"]
#: How often at most a working worker process sends its statuses (at least once a job when a job takes longer).
FLUSH_SECONDS = 0.2
_FIX = "check the free space, the file size limit (ulimit -f) and the memory of this machine, then build again"


def _write_error(exc: OSError) -> CultureboardError:
    return CultureboardError(exc.filename or "thumbnails", f"cannot be written ({exc.strerror or exc})", _FIX)


class _Threads:
    """Few :func:`media` jobs, run by ``workers`` threads of this process (no process start-up)."""

    def __init__(self, jobs: list[list], px: int, workers: int):
        self._pool = ThreadPoolExecutor(workers)
        self._done = [self._pool.submit(media, *job, px) for job in jobs]

    def statuses(self, start: int, end: int) -> list[tuple[str, str | None]]:
        """(status, problem) of the jobs from ``start`` to ``end``, once done; a failed write raises one
        :class:`CultureboardError`."""
        try:
            return [done.result() for done in self._done[start:end]]
        except OSError as exc:
            raise _write_error(exc) from None

    def close(self) -> None:
        self._pool.shutdown(cancel_futures=True)


class _Processes:
    """:func:`media` jobs shared among ``workers`` worker processes, started at once, job ``j`` done by worker
    ``j % workers``. Their status lines are read by a thread as they come (no worker waits on a full pipe while the
    caller does other work), so that the caller can use the first jobs' while the others are being done. A worker
    process that dies (killed, out of memory, a write refused) or hangs (silent for
    ``cultureboard.workers.STALL_SECONDS``) ends the build with one error as soon as the caller waits: the parent
    never waits on a dead or hung worker nor redoes its part."""

    def __init__(self, jobs: list[list], px: int, workers: int):
        self._parts = [jobs[k::workers] for k in range(workers)]
        self._errors = [tempfile.TemporaryFile() for _ in self._parts]  # not a pipe: a long traceback never blocks
        self._tasks = [tempfile.TemporaryFile() for _ in self._parts]  # not a pipe: a worker that never reads never
        for task, part in zip(self._tasks, self._parts):                # blocks the parent
            task.write(json.dumps({"px": px, "jobs": part}).encode())
            task.seek(0)
        self._procs: list[subprocess.Popen] = []
        self._codes: list[int | None] = [None] * workers  # each worker's exit status, once its output ended
        self._answers: list[list[tuple]] = [[] for _ in self._parts]  # each worker's (status, problem) so far
        self._rest = [b""] * workers  # each worker's output after its last full line
        self._ended: BaseException | bool = False  # the reading ended: True, or what stopped it
        self._heard = threading.Condition()  # notified on every line and at the end
        self._reader = threading.Thread(target=self._read, name="thumbnail workers", daemon=True)
        try:
            for task, err in zip(self._tasks, self._errors):
                self._procs.append(subprocess.Popen(WORKER, stdin=task, stdout=subprocess.PIPE, stderr=err))
        except BaseException:
            self.close()
            raise
        self._reader.start()

    def _read(self) -> None:
        """The reading thread: every worker read at once, each output ending when its worker exits, however it
        exits; the first worker to fail stops it (its siblings are not waited for: :meth:`close` kills them)."""
        try:
            read_all([proc.stdout for proc in self._procs], heard=self._piece)
            ended: BaseException | bool = True
        except BaseException as exc:  # noqa: BLE001 - handed to statuses(), in the caller's thread
            ended = exc
        with self._heard:
            self._ended = ended
            self._heard.notify_all()

    def _piece(self, k: int, piece: bytes) -> None:
        """What worker ``k`` sent: status lines, or its end (b"")."""
        if not piece:
            self._codes[k] = wait_for(self._procs[k])
            if self._codes[k] != 0 or self._rest[k] or len(self._answers[k]) != len(self._parts[k]):
                raise self._failure(k)
            return
        *lines, self._rest[k] = (self._rest[k] + piece).split(b"\n")
        try:
            answers = [tuple(json.loads(line)) for line in lines]
        except ValueError:
            raise CultureboardError("a thumbnail worker process", "sent something other than its status lines",
                                    _FIX) from None
        with self._heard:
            self._answers[k] += answers
            self._heard.notify_all()

    def _failure(self, k: int) -> CultureboardError:
        """The error of worker ``k``, which ended without answering every job: how it ended, its last word."""
        code, err = self._codes[k], self._errors[k]
        err.seek(0)
        last = (err.read().decode("utf-8", "replace").strip().splitlines() or [""])[-1][:300]
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        return CultureboardError("a thumbnail worker process", f"{how}{f' ({last})' if last else ''}", _FIX)

    def statuses(self, start: int, end: int) -> list[tuple[str, str | None]]:
        """(status, problem) of the jobs from ``start`` to ``end``, once every worker has sent theirs."""
        workers = len(self._parts)
        needed = [len(range(k, end, workers)) for k in range(workers)]  # of each worker's answers

        def arrived() -> bool:
            return self._ended is not False or all(len(done) >= n for done, n in zip(self._answers, needed))

        with self._heard:
            self._heard.wait_for(arrived)
            if isinstance(self._ended, WorkerStalled):
                raise CultureboardError("a thumbnail worker process", f"is alive but {self._ended} (hung)", _FIX)
            if isinstance(self._ended, BaseException):
                raise self._ended
            return [self._answers[j % workers][j // workers] for j in range(start, end)]

    def close(self) -> None:
        """Kill and wait for every worker still running (a hung one, or all of them when the caller failed)."""
        for proc in self._procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        if self._reader.is_alive():
            self._reader.join()  # its pipes ended with their workers
        for proc in self._procs:
            proc.stdout.close()
        for file in self._errors + self._tasks:
            file.close()


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
    """Worker: {px, jobs: [[source, name, sha256, full, thumb], ...]} on stdin -> the [status, problem] of each job's
    :func:`media` on stdout, one JSON list a line, sent together once :data:`FLUSH_SECONDS` have passed since the
    last lines were sent (the parent sees the worker is alive, and is not woken for every image; held here, not in
    the stream's buffer, which ``PYTHONUNBUFFERED`` or ``-u`` would turn off)."""
    task = json.load(sys.stdin)
    lines, sent = [], time.monotonic()
    try:
        for job in task["jobs"]:
            lines.append(json.dumps(media(*job, task["px"])) + "\n")
            if time.monotonic() - sent >= FLUSH_SECONDS:
                sys.stdout.write("".join(lines))
                sys.stdout.flush()
                lines, sent = [], time.monotonic()
        sys.stdout.write("".join(lines))  # the rest, sent as the worker exits
    except OSError as exc:  # one line for the parent's error, not a traceback
        sys.exit(f"{exc.filename or 'a thumbnail'}: cannot be written ({exc.strerror or exc})")


if __name__ == "__main__":
    main()
