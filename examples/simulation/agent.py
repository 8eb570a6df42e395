"""The runner agent: plays the cluster and the runner binary for every EphemeralRunner.

What ARC's EphemeralRunner controller, the kubelet and the runner binary would do, in
one loop (:meth:`RunnerAgent.step`), per EphemeralRunner (ER) of the set:

1. ``registration_delay`` after the ER first appears: register a runner with the
   service through a JIT config (runner name = ER name) and set the ER status
   ``phase: Pending`` with ``runnerId``/``runnerName``. In ARC, Pending covers both a
   runner still starting and one online and idle; ``Running`` means a job is assigned.
2. ``startup_delay`` later the runner is online (``ready: true``) and asks the service
   for a job assigned to the scale set. Once the listener has recorded the job on the ER
   (its job fields) and the ER is still Pending: ``phase: Running``, as the runner
   controller writes it (our listener writes it with the job fields: nothing to do).
3. When the job's duration has passed: complete it at the service (an ephemeral runner
   runs one job, then deregisters); ``exit_delay`` later the runner's Pod has ended and
   the ER says ``phase: Succeeded``. GitHub sends ``JobCompleted`` when the runner reports
   the job done, and the process exits and its Pod terminates after that: with a delay
   (:data:`REAL_EXIT_DELAY`) the listener typically hears of the completion, and
   publishes a count without the job, before the controller sees the runner finished.
   Without one (the default) both happen in one step.
   With ``idle_exit``, a runner online that long without a job exits too (``Succeeded``,
   its registration removed): a runner that ends without ever being assigned a job.
4. When the ER is being deleted: if its runner is in the middle of a job, the pod dies
   with it and the job never completes (the report flags both); remove the runner's
   registration if it still has one, then release the ER's finalizers.

The agent writes straight to the in-process API server, not over HTTP, so the API
server's request log counts only the programs under test. It records what it saw
(first sight of each ER and of its deletion, registration times) for the trace.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from ersctl.api import EphemeralRunner, ERPhase
from simulation.trace import RunnerTrace, runner_traces


class Cluster(Protocol):
    """The EphemeralRunners of one set, read and written directly (no HTTP)."""

    def runners(self) -> list[EphemeralRunner]: ...

    def patch_status(self, name: str, status: Mapping[str, Any]) -> None: ...

    def release_finalizers(self, name: str) -> None: ...


class Service(Protocol):
    """The scale-set service as the runner binary and ARC's runner controller see it."""

    def register(self, runner_name: str) -> int:
        """Register a JIT runner; returns its runner id."""
        ...

    def take_job(self, runner_id: int) -> str | None:
        """Start the oldest job assigned to the scale set on this runner, if any."""
        ...

    def complete_job(self, job_id: str, runner_id: int, *, succeeded: bool = True) -> None:
        """Finish the job (a failure when the runner died under it)."""
        ...

    def unregister(self, runner_id: int) -> None:
        """Remove the registration; a runner already gone is fine."""
        ...


REAL_EXIT_DELAY: Final = (1.0, 2.0)
"""Seconds (least, most) from a runner reporting its job complete to its Pod's end: the
runner process deregisters and exits, then the kubelet reports the Pod terminated."""


@dataclass(frozen=True, kw_only=True)
class AgentTiming:
    """Delays of the simulated cluster, in seconds."""

    registration_delay: float = 0.3
    startup_delay: float = 0.3
    exit_delay: tuple[float, float] = (0.0, 0.0)
    """Job completed at the service -> the ER Succeeded: drawn uniformly from this range
    (``seed`` seeds the draws). (0, 0): in the same step."""
    idle_exit: float | None = None
    """Seconds online without a job after which a runner exits Succeeded (None: never)."""
    seed: int = 0


@dataclass(kw_only=True)
class _Runner:
    name: str
    seen_at: float
    patch_id: int
    runner_id: int = 0
    registered_at: float | None = None
    online: bool = False
    job_id: str | None = None
    job_ends_at: float | None = None
    done: bool = False
    exits_at: float | None = None
    """When its Pod ends (the ER turns Succeeded); None while it runs."""
    online_at: float | None = None
    deleted_at: float | None = None
    released: bool = False


class RunnerAgent:
    """Drives every ER of one set through its life; call :meth:`step` periodically.

    Not thread-safe: one thread calls :meth:`step`; :meth:`traces` may be called once
    the loop has stopped. ``job_duration`` maps a service job id to its run time.
    """

    def __init__(
        self,
        *,
        cluster: Cluster,
        service: Service,
        timing: AgentTiming,
        job_duration: Callable[[str], float],
        clock: Callable[[], float],
    ) -> None:
        self._cluster = cluster
        self._service = service
        self._timing = timing
        self._job_duration = job_duration
        self._clock = clock
        self._runners: dict[str, _Runner] = {}
        self._exit_draws = random.Random(f"exit-delay/{timing.seed}")
        self.killed_jobs: list[tuple[str, str]] = []
        """(runner name, job id) of every job whose runner was deleted under it."""

    def step(self) -> None:
        """One pass over the set's runners: at most one transition per runner."""
        for er in self._cluster.runners():
            now = self._clock()
            state = self._runners.get(er.name)
            if state is None:
                state = _Runner(name=er.name, seen_at=now, patch_id=er.patch_id)
                self._runners[er.name] = state
            if er.is_deleting:
                self._on_deleting(state, now)
            elif er.has_job and er.phase == ERPhase.PENDING and not state.done:
                self._cluster.patch_status(er.name, {"phase": ERPhase.RUNNING.value})
            else:
                self._advance(state, now)

    def _advance(self, state: _Runner, now: float) -> None:
        timing = self._timing
        if state.done:
            if state.exits_at is not None and now >= state.exits_at:
                state.exits_at = None
                self._cluster.patch_status(
                    state.name, {"phase": ERPhase.SUCCEEDED.value, "ready": False}
                )
            return
        if state.registered_at is None:
            if now >= state.seen_at + timing.registration_delay:
                self._register(state, now)
        elif state.job_id is not None:
            if state.job_ends_at is not None and now >= state.job_ends_at:
                self._complete(state, now)
        elif self._idled_out(state, now):
            self._service.unregister(state.runner_id)
            self._exit(state, at=now, now=now)
        elif now >= state.registered_at + timing.startup_delay:
            self._ask_for_job(state, now)

    def _register(self, state: _Runner, now: float) -> None:
        state.runner_id = self._service.register(state.name)
        state.registered_at = now
        self._cluster.patch_status(
            state.name,
            {
                "phase": ERPhase.PENDING.value,
                "runnerId": state.runner_id,
                "runnerName": state.name,
                "ready": False,
            },
        )

    def _idled_out(self, state: _Runner, now: float) -> bool:
        idle_exit, online_at = self._timing.idle_exit, state.online_at
        return idle_exit is not None and online_at is not None and now >= online_at + idle_exit

    def _ask_for_job(self, state: _Runner, now: float) -> None:
        if not state.online:
            state.online, state.online_at = True, now
            self._cluster.patch_status(state.name, {"ready": True})
        job_id = self._service.take_job(state.runner_id)
        if job_id is None:
            return
        state.job_id = job_id
        state.job_ends_at = now + self._job_duration(job_id)

    def _complete(self, state: _Runner, now: float) -> None:
        assert state.job_id is not None
        self._service.complete_job(state.job_id, state.runner_id)
        delay = self._exit_draws.uniform(*self._timing.exit_delay)
        self._exit(state, at=now + delay, now=now)

    def _exit(self, state: _Runner, *, at: float, now: float) -> None:
        """The runner process is done; its Pod ends (the ER turns Succeeded) ``at``."""
        state.done, state.exits_at = True, at
        self._advance(state, now)

    def _on_deleting(self, state: _Runner, now: float) -> None:
        if state.deleted_at is None:
            state.deleted_at = now
            if state.job_id is not None and not state.done:
                # The pod dies mid-job: the job is lost, which the report must show.
                self.killed_jobs.append((state.name, state.job_id))
                self._service.complete_job(state.job_id, state.runner_id, succeeded=False)
                state.done = True
        if state.released:
            return
        if state.runner_id and not state.done:
            # ARC's runner controller removes the registration before the ER goes away.
            self._service.unregister(state.runner_id)
        self._cluster.release_finalizers(state.name)
        state.released = True

    def traces(self, *, origin: float) -> tuple[RunnerTrace, ...]:
        """One record per runner ever seen, times relative to ``origin``."""
        return runner_traces(self._runners.values(), origin=origin)
