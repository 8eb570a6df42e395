"""How the programs end: at once, once output and logs are flushed (:func:`exit_now`),
after a Ctrl-C during start-up with one line and exit 130 (:func:`end_interrupted`,
:func:`interrupt_ends_start_up`), and when SIGTERM or SIGINT asks them to stop
(:func:`stop_on_signals`).

Standard library only, so that the console entry points (``ghalistener/__main__.py``,
``ersctl/__main__.py``) can import it before anything slow: a Ctrl-C that lands while
the command line's own modules are still being imported must not end in a traceback.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from types import FrameType
from typing import Final, NoReturn

EXIT_INTERRUPTED: Final = 130


def end_interrupted(program: str) -> NoReturn:
    """Print ``<program>: interrupted`` and exit 130 at once.

    Not SystemExit: a Ctrl-C that lands while an extension module runs code through
    PyRun_String (Cython's module init does) marks CPython 3.11's interpreter as ended by
    an unhandled KeyboardInterrupt even though it was caught, and it then kills itself
    with SIGINT (exit -2) instead of exiting 130 (seen in 6 of 60 start-ups).
    """
    _say_interrupted(program)
    exit_now(EXIT_INTERRUPTED)


def _say_interrupted(program: str) -> None:
    """``<program>: interrupted`` on stderr, safe inside a signal handler too: the main
    thread may be inside a write to either stream, so a best-effort flush, then the line
    straight to the file descriptor (print could be re-entered)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(OSError):
        os.write(2, f"{program}: interrupted\n".encode())


def interrupt_ends_start_up(program: str) -> None:
    """Until the command installs its own handlers (for the whole run of a command that
    installs none: ``status``, ``rollout``, ...), end ``program`` on Ctrl-C at once:
    ``<program>: interrupted`` and exit 130. Call first thing, from the main thread. A
    SIGINT the program was started ignoring (a background job of a shell script) stays
    ignored, as it was before.

    Not by letting Python raise KeyboardInterrupt: its default handler raises it
    wherever the main thread is, and inside a weakref callback or a ``__del__`` (the
    import system's module-lock callback runs after every import) the exception is
    only printed as "Exception ignored ... Traceback" and the program goes on as if no
    Ctrl-C had come (a listener interrupted while importing ran on, seen once in a few
    hundred start-ups). A handler that ends the process itself cannot be swallowed.
    """

    def interrupted(signum: int, frame: FrameType | None) -> None:
        # Not exit_now: logging's shutdown could re-enter a handler the main thread is in.
        _say_interrupted(program)
        os._exit(EXIT_INTERRUPTED)

    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, interrupted)


def exit_now(code: int) -> NoReturn:
    """End the process with ``code`` once output and logs are flushed, skipping the
    interpreter's teardown: freeing the Kubernetes client's thousands of classes takes
    0.3 s on an idle core and over 2 s on a loaded one, all of it after the program has
    stopped, and a SIGTERM's grace period pays for it. Nothing is lost: the command has
    returned, its threads are daemons it has stopped, and logging is shut down here."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nobody reads it
            stream.flush()
    os._exit(code)


def stop_on_signals(
    stop: threading.Event,
    *,
    then: Callable[[signal.Signals], None] | None = None,
    signals: Iterable[signal.Signals] = (signal.SIGTERM, signal.SIGINT),
) -> None:
    """Set ``stop`` when one of ``signals`` arrives, then call ``then`` with it. Call once,
    from the main thread, as the program starts.

    Not from the signal handler: Python runs a handler in the main thread between two
    bytecodes, which may be while that thread holds ``stop``'s own lock (``stop.wait``
    takes it at every wake-up), and ``stop.set()`` there waits for itself for ever (the
    embedded API server hung on one SIGINT in six). The interpreter writes each signal's
    number to a pipe (its wakeup fd, before any Python code runs), and a thread reading
    that pipe sets ``stop`` and calls ``then``, where taking locks (logging's among
    them) is safe.
    """
    wanted = {int(signum) for signum in signals}
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    for signum in wanted:
        signal.signal(signum, _noted_by_the_wakeup_fd)

    def relay() -> None:
        while True:
            for signum in os.read(read_end, 64):
                if signum in wanted:
                    stop.set()
                    if then is not None:
                        then(signal.Signals(signum))

    threading.Thread(target=relay, name="signals", daemon=True).start()


def _noted_by_the_wakeup_fd(signum: int, frame: FrameType | None) -> None:
    """Handles the signal, so it does not end the process; the wakeup fd tells."""
