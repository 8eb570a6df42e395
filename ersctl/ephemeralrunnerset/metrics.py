"""Prometheus metrics of the EphemeralRunnerSet controller, on the controller's registry.

Ours complement the runtime's per-controller reconcile metrics: runners created and
deleted per set, scale-ups the guard suppressed, and Failed runners collected (they
leave ARC's failed-runner gauge once deleted; this counter keeps the record). ARC's
``gha_controller_*`` gauges (:class:`ArcSetGauges`: each set's runner counts, which its
status no longer carries; :class:`ArcListenerGauge`) are exported next to them under
ARC's names and labels.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ersctl.api import (
    COMPONENT_LABEL,
    ENTERPRISE_LABEL,
    LISTENER_COMPONENT,
    ORGANIZATION_LABEL,
    REPOSITORY_LABEL,
    SCALE_SET_NAME_LABEL,
    SCALE_SET_NAMESPACE_LABEL,
    EphemeralRunner,
    EphemeralRunnerSet,
    FieldError,
)
from ersctl.ephemeralrunnerset.classification import RunnerStates, classify
from ghalistener.actions.configurl import parse_config_url
from ghalistener.actions.errors import ConfigUrlError

_PREFIX: Final = "ersctl"


class RunnerSetMetrics:
    """Implements ``ersctl.ephemeralrunnerset.ports.ReconcileMetrics``. Thread-safe."""

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

        self.failed_deleted = Counter(
            f"{_PREFIX}_failed_runners_deleted",
            "Failed EphemeralRunners deleted after --failed-runner-ttl.",
            ["namespace", "name"],
            registry=registry,
        )

    def runners_created(self, ers: EphemeralRunnerSet, count: int) -> None:
        self.created.labels(ers.namespace, ers.name).inc(count)

    def runners_deleted(self, ers: EphemeralRunnerSet, count: int) -> None:
        self.deleted.labels(ers.namespace, ers.name).inc(count)

    def scale_up_suppressed(self, ers: EphemeralRunnerSet) -> None:
        self.suppressed.labels(ers.namespace, ers.name).inc()

    def failed_runner_deleted(self, ers: EphemeralRunnerSet) -> None:
        self.failed_deleted.labels(ers.namespace, ers.name).inc()


ARC_LABELS: Final = ("name", "namespace", "repository", "organization", "enterprise")
_ARC_GAUGES: Final = (
    ("pending", "Number of ephemeral runners in a pending state."),
    ("running", "Number of ephemeral runners in a running state."),
    ("succeeded", "Number of ephemeral runners in a succeeded state."),
    ("failed", "Number of ephemeral runners in a failed state."),
    ("outdated", "Number of ephemeral runners in an outdated state."),
    ("deleting", "Number of ephemeral runners in a deleting state."),
)


def lifecycle_counts(states: RunnerStates) -> dict[str, int]:
    """The runners of ``states`` in ARC's lifecycle buckets (:data:`_ARC_GAUGES`): being
    deleted first, then by phase (Outdated whatever revision it judged), else pending."""
    return {
        "pending": len(states.pending),
        "running": len(states.running),
        "succeeded": len(states.finished),
        "failed": len(states.failed),
        "outdated": len(states.outdated) + len(states.stale_outdated),
        "deleting": len(states.deleting),
    }


class ArcSetGauges(Collector):
    """ARC's ``gha_controller_<bucket>_ephemeral_runners`` per set, for each bucket of
    :func:`lifecycle_counts`, with ARC's labels, so dashboards built for ARC's controller
    keep working.

    The set's runner counts live here, not in its status (``ersctl.ephemeralrunnerset.status``):
    counted at scrape time from the cached sets and their cached runners (no request is
    sent, no status written), so a deleted set's series go with it. ``name`` and
    ``namespace`` are the scale set's (the labels an AutoscalingRunnerSet puts on its
    set, else the set's own); ``repository``, ``organization`` and ``enterprise`` come
    from the set's GitHub configuration URL (empty when it is not one).
    """

    def __init__(
        self,
        sets: Callable[[], Iterable[EphemeralRunnerSet]],
        runners: Callable[[EphemeralRunnerSet], Iterable[EphemeralRunner]],
    ) -> None:
        self._sets = sets
        self._runners = runners

    def collect(self) -> Iterator[GaugeMetricFamily]:
        families = {
            key: GaugeMetricFamily(
                f"gha_controller_{key}_ephemeral_runners", text, labels=ARC_LABELS
            )
            for key, text in _ARC_GAUGES
        }
        for ers in self._sets():
            try:
                states = classify(
                    self._runners(ers), applied_revision=ers.applied_actionable_revision
                )
            except FieldError:
                continue  # a malformed field: the reconciler says which, skip till fixed
            labels = arc_labels(ers)
            for key, count in lifecycle_counts(states).items():
                families[key].add_metric(labels, count)
        yield from families.values()

    def describe(self) -> list[GaugeMetricFamily]:
        return []  # unchecked: the series depend on the cache at scrape time


def arc_labels(ers: EphemeralRunnerSet) -> list[str]:
    """ARC's common label values for ``ers``, in :data:`ARC_LABELS` order."""
    try:
        github = parse_config_url(str(ers.ephemeral_runner_spec.get("githubConfigUrl") or ""))
        scope = [github.repository, github.organization, github.enterprise]
    except (ConfigUrlError, FieldError):
        scope = ["", "", ""]
    return [
        ers.labels.get(SCALE_SET_NAME_LABEL) or ers.name,
        ers.labels.get(SCALE_SET_NAMESPACE_LABEL) or ers.namespace,
        *scope,
    ]


LISTENER_SELECTOR: Final = f"{COMPONENT_LABEL}={LISTENER_COMPONENT}"
"""The listener Pods ARC's AutoscalingListener makes carry this label (so do those our
listener controller makes), with the scale set's name, namespace and GitHub scope as
labels."""
_POD_LABELS: Final = (
    SCALE_SET_NAME_LABEL,
    SCALE_SET_NAMESPACE_LABEL,
    REPOSITORY_LABEL,
    ORGANIZATION_LABEL,
    ENTERPRISE_LABEL,
)


class ArcListenerGauge(Collector):
    """ARC's ``gha_controller_running_listeners``: per scale set (ARC's labels, read from
    its listener Pods' labels), 1 while one of its listener Pods is Running, else 0.

    Read at scrape time from a label-selected Pod cache (:data:`LISTENER_SELECTOR`).
    """

    def __init__(self, pods: Callable[[], Iterable[Mapping[str, Any]]]) -> None:
        self._pods = pods

    def collect(self) -> Iterator[GaugeMetricFamily]:
        running: dict[tuple[str, ...], int] = {}
        for pod in self._pods():
            labels = (pod.get("metadata") or {}).get("labels") or {}
            key = tuple(str(labels.get(name) or "") for name in _POD_LABELS)
            phase = (pod.get("status") or {}).get("phase")
            running[key] = max(running.get(key, 0), 1 if phase == "Running" else 0)
        family = GaugeMetricFamily(
            "gha_controller_running_listeners",
            "Number of listeners in a running state.",
            labels=ARC_LABELS,
        )
        for key, value in sorted(running.items()):
            family.add_metric(list(key), value)
        yield family

    def describe(self) -> list[GaugeMetricFamily]:
        return []
