"""Step 9 of the reconcile: the status update (pure parts plus one thin write).

The update recomputes the phase and the counts from the classified runners and
*copies* the marker (``finishedRunnerCleanupPatchID``) and the applied revision from
the in-memory object. The patch is the difference between the status as this
reconcile started from (:func:`observed`) and the desired one, so the two copied
fields appear in it only if this reconcile changed them in memory. That is what
makes it safe to start the reconcile from a lagging cached object: a stale marker
on both sides of the diff produces no entry, whereas computing the marker here (say
from ``spec.patchID``) would overwrite, without a lock, a value this reconcile had
no authority to change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any, Final

from ersctl.api import EphemeralRunnerSet, ERSPhase, FieldError
from ersctl.runnerset.classification import RunnerStates
from ersctl.runnerset.ports import Writer

_JSON_NAMES: Final = {
    "phase": "phase",
    "current": "currentReplicas",
    "pending": "pendingEphemeralRunners",
    "running": "runningEphemeralRunners",
    "failed": "failedEphemeralRunners",
    "applied_revision": "appliedActionableRevision",
    "cleanup_patch_id": "finishedRunnerCleanupPatchID",
}


@dataclass(frozen=True, kw_only=True)
class StatusView:
    """The ERS status fields the controller owns, as effective values (absent = 0/"")."""

    phase: str
    current: int
    pending: int
    running: int
    failed: int
    applied_revision: int
    cleanup_patch_id: int


_READERS: Final[dict[str, Callable[[EphemeralRunnerSet], object]]] = {
    "phase": lambda ers: ers.phase,
    "currentReplicas": lambda ers: ers.current_replicas,
    "pendingEphemeralRunners": lambda ers: ers.pending_runners,
    "runningEphemeralRunners": lambda ers: ers.running_runners,
    "failedEphemeralRunners": lambda ers: ers.failed_runners,
    "appliedActionableRevision": lambda ers: ers.applied_actionable_revision,
    "finishedRunnerCleanupPatchID": lambda ers: ers.finished_runner_cleanup_patch_id,
}

RESET_VALUES: Final[dict[str, object]] = {
    "phase": None,  # removed; the status update then derives it again
    "currentReplicas": 0,
    "pendingEphemeralRunners": 0,
    "runningEphemeralRunners": 0,
    "failedEphemeralRunners": 0,
    # Unknown which revision was applied: apply the current one again (idle runners
    # are rebuilt), rather than assume runners match a spec nobody can vouch for.
    "appliedActionableRevision": 0,
    # Not a record of any cleanup: 0 never suppresses a scale-up.
    "finishedRunnerCleanupPatchID": 0,
}
"""What :func:`malformed` fields are overwritten with (JSON name -> value; None removes)."""


def malformed(ers: EphemeralRunnerSet) -> dict[str, FieldError]:
    """The status fields this controller owns that ``ers`` holds in a malformed shape.

    They are the controller's own bookkeeping, so a bad value is overwritten
    (``ersctl.runnerset.markers.repair_status``), never a reason to stop reconciling the set.
    """
    found: dict[str, FieldError] = {}
    for name, read in _READERS.items():
        try:
            read(ers)
        except FieldError as exc:
            found[name] = exc
    return found


def observed(ers: EphemeralRunnerSet) -> StatusView:
    """The status as ``ers`` carries it (raises FieldError on a malformed field)."""
    return StatusView(
        phase=ers.phase,
        current=ers.current_replicas,
        pending=ers.pending_runners,
        running=ers.running_runners,
        failed=ers.failed_runners,
        applied_revision=ers.applied_actionable_revision,
        cleanup_patch_id=ers.finished_runner_cleanup_patch_id,
    )


def desired(ers: EphemeralRunnerSet, states: RunnerStates) -> StatusView:
    """Phase and counts from ``states``; marker and applied revision copied from ``ers``.

    Phase: Outdated when a runner reported Outdated against the applied spec;
    Running when no phase was set yet; otherwise unchanged (only the revision
    writer lifts Outdated, when a new spec is applied).
    """
    if states.outdated:
        phase: str = ERSPhase.OUTDATED
    else:
        phase = ers.phase or ERSPhase.RUNNING
    return StatusView(
        phase=str(phase),
        current=states.total,
        pending=len(states.pending),
        running=len(states.running),
        failed=len(states.failed),
        applied_revision=ers.applied_actionable_revision,
        cleanup_patch_id=ers.finished_runner_cleanup_patch_id,
    )


def counts(states: RunnerStates) -> dict[str, int]:
    """The runner counts of ``states`` as status fields (JSON names), for a write that
    carries them along with another (the marker)."""
    return {
        "currentReplicas": states.total,
        "pendingEphemeralRunners": len(states.pending),
        "runningEphemeralRunners": len(states.running),
        "failedEphemeralRunners": len(states.failed),
    }


def with_counts_of(live: EphemeralRunnerSet, before: StatusView) -> StatusView:
    """``before`` with the counts ``live`` holds: the base of the step-9 diff after a
    write that set them. Phase, marker and applied revision stay as ``before`` has them
    (copying those from another object could revert a value in step 9)."""
    return replace(
        before,
        current=live.current_replicas,
        pending=live.pending_runners,
        running=live.running_runners,
        failed=live.failed_runners,
    )


def status_patch(before: StatusView, after: StatusView) -> dict[str, Any]:
    """A ``/status`` merge patch carrying exactly the fields that differ (``{}`` if none)."""
    old, new = asdict(before), asdict(after)
    changed = {_JSON_NAMES[key]: value for key, value in new.items() if old[key] != value}
    return {"status": changed} if changed else {}


def update_status(
    writer: Writer, ers: EphemeralRunnerSet, *, before: StatusView, states: RunnerStates
) -> bool:
    """Send the step-9 patch when something changed; return whether a request was sent."""
    patch = status_patch(before, desired(ers, states))
    if not patch:
        return False
    writer.patch_ers_status(ers, patch)
    return True
