"""Waiting in tests for something another thread or process makes true.

:func:`eventually` is the one polling helper of the test suite: a test waits for an
observable event (a record in the API server's request log, a line in a subprocess's
output, an object in a cache) instead of sleeping for a fixed time. A test that must
show something did *not* happen first waits for the event that proves it had its
chance to, then asserts.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def eventually(
    check: Callable[[], T],
    *,
    timeout: float = 5.0,
    interval: float = 0.02,
    what: str = "the condition",
) -> T:
    """Call ``check`` every ``interval`` seconds until it returns a truthy value, and
    return that value. When ``timeout`` seconds pass first, raise AssertionError naming
    ``what`` and the last value ``check`` returned. ``check`` runs at least once, and
    an exception it raises propagates at once."""
    deadline = time.monotonic() + timeout
    value = check()
    while not value:
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {timeout:g} s (last: {value!r})")
        time.sleep(interval)
        value = check()
    return value


def run_until(
    command: list[str], done: Callable[[], object], *, timeout: float, what: str
) -> tuple[int, str]:
    """Run ``command`` until ``done()`` holds (polled as :func:`eventually` does), then
    stop it with SIGTERM; its exit code and stderr. It is stopped whatever happens."""
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True) as process:
        try:
            eventually(done, timeout=timeout, what=what)
        finally:
            process.send_signal(signal.SIGTERM)
            _, stderr = process.communicate(timeout=timeout)
    return process.returncode, stderr
