"""``ersctl reconcile`` creating runners one at a time, for ``examples/bench_burst.py`` only.

Not product code: the burst benchmark compares the controller as it ships (runner
creates of one scale-up sent concurrently) with the same controller creating them one
after another. ``python -m simulation.serial reconcile [ersctl reconcile options]`` runs
the unchanged command (runtime, options, informers, runner controller) with
:class:`OneAtATime` as its set reconciler, so the two rows differ only in that.
"""

from __future__ import annotations

import sys
from typing import Any

from ersctl import cli
from ersctl.runnerset.reconciler import EphemeralRunnerSetReconciler


class OneAtATime(EphemeralRunnerSetReconciler):
    """The shipped reconciler with a runner creation concurrency of 1."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**{**options, "create_concurrency": 1})


def main(argv: list[str] | None = None) -> None:
    """``ersctl``'s command line with :class:`OneAtATime` as its reconciler factory."""
    cli.main(args=argv, prog_name="ersctl-serial", obj=OneAtATime)


if __name__ == "__main__":
    main(sys.argv[1:])
