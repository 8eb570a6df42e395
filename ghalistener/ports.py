"""What the listener loop needs from the world (consumer-defined ports).

``ghalistener.listener`` declares what it calls; the real scale-set client
(``actions.MessageSession``), the Kubernetes publisher (``publisher.KubePublisher``) and
the Prometheus metrics (``metrics.ListenerMetrics``) fit, and the loop's tests hand in
in-memory ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from ghalistener.actions.types import (
    JobCompleted,
    JobStarted,
    RunnerScaleSetMessage,
    Statistics,
)


@dataclass(frozen=True, kw_only=True)
class SessionRetry:
    """How the loop waits out a 409 at session creation (another listener holds the
    session): ARC's 30 s, 10 attempts in all; the listener config's defaults."""

    interval: float = 30.0
    attempts: int = 10


class Session(Protocol):
    """What the loop needs from one message session (``actions.MessageSession`` fits)."""

    @property
    def statistics(self) -> Statistics: ...

    def get_message(
        self, *, last_message_id: int, max_capacity: int
    ) -> RunnerScaleSetMessage | None: ...

    def delete_message(self, message_id: int) -> None: ...

    def acquire_jobs(self, request_ids: list[int]) -> list[int]: ...

    def close(self) -> None: ...


SessionOpener = Callable[[], Session]
"""Opens a new session; raises SessionConflictError (409) when another one is active."""


class Publisher(Protocol):
    """Where decisions go (``publisher.KubePublisher`` fits)."""

    def publish_desired(
        self,
        *,
        replicas: int,
        patch_id: int,
        completed_runners: Iterable[int] = (),
        last_message_id: int = 0,
    ) -> None: ...

    def record_job_started(self, job: JobStarted) -> bool: ...


class Metrics(Protocol):
    """What the loop reports (``metrics.ListenerMetrics`` fits)."""

    def publish_statistics(self, stats: Statistics) -> None: ...

    def publish_desired_runners(self, count: int) -> None: ...

    def publish_job_started(self, job: JobStarted, *, message_id: int) -> None: ...

    def publish_job_completed(self, job: JobCompleted, *, message_id: int) -> None: ...
