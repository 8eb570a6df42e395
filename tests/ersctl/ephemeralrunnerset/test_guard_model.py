"""A model of the listener and the controller together (hypothesis, stateful).

The real producer (``ghalistener.scaler.Scaler``, the patch ID state machine) and the
real consumer decisions (``classify``, ``decide``, ``scale_up_suppressed``) run against
a small in-memory world of jobs and runners. Job completion and the runner turning
Succeeded are one step here, and jobs are never cancelled: those are the conditions
under which ARC PR #4642 argues the guard is exact.

Properties:

- safety: a scale-up never leaves more live runners than the listener would ask for
  *now* (``min_runners + assigned jobs``): no runner for a job that already finished.
  The machine starts after the listener's first call at zero jobs. A start with jobs
  already assigned is the one exception (this model found it; the last test pins it):
  the first patch after a start is 0 whatever the target (the sequence starts at -1),
  patch 0 is never suppressed (it must not be: idle-at-minimum publishes 0 too), so a
  job that completes before the listener's second patch gets its runner replaced once;
- liveness: once jobs stop arriving and the listener keeps publishing, the runners
  catch up with the demand, and settle at ``min_runners`` when there is none.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from ersctl.api import EphemeralRunner, PatchID
from ersctl.ephemeralrunnerset.classification import classify
from ersctl.ephemeralrunnerset.scaling import (
    CleanUpFinished,
    ScaleDown,
    ScaleUp,
    decide,
    scale_up_suppressed,
)
from ghalistener.scaler import Scaler
from tests.ersctl.ephemeralrunnerset.objects import runner

MIN_RUNNERS = 1
MAX_RUNNERS = 20
PHASES = {"pending": "Pending", "idle": "Running", "busy": "Running", "finished": "Succeeded"}


@dataclass
class ModelRunner:
    name: str
    state: str  # pending | idle | busy | finished | deleting
    patch_id: int
    runner_id: int = 0

    def view(self) -> EphemeralRunner:
        return runner(
            PHASES.get(self.state, "Running"),
            name=self.name,
            created=_timestamp(int(self.name)),
            patch_id=self.patch_id,
            runner_id=self.runner_id,
            job_id="job" if self.state == "busy" else "",
            deleting=self.state == "deleting",
        )


def _timestamp(seconds: int) -> str:
    return f"2026-01-01T{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}Z"


class ListenerAndController(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.scaler = Scaler(min_runners=MIN_RUNNERS, max_runners=MAX_RUNNERS)
        self.assigned = 0  # jobs assigned to the scale set, queued or running
        self.queued = 0  # assigned jobs no runner has taken yet
        self.runners: list[ModelRunner] = []
        self.replicas, self.patch_id, self.marker = 0, PatchID(0), PatchID(0)
        self.names = itertools.count(1)
        self.check_safety = True
        # The listener's first call after a start, before any job: patch 0 at the minimum.
        # (A start with jobs already assigned is the edge pinned at the end of the file.)
        self.the_listener_publishes()

    # -- the world -------------------------------------------------------------------

    @rule(jobs=st.integers(min_value=1, max_value=2))
    def jobs_are_assigned(self, jobs: int) -> None:
        self.assigned += jobs
        self.queued += jobs

    @rule()
    def runners_come_up(self) -> None:
        """Pending runners register, and idle ones take queued jobs."""
        self.pending_runners_register()
        self.idle_runners_take_queued_jobs()

    def pending_runners_register(self) -> None:
        for item in self.runners:
            if item.state == "pending":
                item.state, item.runner_id = "idle", int(item.name)

    def idle_runners_take_queued_jobs(self) -> None:
        for item in self.runners:
            if self.queued and item.state == "idle":
                item.state = "busy"
                self.queued -= 1
                self.scaler.job_started()

    @rule(data=st.data())
    def a_job_completes(self, data: st.DataObject) -> None:
        busy = [r for r in self.runners if r.state == "busy"]
        if busy:
            data.draw(st.sampled_from(busy)).state = "finished"
            self.assigned -= 1
            self.scaler.job_completed()

    @rule()
    def deletions_complete(self) -> None:
        """The runner controller drops the finalizers of runners being deleted."""
        self.runners = [r for r in self.runners if r.state != "deleting"]

    @rule()
    def the_listener_publishes(self) -> None:
        decision = self.scaler.desired_count(self.assigned)
        self.replicas, self.patch_id = decision.replicas, decision.patch_id

    # -- the controller --------------------------------------------------------------

    @rule(passes=st.integers(min_value=1, max_value=3), linger=st.booleans())
    def the_controller_runs(self, passes: int, linger: bool) -> None:
        """A few passes in a row (each deletion triggers the next reconcile)."""
        for _ in range(passes):
            self.the_controller_reconciles(linger=linger)

    def the_controller_reconciles(self, *, linger: bool = True) -> None:
        """One pass; ``linger``: runners it deletes stay until their finalizers go."""
        states = classify([r.view() for r in self.runners], applied_revision=0)
        decision = decide(replicas=self.replicas, patch_id=self.patch_id, states=states)
        by_name = {r.name: r for r in self.runners}
        if isinstance(decision, CleanUpFinished):
            self.marker = decision.patch_id  # recorded before the deletions
            for view in decision.runners:
                by_name[view.name].state = "deleting"
            if not linger:
                self.deletions_complete()
        elif isinstance(decision, ScaleUp):
            if decision.guarded and scale_up_suppressed(
                patch_id=decision.patch_id, marker=self.marker
            ):
                return
            for _ in range(decision.count):
                name = str(next(self.names))
                self.runners.append(ModelRunner(name, "pending", int(decision.patch_id)))
            wanted_now = self.scaler.target(self.assigned)
            assert not self.check_safety or self.live() <= wanted_now, (
                f"created up to {self.live()} runners for patch {self.patch_id} "
                f"(replicas {self.replicas}) while only {wanted_now} are wanted now"
            )
        elif isinstance(decision, ScaleDown):
            for view in decision.candidates[: decision.count]:
                by_name[view.name].state = "deleting"

    def live(self) -> int:
        return sum(r.state in ("pending", "idle", "busy") for r in self.runners)

    @invariant()
    def jobs_are_accounted_for(self) -> None:
        busy = sum(r.state == "busy" for r in self.runners)
        assert self.assigned == self.queued + busy

    def teardown(self) -> None:
        # Liveness: no new jobs; the world and the listener keep going.
        for _ in range(6):
            self.pending_runners_register()
            self.idle_runners_take_queued_jobs()
            self.deletions_complete()
            self.the_listener_publishes()
            self.the_controller_reconciles()
            self.the_controller_reconciles()
        wanted = self.scaler.target(self.assigned)
        assert self.live() >= wanted, f"{self.live()} runners for {wanted} wanted"
        if self.assigned == 0:
            assert self.live() == MIN_RUNNERS


ListenerAndController.TestCase.settings = settings(
    max_examples=300, stateful_step_count=50, deadline=None, derandomize=True
)
test_the_listener_and_the_controller_never_create_a_runner_nobody_asked_for = (
    ListenerAndController.TestCase
)


def test_the_first_patch_after_a_listener_start_is_zero_and_unguarded() -> None:
    """The sharp edge the model found, pinned: one replacement runner, then recovery."""
    world = ListenerAndController()
    world.scaler = Scaler(min_runners=MIN_RUNNERS, max_runners=MAX_RUNNERS)  # a fresh start
    world.check_safety = False
    world.jobs_are_assigned(2)
    world.the_listener_publishes()
    assert (world.patch_id, world.replicas) == (0, 3)
    world.the_controller_reconciles()
    world.pending_runners_register()
    world.idle_runners_take_queued_jobs()
    next(r for r in world.runners if r.state == "busy").state = "finished"
    world.assigned -= 1
    world.scaler.job_completed()

    world.the_controller_reconciles()  # cleanup, marker 0
    world.deletions_complete()
    world.the_controller_reconciles()  # patch 0 is never suppressed: a replacement

    assert world.live() == 3 > world.scaler.target(world.assigned) == 2
    world.the_listener_publishes()  # dirty: a fresh, non-zero patch asking for 2
    assert world.patch_id > 0 and world.replicas == 2
    world.the_controller_reconciles()
    assert world.live() == 3, "patch > 0 never scales down: the spare runner idles"
