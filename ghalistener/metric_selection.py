"""Which listener metrics to export, with which labels and buckets: ARC's ``metrics`` block.

ARC's controller writes the block into the listener's configuration (from the scale
set's ``listenerMetrics``)::

    "metrics": {
      "counters":   {"gha_started_jobs_total": {"labels": ["repository", "job_name"]}},
      "gauges":     {"gha_assigned_jobs": {"labels": ["name", "namespace"]}},
      "histograms": {"gha_job_startup_duration_seconds":
                       {"labels": ["repository"], "buckets": [1, 5, 30]}}
    }

Rules, ARC's (``cmd/ghalistener/metrics``): no block (absent or ``null``) exports
:data:`CATALOGUE`'s default selection; a block exports exactly the series it lists, each
with exactly its labels (a label the series does not carry, such as ``job_result`` on
a started job, is exported empty, as ARC does); a histogram without ``buckets`` (or with
an empty list) uses :data:`DEFAULT_BUCKETS`. Where ARC logs and skips (a series name it
does not know, or listed under the wrong kind), this listener refuses the configuration
with one line naming the entry, as it refuses every misspelt key. Pure: no I/O.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from ersctl.platform.errors import ConfigError, did_you_mean

Kind = Literal["counter", "gauge", "histogram"]

SCALE_SET_LABELS: Final = ("enterprise", "organization", "repository", "name", "namespace")
"""Labels of the scale-set gauges (``name``/``namespace``: the EphemeralRunnerSet's)."""
JOB_LABELS: Final = (
    "enterprise",
    "organization",
    "repository",
    "job_name",
    "job_workflow_ref",
    "job_workflow_name",
    "job_workflow_target",
    "event_name",
)
"""Labels a job's counters and histograms can carry; completed jobs add ``job_result``."""
COMPLETED_JOB_LABELS: Final = (*JOB_LABELS, "job_result")
LABELS: Final = frozenset((*SCALE_SET_LABELS, *COMPLETED_JOB_LABELS))
"""Every label ARC's listener offers."""

# ARC's defaults leave the workflow labels out: they multiply the series.
_DEFAULT_JOB_LABELS: Final = ("enterprise", "organization", "repository", "job_name", "event_name")
_DEFAULT_COMPLETED_LABELS: Final = (*_DEFAULT_JOB_LABELS, "job_result")

DEFAULT_BUCKETS: Final = (
    0.01, 0.05, 0.1, 0.5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 18, 20, 25, 30, 40, 50,
    60, 70, 80, 90, 100, 110, 120, 150, 180, 210, 240, 300, 360, 420, 480, 540, 600, 900,
    1200, 1800, 2400, 3000, 3600,
)  # fmt: skip
"""ARC's runtime buckets, in seconds."""


@dataclass(frozen=True)
class Series:
    """One series ARC's listener can export: its kind, help text and default labels."""

    kind: Kind
    help: str
    default_labels: tuple[str, ...]


def _gauge(text: str) -> Series:
    return Series("gauge", text, SCALE_SET_LABELS)


CATALOGUE: Final[Mapping[str, Series]] = {
    "gha_available_jobs": _gauge("Number of jobs available to be acquired by this scale set."),
    "gha_acquired_jobs": _gauge(
        "Number of jobs acquired by this scale set but not yet assigned to a runner."
    ),
    "gha_assigned_jobs": _gauge("Number of jobs assigned to this scale set."),
    "gha_running_jobs": _gauge("Number of jobs running (or about to be run)."),
    "gha_registered_runners": _gauge("Number of runners registered by the scale set."),
    "gha_busy_runners": _gauge("Number of registered runners running a job."),
    "gha_idle_runners": _gauge("Number of registered runners not running a job."),
    "gha_min_runners": _gauge("Minimum number of runners."),
    "gha_max_runners": _gauge("Maximum number of runners."),
    "gha_desired_runners": _gauge("Number of runners desired by the scale set."),
    "gha_started_jobs_total": Series(
        "counter", "Total number of jobs started.", _DEFAULT_JOB_LABELS
    ),
    "gha_completed_jobs_total": Series(
        "counter", "Total number of jobs completed.", _DEFAULT_COMPLETED_LABELS
    ),
    "gha_job_startup_duration_seconds": Series(
        "histogram",
        "Time spent waiting for workflow job to get started on the runner owned by the "
        "scale set (in seconds).",
        _DEFAULT_JOB_LABELS,
    ),
    "gha_job_execution_duration_seconds": Series(
        "histogram",
        "Time spent executing workflow jobs by the scale set (in seconds).",
        _DEFAULT_COMPLETED_LABELS,
    ),
}
"""Every series ARC's listener exports, by ARC's name."""

_SECTIONS: Final[Mapping[str, Kind]] = {
    "counters": "counter",
    "gauges": "gauge",
    "histograms": "histogram",
}


@dataclass(frozen=True, kw_only=True)
class Selected:
    """One exported series: its labels, in order, and (histograms) its bucket bounds."""

    labels: tuple[str, ...]
    buckets: tuple[float, ...] = DEFAULT_BUCKETS


@dataclass(frozen=True)
class MetricsSelection:
    """The series to export, by ARC name; a series not in ``series`` is not exported."""

    series: Mapping[str, Selected] = field(default_factory=dict)

    @classmethod
    def defaults(cls) -> MetricsSelection:
        """ARC's selection when the configuration has no ``metrics`` block."""
        return cls({name: Selected(labels=s.default_labels) for name, s in CATALOGUE.items()})


def parse_metrics(value: Any, *, where: str = "metrics") -> MetricsSelection:
    """Read ARC's ``metrics`` block (``None``: the defaults).

    Raises ConfigError naming the entry (``metrics.gauges.gha_assigned_jobs.labels``)
    for anything this listener would otherwise have to ignore or guess.
    """
    if value is None:
        return MetricsSelection.defaults()
    block = _object(value, where, "an object with counters, gauges and histograms")
    series: dict[str, Selected] = {}
    for section, entries in block.items():
        kind = _SECTIONS.get(section)
        if kind is None:
            raise ConfigError(
                f"{where}.{section}", f"unknown key{did_you_mean(section, _SECTIONS)}"
            )
        if entries is None:
            continue
        for name, entry in _object(entries, f"{where}.{section}", "an object of metrics").items():
            series[name] = _series(kind, name, entry, where=f"{where}.{section}.{name}")
    return MetricsSelection(series)


def _series(kind: Kind, name: str, entry: Any, *, where: str) -> Selected:
    known = CATALOGUE.get(name)
    if known is None:
        same_kind = [n for n, s in CATALOGUE.items() if s.kind == kind]
        raise ConfigError(where, f"unknown {kind}{did_you_mean(name, same_kind)}")
    if known.kind != kind:
        raise ConfigError(where, f"is a {known.kind}: list it under {known.kind}s")
    keys = ("labels", "buckets") if kind == "histogram" else ("labels",)
    fields = _object(entry, where, f"an object with {' and '.join(keys)}")
    for key in fields:
        if key not in keys:
            raise ConfigError(f"{where}.{key}", f"unknown key{did_you_mean(key, keys)}")
    labels = _labels(fields.get("labels"), where=f"{where}.labels")
    if kind != "histogram":
        return Selected(labels=labels)
    return Selected(
        labels=labels, buckets=_buckets(fields.get("buckets"), where=f"{where}.buckets")
    )


def _labels(value: Any, *, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(where, "must be a list of label names")
    for label in value:
        if label not in LABELS:
            raise ConfigError(where, f"unknown label {label!r}{did_you_mean(label, LABELS)}")
        if value.count(label) > 1:
            raise ConfigError(where, f"label {label!r} is listed twice")
    return tuple(value)


def _buckets(value: Any, *, where: str) -> tuple[float, ...]:
    if value is None or value == []:
        return DEFAULT_BUCKETS
    if not isinstance(value, list) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in value
    ):
        raise ConfigError(where, "must be a list of numbers")
    if any(b <= a for a, b in itertools.pairwise(value)):
        raise ConfigError(where, "must be in increasing order")
    return tuple(float(v) for v in value)


def _object(value: Any, where: str, shape: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(where, f"must be {shape}")
    return value
