"""Prometheus counters of the EphemeralRunnerSet controller, on the controller's registry.

They complement the runtime's per-controller reconcile metrics: runners created and
deleted per set, and scale-ups the guard suppressed.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry, Counter

from ersctl.api import EphemeralRunnerSet

_PREFIX: Final = "ersctl"


class RunnerSetMetrics:
    """Implements ``ersctl.runnerset.ports.ReconcileMetrics``. Thread-safe."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.created = Counter(
            f"{_PREFIX}_runners_created",
            "EphemeralRunners created.",
            ["namespace", "name"],
            registry=registry,
        )
        self.deleted = Counter(
            f"{_PREFIX}_runners_deleted",
            "EphemeralRunners deleted.",
            ["namespace", "name"],
            registry=registry,
        )
        self.suppressed = Counter(
            f"{_PREFIX}_scale_up_suppressed",
            "Scale-ups suppressed because the patch ID "
            "was already serviced by a finished-runner cleanup.",
            ["namespace", "name"],
            registry=registry,
        )

    def runners_created(self, ers: EphemeralRunnerSet, count: int) -> None:
        self.created.labels(ers.namespace, ers.name).inc(count)

    def runners_deleted(self, ers: EphemeralRunnerSet, count: int) -> None:
        self.deleted.labels(ers.namespace, ers.name).inc(count)

    def scale_up_suppressed(self, ers: EphemeralRunnerSet) -> None:
        self.suppressed.labels(ers.namespace, ers.name).inc()
