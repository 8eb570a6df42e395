"""The soak's invariants, checked on its trace: one row each, with its bound. Pure.

Definitions (the rows mean exactly this):

- *jobs lost*: queued jobs that did not complete successfully, less the jobs the fault
  injector failed on purpose by failing their runner's Pod mid-job (GitHub fails a job
  whose runner died; it does not queue it again). Bound 0.
- *jobs run twice*: jobs the service recorded as started more than once. Bound 0. The
  simulated service refuses to start a job twice, so this row checks that the service,
  the runner stand-in and the event log agree rather than the controllers.
- *busy runners deleted*: runners whose deletion was requested between their job's start
  and its end at the service, plus runner DELETEs in the API server's log that no runner
  record saw (either would hide a busy deletion). Bound 0.
- *wasted runners*: runners created that never ran a job, except those whose Pods the
  injector failed (they are counted on their own row, unbounded). Bound: 1% of the jobs.
- *leader failover*: for each SIGKILL of the leading controller replica, the seconds
  until another identity wrote the Lease as its holder (the API server's request log).
  Bound on the longest: the Lease duration + 2 retry periods + 2 s (a SIGKILLed leader
  never releases its Lease, so the follower waits it out; it looks every retry period).
- *back at minimum*: every job done and the set's replicas and runners at its minimum
  before the drain deadline.
- *no stuck finalizer*: no object still being deleted once the run drained, and nothing
  left in the cluster or at GitHub after the AutoscalingRunnerSet's deletion.
- *no Failed runner older than the TTL*: the longest a Failed runner was seen (not yet
  being deleted) after its failure, against ``--failed-runner-ttl`` + a leader failover
  (a SIGKILLed leader's timers die with it: the Lease duration + 2 retry periods) + 5 s
  (the reconcile the TTL schedules, and the agent seeing the deletion).
- *no zombie runner*: the longest a live runner (not being deleted, not done) had no
  running Pod or a runner GitHub did not see online (a Pod deleted, a lost node, an
  image that does not pull, a runner never online or whose registration is gone),
  against the runner health rules' longest wait (a timeout and the failure backoff
  after it) + a leader failover (the Lease duration + 2 retry periods) + 5 s.
- *capacity restored*: after the last fault, the seconds until the set's pending and
  running runners first reach its desired count, against the longer of two recoveries
  that run side by side: the zombie bound + the failed-runner TTL (a runner that turned
  Failed holds its slot that long), and a SIGKILLed listener's takeover + 5 s (finished
  runners are replaced only when a listener publishes; its successor holds the session
  once the killed one's session expired and its next 409 retry came, then its Pod has
  to be made, start and publish).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from simulation.faults import FaultKind
from simulation.trace import SoakTrace, Trace, busy_deletions, unseen_deletions

FAILOVER_SLACK = 2.0
FAILED_RUNNER_GRACE = 5.0
HEALTH_GRACE = 5.0
LISTENER_GRACE = 5.0
WASTED_SHARE = 0.01

DEFINITIONS = (__doc__ or "").split("\n\n", 1)[-1].strip()
"""The definitions above, printed as the header of the soak's table."""


@dataclass(frozen=True, kw_only=True)
class Row:
    """One invariant: what was measured, its bound, and whether it holds."""

    name: str
    value: str
    bound: str
    ok: bool

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "bound": self.bound, "ok": self.ok}


def check(trace: Trace, *, retry_period: float) -> list[Row]:
    """Every invariant of the module docstring, in that order (rows for the failovers
    and the injected runners are included even when nothing was injected)."""
    soak = trace.soak or SoakTrace()
    jobs = len(trace.jobs)
    lost = [
        job.name
        for job in trace.jobs
        if job.completed_at is None and job.name not in soak.failed_jobs
    ]
    twice = [job.name for job in trace.jobs if job.starts > 1]
    busy = {runner.name for runner, _ in busy_deletions(trace)} | set(unseen_deletions(trace))
    ran_jobs = {job.runner for job in trace.jobs if job.runner is not None}
    unused = [runner.name for runner in trace.runners if runner.name not in ran_jobs]
    wasted = [name for name in unused if name not in soak.injected_runners]
    allowed = int(WASTED_SHARE * jobs)
    oldest = max((age for _, age in soak.failed_runner_ages), default=0.0)
    failover = soak.lease_duration + 2 * retry_period
    failed_bound = soak.failed_runner_ttl + failover + FAILED_RUNNER_GRACE
    left = (*soak.stuck, *(trace.teardown or ()))
    return [
        _count("jobs lost", lost, 0),
        _count("jobs run twice", twice, 0),
        _count("busy runners deleted", sorted(busy), 0),
        Row(
            name="wasted runners",
            value=f"{len(wasted)} of {len(trace.runners)} created",
            bound=f"<= {allowed} (1% of {jobs} jobs)",
            ok=len(wasted) <= allowed,
        ),
        Row(
            name="runners failed by injection",
            value=f"{len(soak.injected_runners)} ({len(soak.failed_jobs)} mid-job)",
            bound="reported",
            ok=True,
        ),
        _failover_row(soak, retry_period=retry_period),
        Row(
            name="back at minimum",
            value=(
                f"replicas {trace.final_replicas}, runners {trace.final_runners}"
                + ("" if soak.drained else " at the drain deadline")
            ),
            bound=f"{trace.min_runners} and {trace.min_runners}, drained",
            ok=soak.drained and trace.final_replicas == trace.min_runners == trace.final_runners,
        ),
        Row(
            name="no stuck finalizer",
            value=f"{len(left)} left" + (f": {', '.join(left[:5])}" if left else ""),
            bound="0",
            ok=not left and trace.teardown is not None,
        ),
        Row(
            name="no Failed runner older than the TTL",
            value=f"oldest {oldest:.1f}s ({len(soak.failed_runner_ages)} Failed runners)",
            bound=f"<= {failed_bound:g}s (TTL {soak.failed_runner_ttl:g}s + {failover + FAILED_RUNNER_GRACE:g}s)",
            ok=oldest <= failed_bound,
        ),
        *_health_rows(trace, soak, retry_period=retry_period),
    ]


def _health_rows(trace: Trace, soak: SoakTrace, *, retry_period: float) -> list[Row]:
    zombie_bound = soak.health_deadline + soak.lease_duration + 2 * retry_period + HEALTH_GRACE
    worst = max(soak.zombie_ages, key=lambda item: item[1], default=("", 0.0))
    runner_side = zombie_bound + soak.failed_runner_ttl
    listener_side = _listener_side(trace, soak)
    capacity_bound = max(runner_side, listener_side)
    why = f" (listener {soak.listener_takeover:g}s + {LISTENER_GRACE:g}s after its kill)"
    restored = capacity_restored(trace)
    return [
        Row(
            name="no zombie runner",
            value=f"longest {worst[1]:.1f}s" + (f" ({worst[0]})" if worst[0] else ""),
            bound=f"<= {zombie_bound:g}s",
            ok=worst[1] <= zombie_bound,
        ),
        Row(
            name="capacity restored",
            value="never" if restored is None else f"{restored:.1f}s after the last fault",
            bound=f"<= {capacity_bound:g}s" + (why if listener_side > runner_side else ""),
            ok=restored is not None and restored <= capacity_bound,
        ),
    ]


def _listener_side(trace: Trace, soak: SoakTrace) -> float:
    """How long after the last fault the successor of the last SIGKILLed listener may
    still be taking over (0: none may): a kill long before the last fault bounds nothing."""
    kills = [mark.at for mark in trace.marks if mark.label == FaultKind.LISTENER_KILL]
    if not kills or not soak.listener_takeover:
        return 0.0
    last = max(mark.at for mark in trace.marks)
    return max(0.0, max(kills) + soak.listener_takeover + LISTENER_GRACE - last)


def capacity_restored(trace: Trace) -> float | None:
    """Seconds from the last fault until a sample shows the set's pending and running
    runners at its desired count (None: never; 0 without faults)."""
    last = max((mark.at for mark in trace.marks), default=None)
    if last is None:
        return 0.0
    for sample in trace.samples:
        if sample.at >= last and sample.pending + sample.running >= sample.replicas:
            return sample.at - last
    return None


def _count(name: str, found: list[str], bound: int) -> Row:
    shown = f": {', '.join(found[:5])}" + (" ..." if len(found) > 5 else "") if found else ""
    return Row(name=name, value=f"{len(found)}{shown}", bound=str(bound), ok=len(found) <= bound)


def _failover_row(soak: SoakTrace, *, retry_period: float) -> Row:
    bound = soak.lease_duration + 2 * retry_period + FAILOVER_SLACK
    times = [f.acquired_at - f.killed_at for f in soak.failovers if f.acquired_at is not None]
    missing = len(soak.failovers) - len(times)
    if not soak.failovers:
        value = "no leader killed"
    else:
        value = (
            f"{len(soak.failovers)} kills: max {max(times, default=0):.1f}s, "
            f"median {statistics.median(times) if times else 0:.1f}s"
            + (f", {missing} never taken over" if missing else "")
        )
    return Row(
        name="leader failover",
        value=value,
        bound=f"<= {bound:g}s (lease {soak.lease_duration:g}s)",
        ok=bool(soak.failovers) and not missing and max(times) <= bound,
    )


def format_table(rows: list[Row]) -> str:
    """The rows as an aligned table: invariant, value, bound, OK or FAIL."""
    width = max(len(row.name) for row in rows)
    value_width = max(len(row.value) for row in rows)
    lines = [f"{'invariant':{width}}  {'value':{value_width}}  {'bound':28}  result"]
    for row in rows:
        verdict = "OK" if row.ok else "FAIL"
        lines.append(f"{row.name:{width}}  {row.value:{value_width}}  {row.bound:28}  {verdict}")
    return "\n".join(lines)
