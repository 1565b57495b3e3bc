"""Write outputs so that none is ever lost, torn, or replaced by another kind of output.

An output folder ``T`` (a dataset, one submission's results, a site, ...) is written by :func:`atomic_dir`:

1. ``T`` is locked: a POSIX record lock (``fcntl.lockf``) on the file ``.T.lock`` next to it, held while it
   is written and released by the kernel when the process ends, however it ends. Unlike ``flock``, a record
   lock is not inherited by forked children, so worker processes (a DataLoader's) that outlive a killed
   writer for a moment do not keep its output locked. A second writer fails at once with
   ``T: is being written by process N`` instead of racing the first. The holder removes the lock file
   before it lets go (a killed holder leaves it, harmless, until the next writer), and a lock taken on a
   file that was removed meanwhile is taken again, so the file never outlives a run.
2. An interrupted earlier replacement is recovered (:func:`recover`), and ``T`` is checked: it must be
   absent, an empty folder, or an output of the same kind (the marker file ``.cultureboard-output`` in it
   names its kind, see :data:`KINDS`). ``site build --out dataset`` is refused, never obeyed.
3. The new output is written into ``.T.tmp-<pid>-<token>``; its marker is written last, so a work folder
   with a marker is complete.
4. Two renames swap it in: ``T -> .T.old-<pid>-<token>``, then ``.T.tmp-... -> T``; then the old one is
   removed. A SIGKILL at any point leaves one of: the old ``T`` (plus leftovers); no ``T`` but an old and a
   complete new work folder of the same token, which recovery finishes (the new output is renamed into
   place); or the new ``T`` (plus leftovers).

Recovery runs under the lock, so the leftovers it finds belong to dead processes (a live writer holds the
lock); it finishes or restores a missing ``T`` and deletes every other leftover. Writers recover before
they check and write, and readers that list outputs use :func:`output_folders`, which skips hidden names
and recovers interrupted replacements it can lock. Pid and host are recorded in the lock file (and the pid
in work folder names) to name the writer in messages; the lock, not the pid, decides who is alive, since
pids are reused. (Record locks work over NFS; on a file system without working locks the lock protects
nothing.) A record lock belongs to the process, so threads of one process are kept apart by a registry.

Outputs get the permissions of ordinary files: folders ``0o777 & ~umask``, files ``0o666 & ~umask`` (0755 /
0644 under the usual umask 022), so a web server running as another user can serve a site. Nothing is
synced to disk: this guards against killed processes, not against power loss.

Older outputs hold a marker without a kind ("unknown kind"). Such an output is replaced only by a kind
whose files it holds (:attr:`Kind.signature`: a ``site`` needs ``index.html`` and ``static/``, so an old
dataset is never replaced by a site); anything else is refused with what it seems to hold.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
import shutil
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import CultureboardError, os_error_fix

#: Written into every output folder, naming its kind, so that only a rerun of the same kind replaces it.
MARKER = ".cultureboard-output"
_MARKER_HEAD = "cultureboard output: "
_LEGACY_MARKER_TEXT = "This folder was written by cultureboard and may be replaced by a rerun.\n"
#: The longest output folder name (bytes): its work folders ``.<name>.old-<pid>-<token>`` add 20 and
#: must fit the usual 255-byte limit on names.
MAX_OUTPUT_NAME = 235
#: Errors that mean the disk or file system refuses the write (not a missing or unreadable input).
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG})
_WORK = re.compile(r"\.(?P<name>.+)\.(?P<what>tmp|old)-(?P<token>[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)?)")


@dataclass(frozen=True)
class Kind:
    """A kind of output: ``label`` says what it holds (in messages); ``signature`` lists entries an output
    of this kind always holds (they let an older output without a kind be replaced by a rerun);
    ``unmarked`` lists the only entries an older output of this kind, written without any marker, holds."""

    label: str
    signature: tuple[str, ...] = ()
    unmarked: frozenset[str] = frozenset()


#: Every kind of output, by the name callers pass as ``kind=``.
KINDS = {
    "dataset": Kind("a dataset (cultureboard build or import)", ("build.json", "data")),
    "artifacts": Kind("an artifact space (cultureboard artifacts)", ("artifacts.parquet", "report.json")),
    "results": Kind("one submission's results (cultureboard evaluate)", ("summary.json", "scores.parquet")),
    "shard": Kind("one shard of a submission's results (cultureboard evaluate --shard)",
                  ("shard.json", "scores.parquet")),
    "site": Kind("a leaderboard site (cultureboard build site)", ("index.html", "static")),
    "media": Kind("a site's image files (cultureboard publish media)"),
    "ratings": Kind("imported human ratings (cultureboard import ratings)",
                    ("ratings.parquet", "consensus.parquet")),
    "submission": Kind("a packaged submission (cultureboard package)"),  # package removes the marker afterwards
    "model": Kind("a trained model (cultureboard train cultdiff-s)", ("training.json", "cultdiff_s.json")),
    "demo": Kind("a demo folder (cultureboard demo)",
                 unmarked=frozenset({"dataset", "submissions", "results", "site"})),
}
_UNKNOWN = "unknown"  # the kind of an older output whose marker names none


def _label(kind: str | None) -> str:
    if kind is None or kind == _UNKNOWN:
        return "a cultureboard output of unknown kind"
    return KINDS[kind].label if kind in KINDS else f"a cultureboard output of kind {kind!r}"


def _held_kind(folder: Path) -> str | None:
    """The kind named by ``folder``'s marker: a kind, :data:`_UNKNOWN` (a marker without one, or an
    unreadable one), or None when there is no marker."""
    marker = folder / MARKER
    if not os.path.lexists(marker):
        return None
    try:
        with open(marker, "rb") as fh:
            head = fh.read(200).decode("utf-8").splitlines()[0] if marker.is_file() else ""
    except (OSError, UnicodeDecodeError, IndexError):
        return _UNKNOWN
    return (head[len(_MARKER_HEAD):].strip() or _UNKNOWN) if head.startswith(_MARKER_HEAD) else _UNKNOWN


def _marker_text(kind: str | None) -> str:
    if kind is None:
        return _LEGACY_MARKER_TEXT
    return (f"{_MARKER_HEAD}{kind}\nThis folder holds {_label(kind)}. cultureboard replaces it only with "
            f"a new output of the same kind.\n")


def _check_kind(kind: str | None) -> None:
    if kind is not None and kind not in KINDS:
        raise ValueError(f"unknown output kind {kind!r}: use one of {', '.join(KINDS)}")


def _check_name(target: Path) -> None:
    if len(os.fsencode(target.name)) > MAX_OUTPUT_NAME:
        raise CultureboardError(target, f"has a name of {len(os.fsencode(target.name))} bytes, too long for an "
                                f"output (at most {MAX_OUTPUT_NAME})", "choose a shorter folder name")


def _refuse(target: Path, problem: str) -> CultureboardError:
    return CultureboardError(target, problem, f"choose another --out, or delete {target} first if you mean "
                             "to replace it")


def _check_target(target: Path, kind: str | None) -> None:
    """Raise unless ``target`` may be replaced by an output of ``kind`` (see the module docstring)."""
    if target.is_symlink():
        raise CultureboardError(target, "is a symbolic link, so it will not be replaced",
                                "pass the folder it points to, or another --out")
    if not target.exists():
        return
    if not target.is_dir():
        raise _refuse(target, "is a file, not an output folder, so it will not be replaced")
    held = _held_kind(target)
    if held is None:
        entries = [p.name for p in target.iterdir()]
        visible = {name for name in entries if not name.startswith(".")}
        if not entries or (kind is not None and visible and visible <= KINDS[kind].unmarked):
            return
        raise CultureboardError(target, "exists and is not a cultureboard output, so it will not be overwritten",
                                "choose a new or empty folder for --out")
    if held == kind:
        return
    if held == _UNKNOWN:
        if kind is None or (KINDS[kind].signature and all((target / e).exists() for e in KINDS[kind].signature)):
            return
        seems = next((k for k, spec in KINDS.items() if spec.signature
                      and all((target / e).exists() for e in spec.signature)), None)
        raise _refuse(target, f"holds {'what looks like ' + _label(seems) if seems else _label(None)} (written by "
                      f"an older cultureboard), not {_label(kind)}, so it will not be replaced")
    raise _refuse(target, f"holds {_label(held)}, not {_label(kind)}, so it will not be replaced")


def _os_error(target: Path, exc: OSError, doing: str, elsewhere: str = "choose another --out") -> CultureboardError:
    return CultureboardError(target, f"could not be {doing}: {exc.strerror or exc} (nothing was left half-written)",
                             os_error_fix(exc.errno, elsewhere))


def check_writable(path: str | os.PathLike, what: str | None = None) -> None:
    """Fail early, in one line, if files cannot be created in the folder ``path`` (created later if it is
    missing, so its nearest existing parent is tried): not a folder, read-only, no permission, or a full
    disk. ``what`` names it in the message (e.g. ``"--cache ~/.cache/cultureboard"``; default the path).

    The test is real: a hidden probe file of 4 KiB is written and removed (permission bits alone miss
    read-only mounts, full disks and root's rights)."""
    path = Path(path)
    what = what or str(path)
    folder = path
    while not os.path.lexists(folder) and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise CultureboardError(what, f"cannot be created: {folder} is not a folder", "choose another folder")
    probe = folder / f".cultureboard-probe-{os.getpid()}-{secrets.token_hex(3)}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, bytes(4096))
        finally:
            os.close(fd)
    except OSError as exc:
        raise CultureboardError(what, f"cannot be written: {folder}: {exc.strerror or exc}",
                                os_error_fix(exc.errno, "choose another folder")) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(probe)


# --- locks


@dataclass
class _Held:
    fd: int
    thread: int
    count: int


_HELD: dict[str, _Held] = {}  # lock file (absolute) -> this process's hold on it
_HELD_GUARD = threading.Lock()


def _lock_path(target: Path) -> Path:
    return target.parent / f".{target.name}.lock"


def _busy(target: Path, lock: Path) -> CultureboardError:
    try:
        pid, _, host = lock.read_text(encoding="utf-8").strip().partition(" ")
    except (OSError, UnicodeDecodeError):
        pid, host = "", ""
    who = f"process {pid}" if pid.isdigit() else "another process"
    if host and host != socket.gethostname():
        who += f" on {host}"
    return CultureboardError(target, f"is being written by {who}", "wait for it or choose another --out")


def _acquire(target: Path, lock: Path) -> int:
    """An open descriptor of ``lock`` holding its record lock. A holder removes the file before it lets go, so a
    lock taken on a file that is no longer at ``lock`` is dropped and taken again on the new file."""
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise _os_error(target, exc, "locked") from None
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except (BlockingIOError, PermissionError):  # held elsewhere (EAGAIN, or EACCES on some systems)
            os.close(fd)
            raise _busy(target, lock) from None
        except OSError:  # a file system without locks: write unlocked, as before locks existed
            return fd
        try:
            if os.path.samestat(os.fstat(fd), os.stat(lock)):
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)


@contextlib.contextmanager
def output_lock(target: str | os.PathLike) -> Iterator[None]:
    """Hold the lock of output ``target`` (its parent folder must exist), or fail at once with
    ``TARGET: is being written by process N``. Re-entrant within a thread: :func:`atomic_dir` inside an
    ``output_lock`` of the same target (a whole run held from its first check) works."""
    target = Path(target)
    lock = _lock_path(target)
    key = os.path.abspath(lock)
    me = threading.get_ident()
    with _HELD_GUARD:
        held = _HELD.get(key)
        if held is not None and held.thread != me:
            raise _busy(target, lock)
        if held is None:
            fd = _acquire(target, lock)
            with contextlib.suppress(OSError):  # who holds it, for the message of a second writer
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()} {socket.gethostname()}\n".encode())
            held = _HELD[key] = _Held(fd, me, 0)
        held.count += 1
    try:
        yield
    finally:
        with _HELD_GUARD:
            held.count -= 1
            if held.count == 0:
                del _HELD[key]
                with contextlib.suppress(OSError):
                    os.unlink(lock)  # while still held: see _acquire
                os.close(held.fd)  # releases the lock


# --- recovery


def _leftovers(target: Path) -> list[tuple[str, str, Path]]:
    """(what, token, path) of every work folder of ``target``: ``tmp`` (a new output) or ``old``."""
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return []
    return [(m["what"], m["token"], Path(e.path)) for e in entries
            if (m := _WORK.fullmatch(e.name)) and m["name"] == target.name and e.is_dir(follow_symlinks=False)]


def recover(target: str | os.PathLike) -> bool:
    """Repair what a killed writer left of ``target``; the caller holds :func:`output_lock`, so every work
    folder found is a dead process's. A missing ``target`` with an ``.old`` work folder is an interrupted
    swap: finished if the new work folder of the same token is complete (has its marker), else the old
    output is renamed back. Every other work folder is deleted. Returns whether anything was found."""
    target = Path(target)
    found = _leftovers(target)
    if not found:
        return False
    if not os.path.lexists(target):
        tmps = {token: path for what, token, path in found if what == "tmp"}
        olds = sorted(((token, path) for what, token, path in found if what == "old"),
                      key=lambda tp: tp[1].stat().st_ctime, reverse=True)
        if olds:
            token, old = olds[0]
            new = tmps.get(token)
            try:
                os.replace(new if new is not None and (new / MARKER).is_file() else old, target)
            except OSError as exc:
                raise _os_error(target, exc, "recovered from an interrupted replacement") from None
    for _, _, path in found:
        if os.path.lexists(path):
            shutil.rmtree(path, ignore_errors=True)
    return True


def output_folders(folder: str | os.PathLike) -> list[Path]:
    """The output folders in the folder ``folder`` (a results folder, a shards folder), sorted: hidden names
    (work folders, lock files) are left out, and an interrupted replacement is recovered first when its
    lock can be taken (it is skipped while a writer holds it, or when ``folder`` is read-only)."""
    folder = Path(folder)
    interrupted = {m["name"] for e in os.scandir(folder)
                   if (m := _WORK.fullmatch(e.name)) and e.is_dir(follow_symlinks=False)}
    for name in sorted(interrupted):
        with contextlib.suppress(CultureboardError, OSError), output_lock(folder / name):
            recover(folder / name)
    return sorted(p for p in folder.iterdir() if not p.name.startswith(".") and p.is_dir())


# --- writing


def check_replaceable(target: str | os.PathLike, *, kind: str | None = None) -> None:
    """Fail early (before any work) unless an output of ``kind`` may be written to ``target``: it is absent,
    an empty folder, or an output of the same kind (see the module docstring), its folder is writable, and
    no other process is writing it. Interrupted replacements of ``target`` are recovered first.

    ``kind`` is one of :data:`KINDS`; without it (older callers) only an absent or empty folder, or an
    output of unknown kind, is accepted."""
    target = Path(target)
    _check_kind(kind)
    _check_name(target)
    _check_target(target, kind)
    check_writable(target.parent, str(target))
    if target.parent.is_dir():
        with output_lock(target):
            if recover(target):
                _check_target(target, kind)


def claim_folder(target: str | os.PathLike, *, kind: str) -> Path:
    """Mark ``target`` as an output of ``kind`` that is filled step by step (the demo folder), after the
    checks of :func:`check_replaceable`; returns it. It is not replaced as a whole, so it is not locked."""
    target = Path(target)
    check_replaceable(target, kind=kind)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _os_error(target, exc, "created") from None
    if _held_kind(target) != kind:
        atomic_write_text(target / MARKER, _marker_text(kind))
    return target


@contextlib.contextmanager
def atomic_dir(target: str | os.PathLike, *, kind: str | None = None) -> Iterator[Path]:
    """Yield a fresh hidden work folder next to ``target``; on success it replaces ``target``.

    ``target`` is locked meanwhile and must pass :func:`check_replaceable` for ``kind``. On any exception
    the work folder is removed and ``target`` is left as it was; a full disk or read-only file system in
    the body becomes one :class:`CultureboardError` line."""
    target = Path(target)
    _check_kind(kind)
    _check_name(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _os_error(target, exc, "created") from None
    with output_lock(target):
        recover(target)
        _check_target(target, kind)
        token = f"{os.getpid()}-{secrets.token_hex(3)}"
        tmp = target.parent / f".{target.name}.tmp-{token}"
        try:
            os.mkdir(tmp, 0o777)  # the umask applies
        except OSError as exc:
            raise _os_error(target, exc, "written") from None
        try:
            yield tmp
            (tmp / MARKER).write_text(_marker_text(kind), encoding="utf-8")  # last: the work folder is complete
        except BaseException as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            if isinstance(exc, OSError) and exc.errno in _WRITE_ERRNOS:
                raise _os_error(target, exc, "written") from None
            raise
        _swap(tmp, target, target.parent / f".{target.name}.old-{token}")


def _swap(tmp: Path, target: Path, old: Path) -> None:
    """``target`` -> ``old``, ``tmp`` -> ``target``, remove ``old``; on an error, ``target`` is put back."""
    moved = False
    try:
        if os.path.lexists(target):
            os.replace(target, old)
            moved = True
        os.replace(tmp, target)
    except OSError as exc:
        if moved:
            with contextlib.suppress(OSError):
                os.replace(old, target)
        shutil.rmtree(tmp, ignore_errors=True)
        raise _os_error(target, exc, "replaced") from None
    if moved:
        shutil.rmtree(old, ignore_errors=True)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` through a hidden temporary file in the same folder and a rename, with the
    permissions of a new file (``0o666 & ~umask``). A full disk or read-only folder becomes one
    :class:`CultureboardError` line and leaves ``path`` as it was."""
    path = Path(path)
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(3)}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.errno in _WRITE_ERRNOS | {errno.EACCES, errno.EPERM}:
            raise _os_error(path, exc, "written", "choose another folder") from None
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))
