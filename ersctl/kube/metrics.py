"""Prometheus metrics of the controller runtime.

Each :class:`ControllerMetrics` owns its own ``CollectorRegistry`` (several managers
can live in one test process); the controllers register their own counters on the
same registry (each in its package's ``metrics`` module). The runtime reports through the ``observe_*`` methods and the queue-depth callbacks it registers;
``ersctl.platform.serving`` serves the registry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

_PREFIX: Final = "ersctl"


class ControllerMetrics:
    """The runtime's metrics (reconciles, queue depth, relists, leadership) in a registry
    the controllers add their own to. Thread-safe."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.reconciles = Counter(
            f"{_PREFIX}_reconcile",
            "Reconciles by controller and result (success, error, requeue_after).",
            ["controller", "result"],
            registry=r,
        )
        self.reconcile_errors = Counter(
            f"{_PREFIX}_reconcile_errors", "Reconciles that raised.", ["controller"], registry=r
        )
        self.reconcile_seconds = Histogram(
            f"{_PREFIX}_reconcile_duration_seconds",
            "Wall time of one reconcile.",
            ["controller"],
            registry=r,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
        )
        self.queue_depth = Gauge(
            f"{_PREFIX}_workqueue_depth", "Keys ready to reconcile.", ["controller"], registry=r
        )
        self.relists = Counter(
            f"{_PREFIX}_informer_relists",
            "Informer relists after a broken watch.",
            ["resource"],
            registry=r,
        )
        self.leader = Gauge(
            f"{_PREFIX}_leader", "1 while this process holds the leader lease.", registry=r
        )
        self.workers = Gauge(
            f"{_PREFIX}_max_concurrent_reconciles",
            "Workers of each controller (controller-runtime's max concurrent reconciles).",
            ["controller"],
            registry=r,
        )

    def observe_reconcile(self, controller: str, *, result: str, seconds: float) -> None:
        """Count one reconcile (``result``: success, error or requeue_after)."""
        self.reconciles.labels(controller, result).inc()
        self.reconcile_seconds.labels(controller).observe(seconds)
        if result == "error":
            self.reconcile_errors.labels(controller).inc()

    def track_queue_depth(self, controller: str, depth: Callable[[], int]) -> None:
        """Read ``depth()`` at every scrape."""
        self.queue_depth.labels(controller).set_function(lambda: float(depth()))

    def value(self, name: str, labels: dict[str, str] | None = None) -> float:
        """A sample's current value (0.0 when absent); for tests and the status CLI."""
        return self.registry.get_sample_value(name, labels or {}) or 0.0
