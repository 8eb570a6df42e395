"""Command line of the controller: ``ersctl reconcile``."""

from __future__ import annotations

import click

from ersctl import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ersctl")
def main() -> None:
    """Reconcile EphemeralRunnerSets: create and delete EphemeralRunners to meet demand."""


@main.command()
def reconcile() -> None:
    """Run the controller until SIGTERM."""
    raise click.ClickException("ersctl reconcile is not built yet")
