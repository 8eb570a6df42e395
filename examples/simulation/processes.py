"""The programs under test, run as subprocesses through their user-facing entry points.

``python -m ghalistener run ...`` and ``python -m ersctl reconcile ...`` are the same
click commands the ``ghalistener`` and ``ersctl`` console scripts run; using
``sys.executable -m`` keeps the simulation independent of ``PATH``. Output goes to a
log file per program (appended across restarts) so the terminal stays readable.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO


class ProgramExited(RuntimeError):
    """A program under test exited on its own; the message names it and its log."""


class Program:
    """One long-running program under test. Not thread-safe: one owner drives it."""

    def __init__(
        self, *, name: str, args: list[str], log_path: Path, env: Mapping[str, str] | None = None
    ) -> None:
        self.name = name
        self.args = args
        self.env = dict(env or {})
        self.log_path = log_path
        self.starts = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def start(self) -> None:
        self._log = self.log_path.open("ab")
        self._log.write(f"--- start {self.starts + 1}: {' '.join(self.args)}\n".encode())
        self._log.flush()
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **self.env}
        self._proc = subprocess.Popen(
            [sys.executable, "-m", *self.args], stdout=self._log, stderr=subprocess.STDOUT, env=env
        )
        self.starts += 1

    def check_alive(self) -> None:
        """Raise :class:`ProgramExited` when the program is not running."""
        if self._proc is not None and self._proc.poll() is not None:
            raise ProgramExited(
                f"{self.name} exited with code {self._proc.returncode}; see {self.log_path}"
            )

    def stop(self, *, graceful: bool = True, timeout: float = 10.0) -> bool:
        """SIGTERM (or SIGKILL) and wait. Returns True when the program had to be killed:
        SIGKILL asked for, or no exit within ``timeout`` of SIGTERM."""
        proc, self._proc = self._proc, None
        if proc is None:
            return False
        killed = not graceful
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM if graceful else signal.SIGKILL)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                killed = True
        if self._log is not None:
            self._log.write(f"--- stopped: exit code {proc.returncode}\n".encode())
            self._log.close()
            self._log = None
        return killed

    def restart(self, *, graceful: bool) -> None:
        """Stop (SIGTERM when ``graceful``, else SIGKILL) and start again."""
        self.stop(graceful=graceful)
        self.start()
