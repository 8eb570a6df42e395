"""Command line of the controller.

- ``ersctl reconcile``: run the EphemeralRunnerSet controller until SIGTERM (or one
  pass over one set with ``--once``).
- ``ersctl status [NAMESPACE/NAME]``: a table of sets and their runners, read live.
- ``ersctl rollout NAMESPACE/NAME``: bump ``spec.actionableRevision`` so the
  controller rebuilds idle runners from a changed runner template.
- ``ersctl scaleset --config-url URL --name NAME``: find or create a runner scale set
  on GitHub and print its id (``ersctl.runner.scaleset``).

Errors end the command with one line on stderr and exit status 1 (2 for bad usage).
"""

from __future__ import annotations

import logging
import signal
import threading
from dataclasses import dataclass
from types import FrameType

import click
from kubernetes import client

from ersctl import __version__
from ersctl.api import ER_PLURAL, ERS_PLURAL, FieldError
from ersctl.credentials import SecretRunnerRegistry
from ersctl.errors import ConflictError, ErsctlError
from ersctl.kube.apireader import ApiReader
from ersctl.kube.connect import api_client, pod_namespace
from ersctl.kube.leader import LeaderElectionConfig
from ersctl.kube.manager import ERS_CONTROLLER_PREDICATES, LeadershipLost, Manager
from ersctl.kube.writer import Writer
from ersctl.logs import configure_logging
from ersctl.metrics import ControllerMetrics, MetricsServer, parse_addr
from ersctl.ports import Request
from ersctl.reconciler import EphemeralRunnerSetReconciler
from ersctl.runner.controller import RunnerController, add_runner_controller
from ersctl.runner.phases import FailurePolicy
from ersctl.runner.scaleset import main as scaleset_command
from ersctl.statustable import render_table, rows_for

log = logging.getLogger("ersctl")

CONTROLLER_NAME = "ephemeralrunnerset"


@dataclass(frozen=True, kw_only=True)
class ControllerOptions:
    """What ``ersctl reconcile`` builds the controller from."""

    namespace: str | None = None
    workers: int = 2
    leader_election: LeaderElectionConfig | None = None
    resync_period: float = 600.0
    runner_controller: bool = False
    """Also run the EphemeralRunner controller (JIT registration and runner Pods)."""
    runner_max_failures: int = 5


@dataclass(frozen=True)
class Controller:
    """A manager with the EphemeralRunnerSet controller registered on it."""

    manager: Manager
    reconciler: EphemeralRunnerSetReconciler
    registry: SecretRunnerRegistry
    runner: RunnerController | None = None

    def close(self) -> None:
        """Close the controllers' service clients (after the manager has stopped)."""
        self.registry.close()
        if self.runner is not None:
            self.runner.close()


def build_controller(
    api: client.ApiClient, options: ControllerOptions, *, metrics: ControllerMetrics | None = None
) -> Controller:
    """Wire the runtime's adapters into the reconciler and register it on a manager."""
    manager = Manager(
        api,
        namespace=options.namespace,
        workers=options.workers,
        leader_election=options.leader_election,
        resync_period=options.resync_period,
        metrics=metrics,
    )
    # Fenced like the writer: no GitHub side effect once the lease is lost.
    registry = SecretRunnerRegistry(api=manager.api_reader, fence=manager.is_leading)
    reconciler = EphemeralRunnerSetReconciler(
        cache=manager.reader,
        api=manager.api_reader,
        writer=manager.writer,
        events=manager.events,
        registry=registry,
        metrics=manager.metrics,
    )
    manager.add_controller(
        CONTROLLER_NAME,
        reconciler,
        primary=ERS_PLURAL,
        owns=[ER_PLURAL],
        predicates=ERS_CONTROLLER_PREDICATES,
    )
    runner = None
    if options.runner_controller:
        policy = FailurePolicy(max_failures=options.runner_max_failures)
        runner = add_runner_controller(manager, api, policy=policy)
    return Controller(manager=manager, reconciler=reconciler, registry=registry, runner=runner)


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

kubeconfig_option = click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False),
    default=None,
    help="Kubeconfig file (default: in-cluster, else $KUBECONFIG or ~/.kube/config).",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ersctl")
def main() -> None:
    """Reconcile EphemeralRunnerSets: create and delete EphemeralRunners to meet demand."""


@main.command()
@click.option("--namespace", default=None, help="Only watch this namespace (default: all).")
@kubeconfig_option
@click.option("--workers", type=click.IntRange(min=1), default=2, show_default=True)
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
@click.option("--lease-name", default="ersctl-leader", show_default=True)
@click.option("--lease-duration", type=click.IntRange(min=2), default=15, show_default=True)
@click.option("--renew-deadline", type=click.FloatRange(min=1.3), default=10.0, show_default=True)
@click.option("--retry-period", type=click.FloatRange(min=1.0), default=2.0, show_default=True)
@click.option("--resync-period", type=click.FloatRange(min=1.0), default=600.0, show_default=True)
@click.option(
    "--runner-controller/--no-runner-controller",
    default=False,
    show_default=True,
    help="Also run the EphemeralRunner controller: register each runner (JIT config in "
    "a Secret) and run its Pod. Needed on a real cluster; off where something else "
    "plays that part (ARC's controller, the simulation's runner agent).",
)
@click.option(
    "--runner-max-failures",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Failed runner Pods before an EphemeralRunner turns Failed.",
)
@click.option(
    "--metrics-addr",
    default=":8080",
    show_default=True,
    help="HOST:PORT for /metrics, /healthz and /readyz; 0 disables.",
)
@click.option(
    "--once",
    type=KEY,
    default=None,
    help="Reconcile NAMESPACE/NAME once, print the decision, exit (takes no lease).",
)
@click.option("--log-format", type=click.Choice(["text", "json"]), default="text")
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    show_default=True,
)
def reconcile(
    namespace: str | None,
    kubeconfig: str | None,
    workers: int,
    leader_elect: bool,
    lease_namespace: str | None,
    lease_name: str,
    lease_duration: int,
    renew_deadline: float,
    retry_period: float,
    resync_period: float,
    runner_controller: bool,
    runner_max_failures: int,
    metrics_addr: str,
    once: Request | None,
    log_format: str,
    log_level: str,
) -> None:
    """Run the controller until SIGTERM."""
    configure_logging(log_format=log_format, level=log_level)
    try:
        api = api_client(kubeconfig)
        if once is not None:
            _reconcile_once(api, once)
            return
        election = None
        if leader_elect:
            election = LeaderElectionConfig(
                namespace=lease_namespace or namespace or pod_namespace(),
                name=lease_name,
                lease_duration=lease_duration,
                renew_deadline=renew_deadline,
                retry_period=retry_period,
            )
        options = ControllerOptions(
            namespace=namespace,
            workers=workers,
            leader_election=election,
            resync_period=resync_period,
            runner_controller=runner_controller,
            runner_max_failures=runner_max_failures,
        )
        _run_until_signalled(api, options, metrics_addr)
    except (ErsctlError, ValueError, OSError) as exc:
        raise click.ClickException(str(exc)) from None


def _run_until_signalled(
    api: client.ApiClient, options: ControllerOptions, metrics_addr: str
) -> None:
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("received %s, stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    controller = build_controller(api, options)
    manager = controller.manager
    server = None
    address = parse_addr(metrics_addr)
    if address is not None:
        server = MetricsServer(
            manager.metrics.registry,
            host=address[0],
            port=address[1],
            healthy=lambda: not stop.is_set(),
            ready=manager.has_synced,
        )
        server.start()
        log.info("serving metrics and probes on %s:%d", address[0], server.port)
    try:
        manager.run(stop)
    except LeadershipLost as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        if server is not None:
            server.stop()
        controller.close()
    log.info("stopped")


def _reconcile_once(api: client.ApiClient, request: Request) -> None:
    controller = build_controller(api, ControllerOptions(namespace=request.namespace))
    try:
        with controller.manager.caches():
            outcome = controller.reconciler.reconcile_with_outcome(request)
    finally:
        controller.close()
    click.echo(f"{request}: {outcome}")


@main.command()
@click.argument("key", type=KEY, required=False)
@click.option("--namespace", default=None, help="Only sets in this namespace (default: all).")
@kubeconfig_option
def status(key: Request | None, namespace: str | None, kubeconfig: str | None) -> None:
    """Print a table of EphemeralRunnerSets (all, one namespace, or NAMESPACE/NAME)."""
    try:
        reader = ApiReader(api_client(kubeconfig))
        if key is not None:
            ers = reader.get_ers(key.namespace, key.name)
            if ers is None:
                raise click.ClickException(f"EphemeralRunnerSet {key} not found")
            sets = [ers]
        else:
            sets = reader.list_ers(namespace)
        click.echo(render_table(rows_for(reader, sets)), nl=False)
    except ErsctlError as exc:
        raise click.ClickException(str(exc)) from None


@main.command()
@click.argument("key", type=KEY)
@kubeconfig_option
def rollout(key: Request, kubeconfig: str | None) -> None:
    """Bump spec.actionableRevision of NAMESPACE/NAME after a runner template change."""
    try:
        api = api_client(kubeconfig)
        old, new = _bump_revision(ApiReader(api), Writer(api), key)
    except (ErsctlError, FieldError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"{key}: actionableRevision {old} -> {new}")


# `ersctl scaleset`: find or create a runner scale set and print its id (the one
# step between a GitHub organization and a deployed listener).
main.add_command(scaleset_command, name="scaleset")


def _bump_revision(reader: ApiReader, writer: Writer, key: Request) -> tuple[int, int]:
    """Read, then patch with a resourceVersion precondition; retry a few conflicts."""
    for attempt in range(5):
        ers = reader.get_ers(key.namespace, key.name)
        if ers is None:
            raise click.ClickException(f"EphemeralRunnerSet {key} not found")
        old = ers.actionable_revision
        patch = {
            "metadata": {"resourceVersion": ers.resource_version},
            "spec": {"actionableRevision": old + 1},
        }
        try:
            writer.patch_ers(ers, patch)
        except ConflictError:
            if attempt == 4:
                raise
            continue
        return old, old + 1
    raise AssertionError("unreachable")
