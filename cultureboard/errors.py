"""User-facing errors: one line naming the input, the problem and the fix."""

from __future__ import annotations


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
