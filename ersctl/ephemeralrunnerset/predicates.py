"""The EphemeralRunnerSet controller's event filters (ARC's predicates).

Without them, its own status writes (the marker ``status.finishedRunnerCleanupPatchID``,
counts) and the listener's job-info writes on runners would each schedule a reconcile
that has nothing to do. They compare exactly the fields the reconciler reads.
"""

from __future__ import annotations

from typing import Final

from ersctl.kube.predicates import (
    WATCHED_METADATA,
    Json,
    UpdateFilter,
    metadata_changed,
    section,
    status_field,
)

_RUNNER_METADATA: Final = (*WATCHED_METADATA, "ownerReferences")


def ers_update_matters(old: Json, new: Json) -> bool:
    """An ERS update matters when the reconciler's inputs changed.

    Those are the metadata it reads, the spec, ``status.phase`` and
    ``status.appliedActionableRevision``. A change to the marker alone (or to the
    display counts) does not: the reconcile that wrote it already acted on it, and the
    guard reads the marker through the API reader, never from this event.
    """
    return (
        metadata_changed(old, new, WATCHED_METADATA)
        or section(old, "spec") != section(new, "spec")
        or status_field(old, "phase") != status_field(new, "phase")
        or status_field(old, "appliedActionableRevision")
        != status_field(new, "appliedActionableRevision")
    )


def runner_update_matters(old: Json, new: Json) -> bool:
    """An EphemeralRunner update matters when its metadata, spec, phase or runnerId changed.

    The listener's job fields (``jobId``, ``jobRepositoryName``...), ``ready`` and
    ``message`` alone do not change how runners are classified.
    """
    return (
        metadata_changed(old, new, _RUNNER_METADATA)
        or section(old, "spec") != section(new, "spec")
        or status_field(old, "phase") != status_field(new, "phase")
        or status_field(old, "runnerId") != status_field(new, "runnerId")
    )


ERS_PREDICATE: Final = UpdateFilter(ers_update_matters)
RUNNER_PREDICATE: Final = UpdateFilter(runner_update_matters)
