"""In-memory fakes of the listener's own protocols (Session, Publisher), for loop logic.

Every call lands in one shared journal, so a test can assert the order of effects.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ghalistener.actions.errors import SessionConflictError, SessionNotFoundError
from ghalistener.actions.types import (
    JobAvailable,
    JobCompleted,
    JobMessage,
    JobStarted,
    MessageId,
    RunnerID,
    RunnerRequestId,
    RunnerScaleSetMessage,
    Statistics,
)
from ghalistener.listener import CATCH_UP_WAIT, Listener
from ghalistener.ports import Session, SessionRetry
from ghalistener.scaler import Scaler

Journal = list[tuple[object, ...]]
# A scripted poll answer: a message, None (202), an exception to raise, or a callable.
Answer = RunnerScaleSetMessage | None | BaseException | Callable[[], RunnerScaleSetMessage | None]


def stats(assigned: int = 0, **more: int) -> Statistics:
    return Statistics(total_assigned_jobs=assigned, **more)


def message(message_id: int, assigned: int, *jobs: JobMessage) -> RunnerScaleSetMessage:
    return RunnerScaleSetMessage(
        message_id=MessageId(message_id), statistics=stats(assigned), jobs=jobs
    )


def available(request_id: int) -> JobAvailable:
    return JobAvailable(runner_request_id=RunnerRequestId(request_id), job_id=f"job-{request_id}")


def started(request_id: int, runner: str) -> JobStarted:
    return JobStarted(
        runner_request_id=RunnerRequestId(request_id),
        job_id=f"job-{request_id}",
        owner_name="octo",
        repository_name="app",
        runner_id=RunnerID(request_id),
        runner_name=runner,
    )


def completed(request_id: int, runner: str, runner_id: int = 0) -> JobCompleted:
    return JobCompleted(
        runner_request_id=RunnerRequestId(request_id),
        job_id=f"job-{request_id}",
        result="succeeded",
        runner_id=RunnerID(runner_id),
        runner_name=runner,
    )


def not_found() -> SessionNotFoundError:
    return SessionNotFoundError("session gone", method="GET", url="https://queue", status=404)


def conflict() -> SessionConflictError:
    return SessionConflictError("conflict", method="POST", url="https://sessions", status=409)


@dataclass
class FakeSession:
    """A session that answers polls from a script; an empty script blocks until closed."""

    name: str
    journal: Journal
    statistics: Statistics = field(default_factory=Statistics)
    script: list[Answer] = field(default_factory=list)
    ack_errors: dict[int, BaseException] = field(default_factory=dict)
    closed: threading.Event = field(default_factory=threading.Event)

    def get_message(
        self, *, last_message_id: int, max_capacity: int
    ) -> RunnerScaleSetMessage | None:
        self.journal.append(("poll", self.name, last_message_id, max_capacity))
        if not self.script:
            self.closed.wait(30)  # a long poll that only ends when the test is over
            return None
        answer = self.script.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        if callable(answer):
            return answer()
        return answer

    def delete_message(self, message_id: int) -> None:
        if message_id in self.ack_errors:
            raise self.ack_errors.pop(message_id)
        self.journal.append(("ack", self.name, message_id))

    def acquire_jobs(self, request_ids: list[int]) -> list[int]:
        self.journal.append(("acquire", self.name, tuple(request_ids)))
        return list(request_ids)

    def close(self) -> None:
        self.journal.append(("close", self.name))
        self.closed.set()


@dataclass
class Opener:
    """Hands out sessions in order; an exception in the list is raised instead."""

    items: list[FakeSession | BaseException]
    journal: Journal
    calls: int = 0

    def __call__(self) -> Session:
        self.calls += 1
        item = self.items.pop(0)
        if isinstance(item, BaseException):
            self.journal.append(("open-failed", type(item).__name__))
            raise item
        self.journal.append(("open", item.name))
        return item


@dataclass
class FakePublisher:
    journal: Journal
    known_runners: set[str] = field(default_factory=set)
    fail_on_job_started: BaseException | None = None
    on_publish: Callable[[], None] | None = None

    published: list[tuple[tuple[int, ...], int]] = field(default_factory=list)
    """Per publish: the runners its count leaves out, and the newest message id it names."""

    def publish_desired(
        self,
        *,
        replicas: int,
        patch_id: int,
        completed_runners: Iterable[int] = (),
        last_message_id: int = 0,
    ) -> None:
        self.journal.append(("desired", replicas, patch_id))
        self.published.append((tuple(completed_runners), last_message_id))
        if self.on_publish:
            self.on_publish()

    def record_job_started(self, job: JobStarted) -> bool:
        if self.fail_on_job_started is not None:
            raise self.fail_on_job_started
        self.journal.append(("job-started", job.runner_name))
        return job.runner_name in self.known_runners


def make_listener(
    journal: Journal,
    sessions: list[FakeSession | BaseException],
    *,
    publisher: FakePublisher | None = None,
    min_runners: int = 0,
    max_runners: int = 10,
    retry: SessionRetry | None = None,
    last_message_id: int = 0,
    catch_up_wait: float = CATCH_UP_WAIT,
    fresh_id_interval: float = 3600.0,
) -> tuple[Listener, Opener]:
    """A listener on these fakes (the real scaler), and its session opener.
    ``fresh_id_interval``: long, so that what a test's scripted messages publish does not
    depend on how fast a loaded machine runs them (the interval has its own test)."""
    opener = Opener(sessions, journal)
    listener = Listener(
        scale_set_id=7,
        open_session=opener,
        scaler=Scaler(min_runners=min_runners, max_runners=max_runners),
        publisher=publisher or FakePublisher(journal),
        session_retry=retry or SessionRetry(interval=0.0, attempts=10),
        last_message_id=last_message_id,
        catch_up_wait=catch_up_wait,
        fresh_id_interval=fresh_id_interval,
    )
    return listener, opener


def stop_then_block(
    listener: Listener, session: FakeSession, *, after: float = 0.0
) -> Callable[[], None]:
    """A poll answer that waits ``after`` seconds (a long poll with nothing to say), asks
    for a stop, and then hangs like a long poll would."""

    def answer() -> None:
        time.sleep(after)
        listener.request_stop()
        session.closed.wait(30)

    return answer


def desired(journal: Journal) -> list[tuple[object, ...]]:
    """The (replicas, patch ID) pairs published, in order."""
    return [entry[1:] for entry in journal if entry[0] == "desired"]
