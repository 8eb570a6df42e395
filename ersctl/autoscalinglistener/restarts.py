"""Pure decisions: what a listener Pod's state means, and when an exited one comes back.

ARC deletes an exited listener Pod and creates the next one in the same breath, so a
listener that cannot start (a revoked token, an unreachable GitHub) is restarted in a
hot loop that hammers GitHub and the API server. Here each exit is counted
(``status.listenerRestarts`` of the AutoscalingListener, with the exit's time) and the
next Pod waits ``min(base * 2**(n-1), cap)`` after the n-th exit in a row: 5, 10, 20 s
... up to 5 minutes with the defaults. A Pod that ran for ``stable_after`` before it
exited starts the count again, so a listener that fails once a day is back in 5 s.

What is read from the Pod: ``metadata.uid`` and ``deletionTimestamp``, ``status.phase``
and ``reason``, and the state of the container named ``listener``. The Pod has exited
when that container terminated, when the Pod phase is ``Succeeded`` or ``Failed``, or
when it was evicted (``reason: Evicted``), as ARC judges it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ersctl.api import parse_time
from ersctl.autoscalinglistener.template import CONTAINER
from ersctl.kube.queue import Backoff


@dataclass(frozen=True, kw_only=True)
class RestartPolicy:
    """How long an exited listener waits before its next Pod (see the module docstring)."""

    backoff: Backoff = field(default_factory=lambda: Backoff(base=5.0, cap=300.0))
    stable_after: float = 300.0

    def delay(self, restarts: int) -> float:
        """Seconds between the latest exit and the next Pod, after ``restarts`` in a row."""
        return 0.0 if restarts <= 0 else self.backoff.delay(restarts - 1)


@dataclass(frozen=True, kw_only=True)
class Exit:
    """The listener Pod ``pod_uid`` has exited; why, and for how long it had run."""

    pod_uid: str
    reason: str
    exit_code: int | None
    finished_at: datetime | None
    ran_for: float | None


def exit_of(pod: Mapping[str, Any]) -> Exit | None:
    """The exit of ``pod`` when it has exited, else None (running, starting, deleting)."""
    meta = _mapping(pod.get("metadata"))
    if meta.get("deletionTimestamp"):
        return None
    status = _mapping(pod.get("status"))
    terminated = _listener_terminated(status)
    phase = str(status.get("phase") or "")
    evicted = status.get("reason") == "Evicted"
    if terminated is None and phase not in ("Succeeded", "Failed") and not evicted:
        return None
    code = terminated.get("exitCode") if terminated else None
    started = parse_time(terminated.get("startedAt")) if terminated else None
    finished = parse_time(terminated.get("finishedAt")) if terminated else None
    ran_for = (finished - started).total_seconds() if started and finished else None
    reason = str((terminated or {}).get("reason") or status.get("reason") or phase or "Terminated")
    return Exit(
        pod_uid=str(meta.get("uid") or ""),
        reason=reason,
        exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
        finished_at=finished,
        ran_for=ran_for,
    )


def restarts_after(exit: Exit, *, previous: int, policy: RestartPolicy) -> int:
    """The count of exits in a row once ``exit`` is counted: 1 after a Pod that ran
    for ``stable_after``, else one more than ``previous``."""
    if exit.ran_for is not None and exit.ran_for >= policy.stable_after:
        return 1
    return previous + 1


def seconds_until_next_pod(
    *, restarts: int, last_exit: str, now: datetime, policy: RestartPolicy
) -> float:
    """How long the next listener Pod waits; 0 = now. An unreadable ``last_exit`` (or
    none: the Pod was deleted, not exited) never holds a Pod back."""
    moment = parse_time(last_exit)
    if restarts <= 0 or moment is None:
        return 0.0
    due = moment.timestamp() + policy.delay(restarts)
    return max(0.0, due - now.timestamp())


def _listener_terminated(status: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for cs in status.get("containerStatuses") or ():
        if isinstance(cs, Mapping) and cs.get("name") == CONTAINER:
            terminated = _mapping(cs.get("state")).get("terminated")
            return terminated if isinstance(terminated, Mapping) else None
    return None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
