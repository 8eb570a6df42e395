"""``ersctl reconcile`` creating runners one at a time, for ``examples/bench_burst.py`` only.

Not product code: the burst benchmark compares the controller as it ships (runner
creates of one scale-up sent concurrently) with the same controller creating them one
after another. ``python -m simulation.serial reconcile [ersctl reconcile options]`` runs
the unchanged command (runtime, options, informers, runner controller) with
runner creates one at a time (:data:`ONE_AT_A_TIME`), so the two rows differ only in that.
"""

from __future__ import annotations

import sys

from ersctl.ephemeralrunnerset.controller import SetReconcilerParts
from simulation.variant import run_reconcile

ONE_AT_A_TIME = SetReconcilerParts(create_concurrency=1)
"""The shipped set reconciler with a runner creation concurrency of 1."""


def main(argv: list[str] | None = None) -> None:
    """``ersctl reconcile`` creating runners one at a time."""
    run_reconcile(ONE_AT_A_TIME, argv, prog_name="ersctl-serial")


if __name__ == "__main__":
    main(sys.argv[1:])
