"""Command line of the controller.

- ``ersctl reconcile``: run the controllers until SIGTERM (or one pass over one set
  with ``--once``): EphemeralRunnerSet, EphemeralRunner, AutoscalingRunnerSet and
  AutoscalingListener, each but the first switched off by its ``--no-...`` flag.
- ``ersctl status [NAMESPACE/NAME] [-o json]``: the EphemeralRunnerSets with their
  runners' counts and the AutoscalingRunnerSets, read live (``ersctl.ephemeralrunnerset.table``).
- ``ersctl rollout NAMESPACE/NAME``: bump ``spec.actionableRevision`` so the
  controller rebuilds idle runners from a changed runner template.
- ``ersctl scaleset --config-url URL --name NAME``: find or create a runner scale set
  on GitHub and print its id (``ersctl.scaleset.command``).

ARC's controller command line (the image's ``/manager``, ``ersctl.arc``) runs this same
``reconcile``, with ARC's flags read into its options.

Exit codes, as for ``ghalistener`` (``ersctl.platform.errors``): 0 a clean stop (SIGTERM
or SIGINT), 1 a runtime failure, 2 bad usage, configuration or kubeconfig; every failure
is one line on stderr. What ``reconcile`` runs is put together by ``ersctl.wiring``;
its callback's keyword-only ``set_reconciler`` (not an option; None: the shipped ones)
holds the set reconciler's parts no option sets, for a caller that builds this command
with others (the benchmarks' baselines, ``examples/simulation/``).

This module declares the commands and checks what needs nothing else; each command's
work (``ersctl.commands``) is imported when that command runs, after those checks. So
``--help``, a typo or a bad option value loads no Kubernetes, HTTP, JWT or metrics
library, nor any controller, and gets its one line at once. (Two checks still come
after: the leader election timings, checked together by ``ersctl.kube.leader``, and
``--listener-metrics-addr``.)
"""

from __future__ import annotations

import logging
import os
import threading
from typing import TYPE_CHECKING, Final

import click

from ersctl import __version__
from ersctl.ephemeralrunner.defaults import DEFAULT_WORKERS as DEFAULT_RUNNER_WORKERS
from ersctl.ephemeralrunner.health import HealthPolicy
from ersctl.ephemeralrunnerset.failurepolicy import DEFAULT_TTL as DEFAULT_FAILED_RUNNER_TTL
from ersctl.kube.reconcile import Request
from ersctl.platform.addresses import parse_address
from ersctl.platform.cli import kubeconfig_options, loading, run_command
from ersctl.platform.errors import ConfigError
from ersctl.platform.interrupt import stop_on_signals
from ersctl.platform.logs import LOG_HTTP_ENV, configure_logging, http_logging_requested
from ersctl.scaleset.command import main as scaleset_command

if TYPE_CHECKING:  # the controller module is imported when reconcile runs, not before
    from ersctl.ephemeralrunnerset.controller import SetReconcilerParts

log = logging.getLogger("ersctl")

PROGRAM: Final = "ersctl"
METRICS_OPTION: Final = "--metrics-addr"
PROBE_OPTION: Final = "--health-probe-bind-address"


def parse_key(value: str) -> Request:
    """``NAMESPACE/NAME`` -> Request; ValueError otherwise."""
    namespace, sep, name = value.partition("/")
    if not sep or not namespace or not name or "/" in name:
        raise ValueError(f"{value!r}: expected NAMESPACE/NAME")
    return Request(namespace, name)


class _KeyType(click.ParamType[Request]):
    name = "NAMESPACE/NAME"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> Request:
        if isinstance(value, Request):
            return value
        try:
            return parse_key(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


KEY = _KeyType()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ersctl")
def main() -> None:
    """Run GitHub Actions runner scale sets on Kubernetes, with ARC's objects.

    `reconcile` runs four controllers: AutoscalingRunnerSet (the scale set on GitHub,
    its EphemeralRunnerSet and its AutoscalingListener), AutoscalingListener (the
    listener Pod that publishes the desired runner count), EphemeralRunnerSet (creates
    and deletes EphemeralRunners to meet that count) and EphemeralRunner (registers each
    runner and runs its Pod). The other commands inspect and nudge them.
    """


@main.command()
@click.option("--namespace", default=None, help="Only watch this namespace (default: all).")
@kubeconfig_options
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Reconciles at once per controller, the EphemeralRunner controller excepted "
    "(each one's own option below overrides it).",
)
@click.option(
    "--ephemeral-runner-max-concurrent-reconciles",
    "--runner-max-concurrent-reconciles",
    "runner_workers",
    type=click.IntRange(min=1),
    default=DEFAULT_RUNNER_WORKERS,
    show_default=True,
    help="Reconciles at once of the EphemeralRunner controller (ARC 0.15's flag; 0.14 "
    "names it --runner-max-concurrent-reconciles): each new runner waits on GitHub for "
    "its JIT config, so a burst is registered about this many at a time.",
)
@click.option(
    "--ephemeral-runner-set-max-concurrent-reconciles",
    "runner_set_workers",
    type=click.IntRange(min=1),
    default=None,
    help="Reconciles at once of the EphemeralRunnerSet controller (default: --workers).",
)
@click.option(
    "--autoscaling-runner-set-max-concurrent-reconciles",
    "autoscaling_workers",
    type=click.IntRange(min=1),
    default=None,
    help="Reconciles at once of the AutoscalingRunnerSet controller (default: --workers).",
)
@click.option(
    "--autoscaling-listener-max-concurrent-reconciles",
    "listener_workers",
    type=click.IntRange(min=1),
    default=None,
    help="Reconciles at once of the AutoscalingListener controller (default: --workers).",
)
@click.option(
    "--k8s-client-rate-limiter-qps",
    "kube_qps",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Requests a second to the API server, as ARC's flag (0: no limit).",
)
@click.option(
    "--k8s-client-rate-limiter-burst",
    "kube_burst",
    type=click.IntRange(min=1),
    default=30,
    show_default=True,
    help="Requests at once above that rate.",
)
@click.option(
    "--leader-elect/--no-leader-elect",
    default=True,
    show_default=True,
    help="Hold a Lease so replicas never reconcile at once.",
)
@click.option(
    "--lease-namespace",
    default=None,
    help="Namespace of the Lease (default: --namespace, else this pod's namespace).",
)
@click.option(
    "--lease-name",
    default="ersctl-leader",
    show_default=True,
    help="Name of the Lease the replicas compete for.",
)
@click.option(
    "--lease-duration",
    type=click.IntRange(min=2),
    default=15,
    show_default=True,
    help="Seconds a standby waits after the leader's last renewal before taking the Lease "
    "(a crashed leader's successor starts within this); more than --renew-deadline.",
)
@click.option(
    "--renew-deadline",
    type=click.FloatRange(min=1.3),
    default=10.0,
    show_default=True,
    help="Seconds the leader keeps trying to renew before it stops reconciling and exits "
    "(exit 1); more than 1.2 x --retry-period.",
)
@click.option(
    "--retry-period",
    type=click.FloatRange(min=1.0),
    default=2.0,
    show_default=True,
    help="Seconds between tries to take or renew the Lease; the holder writes it at its "
    "first try once its last write is (--renew-deadline - --retry-period) / 2 old "
    "(every 4 s with the defaults).",
)
@click.option(
    "--resync-period",
    type=click.FloatRange(min=1.0),
    default=600.0,
    show_default=True,
    help="Seconds between reconciles of every object whether or not it changed (a "
    "backstop for a missed watch event).",
)
@click.option(
    "--runner-controller/--no-runner-controller",
    default=True,
    show_default=True,
    help="Run the EphemeralRunner controller: register each runner (JIT config in "
    "a Secret) and run its Pod. Off where something else plays that part (ARC's "
    "controller, the simulation's runner agent).",
)
@click.option(
    "--autoscaling-runner-set-controller/--no-autoscaling-runner-set-controller",
    default=True,
    show_default=True,
    help="Run the AutoscalingRunnerSet controller: each ARS's scale set on GitHub, its "
    "EphemeralRunnerSet and its AutoscalingListener. Needs the ARS CRD installed.",
)
@click.option(
    "--listener-namespace",
    default=None,
    help="Namespace of the AutoscalingListeners (default: --namespace, else, in a Pod, "
    "its own, as ARC's; outside a cluster, each AutoscalingRunnerSet's own).",
)
@click.option(
    "--runner-max-failures",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Failed runner Pods before an EphemeralRunner turns Failed.",
)
@click.option(
    "--runner-start-timeout",
    type=click.FloatRange(min=1.0),
    default=HealthPolicy.start_timeout,
    show_default=True,
    help="Seconds a runner Pod may take to start its runner container (an image that "
    "does not pull, an unschedulable Pod) before it counts as failed: a Warning Event "
    "names the cause and a new Pod follows after the failure backoff.",
)
@click.option(
    "--runner-online-timeout",
    type=click.FloatRange(min=1.0),
    default=HealthPolicy.online_timeout,
    show_default=True,
    help="Seconds after its container started by which an idle runner must be online "
    "at GitHub (looked up once per Pod); offline, its Pod counts as failed; unknown to GitHub, "
    "the runner is deleted and replaced.",
)
@click.option(
    "--runner-node-lost-timeout",
    type=click.FloatRange(min=1.0),
    default=HealthPolicy.node_lost_timeout,
    show_default=True,
    help="Seconds a runner Pod may stay in phase Unknown, or terminating past its grace "
    "period, before its node counts as lost: the Pod is force-deleted and the runner "
    "replaced, unless GitHub says it is running a job.",
)
@click.option(
    "--runner-deregistration-timeout",
    type=click.FloatRange(min=1.0),
    default=HealthPolicy.deregistration_timeout,
    show_default=True,
    help="Seconds a deleted runner waits for GitHub to remove its registration while "
    "GitHub keeps failing; then it is let go with a Warning naming its runner id.",
)
@click.option(
    "--busy-runner-protection/--no-busy-runner-protection",
    default=True,
    show_default=True,
    help="Annotate busy runners' Pods karpenter.sh/do-not-disrupt and "
    "cluster-autoscaler.kubernetes.io/safe-to-evict=false, so consolidation leaves "
    "their nodes alone until the job ends.",
)
@click.option(
    "--failed-runner-ttl",
    type=click.FloatRange(min=1.0),
    default=DEFAULT_FAILED_RUNNER_TTL,
    show_default=True,
    help="Seconds a Failed EphemeralRunner is kept (for inspection) before it is removed "
    "from the service and deleted, so a new runner takes its slot. A Warning Event on the "
    "set names it and its last reason.",
)
@click.option(
    "--listener-controller/--no-listener-controller",
    default=True,
    show_default=True,
    help="Also run the AutoscalingListener controller: one listener Pod per scale set, "
    "with its config Secret, ServiceAccount, Role and RoleBinding.",
)
@click.option(
    "--listener-image",
    default="",
    help="Image of the listener Pods of AutoscalingListeners that name none "
    "(default: this controller's own image, read from its Pod: $POD_NAME).",
)
@click.option(
    "--listener-metrics-addr",
    default=":8080",
    show_default=True,
    help="HOST:PORT of each listener's metrics server (its config's metrics_addr); 0 disables.",
)
@click.option(
    "--listener-metrics-endpoint",
    default="/metrics",
    show_default=True,
    help="HTTP path of each listener's metrics (its config's metrics_endpoint).",
)
@click.option(
    "--listener-image-pull-secret",
    "listener_pull_secrets",
    multiple=True,
    metavar="NAME",
    help="An imagePullSecret of the listener Pods of AutoscalingListeners that name none "
    "(repeatable).",
)
@click.option(
    "--exclude-label-propagation-prefix",
    "exclude_label_prefixes",
    multiple=True,
    metavar="PREFIX",
    help="AutoscalingRunnerSet labels starting with PREFIX are not copied to the objects "
    "it makes (repeatable; ARC's flag).",
)
@click.option(
    "--metrics-addr",
    default=":8080",
    show_default=True,
    help="HOST:PORT for /metrics, /healthz and /readyz; 0 disables.",
)
@click.option(
    "--health-probe-bind-address",
    "probe_addr",
    default="",
    help="HOST:PORT for /healthz and /readyz alone (ARC's :8081), besides --metrics-addr.",
)
@click.option(
    "--once",
    type=KEY,
    default=None,
    help="Reconcile NAMESPACE/NAME once, print the decision, exit (takes no lease).",
)
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: one readable line an event; json: one object a line, the object a line is "
    "about in its kind, namespace and name fields, a reconcile's lines sharing a reconcileID.",
)
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warn", "warning", "error"], case_sensitive=False),
    default="info",
    show_default=True,
    help="The least severe level logged.",
)
@click.option(
    "--log-http",
    is_flag=True,
    help="With --log-level debug, also the HTTP libraries' wire traces (many lines a "
    f"request) [env {LOG_HTTP_ENV}=1].",
)
def reconcile(
    namespace: str | None,
    kubeconfig: str | None,
    kube_context: str | None,
    workers: int,
    runner_workers: int,
    runner_set_workers: int | None,
    autoscaling_workers: int | None,
    listener_workers: int | None,
    kube_qps: int,
    kube_burst: int,
    leader_elect: bool,
    lease_namespace: str | None,
    lease_name: str,
    lease_duration: int,
    renew_deadline: float,
    retry_period: float,
    resync_period: float,
    runner_controller: bool,
    autoscaling_runner_set_controller: bool,
    listener_namespace: str | None,
    runner_max_failures: int,
    runner_start_timeout: float,
    runner_online_timeout: float,
    runner_node_lost_timeout: float,
    runner_deregistration_timeout: float,
    busy_runner_protection: bool,
    failed_runner_ttl: float,
    listener_controller: bool,
    listener_image: str,
    listener_metrics_addr: str,
    listener_metrics_endpoint: str,
    listener_pull_secrets: tuple[str, ...],
    exclude_label_prefixes: tuple[str, ...],
    metrics_addr: str,
    probe_addr: str,
    once: Request | None,
    log_format: str,
    log_level: str,
    log_http: bool,
    *,
    set_reconciler: SetReconcilerParts | None = None,
) -> None:
    """Run the controllers until SIGTERM."""
    # First, so that a stop requested during start-up is a clean stop too (exit 0).
    stop = threading.Event()
    stop_on_signals(stop, then=lambda signum: log.info("received %s, stopping", signum.name))
    with run_command(PROGRAM):
        configure_logging(
            fmt=log_format, level=log_level, http=log_http or http_logging_requested(os.environ)
        )
        address = parse_address(METRICS_OPTION, metrics_addr)
        probe_address = parse_address(PROBE_OPTION, probe_addr)
        if namespace and listener_namespace and listener_namespace != namespace:
            # The listener informer watches --namespace only: a listener elsewhere would
            # never be seen, and created again on every reconcile.
            raise ConfigError(
                "--listener-namespace",
                f"{listener_namespace!r} is outside --namespace {namespace!r}, which the "
                "controller is confined to",
            )
        # Imported now, the options above checked: the Kubernetes client and the
        # controllers are most of the start-up (half a second of CPU), which --help, a
        # typo or a bad address is answered without.
        with loading():
            from ersctl.autoscalinglistener.objects import ListenerSettings
            from ersctl.commands.reconcile import (
                reconcile_once,
                resolve_listener_namespace,
                run_until_stopped,
            )
            from ersctl.ephemeralrunnerset.controller import SHIPPED
            from ersctl.kube.connect import api_client, limit_requests, own_image, pod_namespace
            from ersctl.kube.leader import LeaderElectionConfig
            from ersctl.wiring import ControllerOptions

        parts = SHIPPED if set_reconciler is None else set_reconciler
        api = api_client(kubeconfig, context=kube_context)
        limit_requests(api, qps=kube_qps, burst=kube_burst)
        if once is not None:
            reconcile_once(api, once, set_reconciler=parts, stop=stop)
            return
        election = None
        if leader_elect:
            try:
                election = LeaderElectionConfig(
                    namespace=lease_namespace or namespace or pod_namespace(),
                    name=lease_name,
                    lease_duration=lease_duration,
                    renew_deadline=renew_deadline,
                    retry_period=retry_period,
                )
            except ValueError as exc:
                raise ConfigError(
                    "--lease-duration/--renew-deadline/--retry-period", str(exc)
                ) from None
        parse_address("--listener-metrics-addr", listener_metrics_addr)  # exit 2 when bad
        listener = ListenerSettings(
            image=listener_image or (own_image(api) if listener_controller else ""),
            metrics_addr=listener_metrics_addr,
            metrics_endpoint=listener_metrics_endpoint,
            # The controller's own, as ARC hands its level and format to its listeners.
            log_level="warn" if log_level.lower() == "warning" else log_level.lower(),
            log_format=log_format,
            image_pull_secrets=listener_pull_secrets,
        )
        options = ControllerOptions(
            namespace=namespace,
            workers=workers,
            runner_set_workers=runner_set_workers,
            autoscaling_workers=autoscaling_workers,
            listener_workers=listener_workers,
            leader_election=election,
            resync_period=resync_period,
            runner_controller=runner_controller,
            runner_workers=runner_workers,
            runner_max_failures=runner_max_failures,
            runner_health=HealthPolicy(
                start_timeout=runner_start_timeout,
                online_timeout=runner_online_timeout,
                node_lost_timeout=runner_node_lost_timeout,
                deregistration_timeout=runner_deregistration_timeout,
                protect_busy=busy_runner_protection,
            ),
            failed_runner_ttl=failed_runner_ttl,
            autoscaling_runner_set_controller=autoscaling_runner_set_controller,
            listener_namespace=resolve_listener_namespace(listener_namespace, namespace),
            exclude_label_prefixes=exclude_label_prefixes,
            listener_controller=listener_controller,
            listener=listener,
        )
        run_until_stopped(
            api,
            options,
            metrics=(METRICS_OPTION, address),
            probes=(PROBE_OPTION, probe_address),
            set_reconciler=parts,
            stop=stop,
        )


@main.command()
@click.argument("key", type=KEY, required=False)
@click.option("--namespace", default=None, help="Only sets in this namespace (default: all).")
@click.option(
    "-o",
    "--output",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: tables for people; json: one document with stable keys for scripts "
    "(ephemeralRunnerSets and autoscalingRunnerSets, each item with every key, null "
    "where unknown).",
)
@kubeconfig_options
def status(
    key: Request | None,
    namespace: str | None,
    output: str,
    kubeconfig: str | None,
    kube_context: str | None,
) -> None:
    """Show the EphemeralRunnerSets with their runners, and the AutoscalingRunnerSets
    (all, one namespace, or the set NAMESPACE/NAME and its AutoscalingRunnerSet)."""
    with run_command(PROGRAM):
        # Imported when the command runs: the Kubernetes client is most of its start-up.
        with loading():
            from ersctl.commands.status import status as read_status

        text = read_status(
            key,
            namespace=namespace,
            output=output,
            kubeconfig=kubeconfig,
            kube_context=kube_context,
        )
        click.echo(text, nl=False)


@main.command()
@click.argument("key", type=KEY)
@kubeconfig_options
def rollout(key: Request, kubeconfig: str | None, kube_context: str | None) -> None:
    """Bump spec.actionableRevision of NAMESPACE/NAME after a runner template change."""
    with run_command(PROGRAM):
        # Imported when the command runs: the Kubernetes client is most of its start-up.
        with loading():
            from ersctl.commands.rollout import rollout as bump

        old, new = bump(key, kubeconfig=kubeconfig, kube_context=kube_context)
    click.echo(f"{key}: actionableRevision {old} -> {new}")


# `ersctl scaleset`: find or create a runner scale set and print its id (the one
# step between a GitHub organization and a deployed listener).
main.add_command(scaleset_command, name="scaleset")
