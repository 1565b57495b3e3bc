"""Progress of a long command, on standard error.

Library code reports through :func:`say` (one line) and :func:`stage` (a counted stage: embedding N images);
nothing is printed until a command turns reporting on with :func:`enabled`, so the Python API and the tests stay
quiet unless they ask. On a terminal a counted stage is one line rewritten in place with its count, rate and ETA;
elsewhere (a CI log, a pipe) it prints one line when it starts and one when it ends, with its count and rate.
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import IO, Iterator

#: Every progress line starts with this mark, so a reader (or a test) can tell it from the one ``error:`` line.
MARK = "· "
_stream: IO[str] | None = None  # where lines go while reporting is on
_REDRAW_S = 0.2  # a terminal line is redrawn at most this often


@contextlib.contextmanager
def enabled(stream: IO[str] | None = None) -> Iterator[None]:
    """Report on ``stream`` (default: standard error) inside the block."""
    global _stream
    previous, _stream = _stream, stream or sys.stderr
    try:
        yield
    finally:
        _stream = previous


def without_progress(text: str) -> list[str]:
    """The lines of ``text`` (a command's standard error) that are not progress lines."""
    return [line for line in text.strip().splitlines() if not line.startswith(MARK)]


def say(text: str) -> None:
    """One progress line (nothing when reporting is off)."""
    if _stream is not None:
        _stream.write(MARK + text + "\n")
        _stream.flush()


class Stage:
    """A counted stage: :meth:`advance` as items are done; the line ends when the ``with`` block does."""

    def __init__(self, label: str, total: int, unit: str, stream: IO[str] | None):
        self.label, self.total, self.unit, self.stream = label, total, unit, stream
        self.done, self.start, self._drawn = 0, time.monotonic(), 0.0
        self.live = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        if stream is not None and not self.live:
            say(f"{label}: {total} {unit}")

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self.live and time.monotonic() - self._drawn >= _REDRAW_S:
            self._drawn = time.monotonic()
            self.stream.write("\r" + MARK + self._line(final=False) + "\033[K")
            self.stream.flush()

    def _line(self, final: bool) -> str:
        elapsed = time.monotonic() - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        text = f"{self.label}: {self.done}/{self.total} {self.unit}, {rate:.1f} {self.unit}/s"
        if final:
            return text + f", {elapsed:.1f} s"
        left = (self.total - self.done) / rate if rate > 0 else None
        return text + (f", ETA {left:.0f} s" if left is not None else "")

    def close(self) -> None:
        if self.stream is None:
            return
        if self.live:
            self.stream.write("\r" + MARK + self._line(final=True) + "\033[K\n")
            self.stream.flush()
        else:
            say(self._line(final=True))


@contextlib.contextmanager
def stage(label: str, total: int, unit: str = "images") -> Iterator[Stage]:
    """A counted stage of ``total`` items (silent when reporting is off)."""
    current = Stage(label, total, unit, _stream)
    try:
        yield current
    finally:
        current.close()
