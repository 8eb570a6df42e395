"""The GitHub side of the simulation: the simulator, its HTTP server, and the agent's port.

One :class:`GitHubSide` owns a ``GitHubSimulator`` (in this process, so its event log
and statistics are read directly) served over HTTP for the programs under test, with
one organisation's runner scale set. It queues the workload's jobs, answers the
runner agent's calls (:class:`simulation.agent.Service`) in process, injects faults
into the HTTP answers, and turns the simulator's event log into job records.
"""

from __future__ import annotations

import contextlib
from types import TracebackType
from typing import Any

from ghalistener.testing import GitHubSimulator, SimError
from ghalistener.testing.server import serve
from simulation.pods import RunnerGone
from simulation.trace import JobTrace
from simulation.workload import JobArrival

ORG = "sim-org"
SCALE_SET_NAME = "arc-runner-set"
SIM_TOKEN = "ghp_simulated_not_a_secret"  # noqa: S105 (the simulator accepts any token)
SESSION_IDLE_TIMEOUT = 5.0
"""Seconds before the simulated service drops a message session nobody uses (a killed
listener's): longer than the listener's retry backoff in a 5xx burst, and far shorter
than GitHub's (unpublished: ``DEFAULT_SESSION_IDLE_TIMEOUT``), so that a killed
listener's successor takes over within the run, at its first 409 retry after the
expiry: within a second for ``simulate.py``'s own listener (it retries every 1 s), up
to ARC's 30 s for the listener Pods of an AutoscalingRunnerSet (the soak's
``simulation.soak.LISTENER_TAKEOVER``). Their 10 tries outlast it either way."""


class GitHubSide:
    """Start with ``with GitHubSide(...) as github:``; ``config_url`` is valid inside."""

    def __init__(self, *, long_poll: float, register: bool = True) -> None:
        """``register``: the scale set exists from the start (a listener configured by
        hand); without it an AutoscalingRunnerSet's controller registers it, and
        :meth:`use_scale_set` names it once known."""
        # A runner's long poll is the listener's, shortened alike: a dead runner drops
        # offline within one (GitHub's 50 s against its 600 s --runner-online-timeout;
        # here a second against the soak's 4 s), so the runner controller's online check
        # sees a dead runner's status, not the one it had while it lived.
        self.sim = GitHubSimulator(
            hold_seconds=long_poll,
            session_idle_timeout=SESSION_IDLE_TIMEOUT,
            runner_offline_delay=long_poll,
        )
        self.scale_set_id = int(self.sim.create_scale_set(SCALE_SET_NAME)["id"]) if register else 0
        self.token = SIM_TOKEN
        self._server: Any = None
        self._durations: dict[str, float] = {}
        self._names: dict[str, str] = {}
        self._jit: dict[int, str] = {}

    def __enter__(self) -> GitHubSide:
        self._server = serve(self.sim, port=0)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.sim.close()
        if self._server is not None:
            self._server.stop()

    def use_scale_set(self, scale_set_id: int) -> None:
        """The scale set the controller registered: jobs go to it from now on."""
        self.scale_set_id = scale_set_id

    def scale_set_names(self) -> list[str]:
        """The names of the scale sets registered at the service."""
        return [str(s["name"]) for s in self.sim.state()["scaleSets"]]

    @property
    def config_url(self) -> str:
        return f"{self._server.url}/{ORG}"

    # -- workload -------------------------------------------------------------------

    def enqueue(self, job: JobArrival) -> None:
        request_id = str(self.sim.enqueue_job(self.scale_set_id, display_name=job.name))
        self._durations[request_id] = job.duration
        self._names[request_id] = job.name

    def job_duration(self, job_id: str) -> float:
        return self._durations.get(job_id, 1.0)

    # -- the agent's port (simulation.agent.Service) ----------------------------------

    def register(self, runner_name: str) -> int:
        config = self.sim.generate_jit_config(self.scale_set_id, runner_name)
        runner_id = int(config["runner"]["id"])
        self._jit[runner_id] = str(config["encodedJITConfig"])
        return runner_id

    def connect(self, encoded_jit_config: str) -> dict[str, Any]:
        """A runner process goes online with its JIT config; returns the runner's wire form.

        Raises :class:`~simulation.pods.RunnerGone` when its registration was removed.
        """
        try:
            return self.sim.connect_runner(encoded_jit_config)
        except SimError as exc:
            if exc.status == 404:
                raise RunnerGone(exc.message) from None
            raise

    def take_job(self, runner_id: int) -> str | None:
        try:
            jit = self._jit.pop(runner_id, None)
            if jit is not None:
                self.sim.connect_runner(jit)  # the runner process comes online
            return str(self.sim.start_job(runner_id))
        except SimError as exc:
            if exc.status in (404, 409):  # removed meanwhile, or nothing assigned yet
                return None
            raise

    def complete_job(self, job_id: str, runner_id: int, *, succeeded: bool = True) -> None:
        self.sim.complete_job(int(job_id), result="succeeded" if succeeded else "failed")

    def disconnect(self, runner_id: int, *, graceful: bool = False) -> None:
        """A runner process ended: offline at once when ``graceful``, else once its long
        poll lapses. A runner removed meanwhile is fine."""
        try:
            self.sim.disconnect_runner(runner_id, graceful=graceful)
        except SimError as exc:
            if exc.status != 404:
                raise

    def online_runners(self) -> set[str]:
        """Names of the registered runners the service sees online."""
        return {str(r["name"]) for r in self.sim.find_runners() if r.get("status") == "online"}

    def unregister(self, runner_id: int) -> None:
        try:
            self.sim.remove_runner(runner_id)
        except SimError as exc:
            if exc.status != 404:
                raise

    # -- faults ---------------------------------------------------------------------------

    def fail_next(self, *, code: int, times: int) -> None:
        """The next ``times`` HTTP requests (any endpoint) get ``code``."""
        self.sim.faults.inject(status=code, times=times)

    def delay_messages(self, seconds: float) -> None:
        """Every long poll from now on waits ``seconds`` before looking at the queue."""
        self.sim.faults.inject(endpoint="get_message", latency=seconds, times=-1)

    def expire_tokens(self) -> None:
        self.sim.expire_tokens("all")

    def drop_sessions(self) -> None:
        """The service loses the scale set's message sessions: their next call gets 404."""
        for session in self.sim.state()["sessions"]:
            if session["scaleSetId"] == self.scale_set_id:
                with contextlib.suppress(SimError):  # expired or closed meanwhile
                    self.sim.delete_session(self.scale_set_id, str(session["sessionId"]))

    def redeliver(self) -> None:
        """The service delivers the latest acknowledged message once more."""
        self.sim.redeliver_message(self.scale_set_id)

    def job_name(self, job_id: str) -> str:
        """The workload's name of a job (its service request id)."""
        return self._names.get(job_id, f"request-{job_id}")

    # -- observation ------------------------------------------------------------------------

    def has_session(self) -> bool:
        """True while a listener holds the scale set's message session."""
        return bool(self.sim.state()["sessions"])

    def assigned_jobs(self) -> int:
        return self.sim.statistics(self.scale_set_id).total_assigned_jobs

    def job_counts(self) -> tuple[int, int, int]:
        """(waiting, running, completed) over the queued jobs."""
        states = [job["state"] for job in self.sim.state()["jobs"]]
        running = states.count("running")
        done = states.count("completed")
        return len(states) - running - done, running, done

    def jobs_done(self) -> int:
        return self.job_counts()[2]

    def job_traces(self, *, origin: float) -> tuple[JobTrace, ...]:
        """One record per queued job, from the simulator's event log.

        queued = first ``job.available``; started = ``job.started`` (on the runner named
        by its ``runner.registered`` event; ``starts`` counts them); ended = a
        ``job.completed`` whatever its result; completed = one with result "succeeded"
        (a failed or canceled job did not complete).
        """
        runner_names: dict[int, str] = {}
        jobs: dict[int, dict[str, Any]] = {}
        for event in self.sim.events:
            kind, at = event["kind"], round(float(event["time"]) - origin, 3)
            if kind == "runner.registered":
                runner_names[int(event["runner_id"])] = str(event["name"])
                continue
            if not kind.startswith("job."):
                continue
            record = jobs.setdefault(int(event["request_id"]), {"queued_at": at})
            if kind == "job.started":
                record["started_at"] = at
                record["runner"] = runner_names.get(int(event["runner_id"]))
                record["starts"] = record.get("starts", 0) + 1
            elif kind == "job.completed":
                record["result"] = event.get("result") or None
                record["ended_at"] = at
                if event.get("result") == "succeeded":
                    record["completed_at"] = at
        return tuple(
            JobTrace(name=self._names.get(str(request_id), f"request-{request_id}"), **fields)
            for request_id, fields in sorted(jobs.items())
        )
