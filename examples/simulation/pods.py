"""The runner agent when ersctl's EphemeralRunner controller runs (``--runner-controller``).

The controller then does the EphemeralRunner (ER) step itself: it registers each
runner (JIT config in a Secret), creates its Pod, follows the Pod into the ER's phase
and removes the registration before the ER goes away. :class:`PodAgent` only plays
what is left, the kubelet and the runner binary, per runner Pod:

1. ``startup_delay`` after the Pod appears, the runner starts: it reads its JIT
   config from the Secret the Pod's env names (``secretKeyRef``), connects to the
   service with it, and the Pod turns Running and Ready.
2. Online, it asks the service for an assigned job; when it gets one, it runs it.
3. When the job's duration has passed it completes the job at the service and exits
   0: the Pod turns Succeeded (its ``runner`` container terminated with exit code 0),
   ``AgentTiming.exit_delay`` after the completion (GitHub's order, as in
   ``simulation.agent``).
4. A Pod deleted (or gone) while its runner runs a job kills the job, which the
   report must show.

Faults (the soak's): :meth:`PodAgent.fail_next_start` fails the Pods of the next runner
to start (exit code 1 before the runner connects: a bad node, a crashing entrypoint), once
or until the runner turns Failed; :meth:`PodAgent.fail_a_busy_runner` fails the Pod of a
runner in the middle of its job, and the job fails at the service, as GitHub fails a job
whose runner died (it does not queue it again). Both are recorded
(:attr:`PodAgent.injected_runners`, :attr:`PodAgent.failed_jobs`), so the report tells
them from failures the system under test caused.

Starting and exiting a runner Pod is ``ersctl.testing.podsim.RunnerPods`` (the runner
controller's own kubelet stand-in). It also records, from the ERs, what the report needs: when each runner's ER appeared,
when it got a ``runnerId`` (registered), and when its deletion was first seen.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ersctl.api import ER_KIND, ER_PLURAL, EphemeralRunner, ERPhase
from ersctl.runnerset.failures import failed_at
from ersctl.testing.apiserver import ApiServer, StatusError
from ersctl.testing.podsim import PodNotStartable, RunnerPods
from simulation.agent import AgentTiming
from simulation.cluster import NAMESPACE
from simulation.trace import RunnerTrace, runner_traces


class RunnerService(Protocol):
    """The scale-set service as a runner binary sees it, once connected."""

    def take_job(self, runner_id: int) -> str | None: ...

    def complete_job(self, job_id: str, runner_id: int, *, succeeded: bool = True) -> None: ...


class RunnerGone(Exception):
    """The runner's registration no longer exists at the service (it cannot connect)."""


@dataclass(kw_only=True)
class _Pod:
    name: str
    seen_at: float
    runner_id: int = 0
    started: bool = False
    dead: bool = False
    job_id: str | None = None
    job_ends_at: float | None = None
    done: bool = False
    exits_at: float | None = None
    """When a runner whose job completed exits 0 (its Pod turns Succeeded)."""


@dataclass(kw_only=True)
class _RunnerSeen:
    name: str
    seen_at: float
    patch_id: int
    registered_at: float | None = None
    deleted_at: float | None = None


class PodAgent:
    """Drives the runner Pods of one namespace; call :meth:`step` periodically.

    Not thread-safe: one thread calls :meth:`step`. ``job_duration`` maps a service
    job id to its run time.
    """

    def __init__(
        self,
        *,
        api: ApiServer,
        pods: RunnerPods,
        service: RunnerService,
        timing: AgentTiming,
        job_duration: Callable[[str], float],
        clock: Callable[[], float],
    ) -> None:
        self._api = api
        self._pods_sim = pods
        self._service = service
        self._timing = timing
        self._job_duration = job_duration
        self._clock = clock
        self._exit_draws = random.Random(f"exit-delay/{timing.seed}")
        self._pods: dict[str, _Pod] = {}  # by Pod uid: a replacement Pod is a new runner start
        self._runners: dict[str, _RunnerSeen] = {}
        self.killed_jobs: list[tuple[str, str]] = []
        self._start_failures: list[int] = []  # Pods to fail, per coming runner
        self._failing: dict[str, int] = {}  # runner (= Pod) name -> Pods of it still to fail
        self._job_failures = 0  # mid-job failures still to inject
        self._with_job: set[str] = set()  # runners whose ER carries a job (status.jobId)
        self.injected_runners: set[str] = set()
        """Runners whose Pods the fault injector failed (at start or mid-job)."""
        self.failed_jobs: list[tuple[str, str]] = []
        """(runner name, job id) of every job failed by :meth:`fail_a_busy_runner`."""
        self.failed_ages: dict[str, float] = {}
        """Per runner seen Failed (not yet being deleted): the most seconds it was seen
        Failed after its failure (``ersctl.runnerset.failures.failed_at``)."""

    def fail_next_start(self, pods: int = 1) -> None:
        """Fail the next ``pods`` Pods of the next runner to start (see the module docstring)."""
        self._start_failures.append(pods)

    def fail_a_busy_runner(self) -> None:
        """Fail the Pod of the next runner seen running a job its ER records."""
        self._job_failures += 1

    def step(self) -> None:
        """Observe the ERs, then advance every runner Pod by at most one transition."""
        self._observe_runners(self._clock())
        present: set[str] = set()
        for pod in self._api.list_objects("pods", NAMESPACE):
            meta = pod.get("metadata") or {}
            if not _runner_owned(meta):
                continue  # a listener's Pod: the listener kubelet runs it
            uid, now = str(meta.get("uid")), self._clock()
            present.add(uid)
            state = self._pods.setdefault(uid, _Pod(name=str(meta.get("name")), seen_at=now))
            if meta.get("deletionTimestamp"):
                self._on_gone(state)
            else:
                self._advance(state, now)
        for uid in [uid for uid in self._pods if uid not in present]:
            # Forget a Pod once gone: uids are never reused, so each step only walks live Pods.
            self._on_gone(self._pods.pop(uid))
        if self._job_failures:
            self._fail_mid_job()

    def _advance(self, state: _Pod, now: float) -> None:
        if state.exits_at is not None and now >= state.exits_at:
            state.exits_at = None
            self._exit(state.name, 0)
        if state.done or state.dead:
            return
        if not state.started:
            if now >= state.seen_at + self._timing.startup_delay and not self._fail_start(state):
                self._start(state)
        elif state.job_id is None:
            job_id = self._service.take_job(state.runner_id)
            if job_id is not None:
                state.job_id, state.job_ends_at = job_id, now + self._job_duration(job_id)
        elif state.job_ends_at is not None and now >= state.job_ends_at:
            self._service.complete_job(state.job_id, state.runner_id)
            state.done = True
            state.exits_at = now + self._exit_draws.uniform(*self._timing.exit_delay)
            self._advance(state, now)

    def _start(self, state: _Pod) -> None:
        state.started = True
        try:
            state.runner_id = self._pods_sim.start(state.name)
        except (PodNotStartable, RunnerGone, StatusError):
            # No usable registration or Pod (removed meanwhile): the runner would exit at
            # once and the set replaces or removes it. Nothing more for the agent to do.
            state.dead = True

    def _fail_start(self, state: _Pod) -> bool:
        """Fail this Pod before its runner connects when a fault says so."""
        left = self._failing.get(state.name, 0)
        if not left and self._start_failures:
            left = self._start_failures.pop(0)
        if not left:
            return False
        self._failing[state.name] = left - 1
        self.injected_runners.add(state.name)
        state.started = state.done = True
        self._exit(state.name, 1)
        return True

    def _fail_mid_job(self) -> None:
        for state in self._pods.values():
            if state.job_id is None or state.done or state.name not in self._with_job:
                continue
            self._job_failures -= 1
            self.injected_runners.add(state.name)
            self.failed_jobs.append((state.name, state.job_id))
            self._service.complete_job(state.job_id, state.runner_id, succeeded=False)
            state.done = True
            self._exit(state.name, 1)
            return

    def _on_gone(self, state: _Pod) -> None:
        if state.job_id is not None and not state.done:
            # The runner dies mid-job: the job is lost, which the report must show.
            self.killed_jobs.append((state.name, state.job_id))
            self._service.complete_job(state.job_id, state.runner_id, succeeded=False)
        state.done = True

    def _exit(self, name: str, code: int) -> None:
        try:
            self._pods_sim.exit(name, code)
        except StatusError as exc:
            if exc.code != 404:  # a Pod deleted meanwhile has nothing left to report
                raise

    def _observe_runners(self, now: float) -> None:
        present: set[str] = set()
        for obj in self._api.list_objects(ER_PLURAL, NAMESPACE):
            er = EphemeralRunner(obj)
            present.add(er.name)
            seen = self._runners.setdefault(
                er.name, _RunnerSeen(name=er.name, seen_at=now, patch_id=er.patch_id)
            )
            if seen.registered_at is None and er.runner_id:
                seen.registered_at = now
            if seen.deleted_at is None and er.is_deleting:
                seen.deleted_at = now
            if er.status.get("jobId"):
                self._with_job.add(er.name)
            if er.phase == ERPhase.FAILED and not er.is_deleting:
                age = now - failed_at(er)
                self.failed_ages[er.name] = max(age, self.failed_ages.get(er.name, 0.0))
        for seen in self._runners.values():
            # The runner controller may release an ER between two looks: gone is deleted.
            if seen.deleted_at is None and seen.name not in present:
                seen.deleted_at = now

    def traces(self, *, origin: float) -> tuple[RunnerTrace, ...]:
        """One record per runner (ER) ever seen, times relative to ``origin``."""
        return runner_traces(self._runners.values(), origin=origin)


def _runner_owned(meta: dict[str, object]) -> bool:
    """The Pod is a runner's: an EphemeralRunner is its controller."""
    refs = meta.get("ownerReferences")
    return isinstance(refs, list) and any(
        isinstance(ref, dict) and ref.get("kind") == ER_KIND and ref.get("controller")
        for ref in refs
    )
