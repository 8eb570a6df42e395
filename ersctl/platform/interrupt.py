"""How the programs end: at once, once output and logs are flushed (:func:`exit_now`),
and after a Ctrl-C during start-up with one line and exit 130 (:func:`end_interrupted`).

Standard library only, so that the console entry points (``ghalistener/__main__.py``,
``ersctl/__main__.py``) can import it before anything slow: a Ctrl-C that lands while
the command line's own modules are still being imported must not end in a traceback.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import Final, NoReturn

EXIT_INTERRUPTED: Final = 130


def end_interrupted(program: str) -> NoReturn:
    """Print ``<program>: interrupted`` and exit 130 at once.

    Not SystemExit: a Ctrl-C that lands while an extension module runs code through
    PyRun_String (Cython's module init does) marks CPython 3.11's interpreter as ended by
    an unhandled KeyboardInterrupt even though it was caught, and it then kills itself
    with SIGINT (exit -2) instead of exiting 130 (seen in 6 of 60 start-ups).
    """
    print(f"{program}: interrupted", file=sys.stderr, flush=True)
    exit_now(EXIT_INTERRUPTED)


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
