"""Pure decisions: what a runner Pod's state means for its EphemeralRunner.

What is read from the Pod: ``metadata.uid``, ``metadata.deletionTimestamp``,
``status.phase``/``reason``/``message``, the ``Ready`` condition, and the state of
the container named ``runner`` in ``status.containerStatuses``. The runner
container's exit code decides when it is known; without a container status the Pod
phase decides (``Succeeded`` = exit 0, ``Failed`` = a failure, as for an evicted Pod).

- runner exited 0 -> the ER is **Succeeded** (one job done; the set cleans it up);
- runner exited :data:`~ersctl.runner.pods.DEPRECATED_VERSION_EXIT_CODE` -> **Outdated**
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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from ersctl.api import EphemeralRunner, ERPhase
from ersctl.runner.pods import DEPRECATED_VERSION_EXIT_CODE, RUNNER_CONTAINER

REASON_TOO_MANY_FAILURES: Final = "TooManyPodFailures"
REASON_OUTDATED: Final = "RunnerVersionDeprecated"


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


def format_time(moment: datetime) -> str:
    """RFC 3339 in UTC with a ``Z``, as Kubernetes writes ``metav1.Time``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, kw_only=True)
class PodState:
    """What the decision reads from a runner Pod (see the module docstring)."""

    uid: str
    phase: str = ""
    reason: str = ""
    message: str = ""
    ready: bool = False
    deleting: bool = False
    runner_exit_code: int | None = None
    """The runner container's exit code once it terminated; None before."""

    @classmethod
    def from_pod(cls, pod: Mapping[str, Any]) -> PodState:
        meta = _mapping(pod.get("metadata"))
        status = _mapping(pod.get("status"))
        return cls(
            uid=str(meta.get("uid") or ""),
            phase=str(status.get("phase") or ""),
            reason=str(status.get("reason") or ""),
            message=str(status.get("message") or ""),
            ready=_is_ready(status),
            deleting=bool(meta.get("deletionTimestamp")),
            runner_exit_code=_runner_exit_code(status),
        )


@dataclass(frozen=True)
class Wait:
    """Nothing to change: wait for the next Pod event."""


@dataclass(frozen=True, kw_only=True)
class SyncStatus:
    """Write ``phase`` (Pending or Running) and readiness to the ER status."""

    phase: ERPhase
    ready: bool
    reason: str
    message: str


@dataclass(frozen=True, kw_only=True)
class PodFailed:
    """Delete the Pod and record failure ``pod_uid`` (a new Pod follows after backoff)."""

    pod_uid: str
    reason: str
    message: str


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
            reason=REASON_OUTDATED,
            message=f"the runner exited with code {code}: its version is deprecated",
        )
    if code is not None:
        return PodFailed(
            pod_uid=pod.uid,
            reason=pod.reason or "RunnerFailed",
            message=pod.message or f"the runner container exited with code {code}",
        )
    if pod.phase == "Failed":  # e.g. evicted before the runner could finish
        return PodFailed(pod_uid=pod.uid, reason=pod.reason or "PodFailed", message=pod.message)
    # The listener records the job; the Pod only says the runner process is up.
    phase = ERPhase.RUNNING if runner.has_job else ERPhase.PENDING
    if runner.phase == phase and runner.ready == pod.ready:
        return Wait()
    return SyncStatus(phase=phase, ready=pod.ready, reason=pod.reason, message=pod.message)


def _runner_exit_code(status: Mapping[str, Any]) -> int | None:
    for cs in status.get("containerStatuses") or ():
        if isinstance(cs, Mapping) and cs.get("name") == RUNNER_CONTAINER:
            terminated = _mapping(_mapping(cs.get("state")).get("terminated"))
            code = terminated.get("exitCode")
            if isinstance(code, int) and not isinstance(code, bool):
                return code
    return None


def _is_ready(status: Mapping[str, Any]) -> bool:
    return any(
        isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or ()
    )


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def parse_time(value: object) -> datetime | None:
    """An RFC 3339 time as Kubernetes writes it (UTC when it names no zone); None when
    ``value`` is no such text."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
