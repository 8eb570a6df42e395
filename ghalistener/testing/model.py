"""``GitHubSimulator``: one stateful model of GitHub and its runner scale-set service.

Job lifecycle: available (``enqueue_job``) -> acquired (acquirejobs) -> assigned (while
assigned + running < X-ScaleSetMaxCapacity) -> running (``start_job`` on an idle
registered runner) -> completed (``complete_job``, with a result). ``cancel_job``
sends an assigned job back (JobCompleted "canceled", then available again, at most 3
times). Each transition queues the job message the service would send; a long poll
packs up to 50 of them, with fresh statistics, into a message that stays in the scale
set's queue until acknowledged, so an unacknowledged message is delivered again (to
this session with ``lastMessageId`` below it, or to the next session). One session
per scale set: a second create gets 409. ``redeliver_message`` puts the latest
acknowledged message back (as when the service lost the ack): the next long poll gets it
again, whatever its ``lastMessageId``.

Sessions whose owner stopped polling expire, as the real service drops them: a session
with no request made with it (poll, ack, acquire, refresh) and no long poll held for it
for ``session_idle_timeout`` seconds is deleted (event ``session.expired``), so the
next listener's create succeeds and gets the unacknowledged messages. Expiry is checked
whenever the model looks at sessions (any session request, a create, ``state()``).

Runners go offline as the real service lists them: a runner stays online until its
process deletes its session (``disconnect_runner(graceful=True)``) or, when the process
died (``disconnect_runner``), until its long poll lapses ``runner_offline_delay``
seconds later (event ``runner.offline``, checked whenever the model looks at runners).
A process that connects with the runner's JIT config again brings it back online.
"""

from __future__ import annotations

import json
import secrets
import time
import uuid
from typing import Any

from ghalistener.testing.core import SimError, SimulatorCore, _iso
from ghalistener.testing.state import Job, JobState, Message, ScaleSet, Session

MAX_JOBS_PER_MESSAGE = 50
MAX_REQUEUES = 3


class GitHubSimulator(SimulatorCore):
    """The simulated GitHub + scale-set service; adapters: respx (``mount``) and ``serve``."""

    # -- message sessions ------------------------------------------------------------

    def create_session(self, scale_set_id: int, owner: str) -> Session:
        """Open the scale set's session; SimError 409 while another one is active."""
        with self._cond:
            self.scale_set(scale_set_id)
            self._expire_idle_sessions()
            if any(s.scale_set_id == scale_set_id for s in self.sessions.values()):
                raise SimError(
                    409,
                    f"a message session for runner scale set {scale_set_id} is already active",
                    "TaskAgentSessionConflictException",
                )
            session = Session(
                id=str(uuid.uuid4()),
                scale_set_id=scale_set_id,
                owner=owner,
                queue_token=f"sim_queue_{secrets.token_hex(12)}",
                last_active=self._clock(),
            )
            self.sessions[session.id] = session
            self._event(
                "session.created", scale_set_id=scale_set_id, session_id=session.id, owner=owner
            )
            return session

    def session(self, scale_set_id: int, session_id: str) -> Session:
        """The session (now counted as in use), or SimError 404 (also once it expired)."""
        with self._cond:
            self._expire_idle_sessions()
            found = self.sessions.get(session_id)
            if found is None or found.scale_set_id != scale_set_id:
                raise SimError(
                    404,
                    f"message session {session_id} not found",
                    "TaskAgentSessionExpiredException",
                )
            found.last_active = self._clock()
            return found

    def _expire_idle_sessions(self) -> None:
        timeout = self.session_idle_timeout
        if timeout is None:
            return
        now = self._clock()
        for session in list(self.sessions.values()):
            idle = now - session.last_active
            if session.polls == 0 and idle >= timeout:
                del self.sessions[session.id]
                self._event(
                    "session.expired",
                    scale_set_id=session.scale_set_id,
                    session_id=session.id,
                    idle_seconds=round(idle, 3),
                )

    def refresh_session(self, scale_set_id: int, session_id: str) -> Session:
        """A new queue token for the session (the old one stops working)."""
        with self._cond:
            session = self.session(scale_set_id, session_id)
            session.queue_token = f"sim_queue_{secrets.token_hex(12)}"
            session.token_valid = True
            self._event("session.refreshed", scale_set_id=scale_set_id, session_id=session_id)
            return session

    def delete_session(self, scale_set_id: int, session_id: str) -> None:
        """Close the session; its unacknowledged messages wait for the next one."""
        with self._cond:
            self.session(scale_set_id, session_id)
            del self.sessions[session_id]
            self._event("session.deleted", scale_set_id=scale_set_id, session_id=session_id)

    def _session_by_token(self, token: str, scale_set_id: int) -> Session:
        self._expire_idle_sessions()
        for session in self.sessions.values():
            if session.queue_token == token and session.scale_set_id == scale_set_id:
                if not session.token_valid:
                    break
                session.last_active = self._clock()
                return session
        raise SimError(401, "message queue token expired or unknown")

    # -- the message queue -------------------------------------------------------------

    def get_message(
        self,
        scale_set_id: int,
        session_id: str,
        token: str,
        *,
        last_message_id: int,
        max_capacity: int | None,
    ) -> dict[str, Any] | None:
        """Long poll: the oldest unacknowledged message with id > last_message_id, else a
        new one if anything happened, else wait up to ``hold_seconds``; None = 202."""
        deadline = time.monotonic() + self.hold_seconds
        with self._cond:
            held = self.session(scale_set_id, session_id)
            held.polls += 1  # a held poll keeps its session from expiring
            try:
                while True:
                    session = self.session(scale_set_id, session_id)
                    if session.queue_token != token or not session.token_valid:
                        raise SimError(401, "message queue token expired")
                    scale_set = self.scale_set(scale_set_id)
                    scale_set.max_capacity = max_capacity
                    self._assign_acquired(scale_set)
                    message = self._next_message(scale_set, last_message_id)
                    if message is not None:
                        message.deliveries += 1
                        self._event(
                            "message.delivered",
                            scale_set_id=scale_set_id,
                            message_id=message.id,
                            jobs=len(message.jobs),
                            delivery=message.deliveries,
                        )
                        return self._message_wire(message)
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or self._closed:
                        return None
                    self._cond.wait(remaining)
            finally:
                held.polls -= 1
                held.last_active = self._clock()

    def _next_message(self, scale_set: ScaleSet, last_message_id: int) -> Message | None:
        for message in scale_set.queue:
            if message.id > last_message_id or message.redelivered:
                return message
        stats = self._stats(scale_set.id)
        if not scale_set.pending and stats == scale_set.last_statistics:
            return None
        batch = scale_set.pending[:MAX_JOBS_PER_MESSAGE]
        del scale_set.pending[:MAX_JOBS_PER_MESSAGE]
        message = Message(id=scale_set.next_message_id, jobs=batch, statistics=stats)
        scale_set.next_message_id += 1
        scale_set.last_statistics = stats
        scale_set.queue.append(message)
        return message

    @staticmethod
    def _message_wire(message: Message) -> dict[str, Any]:
        return {
            "messageId": message.id,
            "messageType": "RunnerScaleSetJobMessages",
            "body": json.dumps(message.jobs) if message.jobs else "",
            "statistics": dict(message.statistics),
        }

    def delete_message(
        self, scale_set_id: int, session_id: str, token: str, message_id: int
    ) -> None:
        """Acknowledge a message (unknown ids are ignored, as acks may be repeated)."""
        with self._cond:
            session = self.session(scale_set_id, session_id)
            if session.queue_token != token or not session.token_valid:
                raise SimError(401, "message queue token expired")
            scale_set = self.scale_set(scale_set_id)
            acked = [m for m in scale_set.queue if m.id == message_id]
            scale_set.queue = [m for m in scale_set.queue if m.id != message_id]
            if acked:
                acked[0].redelivered = False
                scale_set.last_acked = acked[0]
            self._event("message.acked", scale_set_id=scale_set_id, message_id=message_id)

    def redeliver_message(self, scale_set_id: int) -> int | None:
        """The latest acknowledged message of the scale set comes back, as when the
        service lost the ack: same id, jobs and (now stale) statistics, delivered to the
        next long poll whatever its ``lastMessageId``, and kept until acknowledged again.
        Returns its id; None when nothing was acknowledged yet."""
        with self._cond:
            scale_set = self.scale_set(scale_set_id)
            message = scale_set.last_acked
            if message is None:
                return None
            scale_set.last_acked = None
            message.redelivered = True
            scale_set.queue.insert(0, message)
            self._event("message.redelivered", scale_set_id=scale_set_id, message_id=message.id)
            self._cond.notify_all()
            return message.id

    def acquire_jobs(self, scale_set_id: int, token: str, request_ids: list[int]) -> list[int]:
        """Acquire available jobs of the scale set; returns those acquired now."""
        with self._cond:
            self._session_by_token(token, scale_set_id)
            scale_set = self.scale_set(scale_set_id)
            acquired = []
            for request_id in request_ids:
                job = self.jobs.get(request_id)
                if job and job.scale_set_id == scale_set_id and job.state is JobState.AVAILABLE:
                    job.state = JobState.ACQUIRED
                    acquired.append(request_id)
            self._event(
                "jobs.acquired",
                scale_set_id=scale_set_id,
                requested=list(request_ids),
                acquired=acquired,
            )
            self._assign_acquired(scale_set)
            return acquired

    def _assign_acquired(self, scale_set: ScaleSet) -> None:
        jobs = sorted(
            (j for j in self.jobs.values() if j.scale_set_id == scale_set.id),
            key=lambda j: j.request_id,
        )
        busy = sum(1 for j in jobs if j.state in (JobState.ASSIGNED, JobState.RUNNING))
        for job in jobs:
            if job.state is not JobState.ACQUIRED:
                continue
            if scale_set.max_capacity is not None and busy >= scale_set.max_capacity:
                return
            job.state, job.assign_time = JobState.ASSIGNED, _iso(self._clock())
            busy += 1
            self._emit(job, "JobAssigned")

    def _emit(self, job: Job, message_type: str) -> None:
        runner = self.runners.get(job.runner_id)
        self.scale_sets[job.scale_set_id].pending.append(
            job.wire(message_type, runner_name=runner.name if runner else "")
        )
        self._event(
            f"job.{message_type.removeprefix('Job').lower()}",
            request_id=job.request_id,
            scale_set_id=job.scale_set_id,
            runner_id=job.runner_id,
            result=job.result,
        )

    # -- jobs (driven by the control API / tests) -----------------------------------------

    def enqueue_job(
        self,
        scale_set_id: int,
        *,
        repository: str = "my-org/my-repo",
        workflow_ref: str = "",
        display_name: str = "build",
        labels: list[str] | None = None,
    ) -> int:
        """Queue a job for the scale set; it becomes available at once. Returns its request id."""
        with self._cond:
            scale_set = self.scale_set(scale_set_id)
            owner, _, repo = repository.partition("/")
            request_id = self._next("job")
            job = Job(
                request_id=request_id,
                scale_set_id=scale_set_id,
                job_id=str(uuid.uuid4()),
                repository=repo or owner,
                owner=owner if repo else "",
                workflow_ref=workflow_ref
                or f"{repository}/.github/workflows/ci.yml@refs/heads/main",
                display_name=display_name,
                workflow_run_id=1000 + request_id,
                labels=labels or list(scale_set.labels),
                queue_time=_iso(self._clock()),
            )
            self.jobs[request_id] = job
            self._emit(job, "JobAvailable")
            return request_id

    def enqueue_jobs(self, scale_set_id: int, count: int, **job: Any) -> list[int]:
        """Queue ``count`` jobs (``enqueue_job``'s keywords) at once: no long poll sees
        some of them without the others, so they fill messages of 50."""
        with self._cond:
            return [self.enqueue_job(scale_set_id, **job) for _ in range(count)]

    def start_job(self, runner_id: int, request_id: int | None = None) -> int:
        """Start an assigned job (the given one, else the oldest) on an idle registered runner."""
        with self._cond:
            runner = self.runner(runner_id)
            if runner.busy:
                raise SimError(
                    409, f"runner {runner_id} is already running job {runner.request_id}"
                )
            candidates = [
                j
                for j in sorted(self.jobs.values(), key=lambda j: j.request_id)
                if j.scale_set_id == runner.scale_set_id
                and j.state is JobState.ASSIGNED
                and request_id in (None, j.request_id)
            ]
            if not candidates:
                raise SimError(409, f"no assigned job to start on runner {runner_id}")
            job = candidates[0]
            job.state, job.runner_id = JobState.RUNNING, runner_id
            job.runner_assign_time = _iso(self._clock())
            runner.request_id, runner.online, runner.offline_at = job.request_id, True, None
            self._emit(job, "JobStarted")
            return job.request_id

    def complete_job(
        self,
        request_id: int | None = None,
        *,
        runner_id: int | None = None,
        result: str = "succeeded",
    ) -> int:
        """Finish a running job (by request id or by its runner); frees (or removes) the runner."""
        with self._cond:
            if request_id is None:
                if runner_id is None:
                    raise SimError(400, "give a request id or a runner id")
                request_id = self.runner(runner_id).request_id
            job = self.jobs.get(request_id)
            if job is None or job.state is not JobState.RUNNING:
                raise SimError(409, f"job {request_id} is not running")
            job.state, job.result, job.finish_time = JobState.COMPLETED, result, _iso(self._clock())
            self._emit(job, "JobCompleted")
            runner = self.runners.get(job.runner_id)
            if runner is not None:
                runner.request_id = 0
                if self.ephemeral:
                    del self.runners[runner.id]
                    self._event("runner.deregistered", runner_id=runner.id)
            self._assign_acquired(self.scale_sets[job.scale_set_id])
            return request_id

    def cancel_job(self, request_id: int, *, requeue: bool = True) -> None:
        """An assigned job not picked up in time: JobCompleted "canceled", then (up to 3
        times) available again with a new JobAvailable."""
        with self._cond:
            job = self.jobs.get(request_id)
            if job is None or job.state not in (
                JobState.ASSIGNED,
                JobState.ACQUIRED,
                JobState.AVAILABLE,
            ):
                raise SimError(409, f"job {request_id} cannot be canceled now")
            job.result, job.finish_time = "canceled", _iso(self._clock())
            job.state = JobState.COMPLETED
            self._emit(job, "JobCompleted")
            if requeue and job.times_requeued < MAX_REQUEUES:
                job.times_requeued += 1
                job.state, job.result, job.finish_time, job.assign_time = (
                    JobState.AVAILABLE,
                    "",
                    "",
                    "",
                )
                self._emit(job, "JobAvailable")

    # -- inspection and adapters ---------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """A JSON-able snapshot: scale sets (with statistics), sessions, jobs, runners, faults."""
        with self._cond:
            self._expire_idle_sessions()
            self._lapse_runners()
            return {
                "scaleSets": [
                    {
                        **s.wire(self._stats(s.id)),
                        "unackedMessages": [m.id for m in s.queue],
                        "pendingJobMessages": len(s.pending),
                        "maxCapacity": s.max_capacity,
                    }
                    for s in self.scale_sets.values()
                ],
                "sessions": [
                    {
                        "sessionId": s.id,
                        "scaleSetId": s.scale_set_id,
                        "ownerName": s.owner,
                        "tokenValid": s.token_valid,
                    }
                    for s in self.sessions.values()
                ],
                "jobs": [
                    {
                        "requestId": j.request_id,
                        "scaleSetId": j.scale_set_id,
                        "state": j.state.value,
                        "runnerId": j.runner_id,
                        "result": j.result,
                        "requeued": j.times_requeued,
                    }
                    for j in self.jobs.values()
                ],
                "runners": [r.wire() for r in self.runners.values()],
                "faults": self.faults.describe(),
            }
