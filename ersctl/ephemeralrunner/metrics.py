"""Prometheus counters of the runner controller, on the controller's registry.

They complement the runtime's per-controller reconcile metrics (count, duration,
errors, queue depth): registrations made, Pods created, Pod failures, runners
finished by final phase, and runner faults by mode (README "Runner health"). Labelled
by namespace (and the bounded phase or mode) only: runner names are unbounded.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry, Counter

PREFIX: Final = "ersctl_runner"


class RunnerMetrics:
    """Implements ``ersctl.ephemeralrunner.ports.RunnerMetricsSink``. Thread-safe."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registrations = Counter(
            f"{PREFIX}_registrations",
            "JIT runner registrations made with the scale-set service.",
            ["namespace"],
            registry=registry,
        )
        self.pods_created = Counter(
            f"{PREFIX}_pods_created", "Runner Pods created.", ["namespace"], registry=registry
        )
        self.pod_failures = Counter(
            f"{PREFIX}_pod_failures",
            "Runner Pods that failed (each is retried after a backoff, up to the limit).",
            ["namespace"],
            registry=registry,
        )
        self.finished = Counter(
            f"{PREFIX}s_finished",
            "Runners that reached a final phase (Succeeded, Failed, Outdated).",
            ["namespace", "phase"],
            registry=registry,
        )

        self.faults = Counter(
            f"{PREFIX}_faults",
            "Runner faults a health rule acted on, by mode (exited, evicted, rejected, "
            "pod_failed, init_failed, start_timeout, not_online, registration_lost, "
            "pod_deleted, node_lost, exited_without_job, deregistration_timeout).",
            ["namespace", "mode"],
            registry=registry,
        )

    def registered(self, namespace: str) -> None:
        self.registrations.labels(namespace).inc()

    def pod_created(self, namespace: str) -> None:
        self.pods_created.labels(namespace).inc()

    def pod_failed(self, namespace: str) -> None:
        self.pod_failures.labels(namespace).inc()

    def runner_finished(self, namespace: str, phase: str) -> None:
        self.finished.labels(namespace, phase).inc()

    def runner_fault(self, namespace: str, mode: str) -> None:
        self.faults.labels(namespace, mode).inc()
