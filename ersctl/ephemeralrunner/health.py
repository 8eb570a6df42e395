"""Runner health: the timed rules that free a slot a runner would otherwise hold for good.
Pure.

``ersctl.ephemeralrunner.phases`` decides what a Pod's state means when the Pod says it (a
runner's exit, an eviction, a node's rejection, an init container's failure). A Pod can
also say nothing for ever: its image never pulls, its node is gone, its runner runs
but never reaches GitHub. Each such mode gets a deadline here, a flag of
``ersctl reconcile`` (:class:`HealthPolicy`), and what the controller does when it
passes (:func:`assess`):

- a Pod whose runner container has not started ``start_timeout`` seconds after the
  Pod's creation is a failure (``Mode.START_TIMEOUT``), reported with the cause the Pod
  gives (a container's waiting reason, else the scheduler's): deleted, counted, made
  again after the failure backoff, up to the failure limit;
- a runner whose Pod ran ``online_timeout`` seconds without a job is looked up at GitHub
  once per Pod (:class:`CheckOnline`, then :func:`online_verdict`): online or busy, that
  Pod is left alone for good; offline, the Pod is a failure (``Mode.NOT_ONLINE``);
  unknown, its registration is spent (a job took it while nobody recorded it, or
  someone removed it) and the runner is deleted (``Mode.REGISTRATION_LOST``; the set
  makes another). A replacement Pod (after a drain, an eviction) is looked up again:
  its process is a new one, and "online" said only that the old one was;
- a Pod whose node stopped answering (phase Unknown ``node_lost_timeout`` seconds after
  it stopped being ready, or still terminating ``node_lost_timeout`` seconds after its
  grace period ended) cannot be replaced under its name, and its runner may still hold
  a session: unless GitHub says the runner is busy, the Pod is force-deleted and the
  runner deleted (:class:`NodeLost`);
- a Pod deleted while its runner lives (:func:`vanished_pod`): with a job, the runner's
  JIT registration is spent and a new Pod under it would never run a job (ARC #4588),
  so the runner is deleted; without one, a new Pod is made at once (not a failure: a
  drain is not the runner's fault);
- a runner that exited 0 with no job recorded (:func:`exit_to_check`) is looked up at
  GitHub: still listed idle, it never ran one, and its registration is removed (ARC
  #4709);
- a deleted runner whose registration GitHub keeps failing to remove is let go
  ``deregistration_timeout`` seconds after its deletion (:func:`deregistration_left`),
  naming its runner id so a person can remove it at GitHub; a busy one never is. One
  whose registration is gone already (:func:`registration_released`) asks GitHub
  nothing; one whose Pod cannot be running a job (:func:`may_run_a_job`) is let go at
  once, its registration removed in the background (``ersctl.ephemeralrunner.deregistration``).

No rule deletes a runner GitHub says is busy. Busy runners' Pods are protected from
consolidation instead (:func:`protection_due`). Times come from the objects (the API
server's clock) and ``now`` (the controller's).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from ersctl.api import (
    EphemeralRunner,
    ERPhase,
    format_time,
    parse_time,
)
from ersctl.ephemeralrunner.modes import Mode
from ersctl.ephemeralrunner.phases import (
    Decision,
    Finished,
    PodFailed,
    PodState,
    SyncStatus,
    Wait,
    decide,
    report_ready_later,
)
from ersctl.reasons import Reason
from ghalistener.actions.types import RunnerReference


@dataclass(frozen=True, kw_only=True)
class HealthPolicy:
    """The deadlines of the timed rules (seconds; the ``ersctl reconcile`` flags) and
    whether busy runners' Pods get the disruption annotations."""

    start_timeout: float = 600.0
    """``--runner-start-timeout``: a Pod's runner container must have started by then."""
    online_timeout: float = 600.0
    """``--runner-online-timeout``: an idle runner must be online at GitHub by then."""
    node_lost_timeout: float = 300.0
    """``--runner-node-lost-timeout``: how long a Pod may be Unknown, or terminate past
    its grace period, before its node counts as lost."""
    deregistration_timeout: float = 600.0
    """``--runner-deregistration-timeout``: how long a deleted runner waits for GitHub
    to remove its registration."""
    protect_busy: bool = True
    """``--busy-runner-protection``: busy runners' Pods carry the disruption annotations."""

    def __post_init__(self) -> None:
        timeouts = (
            self.start_timeout,
            self.online_timeout,
            self.node_lost_timeout,
            self.deregistration_timeout,
        )
        if min(timeouts) <= 0:
            raise ValueError("runner health timeouts must be > 0")


@dataclass(frozen=True, kw_only=True)
class CheckOnline:
    """Look the runner up at GitHub (:func:`online_verdict`); ``then`` applies when it
    is online or busy."""

    pod_uid: str
    then: Decision


@dataclass(frozen=True, kw_only=True)
class NodeLost:
    """The Pod's node is gone: force-delete the Pod and delete the runner, unless
    GitHub says the runner is busy."""

    pod_uid: str
    detail: str


@dataclass(frozen=True, kw_only=True)
class Abandon:
    """Delete the runner: it can never run a job. The set makes another."""

    mode: Mode
    detail: str


@dataclass(frozen=True, kw_only=True)
class Replace:
    """Make the runner a new Pod now, saying why (not a failure)."""

    mode: Mode
    detail: str


Assessment = Decision | CheckOnline | NodeLost | Abandon


def assess(
    runner: EphemeralRunner,
    pod: PodState,
    *,
    now: datetime,
    policy: HealthPolicy,
    online_confirmed: bool,
) -> Assessment:
    """What to do about ``runner``'s live ``pod`` (see the module docstring).
    ``online_confirmed``: GitHub said once, while this Pod ran, that the runner was
    online or busy."""
    if pod.deleting:
        how = "terminating past its grace period"
        return _lost_node(pod.uid, pod.deleted_at, now, policy, how)
    if pod.phase == "Unknown":
        since = pod.not_ready_since or pod.created_at
        return _lost_node(pod.uid, since, now, policy, "in phase Unknown")
    decision = report_ready_later(runner, pod, decide(runner, pod), now=now)
    if not isinstance(decision, Wait | SyncStatus):
        return decision
    if not pod.started:
        return _starting(decision, pod, now, policy)
    if runner.has_job or online_confirmed:
        return decision
    due = _due(pod.runner_started_at, policy.online_timeout, now)
    if due is None or due > 0:
        return _requeued(decision, due)
    return CheckOnline(pod_uid=pod.uid, then=decision)


def online_verdict(
    runner: EphemeralRunner,
    check: CheckOnline,
    found: RunnerReference | None,
    *,
    policy: HealthPolicy,
) -> PodFailed | Abandon | None:
    """What GitHub's answer about ``runner`` (``found``: its runner, or None when
    unknown) means; None when it is online or busy (go on with ``check.then``)."""
    if found is None:
        return Abandon(
            mode=Mode.REGISTRATION_LOST,
            detail=f"the service no longer knows runner {runner.runner_id}, whose pod "
            "runs without a job: its registration is spent; deleting the runner",
        )
    if found.busy or found.status.lower() == "online":
        return None
    status = found.status or "not online"
    return PodFailed(
        pod_uid=check.pod_uid,
        reason=Reason.RUNNER_NOT_ONLINE,
        message=f"the service reports runner {found.id} {status} "
        f"{policy.online_timeout:g}s after its container started",
        mode=Mode.NOT_ONLINE,
        detail=f"the runner was not online at the service within {policy.online_timeout:g}s "
        f"(it is {status})",
    )


def vanished_pod(runner: EphemeralRunner, seen_uid: str) -> Abandon | Replace | None:
    """``runner`` has no Pod, and ``seen_uid`` is the Pod it was last seen with ("" when
    none): None when nobody took it away (never made, or deleted as a failure)."""
    if not seen_uid or seen_uid in runner.failures:
        return None
    if runner.has_job:
        return Abandon(
            mode=Mode.POD_DELETED,
            detail=f"the runner pod was deleted during job {runner.job_id}: its registration "
            "is spent; deleting the runner",
        )
    return Replace(
        mode=Mode.POD_DELETED,
        detail="the runner pod was deleted while its runner had no job; making another",
    )


def protection_due(runner: EphemeralRunner, pod: PodState, policy: HealthPolicy) -> bool:
    """Whether ``pod`` needs the disruption annotations now: its runner is busy (the
    listener recorded its job), it runs, and it lacks them."""
    return (
        policy.protect_busy
        and runner.has_job
        and not pod.protected
        and not pod.deleting
        and pod.runner_exit_code is None
    )


def exit_to_check(runner: EphemeralRunner, decision: Finished) -> bool:
    """The runner exited 0 with no job recorded: GitHub tells whether it ran one (the
    listener may not have recorded it yet) or never did (its registration is still
    there: ARC #4709 removes it)."""
    return decision.phase == ERPhase.SUCCEEDED and not runner.has_job


def registration_released(runner: EphemeralRunner) -> bool:
    """Has ``runner``'s registration left the service already? A runner that exited 0
    after a job removed its own (an ephemeral runner deregisters on its way out), and
    one that exited unused had it removed then (ARC #4709): deleting either asks GitHub
    nothing (ARC: ``runnerSelfDeregistered``; every finished job went through a useless
    DELETE otherwise). A Succeeded runner with neither (the check at its exit failed)
    is asked about: a registration may be left."""
    return runner.phase == ERPhase.SUCCEEDED and (
        runner.has_job or runner.status.get("reason") == Reason.RUNNER_EXITED_WITHOUT_JOB
    )


def may_run_a_job(pod: PodState | None) -> bool:
    """Can the runner of ``pod`` be running a job? Only in a live Pod: there, and
    neither terminated nor being deleted (a Pod on its way out ends its job whatever
    this controller does)."""
    return (
        pod is not None
        and not pod.deleting
        and pod.runner_exit_code is None
        and pod.phase not in ("Succeeded", "Failed")
    )


def deregistration_left(runner: EphemeralRunner, *, now: datetime, policy: HealthPolicy) -> float:
    """Seconds until a deleted ``runner`` is let go without its registration removed
    (<= 0: now). A deletion time that does not parse counts as just now."""
    deleted = parse_time(runner.deletion_timestamp) or now
    return (deleted - now).total_seconds() + policy.deregistration_timeout


def _lost_node(
    pod_uid: str, since: datetime | None, now: datetime, policy: HealthPolicy, how: str
) -> Wait | NodeLost:
    due = _due(since, policy.node_lost_timeout, now)
    if since is None or due is None or due > 0:
        return Wait(requeue_after=due)
    return NodeLost(
        pod_uid=pod_uid,
        detail=f"the runner pod has been {how} since {format_time(since)}, more than "
        f"{policy.node_lost_timeout:g}s: its node does not answer",
    )


def _starting(
    decision: Wait | SyncStatus, pod: PodState, now: datetime, policy: HealthPolicy
) -> Assessment:
    due = _due(pod.created_at, policy.start_timeout, now)
    if due is None or due > 0:
        return _requeued(decision, due)
    cause = pod.waiting_reason or "StartTimeout"
    said = pod.waiting_message or "the pod gave no cause"
    return PodFailed(
        pod_uid=pod.uid,
        reason=cause,
        message=said,
        mode=Mode.START_TIMEOUT,
        detail=f"the runner pod did not start within {policy.start_timeout:g}s ({cause}: {said})",
    )


def _due(since: datetime | None, timeout: float, now: datetime) -> float | None:
    """Seconds until ``since + timeout`` (<= 0: passed); None without a ``since``."""
    if since is None:
        return None
    return (since + timedelta(seconds=timeout) - now).total_seconds()


def _requeued(decision: Wait | SyncStatus, due: float | None) -> Wait | SyncStatus:
    """``decision``, looked at again when the deadline ``due`` seconds away comes (or
    sooner, when ``decision`` itself asks to be)."""
    if due is None:
        return decision
    sooner = min(max(due, 0.001), decision.requeue_after or float("inf"))
    return replace(decision, requeue_after=sooner)
