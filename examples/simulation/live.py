"""Live progress on the terminal while a simulation runs.

On a terminal one status line is rewritten in place; otherwise (a pipe, a CI log) a
line is printed every ``every`` seconds so logs stay readable.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from typing import TextIO


@dataclass(frozen=True, kw_only=True)
class Progress:
    """What the status line shows."""

    elapsed: float
    jobs_total: int
    jobs_queued: int
    jobs_running: int
    jobs_done: int
    pending: int
    running: int
    finished: int
    deleting: int
    replicas: int
    patch_id: int
    marker: int


def format_progress(p: Progress) -> str:
    return (
        f"[{p.elapsed:5.1f}s] jobs {p.jobs_done}/{p.jobs_total} done, {p.jobs_running} running, "
        f"{p.jobs_queued} waiting | runners {p.pending} pending, {p.running} running, "
        f"{p.finished} finished, {p.deleting} deleting | replicas {p.replicas}, "
        f"patchID {p.patch_id}, marker {p.marker}"
    )


class LiveLine:
    """Shows :class:`Progress` updates; call :meth:`close` before printing anything else."""

    def __init__(
        self, *, stream: TextIO | None = None, every: float = 5.0, enabled: bool = True
    ) -> None:
        self._stream = stream or sys.stderr
        self._tty = self._stream.isatty()
        self._every = every
        self._enabled = enabled
        self._last_print = -every
        self._width = 0

    def update(self, progress: Progress) -> None:
        if not self._enabled:
            return
        line = format_progress(progress)
        if self._tty:
            # A wrapped line cannot be rewritten in place: cut it to the terminal.
            line = line[: shutil.get_terminal_size().columns - 1]
            pad = max(0, self._width - len(line))
            self._stream.write("\r" + line + " " * pad)
            self._width = len(line)
            self._stream.flush()
        elif progress.elapsed - self._last_print >= self._every:
            self._stream.write(line + "\n")
            self._stream.flush()
            self._last_print = progress.elapsed

    def note(self, message: str) -> None:
        """Print a one-off line (a fault, a restart) without garbling the status line."""
        if not self._enabled:
            return
        prefix = "\r" + " " * self._width + "\r" if self._tty else ""
        self._stream.write(f"{prefix}{message}\n")
        self._stream.flush()

    def close(self) -> None:
        if self._enabled and self._tty and self._width:
            self._stream.write("\n")
            self._stream.flush()
            self._width = 0
