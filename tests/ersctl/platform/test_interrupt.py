"""``stop_on_signals``: the stop a signal asks for is never lost, whatever the main
thread holds when the signal lands; and a Ctrl-C during start-up
(``interrupt_ends_start_up``) ends the program wherever it lands."""

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


def outcome_of(program: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of ``program`` run by a fresh interpreter."""
    finished = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=30, check=False
    )
    return finished.returncode, finished.stdout, finished.stderr


INTERRUPTED_IN_A_WEAKREF_CALLBACK = """
import signal, weakref
from ersctl.platform.interrupt import interrupt_ends_start_up

interrupt_ends_start_up("prog")

class Lock:
    pass

# As the import system's module locks are: a weakref callback runs when one goes, after
# each import. The Ctrl-C lands inside it.
lock = Lock()
ref = weakref.ref(lock, lambda _: signal.raise_signal(signal.SIGINT))
del lock
print("went on", flush=True)
"""


def test_a_ctrl_c_landing_in_a_weakref_callback_during_start_up_still_ends_the_program() -> None:
    # With Python's own handler the KeyboardInterrupt is raised inside the callback, only
    # printed ("Exception ignored in: ... Traceback") and the program goes on: a
    # listener interrupted while importing ran on until its first request timed out.
    assert outcome_of(INTERRUPTED_IN_A_WEAKREF_CALLBACK) == (130, "", "prog: interrupted\n")


def test_a_sigint_the_program_was_started_ignoring_stays_ignored() -> None:
    # A background job of a non-interactive shell starts with SIGINT ignored: the start-up
    # handler must not make a Ctrl-C meant for the shell end it.
    program = """
import signal
from ersctl.platform.interrupt import interrupt_ends_start_up

signal.signal(signal.SIGINT, signal.SIG_IGN)  # as the shell started it
interrupt_ends_start_up("prog")
signal.raise_signal(signal.SIGINT)
print("went on", flush=True)
"""
    assert outcome_of(program) == (0, "went on\n", "")
