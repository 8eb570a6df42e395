"""The scaling decision of one reconcile (pure: no I/O).

Step 8 of the reconcile contract (``ersctl.ephemeralrunnerset.reconciler``), minus the one read it needs
from the API server. :func:`decide` says what to do; for a scale-up it only says
whether the suppression guard applies, and :func:`scale_up_suppressed` judges the
marker the reconciler read *through the API reader* (never the cache: the cleanup
that wrote it is what triggers the next reconcile, often before the informer has
seen the write).

Finished runners whose completed jobs ``spec.replicas`` already leaves out
(:class:`ReplaceFinished`). ARC's guard assumes the gap a finished-runner cleanup opens
is not demand, because ``spec.replicas`` may still count the finished runners' jobs, and
holds it until the listener publishes the next patch. At GitHub's timing that is usually
wrong and costly: the service sends ``JobCompleted`` when the runner reports its job
done, the listener publishes a count without the job at once, and the runner's Pod ends
a second or two later; a queued job then waits for the next patch, up to a long poll
(about 50 s). The listener says which completions a published count leaves out: the
GitHub runner IDs in the set's ``actions.github.com/completed-runner-ids`` annotation,
written in the same merge patch as ``spec.replicas`` and ``spec.patchID`` (so the
annotation and the spec the reconciler reads are always one version of the listener's
decision). When every finished runner is named there and the patch ID is not 0, the gap
their removal opens is demand that patch asks for, and the same reconcile refills it:

- without a marker write, and whether or not the patch ID already produced runners
  (ARC keeps finished runners until the patch ID changes; that would hold the slot too);
- the whole gap when the patch ID has not produced runners yet and no cleanup recorded it
  as its marker (then it is the patch's own scale-up, which ARC would do too); otherwise
  only the slots the finished runners free (at most the gap): the rest of the gap may be
  runners that went away for other reasons, and ARC's rules keep holding it;
- a finished runner not named there (ARC's listener, an older listener, a list that
  dropped it, a runner that ended without a job) sends the whole decision back to ARC's
  rules exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from ersctl.api import EphemeralRunner, EphemeralRunnerSet, PatchID, RunnerID
from ersctl.ephemeralrunnerset.classification import (
    RunnerStates,
    created_at,
    is_busy,
    registered_id,
)


@dataclass(frozen=True, kw_only=True)
class AlreadyServiced:
    """``spec.patchID`` is non-zero and runners already carry it: this patch was acted on."""


@dataclass(frozen=True, kw_only=True)
class CleanUpFinished:
    """Record the marker, delete the finished runners, and stop: decide next reconcile.

    ``spec.replicas`` was computed against the runners alive when the listener
    published it; deleting finished runners lowers the live count, so scaling in the
    same pass would create runners for jobs that already completed.
    """

    patch_id: PatchID
    runners: tuple[EphemeralRunner, ...]


@dataclass(frozen=True, kw_only=True)
class ReplaceFinished:
    """Delete ``runners`` (finished; ``spec.replicas`` leaves their jobs out) and create
    :meth:`count` runners in the same reconcile, writing no marker.

    ``gap``: ``spec.replicas`` minus the runners that count toward a scale-up (finished
    ones do not). ``serviced``: the patch ID already produced runners.
    """

    patch_id: PatchID
    runners: tuple[EphemeralRunner, ...]
    gap: int
    serviced: bool

    @property
    def needs_marker(self) -> bool:
        """Whether :meth:`count` depends on the marker (read it through the API reader)."""
        return not self.serviced and self.gap > len(self.runners)

    def count(self, *, marker: PatchID) -> int:
        """The whole gap for a patch that has produced no runners and that no cleanup
        recorded (its own scale-up); else only the slots the finished runners free."""
        if self.needs_marker and marker != self.patch_id:
            return self.gap
        return min(self.gap, len(self.runners))


@dataclass(frozen=True, kw_only=True)
class ScaleUp:
    """Create ``count`` runners, unless ``guarded`` and the marker equals ``patch_id``."""

    count: int
    patch_id: PatchID

    @property
    def guarded(self) -> bool:
        """Patch ID 0 ("idle at minimum, force this state") is never suppressed."""
        return self.patch_id > 0


@dataclass(frozen=True, kw_only=True)
class ScaleDown:
    """Remove up to ``count`` runners, trying ``candidates`` in order."""

    count: int
    candidates: tuple[EphemeralRunner, ...]


@dataclass(frozen=True, kw_only=True)
class Hold:
    """Nothing to change. ``reason`` is for logs and ``ersctl reconcile --once``."""

    reason: str


@dataclass(frozen=True, kw_only=True)
class ThenDelete:
    """Act on ``then``, then delete ``runners`` (finished) in the same reconcile, writing
    no marker: the order before ARC PR #4642, which makes a patch that arrives just
    before a job's runner turns Succeeded create a replacement nobody asked for.
    :func:`decide` never returns it; it keeps that order expressible, so a
    :data:`ScalingDecision` can reproduce ARC's old controller (the guard benchmark's
    baseline) on this reconciler."""

    then: ScaleUp | ScaleDown | Hold
    runners: tuple[EphemeralRunner, ...]


Decision = (
    AlreadyServiced | CleanUpFinished | ReplaceFinished | ScaleUp | ScaleDown | Hold | ThenDelete
)

ScalingDecision = Callable[[EphemeralRunnerSet, RunnerStates], Decision]
"""Step 8's decision for a set and its classified runners; the reconciler acts on what it
returns (:func:`decide_for`, unless it is built with another)."""


def decide_for(ers: EphemeralRunnerSet, states: RunnerStates) -> Decision:
    """:func:`decide` for ``ers``: its replicas, patch ID and the completions its count
    leaves out (read from the same version of the set as its spec)."""
    return decide(
        replicas=ers.replicas,
        patch_id=ers.patch_id,
        states=states,
        completed=ers.completed_runner_ids,
    )


def decide(
    *,
    replicas: int,
    patch_id: PatchID,
    states: RunnerStates,
    completed: Collection[RunnerID] = frozenset(),
) -> Decision:
    """Step 8 for ``spec.replicas``/``spec.patchID`` against the classified runners.

    ``completed``: the runner IDs whose completed jobs ``spec.replicas`` leaves out (the
    set's annotation, read from the same version of the set as the spec).

    - patch ID non-zero and every finished runner (at least one) in ``completed``:
      :class:`ReplaceFinished` (see the module docstring).
    - patch ID non-zero and equal to the newest runner patch ID: :class:`AlreadyServiced`.
    - finished runners present: :class:`CleanUpFinished` (early return).
    - ``scale_up_total`` (deleting runners included) below replicas: :class:`ScaleUp`.
    - patch ID non-zero and total at or above replicas: :class:`Hold` (finished runners
      are collected on the next patch; a not-yet-Succeeded runner must not be killed).
    - patch ID 0 and total above replicas: :class:`ScaleDown` (deleting runners do not
      count here: counting runners already going away would block a legitimate
      scale-down).
    """
    serviced = patch_id != 0 and patch_id == states.latest_patch_id
    if patch_id > 0 and accounted_for(states.finished, completed):
        gap = max(0, replicas - states.scale_up_total)
        return ReplaceFinished(
            patch_id=patch_id, runners=states.finished, gap=gap, serviced=serviced
        )
    if serviced:
        return AlreadyServiced()
    if states.finished:
        return CleanUpFinished(patch_id=patch_id, runners=states.finished)
    if states.scale_up_total < replicas:
        return ScaleUp(count=replicas - states.scale_up_total, patch_id=patch_id)
    if patch_id > 0:
        return Hold(reason=f"{states.total} runners for {replicas} replicas at patch {patch_id}")
    if states.total > replicas:
        return ScaleDown(
            count=states.total - replicas,
            candidates=scale_down_candidates(pending=states.pending, running=states.running),
        )
    return Hold(reason=f"{states.total} runners for {replicas} replicas")


def accounted_for(finished: Collection[EphemeralRunner], completed: Collection[RunnerID]) -> bool:
    """Whether there are finished runners and the listener named every one as a completion
    its published count leaves out (an unregistered runner, ``runnerId`` 0, never is)."""
    return bool(finished) and all(0 < registered_id(r) in completed for r in finished)


def scale_up_suppressed(*, patch_id: PatchID, marker: PatchID) -> bool:
    """True when the gap below replicas is the one a cleanup for ``patch_id`` opened.

    ``marker`` must come from an uncached read. Equality, not ``>=``: patch IDs go
    down (0 when idle, restarts, wrap-around), and the marker follows them.
    """
    return patch_id > 0 and marker == patch_id


def scale_down_candidates(
    *, pending: Iterable[EphemeralRunner], running: Iterable[EphemeralRunner]
) -> tuple[EphemeralRunner, ...]:
    """Runners a scale-down may remove, in the order to try them.

    Pending before running, oldest first within each (name breaks ties, for a stable
    order). Skipped: runners not registered yet (``runnerId`` 0: nothing to remove from
    the service, and the runner is about to come up) and busy ones (they hold a job),
    unless the runner is already done.
    """
    return tuple(
        runner
        for group in (pending, running)
        for runner in sorted(group, key=_age_key)
        if runner.is_done or (registered_id(runner) != 0 and not is_busy(runner))
    )


def _age_key(runner: EphemeralRunner) -> tuple[str, str]:
    # RFC 3339 timestamps from the API server share one format and sort as strings.
    return (created_at(runner), runner.name)
