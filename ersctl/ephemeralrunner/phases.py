"""Pure decisions: what a runner Pod's state means for its EphemeralRunner.

What is read from the Pod: ``metadata.uid``, ``metadata.deletionTimestamp``,
``status.phase``/``reason``/``message``, the ``Ready`` condition, and the state of
the container named ``runner`` in ``status.containerStatuses``. The runner
container's exit code decides when it is known; without a container status the Pod
phase decides (``Succeeded`` = exit 0, ``Failed`` = a failure, as for an evicted Pod).

- runner exited 0 -> the ER is **Succeeded** (one job done; the set cleans it up; one
  that never ran a job is told apart by ``ersctl.ephemeralrunner.healing``);
- runner exited :data:`~ersctl.ephemeralrunner.pods.DEPRECATED_VERSION_EXIT_CODE` -> **Outdated**
  (the runner image is too old; the set stops scaling until the template changes);
- runner exited otherwise, or the Pod failed -> a failure: the Pod is deleted, the
  failure is recorded in ``status.failures`` (Pod uid -> time), and a new Pod is
  created after a backoff; once :attr:`FailurePolicy.max_failures` failures are
  recorded the ER is **Failed** and no new Pod is made;
- otherwise the runner is alive, and the ER's phase follows its *job*, not the Pod
  (ARC's documented meaning): **Pending** while no job is assigned, which covers a
  runner still being provisioned and one online and idle; **Running** once the
  listener has written the job fields (``status.jobId``, on JobStarted). ``ready``
  mirrors the Pod's Ready condition, so an idle runner that is online is Pending with
  ``ready: true``. The set controller relies on this split: it scales down pending
  runners first, and it counts only Running runners as busy.

Nothing but people read ``ready`` (no controller decides on it), so the Pod turning
ready is not worth a status write of its own when the runner's job is about to bring
one: an idle runner is reported ready :data:`READY_REPORT_DELAY` seconds after its Pod
turned ready (:func:`report_ready_later`), unless its job came first and the Running
write carried ``ready: true`` with it. A runner made for a queued job usually gets it
within seconds of coming online: one write instead of two for most runners. Our
listener writes that Running write itself, with the job fields, while the runner is
Pending (``ghalistener.publisher``): the phase then already says what :func:`decide`
would, and this controller writes nothing. After ARC's listener, which writes the job
fields alone, it writes Running as before.

A failure is named by its :class:`Mode` (the metric label) and reported with the
mode's Event reason (:data:`EVENT_REASONS`): the runner container's exit, an eviction, a
node's admission rejection (``OutOf*``), another Pod failure, or an init container that
exited non-zero while the runner never started (the Pod would stay Pending: ARC #4457).
The timed rules (a Pod that never starts, a runner never online, a lost node) are
``ersctl.ephemeralrunner.health``'s; they read the rest of :class:`PodState`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from ersctl.api import EphemeralRunner, ERPhase, parse_time
from ersctl.api import format_time as format_time  # re-exported: the runner's clock format
from ersctl.ephemeralrunner.modes import Mode
from ersctl.ephemeralrunner.pods import (
    DEPRECATED_VERSION_EXIT_CODE,
    DISRUPTION_ANNOTATIONS,
    RUNNER_CONTAINER,
)
from ersctl.reasons import Reason

READY_REPORT_DELAY: Final = 10.0
"""Seconds an idle runner's Pod is ready before ``ready: true`` is written on its own
(see the module docstring): GitHub gives a runner made for a queued job that job
within a few seconds of its coming online."""


@dataclass(frozen=True, kw_only=True)
class FailurePolicy:
    """When a failing runner gives up, and how long it waits between Pods.

    The ER turns Failed once it has ``max_failures`` recorded failures (ARC: 5).
    Before the Pod after failure ``n`` (n >= 1) it waits
    ``min(backoff_base * 2**(n-1), backoff_cap)`` seconds from the latest failure:
    5, 10, 20, 40 s with the defaults, as ARC.
    """

    max_failures: int = 5
    backoff_base: float = 5.0
    backoff_cap: float = 300.0

    def __post_init__(self) -> None:
        if self.max_failures < 1:
            raise ValueError(f"max_failures must be >= 1, got {self.max_failures}")
        if self.backoff_base < 0 or self.backoff_cap < 0:
            raise ValueError("backoff durations must be >= 0")

    def exhausted(self, failures: int) -> bool:
        return failures >= self.max_failures

    def delay(self, failures: int) -> float:
        """Seconds between the latest failure and the next Pod, after ``failures``."""
        if failures <= 0:
            return 0.0
        return min(self.backoff_base * float(2 ** min(failures - 1, 62)), self.backoff_cap)


def seconds_until_next_pod(
    failures: Mapping[str, Any], *, now: datetime, policy: FailurePolicy
) -> float:
    """How long to wait before creating a Pod, given ``status.failures``; 0 = now.

    Timestamps that do not parse count as long past (they never block a runner).
    """
    if not failures:
        return 0.0
    times = [t for t in (parse_time(v) for v in failures.values()) if t is not None]
    if not times:
        return 0.0
    due = max(times).timestamp() + policy.delay(len(failures))
    return max(0.0, due - now.timestamp())


STARTING_REASONS: Final = frozenset(("", "ContainerCreating", "PodInitializing"))
"""Waiting reasons of a container that is merely starting: no cause to report."""


@dataclass(frozen=True, kw_only=True)
class PodState:
    """What the decisions read from a runner Pod (see the module docstring)."""

    uid: str
    phase: str = ""
    reason: str = ""
    message: str = ""
    ready: bool = False
    deleting: bool = False
    runner_exit_code: int | None = None
    """The runner container's exit code once it terminated; None before."""
    created_at: datetime | None = None
    deleted_at: datetime | None = None
    """``metadata.deletionTimestamp``: when the Pod's grace period ends."""
    runner_started_at: datetime | None = None
    """When the runner container started running (None while it has not)."""
    not_ready_since: datetime | None = None
    """The Ready condition's last transition, while it is not True (a lost node's Pods
    turn not ready when their node stops reporting)."""
    ready_since: datetime | None = None
    """While the Pod is ready: the Ready condition's last transition (the runner
    container's start when the condition has no time); None otherwise."""
    waiting_reason: str = ""
    """Why the Pod has not started, as it reports it: a container's waiting reason
    (``ImagePullBackOff``...), else the scheduler's (``Unschedulable``); "" when none."""
    waiting_message: str = ""
    """The message that goes with :attr:`waiting_reason` (naming the container)."""
    init_failure: str = ""
    """An init container that exited non-zero, said in a few words ("" when none)."""
    protected: bool = False
    """The Pod carries every annotation of ``pods.DISRUPTION_ANNOTATIONS``."""

    @classmethod
    def from_pod(cls, pod: Mapping[str, Any]) -> PodState:
        meta = _mapping(pod.get("metadata"))
        status = _mapping(pod.get("status"))
        annotations = _mapping(meta.get("annotations"))
        runner = _runner_status(status)
        waiting = _waiting_cause(status)
        return cls(
            uid=str(meta.get("uid") or ""),
            phase=str(status.get("phase") or ""),
            reason=str(status.get("reason") or ""),
            message=str(status.get("message") or ""),
            ready=_is_ready(status),
            deleting=bool(meta.get("deletionTimestamp")),
            runner_exit_code=_exit_code(runner),
            created_at=parse_time(meta.get("creationTimestamp")),
            deleted_at=parse_time(meta.get("deletionTimestamp")),
            runner_started_at=_started_at(runner),
            not_ready_since=_not_ready_since(status),
            ready_since=_ready_since(status, runner),
            waiting_reason=waiting[0],
            waiting_message=waiting[1],
            init_failure=_init_failure(status),
            protected=all(annotations.get(k) == v for k, v in DISRUPTION_ANNOTATIONS.items()),
        )

    @property
    def started(self) -> bool:
        """The runner container has run (it runs, or it ended)."""
        return self.runner_started_at is not None or self.runner_exit_code is not None


@dataclass(frozen=True, kw_only=True)
class Wait:
    """Nothing to change: wait for the next Pod event, or ``requeue_after`` seconds
    (a timed rule of ``ersctl.ephemeralrunner.health`` comes due then)."""

    requeue_after: float | None = None


@dataclass(frozen=True, kw_only=True)
class SyncStatus:
    """Write ``phase`` (Pending or Running) and readiness to the ER status."""

    phase: ERPhase
    ready: bool
    reason: str
    message: str
    requeue_after: float | None = None


@dataclass(frozen=True, kw_only=True)
class PodFailed:
    """Delete the Pod and record failure ``pod_uid`` (a new Pod follows after backoff).

    ``reason`` and ``message`` go to the ER status (the Pod's own, or the cause the
    rule found); ``detail`` is the Event's account of what happened."""

    pod_uid: str
    reason: str
    message: str
    mode: Mode = Mode.EXITED
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class Finished:
    """The runner is done for good: write ``phase`` (Succeeded or Outdated)."""

    phase: ERPhase
    reason: str = ""
    message: str = ""


Decision = Wait | SyncStatus | PodFailed | Finished


def decide(runner: EphemeralRunner, pod: PodState) -> Decision:
    """What ``pod``'s state means for ``runner`` (see the module docstring)."""
    if pod.deleting:
        return Wait()  # a Pod on its way out says nothing new; its deletion event will
    code = pod.runner_exit_code
    if code is None and pod.phase == "Succeeded":
        code = 0
    if code == 0:
        return Finished(phase=ERPhase.SUCCEEDED)
    if code == DEPRECATED_VERSION_EXIT_CODE:
        return Finished(
            phase=ERPhase.OUTDATED,
            reason=Reason.RUNNER_VERSION_DEPRECATED,
            message=f"the runner exited with code {code}: its version is deprecated",
        )
    if code is not None:
        message = pod.message or f"the runner container exited with code {code}"
        return PodFailed(
            pod_uid=pod.uid,
            reason=pod.reason or "RunnerFailed",
            message=message,
            detail=f"the runner container exited with code {code}",
        )
    failed = _failed_before_the_runner(pod)
    if failed is not None:
        return failed
    # The listener records the job; the Pod only says the runner process is up.
    phase = ERPhase.RUNNING if runner.has_job else ERPhase.PENDING
    if runner.phase == phase and runner.ready == pod.ready:
        return Wait()
    return SyncStatus(phase=phase, ready=pod.ready, reason=pod.reason, message=pod.message)


def report_ready_later(
    runner: EphemeralRunner, pod: PodState, decision: Decision, *, now: datetime
) -> Decision:
    """``decision``, or a :class:`Wait` until :data:`READY_REPORT_DELAY` seconds after
    the Pod turned ready when all ``decision`` would write is an idle runner's
    ``ready: true`` (see the module docstring): a changed reason or message is written
    at once. A Pod that gives no time is reported at once."""
    idle_turned_ready = (
        isinstance(decision, SyncStatus)
        and decision.phase == ERPhase.PENDING == runner.phase
        and decision.ready
        and not runner.ready
        and decision.reason == (runner.status.get("reason") or "")
        and decision.message == (runner.status.get("message") or "")
    )
    if not idle_turned_ready or pod.ready_since is None:
        return decision
    left = READY_REPORT_DELAY - (now - pod.ready_since).total_seconds()
    return Wait(requeue_after=left) if left > 0 else decision


def _failed_before_the_runner(pod: PodState) -> PodFailed | None:
    """A Pod that failed (or can no longer start) before its runner container ended:
    evicted, rejected by its node, failed otherwise, or an init container exited
    non-zero (without this the runner would wait in Pending for good: ARC #4457)."""
    if pod.phase == "Failed":
        reason = pod.reason or "PodFailed"
        if reason == "Evicted":
            mode, detail = Mode.EVICTED, "the runner pod was evicted"
        elif reason.startswith("OutOf"):
            mode, detail = Mode.REJECTED, "the node rejected the runner pod"
        else:
            mode, detail = Mode.POD_FAILED, "the runner pod failed"
        cause = f"{reason}: {pod.message}" if pod.message else reason
        return PodFailed(
            pod_uid=pod.uid,
            reason=reason,
            message=pod.message,
            mode=mode,
            detail=f"{detail} ({cause})",
        )
    if pod.init_failure and not pod.started:
        return PodFailed(
            pod_uid=pod.uid,
            reason=Reason.INIT_CONTAINER_FAILED,
            message=pod.init_failure,
            mode=Mode.INIT_FAILED,
            detail=pod.init_failure,
        )
    return None


def _runner_status(status: Mapping[str, Any]) -> Mapping[str, Any]:
    for cs in status.get("containerStatuses") or ():
        if isinstance(cs, Mapping) and cs.get("name") == RUNNER_CONTAINER:
            return cs
    return {}


def _exit_code(container: Mapping[str, Any]) -> int | None:
    terminated = _mapping(_mapping(container.get("state")).get("terminated"))
    code = terminated.get("exitCode")
    if isinstance(code, int) and not isinstance(code, bool):
        return code
    return None


def _started_at(container: Mapping[str, Any]) -> datetime | None:
    running = _mapping(container.get("state")).get("running")
    if not isinstance(running, Mapping):
        return None
    # A running container without a start time (no kubelet omits it) counts from the epoch:
    # started, and long enough ago for every timed rule.
    return parse_time(running.get("startedAt")) or datetime.fromtimestamp(0, UTC)


def _is_ready(status: Mapping[str, Any]) -> bool:
    return any(
        isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or ()
    )


def _ready_since(status: Mapping[str, Any], runner: Mapping[str, Any]) -> datetime | None:
    ready = _condition(status, "Ready")
    if ready.get("status") != "True":
        return None
    return parse_time(ready.get("lastTransitionTime")) or _started_at(runner)


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    for condition in status.get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return condition
    return {}


def _not_ready_since(status: Mapping[str, Any]) -> datetime | None:
    ready = _condition(status, "Ready")
    if not ready or ready.get("status") == "True":
        return None
    return parse_time(ready.get("lastTransitionTime"))


def _containers(status: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Init container statuses first, then the others: the order a Pod starts them."""
    found = [*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())]
    return [cs for cs in found if isinstance(cs, Mapping)]


def _waiting_cause(status: Mapping[str, Any]) -> tuple[str, str]:
    for container in _containers(status):
        waiting = _mapping(_mapping(container.get("state")).get("waiting"))
        reason = str(waiting.get("reason") or "")
        if reason not in STARTING_REASONS:
            message = str(waiting.get("message") or "")
            return reason, f"container {container.get('name')}" + (
                f": {message}" if message else ""
            )
    scheduled = _condition(status, "PodScheduled")
    if scheduled and scheduled.get("status") == "False":
        return str(scheduled.get("reason") or "Unschedulable"), str(scheduled.get("message") or "")
    return "", ""


def _init_failure(status: Mapping[str, Any]) -> str:
    for container in status.get("initContainerStatuses") or ():
        if not isinstance(container, Mapping):
            continue
        code = _exit_code(container)
        if code:
            terminated = _mapping(_mapping(container.get("state")).get("terminated"))
            reason = str(terminated.get("reason") or "")
            name = container.get("name")
            return f"init container {name} exited with code {code}" + (
                f" ({reason})" if reason else ""
            )
    return ""


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
