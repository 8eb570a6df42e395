"""The EphemeralRunnerSet controller's registration: what it watches (its sets, the
runners they own, through ARC's event filters), its reconciler's parts, and its gauges.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from ersctl.arcclient.cache import cached_reader
from ersctl.arcclient.kinds import RUNNERS, SETS
from ersctl.arcclient.reader import ApiReader
from ersctl.arcclient.writer import Writer
from ersctl.ephemeralrunnerset import failurepolicy
from ersctl.ephemeralrunnerset.metrics import ArcSetGauges, RunnerSetMetrics
from ersctl.ephemeralrunnerset.ports import RunnerServices
from ersctl.ephemeralrunnerset.predicates import ERS_PREDICATE, RUNNER_PREDICATE
from ersctl.ephemeralrunnerset.reconciler import CREATE_CONCURRENCY, EphemeralRunnerSetReconciler
from ersctl.ephemeralrunnerset.scaling import ScalingDecision, decide_for
from ersctl.kube.manager import Manager
from ersctl.kube.predicates import Predicate

CONTROLLER_NAME: Final = "ephemeralrunnerset"
ERS_CONTROLLER_PREDICATES: Final[Mapping[str, Predicate]] = {
    SETS.plural: ERS_PREDICATE,
    RUNNERS.plural: RUNNER_PREDICATE,
}
"""ARC's event filters of the controller: its sets' and their runners' updates that
change nothing the reconciler reads enqueue nothing."""


@dataclass(frozen=True, kw_only=True)
class SetReconcilerParts:
    """The parts of the EphemeralRunnerSet reconciler no command-line option sets: the
    benchmarks build ``ersctl reconcile`` with others (ARC's step 8 before PR #4642,
    runner creates one at a time) to measure what the shipped ones buy."""

    scaling: ScalingDecision = decide_for
    """Step 8's decision (``ersctl.ephemeralrunnerset.scaling``)."""
    create_concurrency: int = CREATE_CONCURRENCY
    """Runner creates of one scale-up in flight at once."""


SHIPPED: Final = SetReconcilerParts()
"""The parts ``ersctl reconcile`` ships with."""


def add_ephemeral_runner_set_controller(
    manager: Manager,
    *,
    services: RunnerServices,
    failed_runner_ttl: float = failurepolicy.DEFAULT_TTL,
    parts: SetReconcilerParts = SHIPPED,
    workers: int | None = None,
) -> EphemeralRunnerSetReconciler:
    """Build the set reconciler and register it on ``manager`` (writes fenced by its
    leadership, GitHub calls by ``services``), with ARC's set gauges."""
    cache = cached_reader(manager)
    reconciler = EphemeralRunnerSetReconciler(
        cache=cache,
        api=ApiReader(manager.api_reader),
        writer=Writer(manager.writer),
        events=manager.events,
        services=services,
        metrics=RunnerSetMetrics(manager.metrics.registry),
        failed_runners=failurepolicy.FailedRunnerPolicy(ttl=failed_runner_ttl),
        scaling=parts.scaling,
        create_concurrency=parts.create_concurrency,
    )
    manager.add_controller(
        CONTROLLER_NAME,
        reconciler,
        workers=workers,
        for_=SETS,
        owns=[RUNNERS],
        predicates=ERS_CONTROLLER_PREDICATES,
    )
    manager.metrics.registry.register(ArcSetGauges(cache.list_ers, cache.list_owned_runners))
    return reconciler
