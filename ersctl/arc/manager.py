"""``/manager``: ARC's controller command line, run as ``ersctl reconcile``.

ARC's Helm chart runs its controller as ``/manager`` with Go-style flags and its
environment; the image links ``/manager`` here, so that changing the Deployment's image
is the whole switch. :mod:`ersctl.arc.translate` reads those flags and variables into
``ersctl reconcile``'s options, and that command runs: one start-up, one set of
behaviours. Exit codes are ``ersctl reconcile``'s (0 a clean stop, 1 a failure, 2 bad
usage or configuration); an ARC flag that is not defined, malformed, or has a value
ersctl cannot honour is exit 2 with one line naming it; ``-h`` or ``-help`` lists ARC's
flags and what each becomes (on stderr, exit 0, as Go does).
"""

from __future__ import annotations

import logging
import os
import sys

from ersctl.arc.translate import translate, usage
from ersctl.platform.cli import launch, run_command
from ersctl.platform.errors import EXIT_OK, ConfigError
from ersctl.platform.goflags import HelpRequested
from ersctl.platform.interrupt import exit_now
from ersctl.platform.logs import configure_logging

PROGRAM = "ersctl"

log = logging.getLogger("ersctl")


def main(argv: list[str] | None = None) -> None:
    """Read ARC's arguments (default: this process's) and environment, then run
    ``ersctl reconcile`` with what they mean."""
    args = sys.argv[1:] if argv is None else argv
    with run_command(PROGRAM):
        try:
            translation = translate(args, os.environ)
        except HelpRequested:
            print(usage(), file=sys.stderr)
            exit_now(EXIT_OK)
        try:
            configure_logging(level=translation.log_level, fmt=translation.log_format)
        except ConfigError as exc:  # named as ARC's flag, not as a config field
            raise ConfigError(f"--{exc.field.replace('_', '-')}", exc.problem) from None
    for warning in translation.warnings:
        log.warning("%s", warning)
    # ersctl reconcile reads its Pod's names from these (own image, namespace).
    os.environ.update(translation.env)
    launch(PROGRAM, "ersctl.cli:main", ["reconcile", *translation.args])


if __name__ == "__main__":
    main()
