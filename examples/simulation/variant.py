"""``ersctl reconcile`` with set-reconciler parts other than the shipped ones, for the
benchmarks' baselines (``simulation.baseline``, ``simulation.serial``).

The command's options, runtime, informers, signal handling and start-up
(``ersctl.platform.cli.launch``) are the product's; only the parts no option sets
(``ersctl.ephemeralrunnerset.controller.SetReconcilerParts``) differ, given to the
command's callback through its keyword-only ``set_reconciler``.
"""

from __future__ import annotations

import functools

import click

from ersctl import cli
from ersctl.ephemeralrunnerset.controller import SetReconcilerParts
from ersctl.platform.cli import launch


def run_reconcile(parts: SetReconcilerParts, argv: list[str] | None, *, prog_name: str) -> None:
    """Run ``reconcile`` (the one command of ``prog_name``) with ``parts``."""
    assert cli.reconcile.callback is not None
    reconcile = click.Command(
        "reconcile",
        params=cli.reconcile.params,
        callback=functools.partial(cli.reconcile.callback, set_reconciler=parts),
        help=cli.reconcile.help,
    )
    launch(prog_name, click.Group(prog_name, commands={"reconcile": reconcile}), argv)
