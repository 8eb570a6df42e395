"""``ersctl reconcile`` once its options are checked: the controllers it was asked for
run until the stop (``run_until_stopped``), or one pass over one set
(``reconcile_once``). What they are is put together by ``ersctl.wiring``; what is
checked before they start, by ``ersctl.startup``."""

from __future__ import annotations

import logging
import threading

import click

from ersctl.ephemeralrunnerset.controller import SetReconcilerParts
from ersctl.kube.client import ApiClient
from ersctl.kube.connect import pod_namespace
from ersctl.kube.manager import LeadershipLost, SyncInterrupted
from ersctl.kube.reconcile import Request
from ersctl.platform.background import Background
from ersctl.platform.errors import Failure
from ersctl.platform.probes import Verdict
from ersctl.platform.serving import ProbeServer
from ersctl.startup import check_api
from ersctl.wiring import ControllerOptions, build_controller

log = logging.getLogger("ersctl")

Served = tuple[str, tuple[str, int] | None]
"""A server's address option: its name (for messages) and its (host, port), None: off."""


def resolve_listener_namespace(option: str | None, namespace: str | None) -> str | None:
    """Where listeners go: ``--listener-namespace``; else ``--namespace``; else, in a
    Pod, the Pod's namespace. ARC puts them in its controller's namespace and looks them
    up there: a controller switched between ours and ARC's then finds the listener the
    other made, instead of starting a second one for the scale set. Outside a cluster,
    None: each in its AutoscalingRunnerSet's namespace."""
    return option or namespace or pod_namespace(default="") or None


def run_until_stopped(
    api: ApiClient,
    options: ControllerOptions,
    *,
    metrics: Served,
    probes: Served,
    set_reconciler: SetReconcilerParts,
    stop: threading.Event,
) -> None:
    """Serve the metrics and probes (``probes``: an address of the probes alone), check
    the API, run the manager until ``stop``."""
    controller = build_controller(api, options, set_reconciler=set_reconciler)
    manager = controller.manager

    def live() -> Verdict:
        return Verdict(ok=not stop.is_set(), reason="ok" if not stop.is_set() else "stopping")

    def ready() -> Verdict:
        synced = manager.has_synced()
        return Verdict(ok=synced, reason="ok" if synced else "caches not synced")

    servers = [
        ProbeServer(registry, option=option, address=address, live=live, ready=ready)
        for registry, (option, address) in ((manager.metrics.registry, metrics), (None, probes))
        if address is not None
    ]
    try:
        # The same order as the listener's: configuration, the metrics address, then
        # the first request to the API server.
        for server in servers:
            server.start()
        # A server that does not answer holds the check until its timeout; a stop does
        # not wait for it (and a failure it then reports was asked for, not met).
        check = Background(
            lambda: check_api(
                api,
                autoscaling=options.autoscaling_runner_set_controller,
                listener_controller=options.listener_controller,
            ),
            name="check-api",
        )
        if not check.wait(stop.is_set):
            return
        check.result()
        manager.run(stop)
    except LeadershipLost as exc:
        raise Failure(str(exc)) from None
    finally:
        for server in servers:
            server.stop()
        controller.close()
    log.info("stopped")


def reconcile_once(
    api: ApiClient, request: Request, *, set_reconciler: SetReconcilerParts, stop: threading.Event
) -> None:
    """One pass; a stop before the pass begins (during the API check or the cache sync)
    ends it at once, having reconciled nothing (exit 0, as any asked-for stop). One set,
    one pass: neither the ARS nor the listener controller (nor their informers) runs."""
    check = Background(
        lambda: check_api(api, autoscaling=False, listener_controller=False), name="check-api"
    )
    if not check.wait(stop.is_set):
        return
    check.result()
    options = ControllerOptions(namespace=request.namespace, listener_controller=False)
    controller = build_controller(api, options, set_reconciler=set_reconciler)
    try:
        with controller.manager.caches(stop=stop):
            if controller.cache.get_ers(request.namespace, request.name) is None:
                raise Failure(f"EphemeralRunnerSet {request} not found")
            outcome = controller.reconciler.reconcile_with_outcome(request)
    except SyncInterrupted:
        log.info("stopped before the caches synced; nothing reconciled")
        return
    finally:
        controller.close()
    click.echo(f"{request}: {outcome}")
