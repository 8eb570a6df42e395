"""Command line of the listener: ``ghalistener run``."""

from __future__ import annotations

import click

from ghalistener import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ghalistener")
def main() -> None:
    """Scale a GitHub Actions runner scale set by publishing its desired runner count."""


@main.command()
def run() -> None:
    """Run the listener until SIGTERM."""
    raise click.ClickException("ghalistener run is not built yet")
