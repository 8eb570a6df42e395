"""Command line of the listener: ``ghalistener run``.

Exit codes, as for ``ersctl`` (``ersctl.platform.errors``): 0 after a requested stop
(SIGTERM/SIGINT), 2 for an invalid configuration (one line on stderr naming the field;
this includes a kubeconfig that cannot be loaded and a ``metrics_addr`` that cannot be
bound), 1 for any other fatal error (one line on stderr naming the cause; this includes
a ``metrics_addr`` whose port is in use, a condition of the host that a restart may
clear).

SIGTERM/SIGINT set one :class:`~ghalistener.stopping.StopSignal`; every wait of the
program sleeps on it (the scale-set client's retry backoff, the publisher's, the 409
session wait), so the program ends within 2 s even in the middle of a retry burst.

``ghalistener`` with no command and env ``LISTENER_CONFIG_PATH`` set is ``ghalistener
run``: ARC's AutoscalingListener Pod runs its image's ``/ghalistener`` (in ours a link to
this program) with that variable and no arguments.

What ``run`` runs is put together by ``ghalistener.wiring``, imported once the
configuration is read and valid: this module loads no Kubernetes, HTTP, JWT or metrics
library, so ``--help``, a typo and a bad configuration get their answer at once.
"""

from __future__ import annotations

import os
import signal
from typing import Any

import click

from ersctl.platform.cli import kubeconfig_options, loading, run_command
from ersctl.platform.logs import LOG_HTTP_ENV
from ghalistener import __version__
from ghalistener.config import CONFIG_PATH_ENV, load_config
from ghalistener.stopping import StopSignal


class _ListenerGroup(click.Group):
    """The command group; no arguments and ``LISTENER_CONFIG_PATH`` set mean ``run``, the
    way ARC's listener Pod starts its program."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args and os.environ.get(CONFIG_PATH_ENV):
            args = ["run"]
        return super().parse_args(ctx, args)


@click.group(cls=_ListenerGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ghalistener")
def main() -> None:
    """Scale a GitHub Actions runner scale set by publishing its desired runner count."""


@main.command()
@click.option(
    "--config", "config_path", metavar="PATH", help="JSON config file [env LISTENER_CONFIG_PATH]."
)
@kubeconfig_options
@click.option("--configure-url", help="GitHub org, repo or enterprise URL.")
@click.option("--ephemeral-runner-set-namespace", help="Namespace of the EphemeralRunnerSet.")
@click.option("--ephemeral-runner-set-name", help="Name of the EphemeralRunnerSet.")
@click.option("--runner-scale-set-id", type=int, help="The scale set's id.")
@click.option("--min-runners", type=int, help="Lower bound of the desired count.")
@click.option("--max-runners", type=int, help="Upper bound of the desired count.")
@click.option("--log-level", help="debug, info, warn or error.")
@click.option("--log-format", help="text or json.")
@click.option(
    "--log-http",
    is_flag=True,
    help="With --log-level debug, also the HTTP libraries' wire traces (many lines a "
    f"request) [env {LOG_HTTP_ENV}=1].",
)
@click.option("--metrics-addr", help="[host]:port to serve metrics on; empty: no metrics.")
@click.option("--metrics-endpoint", help="HTTP path of the metrics (default /metrics).")
@click.option("--session-retry-interval", type=float, help="Seconds between tries on 409 (30).")
@click.option("--session-retry-attempts", type=int, help="Tries on 409 before giving up (10).")
def run(
    config_path: str | None,
    kubeconfig: str | None,
    kube_context: str | None,
    log_http: bool,
    **overrides: Any,
) -> None:
    """Run the listener until SIGTERM or SIGINT (then delete the session and exit 0)."""
    # First, so that a stop requested during start-up is a clean stop too (exit 0).
    stop = StopSignal()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.request())
    with run_command("ghalistener"):
        config = load_config(path=config_path, env=os.environ, overrides=overrides)
        # Imported once the configuration is valid: the Kubernetes, GitHub and metrics
        # clients are most of the start-up (about half a second of CPU), which --help or
        # a bad configuration is answered without.
        with loading():
            from ghalistener.wiring import run_listener

        run_listener(
            config, kubeconfig=kubeconfig, kube_context=kube_context, log_http=log_http, stop=stop
        )
