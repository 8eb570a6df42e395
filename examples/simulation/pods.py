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
5. The simulation treats every deletion of a runner's Pod (deleted, evicted, drained,
   its node lost) as a kill, the conservative case: the process tells the service
   nothing, and the service lists it offline once its long poll lapses
   (``disconnect``; a real runner sent SIGTERM would log off at once). One that exits 0
   unused deletes its session first and is offline at once. Without this, GitHub would
   list a dead runner online for good, and the runner controller's online check of its
   next Pod would believe it.

Faults (the soak's): :meth:`PodAgent.fail_next_start` fails the Pods of the next runner
to start (exit code 1 before the runner connects: a bad node, a crashing entrypoint), once
or until the runner turns Failed; :meth:`PodAgent.fail_a_busy_runner` fails the Pod of a
runner in the middle of its job, and the job fails at the service, as GitHub fails a job
whose runner died (it does not queue it again); :meth:`PodAgent.disturb_next_start` makes
the next starting Pod's image fail to pull for a while, its runner never come online, or
its runner exit 0 without a job; :meth:`PodAgent.take_down` kills a running runner for
an eviction, a drain or a lost node (``simulation.disruptions``). All are recorded
(:attr:`PodAgent.injected_runners`, :attr:`PodAgent.failed_jobs`), so the report tells
them from failures the system under test caused.

Zombies (the soak's invariant): every step, each live runner (not being deleted, not
done) without a running Pod or whose runner the service does not see online is timed;
:attr:`PodAgent.zombie_ages` keeps the longest stretch of each.

Starting and exiting a runner Pod is ``ersctl.testing.podsim.RunnerPods`` (the runner
controller's own kubelet stand-in). It also records, from the ERs, what the report needs: when each runner's ER appeared,
when it got a ``runnerId`` (registered), and when its deletion was first seen.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, Protocol

from ersctl.api import ER_KIND, ER_PLURAL, EphemeralRunner, ERPhase
from ersctl.ephemeralrunner.pods import RUNNER_CONTAINER
from ersctl.ephemeralrunnerset.failurepolicy import failed_at
from ersctl.testing.apiserver import StatusError
from ersctl.testing.podsim import PodNotStartable, RunnerPods, running_status
from simulation.agent import AgentTiming
from simulation.cluster import NAMESPACE, Kubernetes, unless_gone
from simulation.faults import FaultKind
from simulation.trace import RunnerTrace, runner_traces


class RunnerService(Protocol):
    """The scale-set service as a runner binary sees it, once connected."""

    def take_job(self, runner_id: int) -> str | None: ...

    def complete_job(self, job_id: str, runner_id: int, *, succeeded: bool = True) -> None: ...

    def online_runners(self) -> set[str]:
        """Names of the registered runners the service sees online."""
        ...

    def disconnect(self, runner_id: int, *, graceful: bool = False) -> None:
        """The runner's process ended (``graceful``: it deleted its session first)."""
        ...


class RunnerGone(Exception):
    """The runner's registration no longer exists at the service (it cannot connect)."""


class StartFault(StrEnum):
    """What :meth:`PodAgent.disturb_next_start` does to the next starting runner Pod."""

    IMAGE_PULL = "image-pull"
    """Its image does not pull for :data:`PULL_FAILURE_SECONDS` (ImagePullBackOff)."""
    NEVER_ONLINE = "never-online"
    """It runs, but its runner never connects to the service."""
    EXIT_UNUSED = "exit-unused"
    """Its runner connects, then exits 0 without taking a job."""


START_FAULTS: Final = {
    FaultKind.IMAGE_PULL_FAILURE: StartFault.IMAGE_PULL,
    FaultKind.RUNNER_NEVER_ONLINE: StartFault.NEVER_ONLINE,
    FaultKind.EXIT_WITHOUT_JOB: StartFault.EXIT_UNUSED,
}
"""The soak's faults that :meth:`PodAgent.disturb_next_start` does."""
PULL_FAILURE_SECONDS: Final = 60.0
"""How long an image fails to pull: far past the soak's ``--runner-start-timeout`` and its
zombie bound, so only the start timeout's replacement Pod ends it in time."""


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
    pull_until: float | None = None
    """The image pulls from then on (an injected pull failure)."""
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
        api: Kubernetes,
        pods: RunnerPods,
        service: RunnerService,
        timing: AgentTiming,
        job_duration: Callable[[str], float],
        clock: Callable[[], float],
        namespace: str = NAMESPACE,
    ) -> None:
        self._api = api
        self._namespace = namespace
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
        Failed after its failure (``ersctl.ephemeralrunnerset.failurepolicy.failed_at``)."""
        self._start_faults: list[StartFault] = []
        self._zombie_since: dict[str, float] = {}
        self.zombie_ages: dict[str, float] = {}
        """Per runner ever seen a zombie (see the module docstring): its longest such
        stretch (seconds)."""

    def fail_next_start(self, pods: int = 1) -> None:
        """Fail the next ``pods`` Pods of the next runner to start (see the module docstring)."""
        self._start_failures.append(pods)

    def fail_a_busy_runner(self) -> None:
        """Fail the Pod of the next runner seen running a job its ER records."""
        self._job_failures += 1

    def disturb_next_start(self, fault: StartFault) -> None:
        """Do ``fault`` to the next runner Pod that starts."""
        self._start_faults.append(fault)

    def running(self) -> list[tuple[str, str]]:
        """(uid, name) of the runner Pods whose runner runs, oldest first."""
        return [
            (uid, state.name)
            for uid, state in self._pods.items()
            if state.started and not state.dead and not state.done
        ]

    def take_down(self, uid: str) -> None:
        """The runner of Pod ``uid`` dies by an injected fault: its job, if any, fails at
        the service (as GitHub fails a job whose runner is gone), and both are recorded."""
        state = self._pods.get(uid)
        if state is None or state.done:
            return
        self.injected_runners.add(state.name)
        if state.job_id is not None:
            self.failed_jobs.append((state.name, state.job_id))
            self._service.complete_job(state.job_id, state.runner_id, succeeded=False)
        self._died(state)
        state.done = True

    def step(self) -> None:
        """Observe the ERs, then advance every runner Pod by at most one transition."""
        runners = self._observe_runners(self._clock())
        present: set[str] = set()
        running: set[str] = set()
        for pod in self._api.list_objects("pods", self._namespace):
            meta = pod.get("metadata") or {}
            if not _runner_owned(meta):
                continue  # a listener's Pod: the listener kubelet runs it
            uid, now = str(meta.get("uid")), self._clock()
            present.add(uid)
            state = self._pods.setdefault(uid, _Pod(name=str(meta.get("name")), seen_at=now))
            if meta.get("deletionTimestamp"):
                self._on_gone(state)
                continue
            self._advance(state, now)
            if _runs(pod):
                running.add(state.name)
        self._observe_zombies(runners, running, self._clock())
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
            if state.pull_until is not None and now < state.pull_until:
                return
            if now < state.seen_at + self._timing.startup_delay:
                return
            if not self._fail_start(state) and not self._disturb_start(state, now):
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

    def _disturb_start(self, state: _Pod, now: float) -> bool:
        """Start this Pod as a queued start fault says; False when none is queued."""
        if not self._start_faults or state.pull_until is not None:
            return False
        fault = self._start_faults.pop(0)
        self.injected_runners.add(state.name)
        if fault is StartFault.IMAGE_PULL:
            state.pull_until = now + PULL_FAILURE_SECONDS
            self._set_status(state.name, _IMAGE_PULL_BACK_OFF)
        elif fault is StartFault.NEVER_ONLINE:
            state.started = state.dead = True
            self._set_status(state.name, running_status())
        else:
            self._start(state)
            if not state.dead:
                state.done = True
                self._service.disconnect(state.runner_id, graceful=True)
                self._exit(state.name, 0)
        return True

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
        if not state.done:
            self._died(state)
        state.done = True

    def _died(self, state: _Pod) -> None:
        """The runner process of a live Pod is killed: it deletes no session, so the
        service lists it online until its long poll lapses."""
        if state.started and not state.dead and state.runner_id:
            self._service.disconnect(state.runner_id)

    def _exit(self, name: str, code: int) -> None:
        with unless_gone():  # a Pod deleted meanwhile has nothing left to report
            self._pods_sim.exit(name, code)

    def _set_status(self, name: str, status: dict[str, Any]) -> None:
        with unless_gone():
            self._api.patch_object(
                "pods", self._namespace, name, {"status": status}, subresource="status"
            )

    def _observe_zombies(
        self, runners: list[EphemeralRunner], running: set[str], now: float
    ) -> None:
        """Time each live runner whose Pod does not run or whose runner GitHub does not
        see online (a runner whose job ended is so too, until its Pod exits: briefly)."""
        online = self._service.online_runners()
        stuck = {
            runner.name
            for runner in runners
            if not (runner.is_deleting or runner.is_done)
            and (runner.name not in running or runner.name not in online)
        }
        for name in stuck:
            since = self._zombie_since.setdefault(name, now)
            self.zombie_ages[name] = max(now - since, self.zombie_ages.get(name, 0.0))
        for name in set(self._zombie_since) - stuck:
            del self._zombie_since[name]

    def _observe_runners(self, now: float) -> list[EphemeralRunner]:
        present: set[str] = set()
        runners = [
            EphemeralRunner(obj) for obj in self._api.list_objects(ER_PLURAL, self._namespace)
        ]
        for er in runners:
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
        return runners

    def traces(self, *, origin: float) -> tuple[RunnerTrace, ...]:
        """One record per runner (ER) ever seen, times relative to ``origin``."""
        return runner_traces(self._runners.values(), origin=origin)


_IMAGE_PULL_BACK_OFF: Final = {
    "phase": "Pending",
    "containerStatuses": [
        {
            "name": RUNNER_CONTAINER,
            "ready": False,
            "state": {
                "waiting": {
                    "reason": "ImagePullBackOff",
                    "message": 'Back-off pulling image "ghcr.io/actions/actions-runner:latest"',
                }
            },
        }
    ],
}


def _runs(pod: dict[str, Any]) -> bool:
    """The Pod's runner container runs."""
    for status in (pod.get("status") or {}).get("containerStatuses") or ():
        if status.get("name") == RUNNER_CONTAINER:
            return "running" in (status.get("state") or {})
    return False


def _runner_owned(meta: dict[str, object]) -> bool:
    """The Pod is a runner's: an EphemeralRunner is its controller."""
    refs = meta.get("ownerReferences")
    return isinstance(refs, list) and any(
        isinstance(ref, dict) and ref.get("kind") == ER_KIND and ref.get("controller")
        for ref in refs
    )
