"""The site's image files: a WebP thumbnail of every local image and the full-size file it links to.

* ``thumbs/<submission>/<sha256>.webp``: longer side at most ``px``, pixels read as the scorers read them
  (:func:`~cultureboard.images.open_rgb`: EXIF orientation applied);
* ``images/<submission>/<sha256><suffix>``: a copy of the submitted file, for the gallery's "full size" links
  (never a hard link: the validator refuses a submission file with more than one link). Only verified bytes are
  published (:func:`verified_bytes`: one link, validate's image checks, the declared sha256); any other image is
  left out, with status "unverified" and a problem naming the submission. Each image is read once, by a worker
  (:func:`media`): its bytes checked, written as the copy and thumbnailed from memory.

**A rebuild publishes only what a fresh build would.** Each submission's ``thumbs/<id>/manifest.json`` records, for
every image published, the fingerprint of its source file when its bytes were verified (device, inode, size,
modification and change times, link count: :func:`source_fingerprint`) and the sha256 of its thumbnail; and
``thumbs/params.json`` the thumbnail settings and a digest of the code that decides what is published
(:data:`CHECKS`). A later build into the same folder, with the same settings and code, reuses an image's two files
(hard links, else copies) only when its source has the recorded fingerprint and the earlier full-size copy and
thumbnail still hash to the declared sha256 and to the recorded thumbnail hash; any other image is verified and
published again (its earlier thumbnail linked when it still hashes to the recorded one, else made again). So a
source changed, deleted or replaced since, a previous copy or thumbnail altered, replaced by a link or missing, or
another version of the checks, gives the files (and the warnings) a fresh build gives. A source must be a regular
file inside its submission folder (found by listing the folder; links are neither followed nor listed).

The images are published and thumbnails made by a pool of worker *processes*, each ``python -m
cultureboard.site.thumbs`` reading its jobs from its stdin (a temporary file, never a pipe the parent could block on
writing to a worker that does not read): unlike ``multiprocessing``, this never re-imports the caller's ``__main__``,
so a build started from a script read on stdin (``python - < build.py``) or without a ``__main__`` guard works the
same; few jobs run in threads instead (a process costs about a tenth of a second to start). The workers run while
the build renders the pages that show no image; each submission's pages follow as soon as its images are done
(:func:`start_media`).
"""

from __future__ import annotations

import functools
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
MANIFEST = "manifest.json"


@functools.cache
def checks() -> str:
    """The sha256 of what decides whether an image is published: the source of :mod:`cultureboard.images` and of
    this module, and the image limits ``validate`` applies. An earlier build made with other checks reuses nothing."""
    from cultureboard import images
    from cultureboard.evaluators.submission.validate import Limits

    h = hashlib.sha256(repr(Limits().image).encode())
    for module in (images, sys.modules[__name__]):
        h.update(Path(module.__file__).read_bytes())
    return h.hexdigest()


def start_media(results, previous: Path, new: Path, px: int, *, workers: int | None = None) -> "Media":
    """Start making the thumbnails and full-size files of every local image of ``results`` (:class:`~.load.Result`
    objects) into ``new``, reusing what the site ``previous`` proves unchanged (module docstring). Returns at once,
    the workers running, so that the caller renders what needs no image meanwhile; :meth:`Media.ready` waits for one
    submission's images, :meth:`Media.result` for all. Use the :class:`Media` as a context manager: leaving the block
    (an error raised or not) kills and waits for every worker still running. ``previous`` is never changed."""
    from cultureboard.evaluators.submission.format import get, parse_location

    params = {**THUMB, "max_side": px}
    out: dict[tuple[str, str], dict] = {}
    jobs: list[tuple[dict, list]] = []  # (the image's entry, its job)
    made: dict[str, dict[str, dict]] = {}  # sid -> sha256 -> entry
    ends: dict[str, int] = {}  # sid -> the number of jobs up to its last one
    reusable = _old_settings(previous) == {"params": params, "checks": checks()}
    for r in results:
        parsed = parse_location(str(get(r.spec, "images.location", "")))
        if parsed is None or parsed.kind != "local":
            continue
        files = _regular_files(r.folder)
        for part in ("thumbs", "images"):
            (new / part / r.sid).mkdir(parents=True, exist_ok=True)
        recorded = _recorded(previous, r.sid) if reusable else {}
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
            earlier = recorded.get(sha)
            before = earlier and {"source": earlier.get("source"), "full": f"{previous}/{full}",
                                  "thumb": f"{previous}/thumbs/{r.sid}/{sha}.webp", "thumb_sha256": earlier["thumb_sha256"]}
            jobs.append((entries[sha], [f"{r.folder}/{name}", name, sha, f"{new}/{full}",
                                        f"{new}/thumbs/{r.sid}/{sha}.webp", before]))
        made[r.sid] = entries
        ends[r.sid] = len(jobs)
    workers = max(1, workers or os.cpu_count() or 1)
    tasks = [job for _, job in jobs]
    pool = _Threads if len(tasks) < PROCESS_THRESHOLD or workers == 1 else _Processes
    return Media(new, params, out, jobs, made, ends, pool(tasks, px, workers))


@dataclass
class Media:
    """The image files of one build, being made by ``pool`` (:func:`start_media`)."""

    new: Path
    params: dict
    out: dict  # (sid, sha256) -> {status, full}; the status of a job's image set once it is done (_apply)
    jobs: list  # (the image's entry in out, the job)
    made: dict  # sid -> sha256 -> entry
    ends: dict  # sid -> the number of jobs up to its last one (a submission's jobs follow each other)
    pool: "_Threads | _Processes"
    records: dict = field(default_factory=dict)  # (sid, sha256) -> what the next build needs to reuse its files
    problems: list = field(default_factory=list)  # the images left out, of the jobs done
    applied: int = 0  # the jobs whose statuses are in ``out``: the first ``applied``
    waited: float = 0.0  # seconds the caller spent waiting for the workers

    def ready(self, sid: str) -> dict:
        """``out``, the images of ``sid`` in it done (and those of the submissions before it): its pages can be
        rendered while the workers make the rest. Raises as :meth:`result` does."""
        self._apply(self.ends.get(sid, 0))
        return self.out

    def result(self):
        """Wait for the workers and record what they made for the next build; returns ((sid, sha256) -> {status:
        "ok" | "missing" | "unreadable" | "unverified", full: site path of the full-size file or None}, problems:
        [{submission, file, problem}] of the images left out because their bytes are not the declared, valid ones).
        A worker that died or hung, or a failed write, raises one :class:`CultureboardError`."""
        self._apply(len(self.jobs))
        for sid, entries in self.made.items():
            images = {sha: {**entry, **self.records.get((sid, sha), {})} for sha, entry in entries.items()}
            (self.new / "thumbs" / sid / MANIFEST).write_text(json.dumps(
                {"params": self.params, "images": images}, sort_keys=True) + "\n")
        (self.new / "thumbs").mkdir(parents=True, exist_ok=True)
        (self.new / "thumbs" / "params.json").write_text(
            json.dumps({"params": self.params, "checks": checks()}, sort_keys=True) + "\n")
        return self.out, self.problems

    def _apply(self, end: int) -> None:
        """Wait for the jobs up to ``end`` and set their images' entries."""
        if end <= self.applied:
            return
        waiting_at = time.perf_counter()
        statuses = self.pool.statuses(self.applied, end)
        self.waited += time.perf_counter() - waiting_at
        for (entry, job), (status, problem, record) in zip(self.jobs[self.applied:end], statuses):
            if problem is not None:  # neither published nor thumbnailed
                entry.update(status="unverified", full=None)
                self.problems.append({"submission": Path(job[3]).parent.name, "file": job[1], "problem": problem})
            else:
                entry["status"] = status
                self.records[Path(job[3]).parent.name, job[2]] = record
        self.applied = end

    def __enter__(self) -> "Media":
        return self

    def __exit__(self, *exc) -> None:
        self.pool.close()


def media(source: str, name: str, sha256: str, full: str, thumb: str, before: dict | None,
          px: int) -> tuple[str, str | None, dict]:
    """One image's job: publish the submission file ``source`` (``name`` in its metadata) as ``full`` and its
    thumbnail as ``thumb``. ``before`` (or None) is what an earlier build recorded of it: the source's fingerprint,
    its full-size copy and thumbnail and the thumbnail's sha256. The earlier files are linked when the source still
    has that fingerprint and both files still hold those bytes; else the source is read once, checked, written and
    thumbnailed (the earlier thumbnail linked if it still holds its recorded bytes). Returns (status, problem, what
    the next build needs: {source, thumb_sha256}): the problem (and nothing written) when the file is not what a
    site may publish (:func:`verified_bytes`), else the status of :func:`thumbnail` ("ok" for a linked one)."""
    if before and before["source"] == _fingerprint_of(source) and _holds(before["full"], sha256) \
            and _holds(before["thumb"], before["thumb_sha256"]):
        _link_or_copy(Path(before["full"]), Path(full))
        _link_or_copy(Path(before["thumb"]), Path(thumb))
        return "ok", None, {"source": before["source"], "thumb_sha256": before["thumb_sha256"]}
    data, fingerprint, problem = verified_bytes(source, name, sha256)
    if problem is not None:
        return "unverified", problem, {}
    with open(full, "wb") as fh:  # a failing write is raised: not the image's fault, it ends the build
        fh.write(data)
    if before and before["thumb_sha256"] and _holds(before["thumb"], before["thumb_sha256"]):
        _link_or_copy(Path(before["thumb"]), Path(thumb))  # a thumbnail of these very bytes, with these settings
        return "ok", None, {"source": fingerprint, "thumb_sha256": before["thumb_sha256"]}
    status, digest = thumbnail(io.BytesIO(data), thumb, px)
    return status, None, {"source": fingerprint, "thumb_sha256": digest}


def verified_bytes(source: str, name: str, sha256: str) -> tuple[bytes | None, list | None, str | None]:
    """The bytes of ``source`` and its :func:`source_fingerprint` when they are what a site may publish: a regular
    file (never through a link) with one link (a hard link may share bytes with a file outside the submission), that
    passes the checks ``validate`` applies (:func:`~cultureboard.images.inspect_image` with validate's limits:
    format, header size before decoding, structure, one frame) and hashes to the declared ``sha256``; otherwise
    (None, None, the problem). The bytes checked are the bytes published: what a writer changes afterwards never
    reaches the site."""
    from cultureboard.evaluators.submission.validate import Limits
    from cultureboard.images import inspect_image

    limits = Limits().image
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # never a link, never blocks on a pipe
    except OSError as exc:
        return None, None, f"cannot be read ({exc.strerror})"
    with open(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, None, "is not a regular file"
        if st.st_nlink > 1:
            return None, None, f"has {st.st_nlink} hard links (it may be a file outside the submission)"
        if st.st_size > limits.max_file_bytes:
            return None, None, f"is {st.st_size:,} bytes; the limit is {limits.max_file_bytes:,}"
        try:
            data = fh.read(limits.max_file_bytes + 1)
        except OSError as exc:
            return None, None, f"cannot be read ({exc.strerror})"
    info = inspect_image(data, name=name, limits=limits)
    problem = ("; ".join(p.message for p in info.problems) or
               (None if info.sha256 == sha256 else "differs from the sha256 metadata.jsonl declares"))
    return (None, None, problem) if problem is not None else (data, source_fingerprint(st), None)


def source_fingerprint(st: os.stat_result) -> list[int]:
    """What changes whenever a file's bytes may have: its device and inode (another file), size, modification and
    change times (a write, or a restored modification time) and link count."""
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_nlink]


def _fingerprint_of(path: str) -> list[int] | None:
    st = _lstat(Path(path))
    return source_fingerprint(st) if st is not None and stat.S_ISREG(st.st_mode) else None


def _holds(path: str, sha256: str | None) -> bool:
    """Whether ``path`` is a regular file (not reached through a link) whose bytes hash to ``sha256``."""
    if not sha256:
        return False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    with open(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        try:
            return hashlib.file_digest(fh, "sha256").hexdigest() == sha256
        except OSError:
            return False


def _recorded(previous: Path, sid: str) -> dict[str, dict]:
    """What the build of ``previous`` recorded of each image of ``sid`` it published: {sha256: {source,
    thumb_sha256}}, from its manifest in a real folder (anything else reads as nothing recorded)."""
    folder = previous / "thumbs" / sid
    if not (_real_dir(folder) and _real_dir(previous / "images" / sid) and _regular(folder / MANIFEST)):
        return {}
    found = _json_or_none(folder / MANIFEST)
    images = found.get("images") if isinstance(found, dict) else None
    if not isinstance(images, dict):
        return {}
    return {sha: e for sha, e in images.items() if isinstance(e, dict) and e.get("status") == "ok"
            and isinstance(e.get("source"), list) and isinstance(e.get("thumb_sha256"), str)}


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


def _old_settings(previous: Path):
    path = previous / "thumbs" / "params.json"
    return _json_or_none(path) if _real_dir(previous / "thumbs") and _regular(path) else None


def thumbnail(source, target: str, px: int) -> tuple[str, str | None]:
    """Write one thumbnail of ``source`` (a path or a file object); ("ok", the sha256 of its bytes), or ("unreadable",
    None) when the decoder rejects it. A failing write (a full disk, a file size limit) is raised: it is not the
    image's fault, and ends the build."""
    from cultureboard.images import open_rgb

    try:
        img = open_rgb(source)
        img.thumbnail((px, px))
        buffer = io.BytesIO()
        img.save(buffer, **THUMB)
    except Exception:  # noqa: BLE001 - a decoder's reaction to hostile bytes can be any exception
        return "unreadable", None
    with open(target, "wb") as fh:
        fh.write(buffer.getvalue())
    return "ok", hashlib.sha256(buffer.getvalue()).hexdigest()


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

    def statuses(self, start: int, end: int) -> list[tuple]:
        """(status, problem, record) of the jobs from ``start`` to ``end``, once done; a failed write raises one
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
        self._answers: list[list[tuple]] = [[] for _ in self._parts]  # each worker's (status, problem, record) so far
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

    def statuses(self, start: int, end: int) -> list[tuple]:
        """(status, problem, record) of the jobs from ``start`` to ``end``, once every worker has sent theirs."""
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
    except (OSError, ValueError, RecursionError):  # RecursionError: nested too deep to parse
        return None


def main() -> None:
    """Worker: {px, jobs: [[source, name, sha256, full, thumb, before], ...]} on stdin -> the [status, problem,
    record] of each job's
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
