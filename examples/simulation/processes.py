"""The programs under test, run as subprocesses through their user-facing entry points.

``python -m ghalistener run ...`` and ``python -m ersctl reconcile ...`` are the same
click commands the ``ghalistener`` and ``ersctl`` console scripts run; using
``sys.executable -m`` keeps the simulation independent of ``PATH``. Output goes to a
log file per program (appended across restarts) so the terminal stays readable.
:class:`CtrlC` keeps a Ctrl-C from leaving one of them running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, Any

START_MARKER = b"--- start "
"""Begins the log lines of each start of a program (its log is appended to)."""


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
        self._log.write(START_MARKER + f"{self.starts + 1}: {' '.join(self.args)}\n".encode())
        self._log.flush()
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **self.env}
        self._proc = subprocess.Popen(
            [sys.executable, "-m", *self.args], stdout=self._log, stderr=subprocess.STDOUT, env=env
        )
        self.starts += 1

    @property
    def pid(self) -> int | None:
        """The running program's process id (None before start and after stop)."""
        return None if self._proc is None else self._proc.pid

    def send_signal(self, signum: int) -> None:
        """Send ``signum`` to the running program (nothing when it is not running)."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signum)

    @property
    def exit_code(self) -> int | None:
        """The program's exit code once it has ended on its own, else None."""
        return None if self._proc is None else self._proc.poll()

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

    def kill(self) -> None:
        """SIGKILL, and wait for the end; the exit stays observable (:attr:`exit_code`)
        until :meth:`stop`, as a crash would be."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    def restart(self, *, graceful: bool) -> None:
        """Stop (SIGTERM when ``graceful``, else SIGKILL) and start again."""
        self.stop(graceful=graceful)
        self.start()


class CtrlC:
    """Ctrl-C (SIGINT) as a request to stop, while programs under test run.

    Python raises KeyboardInterrupt wherever the main thread is when SIGINT lands: between
    starting a program and recording it, or halfway through stopping them, which leaves a
    program running. Inside ``with CtrlC() as ctrl_c:`` SIGINT only sets a flag; the
    loops call :meth:`check` where stopping is safe, cleanup runs to its end however often
    Ctrl-C is pressed, and leaving the block raises KeyboardInterrupt when Ctrl-C was
    pressed. Outside the main thread (no signal handler can be set there) it does nothing.
    """

    def __init__(self) -> None:
        self.pressed = False
        self._installed = False
        self._previous: Any = None

    def __enter__(self) -> CtrlC:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
            self._installed = True
        return self

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        self.pressed = True

    def check(self) -> None:
        """Raise KeyboardInterrupt if Ctrl-C was pressed."""
        if self.pressed:
            raise KeyboardInterrupt

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._installed:
            previous = self._previous
            signal.signal(
                signal.SIGINT, signal.default_int_handler if previous is None else previous
            )
            self._installed = False
        if self.pressed and not isinstance(exc, KeyboardInterrupt):
            raise KeyboardInterrupt
