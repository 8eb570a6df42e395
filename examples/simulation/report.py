"""The final report of a run, computed from its :class:`~simulation.trace.Trace`. Pure.

Definitions (the numbers mean exactly this):

- *completed*: jobs the GitHub simulator recorded as completed; *lost*: queued jobs
  that never completed.
- *wasted runners*: runners that registered with the service and whose deletion was
  requested without a job ever being assigned to them.
- *busy runner deletions*: runners whose deletion was requested between their job's
  start and its completion (job times from the GitHub simulator's event log, deletion
  times from the first sight of the runner's ``deletionTimestamp``), cross-checked
  against the DELETEs in the API server's request log (*unseen deletions* must be 0).
- *peak runners*: most EphemeralRunners alive at one sample (deleting ones included);
  *peak demand*: most jobs assigned to the scale set at one sample.
- *job wait*: queued -> started, nearest-rank percentiles over the jobs that started.
- *API requests/writes per job*: requests the API server answered for the listener and
  the controller (writes = create, update, patch, delete, refused ones included: a
  refused write is still a request served; how many were refused, and the applied
  writes per job, follow in brackets) divided by completed jobs;
  the writes also by what each was for (``simulation.trace.WRITE_KINDS``, with why it
  is needed), each per completed job.
- *back at min*: the last published replicas and the runners left both equal min_runners.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from simulation.trace import (
    WRITE_KINDS,
    Trace,
    busy_deletions,
    unseen_deletions,
    wasted_runners,
)


@dataclass(frozen=True, kw_only=True)
class Report:
    label: str
    seed: int
    elapsed: float
    jobs_queued: int
    jobs_completed: int
    jobs_lost: int
    runners_created: int
    runners_registered: int
    wasted_runners: int
    wasted_runner_names: tuple[str, ...]
    busy_runner_deletions: int
    busy_runner_names: tuple[str, ...]
    runner_deletions: int
    """Runners the API server's request log shows deleted (DELETE answered 2xx)."""
    unseen_deletions: int
    """Of those, deletions no runner record shows: must be 0 for ``busy`` to be trusted."""
    peak_runners: int
    peak_demand: int
    wait_p50: float | None
    wait_p95: float | None
    wait_max: float | None
    api_requests: int
    api_writes: int
    requests_per_job: float | None
    writes_per_job: float | None
    refused_writes: int
    """Of ``api_writes``, those the server refused (409, 404, 422: nothing stored)."""
    applied_writes_per_job: float | None
    min_runners: int
    final_replicas: int
    final_runners: int
    back_at_min: bool
    writes_by_resource: tuple[tuple[str, int], ...] = ()
    writes_by_kind: tuple[tuple[str, int], ...] = ()
    """Writes per ``simulation.trace.WRITE_KINDS`` entry (what each write was for)."""
    marks: tuple[str, ...] = ()
    """Faults and restarts, as ``label@seconds``."""
    teardown_left: tuple[str, ...] | None = None
    """What the AutoscalingRunnerSet's deletion left behind (None: it was not deleted)."""
    cluster: tuple[str, tuple[str, ...]] | None = None
    """On an existing cluster: the run's namespace and what its removal left (None: the
    embedded server)."""
    apply_to_first_job: float | None = None
    """Seconds from applying the AutoscalingRunnerSet to the first job running (None
    without one, or when no job ran)."""

    @property
    def ok(self) -> bool:
        """Every queued job completed, no runner was deleted while running one, and a
        deleted AutoscalingRunnerSet (a removed namespace) left nothing behind."""
        return (
            self.jobs_lost == 0
            and self.busy_runner_deletions == 0 == self.unseen_deletions
            and not self.teardown_left
            and not (self.cluster and self.cluster[1])
        )

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["busy_runner_names"] = list(self.busy_runner_names)
        data["wasted_runner_names"] = list(self.wasted_runner_names)
        data["marks"] = list(self.marks)
        data["writes_by_resource"] = dict(self.writes_by_resource)
        data["writes_by_kind"] = dict(self.writes_by_kind)
        data["ok"] = self.ok
        return data


def percentile(values: list[float], pct: float) -> float | None:
    """Nearest-rank percentile (``pct`` in (0, 100]); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def _per_job(count: int, jobs: int) -> float | None:
    return None if jobs == 0 else round(count / jobs, 2)


def build_report(trace: Trace) -> Report:
    """Compute every figure of the report from ``trace`` (see the module docstring)."""
    completed = sum(1 for job in trace.jobs if job.completed_at is not None)
    waits = [job.wait for job in trace.jobs if job.wait is not None]
    busy = busy_deletions(trace)
    wasted = wasted_runners(trace)
    starts = [job.started_at for job in trace.jobs if job.started_at is not None]
    first_job = round(trace.setup + min(starts), 1) if trace.setup is not None and starts else None
    return Report(
        apply_to_first_job=first_job,
        teardown_left=trace.teardown,
        cluster=trace.cluster,
        label=trace.label,
        seed=trace.seed,
        elapsed=round(trace.elapsed, 1),
        jobs_queued=len(trace.jobs),
        jobs_completed=completed,
        jobs_lost=len(trace.jobs) - completed,
        runners_created=len(trace.runners),
        runners_registered=sum(1 for r in trace.runners if r.registered_at is not None),
        wasted_runners=len(wasted),
        wasted_runner_names=tuple(runner.name for runner in wasted),
        busy_runner_deletions=len(busy),
        busy_runner_names=tuple(sorted({runner.name for runner, _ in busy})),
        runner_deletions=len(trace.deleted_in_log),
        unseen_deletions=len(unseen_deletions(trace)),
        peak_runners=max((s.live_runners for s in trace.samples), default=0),
        peak_demand=max((s.assigned_jobs for s in trace.samples), default=0),
        wait_p50=_rounded(percentile(waits, 50)),
        wait_p95=_rounded(percentile(waits, 95)),
        wait_max=_rounded(max(waits, default=None)),
        api_requests=trace.api.requests,
        api_writes=trace.api.writes,
        requests_per_job=_per_job(trace.api.requests, completed),
        writes_per_job=_per_job(trace.api.writes, completed),
        refused_writes=trace.api.refused_writes,
        applied_writes_per_job=_per_job(trace.api.writes - trace.api.refused_writes, completed),
        min_runners=trace.min_runners,
        final_replicas=trace.final_replicas,
        final_runners=trace.final_runners,
        back_at_min=trace.final_replicas == trace.min_runners == trace.final_runners,
        writes_by_resource=trace.api.writes_by_resource,
        writes_by_kind=trace.api.writes_by_kind,
        marks=tuple(f"{mark.label}@{mark.at:.1f}s" for mark in trace.marks),
    )


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}s"


def format_report(report: Report, *, verdict: bool = True) -> str:
    """The report as a few aligned lines for the terminal; ``verdict``: its header says
    OK or FAILED (the soak judges by its invariants instead, which discount what its
    injector did on purpose)."""
    judged = (": OK" if report.ok else ": FAILED") if verdict else ""
    lines = [
        f"== {report.label}{judged} (seed {report.seed}, {report.elapsed:.1f}s)",
        f"jobs            {report.jobs_completed}/{report.jobs_queued} completed, "
        f"{report.jobs_lost} lost",
        f"runners         {report.runners_created} created, {report.runners_registered} "
        f"registered, {report.wasted_runners} wasted (registered, deleted without a job)",
        f"busy deleted    {report.busy_runner_deletions} runner(s) deleted while running a job"
        + (f": {', '.join(report.busy_runner_names)}" if report.busy_runner_names else "")
        + f" (of {report.runner_deletions} deletions in the API log"
        + (f", {report.unseen_deletions} UNSEEN)" if report.unseen_deletions else ", all seen)"),
        f"peak            {report.peak_runners} runners for a peak demand of "
        f"{report.peak_demand} assigned jobs",
        f"job wait        p50 {_seconds(report.wait_p50)}  p95 {_seconds(report.wait_p95)}"
        f"  max {_seconds(report.wait_max)}  (queued -> started)",
        f"API server      {report.api_requests} requests, {report.api_writes} writes "
        f"({report.refused_writes} refused); per job: {report.requests_per_job} requests, "
        f"{report.writes_per_job} writes ({report.applied_writes_per_job} applied)",
        "writes          "
        + (", ".join(f"{name} {count}" for name, count in report.writes_by_resource) or "-"),
        *format_writes_per_job(report),
        f"end state       replicas {report.final_replicas}, runners {report.final_runners}, "
        f"min_runners {report.min_runners}: "
        + ("back at min" if report.back_at_min else "NOT back at min"),
    ]
    if report.apply_to_first_job is not None:
        lines.append(
            f"from the apply  {report.apply_to_first_job:.1f}s from applying the "
            "AutoscalingRunnerSet to the first job running"
        )
    if report.marks:
        lines.append(f"faults          {', '.join(report.marks)}")
    if report.teardown_left is not None:
        lines.append(
            "teardown        AutoscalingRunnerSet deleted: "
            + (
                f"LEFT {', '.join(report.teardown_left)}"
                if report.teardown_left
                else "nothing left in the cluster or at GitHub"
            )
        )
    if report.cluster is not None:
        namespace, left = report.cluster
        lines.append(
            f"cluster         the run's namespace {namespace} removed: "
            + (f"LEFT {'; '.join(left)}" if left else "nothing left")
        )
    return "\n".join(lines)


def format_writes_per_job(report: Report) -> list[str]:
    """One line per kind of write (``simulation.trace.WRITE_KINDS``): how many, how many
    per completed job, and why the system needs it."""
    lines = [f"writes for      (count, per job: why){'' if report.writes_by_kind else ' -'}"]
    for kind, count in report.writes_by_kind:
        jobs = report.jobs_completed
        per_job = f"{count / jobs:.2f}" if jobs else "-"
        lines.append(f"  {kind:18}{count:>6}{per_job:>7}  {WRITE_KINDS[kind]}")
    return lines


def write_json(reports: list[Report], path: str) -> None:
    """Write one report as a JSON object, or several as a list."""
    payload: Any = reports[0].to_json() if len(reports) == 1 else [r.to_json() for r in reports]
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(payload, handle, indent=2)
        handle.write("\n")


COMPARED = (
    ("wasted runners", "wasted_runners"),
    ("job wait p95 (s)", "wait_p95"),
    ("API writes per job", "writes_per_job"),
    ("jobs completed", "jobs_completed"),
    ("runners created", "runners_created"),
)


def format_comparison(ours: Sequence[Report], baseline: Sequence[Report]) -> str:
    """Both rows side by side and the baseline/ours ratio of each compared figure.

    With several runs per row, each figure is the median over that row's runs.
    """
    header = f"{'':22}{ours[0].label:>16}{baseline[0].label:>16}{'baseline/ours':>16}"
    lines = [header]
    for title, attr in COMPARED:
        a, b = _median(ours, attr), _median(baseline, attr)
        lines.append(f"{title:22}{_cell(a):>16}{_cell(b):>16}{_ratio(b, a):>16}")
    return "\n".join(lines)


def format_write_kinds(ours: Sequence[Report], baseline: Sequence[Report]) -> str:
    """API writes per completed job broken down by what they were for, both rows side by
    side (medians over each row's runs), with the baseline/ours ratio."""
    kinds = [
        kind for kind in WRITE_KINDS if any(_kind_per_job(r, kind) for r in (*ours, *baseline))
    ]
    lines = [
        f"{'writes per job':22}{ours[0].label:>16}{baseline[0].label:>16}{'baseline/ours':>16}"
    ]
    for kind in kinds:
        a = _median_of([_kind_per_job(r, kind) for r in ours])
        b = _median_of([_kind_per_job(r, kind) for r in baseline])
        lines.append(f"  {kind:20}{_cell(a):>16}{_cell(b):>16}{_ratio(b, a):>16}")
    return "\n".join(lines)


def _kind_per_job(report: Report, kind: str) -> float:
    count = dict(report.writes_by_kind).get(kind, 0)
    return round(count / report.jobs_completed, 2) if report.jobs_completed else 0.0


def _median_of(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


def _median(reports: Sequence[Report], attr: str) -> float | None:
    values = [getattr(report, attr) for report in reports]
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None


def _cell(value: float | int | None) -> str:
    return "-" if value is None else f"{value:g}"


def _ratio(numerator: float | int | None, denominator: float | int | None) -> str:
    if numerator is None or denominator is None:
        return "-"
    if denominator == 0:
        return "-" if numerator == 0 else "inf (ours 0)"
    return f"{numerator / denominator:.2f}x"
