"""The root of both programs' exception trees, and what a failure makes a CLI exit with.

::

    Failure                      something failed; str() is one line for the user (exit 1)
     +-- ConfigError             one input is unusable: an option, a config field, the
     |                           kubeconfig; ``field`` names it (exit 2)
     +-- ersctl.kube.errors.KubeError / NotLeaderError, the listener's ListenerError, ...

Exit codes, the same for ``ghalistener`` and ``ersctl``: 0 a clean stop, 1 a runtime
failure, 2 bad usage, configuration or kubeconfig (click's own usage errors are 2 too).
No message of this tree carries a secret.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Final

EXIT_OK: Final = 0
EXIT_FAILURE: Final = 1
EXIT_USAGE: Final = 2


class Failure(Exception):
    """Base of every error either program raises on purpose. ``str()`` is one line."""

    exit_code: int = EXIT_FAILURE


class ConfigError(Failure):
    """One input (option, configuration field, kubeconfig) is missing or invalid.

    ``str()`` is ``"<field>: <problem>"``, one line naming the input.
    """

    exit_code = EXIT_USAGE

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """The hint a message about an unknown ``name`` ends with: ``"; did you mean X?"``
    naming the closest of ``known``, or ``""`` when none is close (difflib's 0.6 ratio).

    One wording for every misspelt key or name either program reads, so
    ``"max_runner"`` gets ``"; did you mean max_runners?"`` wherever it is typed.
    """
    close = difflib.get_close_matches(name, sorted(known), n=1)
    return f"; did you mean {close[0]}?" if close else ""
