"""Prometheus metrics of the listener, with ARC's names and default label sets.

Scale-set gauges carry ``name``, ``namespace``, ``repository``, ``organization``,
``enterprise`` (``name``/``namespace`` are the EphemeralRunnerSet's, the others come
from the configuration URL). Job counters and histograms carry ``repository``,
``organization`` (the job's owner), ``enterprise``, ``job_name``, ``event_name``, plus
``job_result`` for completed jobs. ``gha_available_jobs`` and ``gha_acquired_jobs``
are additions ARC does not export. Each instance has its own registry, so several
listeners (or tests) in one process do not collide.

Job counters and histograms count each (message id, runner request id) once per
process: the listener acks a message only after handling it, so a message is
redelivered after a failure, and a bounded memory of what was counted keeps that from
counting a job twice. Across restarts that memory is gone: there, counting is
at-least-once (a message redelivered to the next process is counted again).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest

from ghalistener.actions.types import JobCompleted, JobMessage, JobStarted, Statistics

log = logging.getLogger(__name__)

SCALE_SET_LABELS: Final = ("name", "namespace", "repository", "organization", "enterprise")
JOB_LABELS: Final = ("repository", "organization", "enterprise", "job_name", "event_name")
COMPLETED_JOB_LABELS: Final = (*JOB_LABELS, "job_result")

# ARC's runtime buckets, in seconds.
RUNTIME_BUCKETS: Final = (
    0.01, 0.05, 0.1, 0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 18, 20, 25, 30, 40, 50,
    60, 70, 80, 90, 100, 110, 120, 150, 180, 210, 240, 300, 360, 420, 480, 540, 600, 900,
    1200, 1800, 2400, 3000, 3600,
)  # fmt: skip


COUNTED_JOBS_LIMIT: Final = 4096
"""How many counted (message, job) pairs are remembered (a message holds at most 50 jobs,
and a redelivery comes right after the failure that caused it)."""


class _CountedJobs:
    """A bounded set of job events already counted; the oldest are forgotten first."""

    def __init__(self, limit: int = COUNTED_JOBS_LIMIT) -> None:
        self._limit = limit
        self._seen: OrderedDict[tuple[str, int, int], None] = OrderedDict()
        self._lock = threading.Lock()

    def first_time(self, kind: str, *, message_id: int, request_id: int) -> bool:
        """True the first time this event is seen (and remembers it)."""
        key = (kind, message_id, request_id)
        with self._lock:
            if key in self._seen:
                return False
            self._seen[key] = None
            if len(self._seen) > self._limit:
                self._seen.popitem(last=False)
            return True


@dataclass(frozen=True, kw_only=True)
class ScaleSetLabels:
    """The constant labels of one listener's scale-set gauges."""

    name: str
    namespace: str
    enterprise: str = ""
    organization: str = ""
    repository: str = ""


class ListenerMetrics:
    """The listener's metrics in a private registry. Thread-safe (prometheus-client is)."""

    def __init__(self, labels: ScaleSetLabels) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._labels = labels
        self._counted = _CountedJobs()
        self._scale_set = {
            "name": labels.name,
            "namespace": labels.namespace,
            "repository": labels.repository,
            "organization": labels.organization,
            "enterprise": labels.enterprise,
        }
        gauge_help = {
            "assigned_jobs": "Number of jobs assigned to this scale set.",
            "running_jobs": "Number of jobs running (or about to be run).",
            "registered_runners": "Number of runners registered by the scale set.",
            "busy_runners": "Number of registered runners running a job.",
            "idle_runners": "Number of registered runners not running a job.",
            "min_runners": "Minimum number of runners.",
            "max_runners": "Maximum number of runners.",
            "desired_runners": "Number of runners desired by the scale set.",
            "available_jobs": "Number of jobs available for this scale set to acquire.",
            "acquired_jobs": "Number of jobs acquired by this scale set, not yet assigned.",
        }
        self._gauges = {
            key: Gauge(f"gha_{key}", text, SCALE_SET_LABELS, registry=self.registry)
            for key, text in gauge_help.items()
        }
        self._started = Counter(
            "gha_started_jobs", "Total number of jobs started.", JOB_LABELS, registry=self.registry
        )
        self._completed = Counter(
            "gha_completed_jobs",
            "Total number of jobs completed.",
            COMPLETED_JOB_LABELS,
            registry=self.registry,
        )
        self._startup = Histogram(
            "gha_job_startup_duration_seconds",
            "Time spent waiting for workflow job to get started on the runner owned by the "
            "scale set (in seconds).",
            JOB_LABELS,
            buckets=RUNTIME_BUCKETS,
            registry=self.registry,
        )
        self._execution = Histogram(
            "gha_job_execution_duration_seconds",
            "Time spent executing workflow jobs by the scale set (in seconds).",
            COMPLETED_JOB_LABELS,
            buckets=RUNTIME_BUCKETS,
            registry=self.registry,
        )

    def _set(self, key: str, value: float) -> None:
        self._gauges[key].labels(**self._scale_set).set(value)

    def publish_static(self, *, min_runners: int, max_runners: int) -> None:
        self._set("min_runners", min_runners)
        self._set("max_runners", max_runners)

    def publish_statistics(self, stats: Statistics) -> None:
        self._set("assigned_jobs", stats.total_assigned_jobs)
        self._set("running_jobs", stats.total_running_jobs)
        self._set("registered_runners", stats.total_registered_runners)
        self._set("busy_runners", stats.total_busy_runners)
        self._set("idle_runners", stats.total_idle_runners)
        self._set("available_jobs", stats.total_available_jobs)
        self._set("acquired_jobs", stats.total_acquired_jobs)

    def publish_desired_runners(self, count: int) -> None:
        self._set("desired_runners", count)

    def publish_job_started(self, job: JobStarted, *, message_id: int) -> None:
        """Count a started job (and its startup time) unless this message's was counted."""
        if not self._counted.first_time(
            "started", message_id=message_id, request_id=job.runner_request_id
        ):
            return
        labels = self._job_labels(job)
        self._started.labels(**labels).inc()
        duration = _seconds_between(job.scale_set_assign_time, job.runner_assign_time)
        if duration is not None:
            self._startup.labels(**labels).observe(duration)

    def publish_job_completed(self, job: JobCompleted, *, message_id: int) -> None:
        """Count a completed job (and its run time) unless this message's was counted."""
        if not self._counted.first_time(
            "completed", message_id=message_id, request_id=job.runner_request_id
        ):
            return
        labels = {**self._job_labels(job), "job_result": job.result}
        self._completed.labels(**labels).inc()
        duration = _seconds_between(job.runner_assign_time, job.finish_time)
        if duration is not None:
            self._execution.labels(**labels).observe(duration)

    def _job_labels(self, job: JobMessage) -> dict[str, str]:
        return {
            "repository": job.repository_name,
            "organization": job.owner_name,
            "enterprise": self._labels.enterprise,
            "job_name": job.job_display_name,
            "event_name": job.event_name,
        }

    def render(self) -> bytes:
        """The registry in the Prometheus text format."""
        return generate_latest(self.registry)


def _seconds_between(start: datetime | None, end: datetime | None) -> float | None:
    # A missing (or zero) timestamp would record a duration of decades: skip it.
    if start is None or end is None or start.year <= 1 or end.year <= 1:
        return None
    return max((end - start).total_seconds(), 0.0)
