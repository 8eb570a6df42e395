"""What ``ghalistener run`` runs once its configuration is read: the scale-set client,
the metrics and probe server, the publisher and the listener, put together and run
until the stop.

``ghalistener.cli`` imports this module only then: it is where the Kubernetes, GitHub
and metrics client libraries come in, so ``--help`` and a bad configuration are
answered without loading them.
"""

from __future__ import annotations

import logging
import os
import socket

import prometheus_client

from ersctl.api import ERS_KIND
from ersctl.kube.client import ApiClient
from ersctl.kube.connect import api_client as kube_api_client
from ersctl.kube.connect import check_at_start_up
from ersctl.platform.addresses import parse_address
from ersctl.platform.background import Background
from ersctl.platform.logs import configure_logging, http_logging_requested
from ersctl.platform.serving import ProbeServer
from ghalistener import __version__
from ghalistener.actions.client import ActionsClient
from ghalistener.actions.retry import RetryPolicy
from ghalistener.actions.types import SystemInfo
from ghalistener.config import ListenerConfig
from ghalistener.health import ListenerHealth
from ghalistener.listener import Listener
from ghalistener.metrics import ListenerMetrics, ScaleSetLabels
from ghalistener.ports import SessionRetry
from ghalistener.publisher import KubePublisher, KubeRetry
from ghalistener.scaler import Scaler
from ghalistener.sessions import SessionOpener
from ghalistener.stopping import StopSignal

# The command line's name, which the program's start-up lines have always carried (a
# log query selects them by it).
log = logging.getLogger("ghalistener.cli")


def run_listener(
    config: ListenerConfig,
    *,
    kubeconfig: str | None,
    kube_context: str | None,
    log_http: bool,
    stop: StopSignal,
) -> None:
    """Configure the logs, connect to Kubernetes, then serve until ``stop``."""
    # ARC exports no *_created series; the switch is process-global, so it is thrown
    # here, on the program's way to its metrics, and not when the metrics module is
    # imported.
    prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]
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
