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
"""

from __future__ import annotations

import logging
import os
import signal
import socket
from typing import Any

import click
import prometheus_client

from ersctl.api import ERS_KIND
from ersctl.kube.client import ApiClient
from ersctl.kube.connect import api_client as kube_api_client
from ersctl.kube.connect import check_at_start_up
from ersctl.platform.addresses import parse_address
from ersctl.platform.background import Background
from ersctl.platform.cli import kubeconfig_options, run_command
from ersctl.platform.logs import LOG_HTTP_ENV, configure_logging, http_logging_requested
from ersctl.platform.serving import ProbeServer
from ghalistener import __version__
from ghalistener.actions.client import ActionsClient
from ghalistener.actions.retry import RetryPolicy
from ghalistener.actions.types import SystemInfo
from ghalistener.config import CONFIG_PATH_ENV, ListenerConfig, load_config
from ghalistener.health import ListenerHealth
from ghalistener.listener import Listener
from ghalistener.metrics import ListenerMetrics, ScaleSetLabels
from ghalistener.ports import SessionRetry
from ghalistener.publisher import KubePublisher, KubeRetry
from ghalistener.scaler import Scaler
from ghalistener.sessions import SessionOpener
from ghalistener.stopping import StopSignal

log = logging.getLogger(__name__)


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
    # ARC exports no *_created series; the switch is process-global, so it is thrown
    # here, in the program's entry point, and not when the metrics module is imported.
    prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]
    # First, so that a stop requested during start-up is a clean stop too (exit 0).
    stop = StopSignal()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.request())
    with run_command("ghalistener"):
        config = load_config(path=config_path, env=os.environ, overrides=overrides)
        configure_logging(
            level=config.log_level,
            fmt=config.log_format,
            secrets=config.secrets(),
            # The set it publishes to: its lines and the controller's about that set
            # are selected by the same three fields.
            fields={
                "kind": ERS_KIND,
                "namespace": config.ephemeral_runner_set_namespace,
                "name": config.ephemeral_runner_set_name,
            },
            http=log_http or http_logging_requested(os.environ),
        )
        _serve(config, kube_api_client(kubeconfig, context=kube_context), stop)


def _serve(config: ListenerConfig, api_client: ApiClient, stop: StopSignal) -> None:
    actions = ActionsClient(
        config_url=config.configure_url,
        credentials=config.credentials(),
        root_ca=config.server_root_ca or None,
        retry=RetryPolicy(sleep=stop.sleep),
        system_info=SystemInfo(
            version=__version__, scale_set_id=config.runner_scale_set_id, subsystem="ghalistener"
        ),
    )
    metrics = ListenerMetrics(_scale_set_labels(config), config.metrics)
    metrics.publish_static(min_runners=config.min_runners, max_runners=config.max_runners)
    health = ListenerHealth()
    server = None
    address = parse_address("metrics_addr", config.metrics_addr)
    if address is not None:
        server = ProbeServer(
            metrics.registry,
            option="metrics_addr",
            address=address,
            endpoint=config.metrics_endpoint,
            live=health.live,
            ready=health.ready,
        )
        server.start()

    publisher = KubePublisher(
        api_client=api_client,
        namespace=config.ephemeral_runner_set_namespace,
        name=config.ephemeral_runner_set_name,
        scale_set_id=config.runner_scale_set_id,
        retry=KubeRetry(sleep=stop.sleep),
    )
    try:
        # Before a session is opened: an unreachable API server or a missing set ends
        # the start with one line, not after a session and a round of retries.
        # A server that does not answer holds the check until its timeout; a stop does
        # not wait for it. The answer says what the previous listener published.
        check = Background(
            lambda: check_at_start_up(publisher.check_target, logger=log), name="check-target"
        )
        if not check.wait(lambda: stop.requested):
            return
        resumed = check.result()
        listener = Listener(
            scale_set_id=config.runner_scale_set_id,
            open_session=SessionOpener(
                client=actions,
                scale_set_id=config.runner_scale_set_id,
                owner_name=socket.gethostname(),
            ),
            scaler=Scaler(
                min_runners=config.min_runners,
                max_runners=config.max_runners,
                completed=resumed.completed_runners,
            ),
            publisher=publisher,
            metrics=metrics,
            session_retry=SessionRetry(
                interval=config.session_retry_interval, attempts=config.session_retry_attempts
            ),
            stop=stop,
            health=health,
            last_message_id=resumed.last_message_id,
        )
        listener.run()
    finally:
        if server is not None:
            server.stop()
        actions.close()
        api_client.close()  # type: ignore[no-untyped-call]


def _scale_set_labels(config: ListenerConfig) -> ScaleSetLabels:
    github = config.github
    return ScaleSetLabels(
        name=config.ephemeral_runner_set_name,
        namespace=config.ephemeral_runner_set_namespace,
        enterprise=github.enterprise,
        organization=github.organization,
        repository=github.repository,
    )
