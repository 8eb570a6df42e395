"""Prometheus metrics of the listener, with ARC's names, labels and ``metrics`` block.

Which series are exported, with which labels and buckets, is the configuration's
``metrics`` block (:mod:`ghalistener.metric_selection`; ARC's defaults without one).
Label values: a scale-set gauge's ``name``/``namespace`` are the EphemeralRunnerSet's and
``enterprise``/``organization``/``repository`` come from the configuration URL; a job's
``organization`` and ``repository`` are the job's owner and repository, ``job_name`` its
display name, ``job_workflow_ref`` its workflow ref and ``job_workflow_name`` /
``job_workflow_target`` that ref's file name and target (:func:`workflow_ref_labels`);
a label a series does not carry is exported empty, as ARC does. Each instance has its
own registry, so several listeners (or tests) in one process do not collide.

A completed job that was never assigned to a runner (no ``runnerAssignTime``: canceled
while queued) is not counted, as ARC skips it. Job counters and histograms count each
(message id, runner request id) once per process: the listener acks a message only
after handling it, so a message is redelivered after a failure, and a bounded memory of
what was counted keeps that from counting a job twice. Across restarts that memory is
gone: there, counting is at-least-once (a message redelivered to the next process is
counted again).
"""

from __future__ import annotations

import logging
import posixpath
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest

from ghalistener.actions.types import JobCompleted, JobMessage, JobStarted, Statistics
from ghalistener.metric_selection import CATALOGUE, MetricsSelection, Selected

log = logging.getLogger(__name__)

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


Metric = Counter | Gauge | Histogram


_NOT_EXPORTED: Final = Gauge("not_exported", "a series the selection leaves out", registry=None)


class ListenerMetrics:
    """The listener's metrics in a private registry. Thread-safe (prometheus-client is).

    Only the series ``selection`` names are registered (default: ARC's defaults);
    publishing to a series it leaves out does nothing.
    """

    def __init__(self, labels: ScaleSetLabels, selection: MetricsSelection | None = None) -> None:
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
        self._gauges: dict[str, Gauge] = {}
        chosen = (selection or MetricsSelection.defaults()).series
        self._metrics: dict[str, tuple[Metric, tuple[str, ...]]] = {
            name: (self._register(name, chosen[name]), chosen[name].labels)
            for name in CATALOGUE
            if name in chosen
        }

    def _register(self, name: str, selected: Selected) -> Metric:
        series = CATALOGUE[name]
        if series.kind == "gauge":
            return Gauge(name, series.help, selected.labels, registry=self.registry)
        if series.kind == "counter":
            # prometheus-client appends the _total of ARC's name itself.
            return Counter(
                name.removesuffix("_total"), series.help, selected.labels, registry=self.registry
            )
        return Histogram(
            name, series.help, selected.labels, buckets=selected.buckets, registry=self.registry
        )

    def _series(self, name: str, values: Mapping[str, str]) -> Metric | None:
        """The child of series ``name`` for these label values; None when not exported."""
        found = self._metrics.get(name)
        if found is None:
            return None
        metric, labels = found
        if not labels:
            return metric
        return metric.labels(**{label: values.get(label, "") for label in labels})

    def _set(self, name: str, value: float) -> None:
        # The gauges carry the scale set's labels only, fixed for the process: each child
        # is looked up once (eight label lookups per message cost more than the sets).
        gauge = self._gauges.get(name)
        if gauge is None:
            found = self._series(f"gha_{name}", self._scale_set)
            gauge = self._gauges[name] = found if isinstance(found, Gauge) else _NOT_EXPORTED
        if gauge is not _NOT_EXPORTED:
            gauge.set(value)

    def _inc(self, name: str, values: Mapping[str, str]) -> None:
        counter = self._series(name, values)
        if isinstance(counter, Counter):
            counter.inc()

    def _observe(self, name: str, values: Mapping[str, str], seconds: float | None) -> None:
        if seconds is None:
            return
        histogram = self._series(name, values)
        if isinstance(histogram, Histogram):
            histogram.observe(seconds)

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
        self._inc("gha_started_jobs_total", labels)
        duration = _seconds_between(job.scale_set_assign_time, job.runner_assign_time)
        self._observe("gha_job_startup_duration_seconds", labels, duration)

    def publish_job_completed(self, job: JobCompleted, *, message_id: int) -> None:
        """Count a completed job (and its run time) unless this message's was counted, or
        the job never reached a runner."""
        # ARC's rule: no runner assign time, no runner ran it (a job canceled while
        # queued); counting it inflated gha_completed_jobs_total with jobs nobody ran.
        if job.runner_assign_time is None:
            return
        if not self._counted.first_time(
            "completed", message_id=message_id, request_id=job.runner_request_id
        ):
            return
        labels = {**self._job_labels(job), "job_result": job.result}
        self._inc("gha_completed_jobs_total", labels)
        duration = _seconds_between(job.runner_assign_time, job.finish_time)
        self._observe("gha_job_execution_duration_seconds", labels, duration)

    def _job_labels(self, job: JobMessage) -> dict[str, str]:
        workflow_name, workflow_target = workflow_ref_labels(job.job_workflow_ref)
        return {
            "repository": job.repository_name,
            "organization": job.owner_name,
            "enterprise": self._labels.enterprise,
            "job_name": job.job_display_name,
            "job_workflow_ref": job.job_workflow_ref,
            "job_workflow_name": workflow_name,
            "job_workflow_target": workflow_target,
            "event_name": job.event_name,
        }

    def render(self) -> bytes:
        """The registry in the Prometheus text format."""
        return generate_latest(self.registry)


_TARGET_PREFIXES: Final = (("refs/heads/", "heads/"), ("refs/tags/", "tags/"))


def workflow_ref_labels(workflow_ref: str) -> tuple[str, str]:
    """``(job_workflow_name, job_workflow_target)`` of a job's workflow ref, as ARC reads it.

    ``octo/app/.github/workflows/ci.yml@refs/heads/main`` -> ``("ci", "heads/main")``;
    a tag ref gives ``tags/<tag>``, ``refs/pull/<n>/merge`` gives ``pull/<n>``, any other
    ref an empty target; a ref without exactly one ``@`` gives ``("", "")``.
    """
    path, at, ref = workflow_ref.partition("@")
    if not at or "@" in ref:
        return "", ""
    name = posixpath.basename(path).removesuffix(".yml").removesuffix(".yaml")
    for prefix, shown in _TARGET_PREFIXES:
        if ref.startswith(prefix):
            return name, shown + ref.removeprefix(prefix)
    number, slash, _ = ref.removeprefix("refs/pull/").partition("/")
    if ref.startswith("refs/pull/") and slash and number:
        return name, f"pull/{number}"
    return name, ""


def _seconds_between(start: datetime | None, end: datetime | None) -> float | None:
    # A missing (or zero) timestamp would record a duration of decades: skip it.
    if start is None or end is None or start.year <= 1 or end.year <= 1:
        return None
    return max((end - start).total_seconds(), 0.0)
