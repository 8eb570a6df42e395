"""Step 9 of the reconcile: the status update (pure parts plus one thin write).

What the status holds, and why each field is written:

- ``phase`` (Running or Outdated: a printer column, and an Outdated set is only cleaned
  up, never scaled): derived from the classified runners.
- ``finishedRunnerCleanupPatchID`` (the marker) and ``appliedActionableRevision``:
  *copied* from the in-memory object, never computed here. Their own writers
  (``ersctl.ephemeralrunnerset.markers``) set them under an optimistic lock.
- No runner counts. They change with every runner that starts or ends, and nothing
  decides on them: they are ARC's ``gha_controller_*_ephemeral_runners`` gauges
  (``ersctl.ephemeralrunnerset.metrics``, read from the cache at scrape time) and ``ersctl
  status``'s columns (counted from a live list), as ARC moved them out of the status
  after 0.15.1 (#4557, #4570). Counts a set still carries (ARC wrote them before a
  switch, or an earlier version of this controller) are cleared once
  (:data:`RETIRED_COUNTS`), so a ``kubectl get`` under ARC's CRDs never shows them
  frozen. ``currentReplicas`` cannot be removed, as ARC 0.14's schema requires it: it
  is held at 0 (``ersctl.api.ERS_REQUIRED_STATUS``).

The patch is the difference between the status as this reconcile started from
(:func:`observed`) and the desired one, so the two copied fields appear in it only if
this reconcile changed them in memory. That is what makes it safe to start the
reconcile from a lagging cached object: a stale marker on both sides of the diff
produces no entry, whereas computing the marker here (say from ``spec.patchID``) would
overwrite, without a lock, a value this reconcile had no authority to change. An
unchanged status sends nothing, and neither does a change of runner counts alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Final

from ersctl.api import ERS_REQUIRED_STATUS, EphemeralRunnerSet, ERSPhase, FieldError
from ersctl.ephemeralrunnerset.classification import RunnerStates
from ersctl.ephemeralrunnerset.ports import Writer

_JSON_NAMES: Final = {
    "phase": "phase",
    "applied_revision": "appliedActionableRevision",
    "cleanup_patch_id": "finishedRunnerCleanupPatchID",
}

RETIRED_COUNTS: Final[Mapping[str, object]] = {
    "pendingEphemeralRunners": None,
    "runningEphemeralRunners": None,
    "failedEphemeralRunners": None,
    **ERS_REQUIRED_STATUS,
}
"""ARC's status counts, which this controller does not keep, and what a set that still
carries one gets instead (None: removed)."""


@dataclass(frozen=True, kw_only=True)
class StatusView:
    """The ERS status fields the controller owns, as effective values (absent = 0/"");
    ``retired``: the :data:`RETIRED_COUNTS` the set still holds with another value."""

    phase: str
    applied_revision: int
    cleanup_patch_id: int
    retired: frozenset[str] = frozenset()


_READERS: Final[dict[str, Callable[[EphemeralRunnerSet], object]]] = {
    "phase": lambda ers: ers.phase,
    "appliedActionableRevision": lambda ers: ers.applied_actionable_revision,
    "finishedRunnerCleanupPatchID": lambda ers: ers.finished_runner_cleanup_patch_id,
}

RESET_VALUES: Final[dict[str, object]] = {
    "phase": None,  # removed; the status update then derives it again
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
    (``ersctl.ephemeralrunnerset.markers.repair_status``), never a reason to stop reconciling the set.
    The retired counts are not read, so no value of theirs is malformed: step 9 clears them.
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
        applied_revision=ers.applied_actionable_revision,
        cleanup_patch_id=ers.finished_runner_cleanup_patch_id,
        retired=frozenset(
            name
            for name, value in RETIRED_COUNTS.items()
            if name in ers.status and ers.status[name] != value
        ),
    )


def desired(ers: EphemeralRunnerSet, states: RunnerStates) -> StatusView:
    """The phase from ``states``; marker and applied revision copied from ``ers``; no
    retired count left.

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
        applied_revision=ers.applied_actionable_revision,
        cleanup_patch_id=ers.finished_runner_cleanup_patch_id,
    )


def status_patch(before: StatusView, after: StatusView) -> dict[str, Any]:
    """A ``/status`` merge patch carrying exactly the fields that differ (``{}`` if none)."""
    old, new = asdict(before), asdict(after)
    changed = {
        _JSON_NAMES[key]: value
        for key, value in new.items()
        if key != "retired" and old[key] != value
    }
    changed.update({name: RETIRED_COUNTS[name] for name in before.retired - after.retired})
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
