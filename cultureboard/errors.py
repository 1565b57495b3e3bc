"""User-facing errors: one line naming the input, the problem and the fix."""

from __future__ import annotations

import errno


class CultureboardError(Exception):
    """An error caused by the user's input, reported without a traceback.

    ``source`` names the file, URL or option at fault, ``problem`` says what is wrong and ``fix``
    what to do about it. The CLI prints ``error: SOURCE: PROBLEM (fix: FIX)`` and exits non-zero.
    """

    def __init__(self, source: str, problem: str, fix: str, exit_code: int = 1):
        self.source = str(source)
        self.problem = problem
        self.fix = fix
        self.exit_code = exit_code
        super().__init__(self.message)

    def __reduce__(self):  # picklable, so an error raised in a worker process reaches the parent intact
        return (type(self), (self.source, self.problem, self.fix, self.exit_code))

    @property
    def message(self) -> str:
        return f"{self.source}: {self.problem} (fix: {self.fix})"


#: What to do about a read or write the operating system refused, by its errno (:func:`os_error_fix`).
_OS_FIXES = {
    errno.ENOSPC: "free space on that disk",
    errno.EDQUOT: "free space within your disk quota",
    errno.EFBIG: "raise the file size limit (ulimit -f)",
    errno.EACCES: "give yourself permission to write there",
    errno.EPERM: "give yourself permission to write there",
    errno.EROFS: "remount that file system read-write",
    errno.ENOENT: "check that the path and its folders exist",
    errno.EMFILE: "raise the open file limit (ulimit -n)",
    errno.EIO: "check the disk, which reported a hardware error",
}


def os_error_fix(code: int | None, elsewhere: str = "choose another path") -> str:
    """The fix of an ``OSError`` with errno ``code``: what to change on this machine, or ``elsewhere``."""
    fix = _OS_FIXES.get(code)
    return f"{fix}, or {elsewhere}" if fix else f"check the path, its permissions and the free space, or {elsewhere}"


def os_error_line(exc: OSError) -> str:
    """``PATH: STRERROR (fix: ...)`` for a read or write the operating system refused (a full disk, a file size
    limit, no permission, a read-only file system), whichever command it ends (the CLI's rule for an
    ``OSError`` no command turned into a :class:`CultureboardError`)."""
    path = " -> ".join(str(p) for p in (exc.filename, exc.filename2) if p is not None) or "a file"
    return f"{path}: {exc.strerror or exc} (fix: {os_error_fix(exc.errno)})"
