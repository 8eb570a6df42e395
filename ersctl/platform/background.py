"""A blocking call on a daemon thread, so that a stop need not wait for it.

A request to a server that does not answer blocks until its timeout, and a stop
(SIGTERM, Ctrl-C) must not: both programs run such calls here (the listener's long poll
and session delete, the start-up check of the API server) and stop waiting for them
when asked. An abandoned call ends on its own thread, which never holds up the exit.

A call made over and over (the listener's long poll, once per message) runs on one
:class:`Worker` thread instead of a new thread each time: starting a thread cost the
listener as much CPU per message as its metrics, health and logging together.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Final, Generic, TypeVar

T = TypeVar("T")

CHECK_INTERVAL: Final = 0.05
"""Seconds between looks at the stop request while waiting."""


class Background(Generic[T]):
    """Runs ``call`` on a daemon thread at once. :attr:`done` is set when it ended;
    :meth:`result` then returns its value or raises its exception."""

    def __init__(self, call: Callable[[], T], *, name: str, worker: Worker | None = None) -> None:
        """Start ``call`` on a thread of its own, or on ``worker``'s thread (``name`` is
        then the worker's)."""
        self._call = call
        self.done = threading.Event()
        self._result: T | None = None
        self._error: BaseException | None = None
        if worker is None:
            threading.Thread(target=self._run, name=name, daemon=True).start()
        else:
            worker.start(self._run)

    def _run(self) -> None:
        try:
            self._result = self._call()
        except BaseException as exc:  # handed to the waiting thread, which re-raises it
            self._error = exc
        finally:
            self.done.set()

    def result(self) -> T:
        """The call's value, or its exception raised here (call after :attr:`done`)."""
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]  # set when no error

    def wait(self, stopped: Callable[[], bool]) -> bool:
        """Wait until the call ended (True) or ``stopped()`` answers True (False)."""
        while not self.done.wait(CHECK_INTERVAL):
            if stopped():
                return False
        return True


class Worker:
    """One daemon thread, started on first use, that runs the calls handed to it in turn.

    For a call a loop makes over and over and waits for each time. A call that is
    abandoned (a stop) still holds the thread until it ends: the next call waits for it,
    so hand it no more calls once one was abandoned.
    """

    def __init__(self, *, name: str) -> None:
        self.name = name
        self._calls: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self, call: Callable[[], None]) -> None:
        """Run ``call`` on the worker's thread once the calls before it ended."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
                self._thread.start()
        self._calls.put(call)

    def _serve(self) -> None:
        while True:
            self._calls.get()()  # Background._run: it catches whatever the call raises
