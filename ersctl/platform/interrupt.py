"""How a program that a Ctrl-C interrupted during start-up ends: one line, exit 130.

Standard library only, so that the console entry points (``ghalistener/__main__.py``,
``ersctl/__main__.py``) can import it before anything slow: a Ctrl-C that lands while
the command line's own modules are still being imported must not end in a traceback.
"""

from __future__ import annotations

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
    sys.stdout.flush()
    os._exit(EXIT_INTERRUPTED)
