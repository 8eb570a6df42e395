"""The scaling decision of one reconcile (pure: no I/O).

Step 8 of the reconcile contract (``shared/DESIGN.md``), minus the one read it needs
from the API server. :func:`decide` says what to do; for a scale-up it only says
whether the suppression guard applies, and :func:`scale_up_suppressed` judges the
marker the reconciler read *through the API reader* (never the cache: the cleanup
that wrote it is what triggers the next reconcile, often before the informer has
seen the write).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ersctl.api import EphemeralRunner, PatchID
from ersctl.runnerset.classification import RunnerStates, created_at, is_busy, registered_id


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


Decision = AlreadyServiced | CleanUpFinished | ScaleUp | ScaleDown | Hold


def decide(*, replicas: int, patch_id: PatchID, states: RunnerStates) -> Decision:
    """Step 8 for ``spec.replicas``/``spec.patchID`` against the classified runners.

    - patch ID non-zero and equal to the newest runner patch ID: :class:`AlreadyServiced`.
    - finished runners present: :class:`CleanUpFinished` (early return).
    - ``scale_up_total`` (deleting runners included) below replicas: :class:`ScaleUp`.
    - patch ID non-zero and total at or above replicas: :class:`Hold` (finished runners
      are collected on the next patch; a not-yet-Succeeded runner must not be killed).
    - patch ID 0 and total above replicas: :class:`ScaleDown` (deleting runners do not
      count here: counting runners already going away would block a legitimate
      scale-down).
    """
    if patch_id != 0 and patch_id == states.latest_patch_id:
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
