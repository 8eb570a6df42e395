"""A blocking call on a daemon thread, so that a stop need not wait for it.

A request to a server that does not answer blocks until its timeout, and a stop
(SIGTERM, Ctrl-C) must not: both programs run such calls here (the listener's long poll
and session delete, the start-up check of the API server) and stop waiting for them
when asked. An abandoned call ends on its own thread, which never holds up the exit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Final, Generic, TypeVar

T = TypeVar("T")

CHECK_INTERVAL: Final = 0.05
"""Seconds between looks at the stop request while waiting."""


class Background(Generic[T]):
    """Runs ``call`` on a daemon thread at once. :attr:`done` is set when it ended;
    :meth:`result` then returns its value or raises its exception."""

    def __init__(self, call: Callable[[], T], *, name: str) -> None:
        self._call = call
        self.done = threading.Event()
        self._result: T | None = None
        self._error: BaseException | None = None
        threading.Thread(target=self._run, name=name, daemon=True).start()

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
