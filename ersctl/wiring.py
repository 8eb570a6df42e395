"""Wiring: a manager with the controllers registered on it, from the command's options.

:func:`build_controller` puts together what ``ersctl reconcile`` runs: the runtime's
manager (informers, cache, API reader, fenced writer, events, leader election), one
scale-set service per credentials Secret shared by the controllers, the
EphemeralRunnerSet controller (from ``set_reconciler``'s parts: the benchmarks
measure the shipped ones against others on the same runtime) and, when asked, the EphemeralRunner, AutoscalingRunnerSet and AutoscalingListener controllers;
``client_factory`` for another GitHub client (tests: one that does not sleep between
retries).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from ersctl.arcclient.cache import CachedReader, cached_reader
from ersctl.arcclient.reader import ApiReader
from ersctl.autoscalinglistener.objects import ListenerSettings
from ersctl.ephemeralrunner.defaults import DEFAULT_WORKERS as DEFAULT_RUNNER_WORKERS
from ersctl.ephemeralrunner.health import HealthPolicy
from ersctl.ephemeralrunnerset import failurepolicy
from ersctl.ephemeralrunnerset.controller import (
    SHIPPED,
    SetReconcilerParts,
    add_ephemeral_runner_set_controller,
)
from ersctl.ephemeralrunnerset.metrics import (
    LISTENER_SELECTOR,
    ArcListenerGauge,
)
from ersctl.ephemeralrunnerset.reconciler import EphemeralRunnerSetReconciler
from ersctl.kube.client import ApiClient
from ersctl.kube.informer import PodInformer
from ersctl.kube.leader import LeaderElectionConfig
from ersctl.kube.manager import Manager
from ersctl.kube.metrics import ControllerMetrics
from ersctl.scaleset.clients import ClientFactory
from ersctl.scaleset.scalesets import SecretScaleSetServices

if TYPE_CHECKING:  # imported by build_controller when their controller is on
    from ersctl.autoscalinglistener.reconciler import ListenerReconciler
    from ersctl.autoscalingrunnerset.reconciler import AutoscalingRunnerSetReconciler
    from ersctl.ephemeralrunner.reconciler import RunnerReconciler

LISTENER_PODS: Final = "listener-pods"
"""The manager's name for the listener Pod informer (ARC's running-listeners gauge)."""


@dataclass(frozen=True, kw_only=True)
class ControllerOptions:
    """What ``ersctl reconcile`` builds the controller from."""

    namespace: str | None = None
    workers: int = 2
    """Each controller's workers, unless its own count below says otherwise."""
    runner_set_workers: int | None = None
    autoscaling_workers: int | None = None
    listener_workers: int | None = None
    leader_election: LeaderElectionConfig | None = None
    resync_period: float = 600.0
    runner_controller: bool = False
    """Also run the EphemeralRunner controller (JIT registration and runner Pods)."""
    runner_workers: int = DEFAULT_RUNNER_WORKERS
    """The runner controller's own workers (``workers`` is every other controller's)."""
    runner_max_failures: int = 5
    runner_health: HealthPolicy = field(default_factory=HealthPolicy)
    """The runner controller's timed health rules and busy-runner protection."""
    failed_runner_ttl: float = failurepolicy.DEFAULT_TTL
    """Seconds a Failed runner is kept before it is removed and its slot refilled."""
    autoscaling_runner_set_controller: bool = False
    """Also run the AutoscalingRunnerSet controller (scale sets, their runner sets and
    listener objects). ``ersctl reconcile`` turns it on by default."""
    listener_namespace: str | None = None
    """Where the ARS controller makes AutoscalingListeners (None: each ARS's namespace)."""
    exclude_label_prefixes: tuple[str, ...] = ()
    """ARS labels with these prefixes are not propagated to what it makes."""
    teardown_poll: float = 5.0
    listener_controller: bool = True
    """Also run the AutoscalingListener controller (listener Pods, their config and RBAC)."""
    listener: ListenerSettings = field(default_factory=ListenerSettings)


@dataclass(frozen=True)
class Controller:
    """A manager with the controllers registered on it. :meth:`close` after it stopped."""

    manager: Manager
    reconciler: EphemeralRunnerSetReconciler
    cache: CachedReader
    """The sets and runners the manager caches."""
    services: SecretScaleSetServices
    runner: RunnerReconciler | None = None
    autoscaling: AutoscalingRunnerSetReconciler | None = None
    listener: ListenerReconciler | None = None

    def close(self) -> None:
        """Stop the runner controller's background work and close the scale-set service
        clients (after the manager has stopped)."""
        if self.runner is not None:
            self.runner.close()
        self.services.close()


def listener_blocker(options: ControllerOptions) -> str:
    """Why no listener Pod this controller makes can start, "" when nothing is known
    to stop one: without an image, an AutoscalingRunnerSet would report Running while
    nothing ever scales it."""
    if options.listener_controller and not options.listener.image:
        return (
            "no listener image: --listener-image is not set and the controller's own "
            "image is unknown (it runs outside a Pod, or cannot read its Pod)"
        )
    return ""


def build_controller(
    api: ApiClient,
    options: ControllerOptions,
    *,
    set_reconciler: SetReconcilerParts = SHIPPED,
    client_factory: ClientFactory | None = None,
    metrics: ControllerMetrics | None = None,
) -> Controller:
    """Wire the runtime's adapters into the reconcilers and register them on a manager.

    Each optional controller is imported only when it is on: a process that runs
    without it (the simulation's controller runs the set controller alone) does not
    pay for loading it."""
    manager = Manager(
        api,
        namespace=options.namespace,
        workers=options.workers,
        leader_election=options.leader_election,
        resync_period=options.resync_period,
        metrics=metrics,
    )
    api_reader = ApiReader(manager.api_reader)
    # Fenced like the writer: no GitHub side effect once the lease is lost.
    services = SecretScaleSetServices(
        get_secret=api_reader.get_secret,
        get_configmap=api_reader.get_configmap,
        client_factory=client_factory,
        fence=manager.is_leading,
    )
    reconciler = add_ephemeral_runner_set_controller(
        manager,
        services=services,
        failed_runner_ttl=options.failed_runner_ttl,
        parts=set_reconciler,
        workers=options.runner_set_workers,
    )
    listeners = PodInformer(api, selector=LISTENER_SELECTOR, namespace=options.namespace)
    manager.add_informer(LISTENER_PODS, listeners)
    manager.metrics.registry.register(ArcListenerGauge(listeners.store.values))
    runner = None
    if options.runner_controller:
        from ersctl.ephemeralrunner.controller import add_runner_controller
        from ersctl.ephemeralrunner.phases import FailurePolicy

        policy = FailurePolicy(max_failures=options.runner_max_failures)
        runner = add_runner_controller(
            manager,
            api,
            services=services,
            policy=policy,
            health=options.runner_health,
            workers=options.runner_workers,
        )
    autoscaling = None
    if options.autoscaling_runner_set_controller:
        from ersctl.autoscalingrunnerset.controller import add_autoscaling_runner_set_controller

        autoscaling = add_autoscaling_runner_set_controller(
            manager,
            services=services,
            listener_namespace=options.listener_namespace,
            exclude_label_prefixes=options.exclude_label_prefixes,
            listener_blocker=listener_blocker(options),
            teardown_poll=options.teardown_poll,
            workers=options.autoscaling_workers,
        )
    listener = None
    if options.listener_controller:
        from ersctl.autoscalinglistener.controller import add_listener_controller

        listener = add_listener_controller(
            manager,
            api,
            pods=listeners,
            pods_name=LISTENER_PODS,
            settings=options.listener,
            workers=options.listener_workers,
        )
    return Controller(
        manager=manager,
        reconciler=reconciler,
        cache=cached_reader(manager),
        services=services,
        runner=runner,
        autoscaling=autoscaling,
        listener=listener,
    )
