"""Waiting on a worker process without waiting forever.

A worker that dies is seen at once: its pipe ends and its exit status says how. One that is alive but never
answers (stuck in a system call, a deadlock, a stopped process) is not, so every wait on a worker goes through
this module and is bounded by :data:`STALL_SECONDS` without a byte from it. The workers (the site's thumbnail
processes, the dump's decompressor) report as they go (the status lines of the images done, at least every fraction
of a second; a block of the dump), so a long but working job never looks hung; one silent for that long is killed by its caller, which ends the command in one
line (:class:`WorkerStalled` says for how long).
"""

from __future__ import annotations

import os
import select
import subprocess

#: How long a worker may send nothing (and, its output ended, take to exit) before it is taken as hung.
STALL_SECONDS = 600.0


class WorkerStalled(TimeoutError):
    """A worker that sent nothing, or did not exit, within :data:`STALL_SECONDS` (``str()`` says which)."""


def read_some(pipe, size: int) -> bytes:
    """Up to ``size`` bytes of a worker's output ``pipe`` as soon as any is there; ``b""`` at its end;
    :class:`WorkerStalled` when nothing came for :data:`STALL_SECONDS`."""
    ready, _, _ = select.select([pipe], [], [], STALL_SECONDS)
    if not ready:
        raise WorkerStalled(f"sent nothing for {STALL_SECONDS:g} s")
    return os.read(pipe.fileno(), size)


def read_all(pipes: list, heard=None) -> list[bytes]:
    """All the output of several workers' pipes, read together as it comes (no worker waits on a full pipe while
    another is read); :class:`WorkerStalled` when none of those still open sent anything for :data:`STALL_SECONDS`.
    ``heard(k, piece)``, when given, is called with each piece read from ``pipes[k]`` as it comes, and with b"" as
    soon as that pipe ends (its worker exited, or closed it): it may raise to stop the reading there, e.g. when that
    worker failed, rather than wait for the others."""
    parts: dict = {pipe: [] for pipe in pipes}
    open_ = list(pipes)
    while open_:
        ready, _, _ = select.select(open_, [], [], STALL_SECONDS)
        if not ready:
            raise WorkerStalled(f"sent nothing for {STALL_SECONDS:g} s")
        for pipe in ready:
            piece = os.read(pipe.fileno(), 1 << 16)
            if piece:
                parts[pipe].append(piece)
            else:  # its end
                open_.remove(pipe)
            if heard is not None:
                heard(pipes.index(pipe), piece)
    return [b"".join(parts[pipe]) for pipe in pipes]


def wait_for(proc: subprocess.Popen) -> int:
    """The exit status of a worker whose output has ended; :class:`WorkerStalled` when it does not exit within
    :data:`STALL_SECONDS`."""
    try:
        return proc.wait(timeout=STALL_SECONDS)
    except subprocess.TimeoutExpired:
        raise WorkerStalled(f"did not exit within {STALL_SECONDS:g} s of ending its output") from None
