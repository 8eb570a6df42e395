"""The listener loop: long-poll the scale set's messages and publish desired counts.

Order of work (the patch ID contract is ``ghalistener.scaler``'s):

1. open a message session (409 = another listener holds it: wait and retry, bounded);
   publish a desired count from the session's statistics;
2. long-poll; on 202 (no message) publish a desired count again from the latest
   statistics: that timer is what lets the controller recover from a suppressed
   reconcile;
3. on a message: acquire the JobAvailable request ids, JobStarted -> the runner's job
   fields, JobCompleted -> dirty, publish a desired count from the newest statistics,
   and only then ack (delete) the message.

Acking last makes delivery at-least-once: a crash mid-message leaves the message on
the queue for the next session, and every step above is idempotent. Statistics older
than those published are not published again (``ghalistener.freshness``); each count
names the completed jobs it leaves out (``ghalistener.scaler``). A 404 on the queue, a
session refresh, an ack or an acquisition means the service dropped the session: the
old one is deleted best-effort (the 404 may have meant something else, and it would
hold the scale set), a new one is opened (its statistics published), the loop goes on.

Stopping: :meth:`Listener.request_stop` (or the shared
:class:`~ghalistener.stopping.StopSignal`) may be called from a signal handler. A long
poll in progress is abandoned (it runs on a daemon thread); a message being handled is
finished first, unless it is waiting to retry a failing call past the stop's grace
period (``ghalistener.stopping``): then it is left unacknowledged, to be delivered
again. The session is deleted (its retries bounded by the same grace, the whole
delete by ``CLOSE_TIMEOUT``) and :meth:`Listener.run` returns normally.
"""

from __future__ import annotations

import logging
import time
from typing import Final

from ersctl.platform.background import Background, Worker
from ghalistener.actions.errors import SessionConflictError, SessionNotFoundError
from ghalistener.actions.types import (
    JobAvailable,
    JobCompleted,
    JobStarted,
    RunnerScaleSetMessage,
    Statistics,
)
from ghalistener.errors import SessionHeldError
from ghalistener.freshness import StatisticsAge, Verdict
from ghalistener.health import ListenerHealth
from ghalistener.ports import Metrics, Publisher, Session, SessionOpener, SessionRetry
from ghalistener.scaler import Decision, Scaler, tells_nothing_new
from ghalistener.stopping import StopRequested, StopSignal

log = logging.getLogger(__name__)

CLOSE_TIMEOUT: Final = 1.0
"""Seconds a stopping listener waits for its session delete (a slow service must not
hold up the exit; it drops the session once nobody polls it)."""

FRESH_ID_INTERVAL: Final = 5.0
"""Seconds after which a message's count is published even when it tells nothing new:
a set short of runners for another reason than its cleanup (a failed runner deleted, a
create that failed, an evicted runner) is refilled only under a fresh patch ID, and a
queue at ``max_runners`` sends messages without news, and no empty long poll, for as
long as it lasts."""

CATCH_UP_WAIT: Final = 2.0
"""Seconds after a session opens in which a higher count waits for a newer message
(``ghalistener.freshness``): far more than the service takes to deliver what it has
queued, short enough that a real rise in demand waits little."""


class _Stopped:
    """Marker: the poll was abandoned because a stop was requested."""


_STOPPED: Final = _Stopped()


class Listener:
    """One listener incarnation: a scaler, a publisher, and sessions from ``open_session``.

    ``run()`` blocks until a stop is requested (returns normally after deleting the
    session) or a fatal error (raises: SessionHeldError, KubeError, ActionsError).
    ``stop`` is the signal every wait obeys; pass the one the client's ``RetryPolicy``
    and the publisher's ``KubeRetry`` sleep on, so a stop also cuts their backoffs short.
    ``health`` receives the loop's progress and session state (for ``/healthz``, ``/readyz``).
    ``last_message_id``: the newest message whose statistics the scale set's previous
    listener published (``publisher.Resumed``; 0: none known).
    """

    def __init__(
        self,
        *,
        scale_set_id: int,
        open_session: SessionOpener,
        scaler: Scaler,
        publisher: Publisher,
        metrics: Metrics | None = None,
        session_retry: SessionRetry | None = None,
        stop: StopSignal | None = None,
        health: ListenerHealth | None = None,
        last_message_id: int = 0,
        catch_up_wait: float = CATCH_UP_WAIT,
        fresh_id_interval: float = FRESH_ID_INTERVAL,
    ) -> None:
        self.scale_set_id = scale_set_id
        self._open_session = open_session
        self._scaler = scaler
        self._publisher = publisher
        self._metrics = metrics
        self._session_retry = session_retry or SessionRetry()
        self._session: Session | None = None
        self._statistics = Statistics()
        self._last_message_id = 0
        self._in_hand: int | None = None  # the message being handled, not yet acked
        self._last_published: Decision | None = None
        self._age = StatisticsAge(last_message_id=last_message_id)
        self._catch_up_wait = catch_up_wait
        self._fresh_id_interval = fresh_id_interval
        self._published_at = float("-inf")  # time.monotonic() of the last publish
        self._stop = stop or StopSignal()
        self.health = health or ListenerHealth()
        # Every long poll runs on this one thread; an abandoned one only ends the loop.
        self._poller = Worker(name="long-poll")

    def request_stop(self) -> None:
        """Ask ``run()`` to return soon. Safe from signal handlers and other threads."""
        self._stop.request()

    def run(self) -> None:
        """Serve until stopped; always deletes the open session on the way out."""
        try:
            if self._stop.requested:
                return
            self._start_session()
            while not self._stop.requested:
                self._step()
        except StopRequested:
            self._log_stopped_while_waiting()
        finally:
            self._close_session()

    def _log_stopped_while_waiting(self) -> None:
        fields: dict[str, object] = {"scale_set_id": self.scale_set_id}
        if self._in_hand is None:  # e.g. the 409 wait, or retries opening a session
            log.info("stop requested while waiting to retry", extra={"fields": fields})
            return
        log.info(
            "stop requested while waiting to retry; the message stays unacknowledged "
            "for redelivery",
            extra={"fields": {**fields, "message_id": self._in_hand}},
        )

    # --- one iteration ------------------------------------------------------------

    def _step(self) -> None:
        try:
            polled = self._poll()
            if isinstance(polled, _Stopped):
                return
            self.health.record_progress()
            if polled is None:
                # Nothing changed since the last message: a count held back is current.
                if not self._caught_up():
                    self._publish_desired(self._statistics)
                return
            self._handle(polled)
        except SessionNotFoundError as exc:
            log.warning(
                "the service answered 404 for the message session; replacing it",
                extra={"fields": {"scale_set_id": self.scale_set_id, "error": str(exc)}},
            )
            self._discard_session()
            self._start_session()

    def _poll(self) -> RunnerScaleSetMessage | _Stopped | None:
        session = self._require_session()
        last, capacity = self._last_message_id, self._scaler.max_runners
        poll = Background(
            lambda: session.get_message(last_message_id=last, max_capacity=capacity),
            name="long-poll",
            worker=self._poller,
        )
        if deadline := self._age.catch_up_until:
            poll.wait(lambda: self._stop.requested or time.monotonic() >= deadline)
            if not self._stop.requested and time.monotonic() >= deadline:
                self._caught_up()  # the window ended: what it held back is current
        if not poll.wait(lambda: self._stop.requested):
            return _STOPPED
        return poll.result()

    def _handle(self, message: RunnerScaleSetMessage) -> None:
        """Handle one message completely, then ack it.

        A stop request does not interrupt it, except through StopRequested: a retry
        backoff inside (acquire, runner status, publish, ack) that would outlast the
        stop's grace raises it, and the message stays unacknowledged for redelivery.
        """
        self._in_hand = message.message_id  # until acked: a stop now leaves it unacked
        session = self._require_session()
        self._log_skipped(message)
        available = [int(j.runner_request_id) for j in message.jobs if isinstance(j, JobAvailable)]
        if available:
            acquired = session.acquire_jobs(available)
            log.info(
                "acquired jobs",
                extra={"fields": {"requested": len(available), "acquired": len(acquired)}},
            )
        for job in message.jobs:
            if isinstance(job, JobStarted):
                self._job_started(job, message.message_id)
            elif isinstance(job, JobCompleted):
                self._job_completed(job, message.message_id)
        self._publish_for(message)
        session.delete_message(message.message_id)
        self._last_message_id = message.message_id
        self._in_hand = None

    def _publish_for(self, message: RunnerScaleSetMessage) -> None:
        """Publish after ``message``'s jobs were handled, from the newest statistics."""
        target = self._scaler.target(message.statistics.total_assigned_jobs)
        published = self._last_published.replicas if self._last_published else 0
        verdict = self._age.judge(message, raises_count=target > published)
        if verdict is Verdict.CURRENT:
            self._record_statistics(message.statistics)
            self._publish_desired(message.statistics, unless_nothing_new=True)
            return
        fields = {"message_id": message.message_id, "replicas": target, "why": verdict.value}
        log.info("statistics older than the count published: not used", extra={"fields": fields})
        # A held-back message's completions are not named by the older count.
        accounts = verdict is Verdict.REDELIVERED
        self._publish_desired(self._statistics, accounts=accounts, unless_nothing_new=True)

    def _caught_up(self) -> bool:
        """The queue is drained: publish a count held back (True) if there is one."""
        held = self._age.caught_up()
        if held is None:
            return False
        self._record_statistics(held.statistics)
        self._publish_desired(held.statistics)
        return True

    def _log_skipped(self, message: RunnerScaleSetMessage) -> None:
        # Redelivery cannot repair a malformed job message: log it and handle the rest,
        # so the message is still acked (it would otherwise come back, and fail, forever).
        for reason in message.skipped:
            log.warning(
                "skipped a job message that cannot be parsed: %s",
                reason,
                extra={"fields": {"message_id": message.message_id}},
            )

    def _job_started(self, job: JobStarted, message_id: int) -> None:
        self._scaler.job_started()
        found = self._publisher.record_job_started(job)
        log.info(
            "job started" if found else "job started on an unknown runner; skipped its status",
            extra={"fields": {"runner": job.runner_name, "job_id": job.job_id}},
        )
        if self._metrics:
            self._metrics.publish_job_started(job, message_id=message_id)

    def _job_completed(self, job: JobCompleted, message_id: int) -> None:
        self._scaler.job_completed(int(job.runner_id))
        log.info(
            "job completed",
            extra={
                "fields": {"runner": job.runner_name, "job_id": job.job_id, "result": job.result}
            },
        )
        if self._metrics:
            self._metrics.publish_job_completed(job, message_id=message_id)

    def _record_statistics(self, stats: Statistics) -> None:
        self._statistics = stats
        if self._metrics:
            self._metrics.publish_statistics(stats)

    def _publish_desired(
        self, stats: Statistics, *, accounts: bool = True, unless_nothing_new: bool = False
    ) -> Decision:
        """``accounts``: ``stats`` are at least as new as every message handled.
        ``unless_nothing_new``: a message's count, left unpublished when it
        :func:`~ghalistener.scaler.tells_nothing_new` and the last publish is younger
        than the fresh-ID interval (an empty long poll's and a new session's are always
        published)."""
        decision = self._scaler.desired_count(stats.total_assigned_jobs, accounts=accounts)
        recent = time.monotonic() - self._published_at < self._fresh_id_interval
        if unless_nothing_new and recent and tells_nothing_new(decision, self._last_published):
            log.debug(
                "desired runner count unchanged: not published",
                extra={"fields": {"replicas": decision.replicas, "patch_id": decision.patch_id}},
            )
            return decision
        self._publisher.publish_desired(
            replicas=decision.replicas,
            patch_id=decision.patch_id,
            completed_runners=decision.completed_runners,
            last_message_id=self._age.newest_message_id,
        )
        self._published_at = time.monotonic()
        self.health.record_published()
        if self._metrics:
            self._metrics.publish_desired_runners(decision.replicas)
        # The same idle state is republished on every empty long poll (the timer that
        # lets the controller recover); only a change is worth an INFO line.
        last = self._last_published
        same = last is not None and (last.replicas, last.patch_id) == (
            decision.replicas,
            decision.patch_id,
        )
        level = logging.DEBUG if same else logging.INFO
        self._last_published = decision
        log.log(
            level,
            "published desired runner count",
            extra={
                "fields": {
                    "scale_set_id": self.scale_set_id,
                    "replicas": decision.replicas,
                    "patch_id": decision.patch_id,
                    "assigned_jobs": stats.total_assigned_jobs,
                    "running_jobs": stats.total_running_jobs,
                    "available_jobs": stats.total_available_jobs,
                    "min": self._scaler.min_runners,
                    "max": self._scaler.max_runners,
                    "dirty": decision.dirty,
                }
            },
        )
        return decision

    # --- sessions -----------------------------------------------------------------

    def _start_session(self) -> None:
        """Open a session and publish its statistics (StopRequested: stopped while waiting)."""
        session = self._open_with_retries()
        self._session = session
        self._last_message_id = 0
        self._age.session_opened(now=time.monotonic(), window=self._catch_up_wait)
        self.health.record_session_opened()
        log.info(
            "message session open; listening",
            extra={"fields": {"scale_set_id": self.scale_set_id}},
        )
        self._record_statistics(session.statistics)
        self._publish_desired(session.statistics)

    def _open_with_retries(self) -> Session:
        retry = self._session_retry
        attempt = 1
        while True:
            try:
                return self._open_session()
            except SessionConflictError as exc:
                if attempt >= retry.attempts:
                    raise SessionHeldError(
                        f"another listener holds the message session of scale set "
                        f"{self.scale_set_id}: still 409 Conflict after {attempt} attempts"
                    ) from exc
            log.warning(
                "another listener holds the message session; retrying",
                extra={"fields": {"attempt": attempt, "retry_in_s": retry.interval}},
            )
            self.health.record_progress()  # the 409 wait is alive, not stuck
            self._stop.sleep(retry.interval)
            attempt += 1

    def _discard_session(self) -> None:
        """Delete the current session best-effort before a new one is opened.

        A 404 usually means the service dropped the session, and the delete is then a
        no-op (404 counts as closed). But if the session is in fact still there, leaving
        it would make every create answer 409 until the listener gave up.
        """
        session, self._session = self._session, None
        self.health.record_session_closed()
        if session is None:
            return
        try:
            session.close()
        except Exception as exc:  # best effort: the service expires sessions itself
            log.warning(
                "could not delete the old message session; opening a new one anyway",
                extra={"fields": {"scale_set_id": self.scale_set_id, "error": str(exc)}},
            )

    def _require_session(self) -> Session:
        assert self._session is not None, "no open session"
        return self._session

    def _close_session(self) -> None:
        session, self._session = self._session, None
        self.health.record_session_closed()
        if session is None:
            return
        closing = Background(session.close, name="close-session")
        if not closing.done.wait(CLOSE_TIMEOUT if self._stop.requested else None):
            log.warning(
                "message session not deleted: the service did not answer within "
                f"{CLOSE_TIMEOUT:g} s of the stop; it drops the session once nobody polls it",
                extra={"fields": {"scale_set_id": self.scale_set_id}},
            )
            return
        try:
            closing.result()
            log.info(
                "message session deleted", extra={"fields": {"scale_set_id": self.scale_set_id}}
            )
        except StopRequested:
            log.warning(
                "message session not deleted: the service kept failing until the stop "
                "deadline; it drops the session once nobody polls it",
                extra={"fields": {"scale_set_id": self.scale_set_id}},
            )
        except Exception as exc:  # exiting anyway; the service expires sessions itself
            log.warning(
                "could not delete the message session", extra={"fields": {"error": str(exc)}}
            )
