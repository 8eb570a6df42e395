"""``stop_on_signals``: the stop a signal asks for is never lost, whatever the main
thread holds when the signal lands."""

from __future__ import annotations

import subprocess
import sys

SIGNALLED_WHILE_WAKING = """
import signal, threading
from ersctl.platform.interrupt import stop_on_signals

stop, told = threading.Event(), threading.Event()
names = []

def then(signum: signal.Signals) -> None:
    names.append(signum.name)
    told.set()

stop_on_signals(stop, signals=(signal.SIGUSR1,), then=then)
# What stop.wait(...) holds each time it wakes up: the lock of the Event's condition
# (CPython's Event._cond). The signal's Python handler runs at once, inside.
with stop._cond:
    signal.raise_signal(signal.SIGUSR1)
print("stopped" if stop.wait(5) and told.wait(5) else "not stopped", *names, flush=True)
"""


def test_a_signal_landing_while_the_main_thread_holds_the_stops_lock_still_stops() -> None:
    # The standalone API server hung on one SIGINT in six: its handler set the Event
    # itself, and ran while its main thread, waking from stop.wait(0.5), held its lock.
    with subprocess.Popen(
        [sys.executable, "-c", SIGNALLED_WHILE_WAKING], stdout=subprocess.PIPE, text=True
    ) as program:
        try:
            out, _ = program.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            program.kill()
            raise AssertionError("still running 10 s after SIGUSR1: the stop was lost") from None

    assert (program.returncode, out.strip()) == (0, "stopped SIGUSR1")
