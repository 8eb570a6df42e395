"""Event filters: which watch events are worth a reconcile (ARC's predicates).

Every write the controller makes comes back to it as a watch event. Without filters,
its own status writes (the marker ``status.finishedRunnerCleanupPatchID``, counts)
and the listener's job-info writes on runners would each schedule a reconcile that
has nothing to do. The filters compare exactly the fields the reconciler reads.

Creates and deletes always pass; so does an update whose old state is unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

Json = Mapping[str, Any]

# The metadata the ERS reconciler acts on. resourceVersion, managedFields and the like
# change on every write and mean nothing to a reconcile.
_WATCHED_METADATA: Final = ("labels", "annotations", "finalizers", "deletionTimestamp")
_RUNNER_METADATA: Final = (*_WATCHED_METADATA, "ownerReferences")


class Predicate(Protocol):
    """Decides whether one watch event should enqueue a reconcile."""

    def create(self, obj: Json) -> bool: ...

    def update(self, old: Json, new: Json) -> bool: ...

    def delete(self, obj: Json) -> bool: ...


@dataclass(frozen=True)
class UpdateFilter:
    """A :class:`Predicate` that passes creates and deletes, and updates when ``changed``."""

    changed: Callable[[Json, Json], bool]

    def create(self, obj: Json) -> bool:
        return True

    def update(self, old: Json, new: Json) -> bool:
        return self.changed(old, new)

    def delete(self, obj: Json) -> bool:
        return True


class AlwaysPass:
    """A :class:`Predicate` that lets every event through."""

    def create(self, obj: Json) -> bool:
        return True

    def update(self, old: Json, new: Json) -> bool:
        return True

    def delete(self, obj: Json) -> bool:
        return True


def ers_update_matters(old: Json, new: Json) -> bool:
    """An ERS update matters when the reconciler's inputs changed.

    Those are the metadata it reads, the spec, ``status.phase`` and
    ``status.appliedActionableRevision``. A change to the marker alone (or to the
    display counts) does not: the reconcile that wrote it already acted on it, and the
    guard reads the marker through the API reader, never from this event.
    """
    return (
        _metadata_changed(old, new, _WATCHED_METADATA)
        or _get(old, "spec") != _get(new, "spec")
        or _status(old, "phase") != _status(new, "phase")
        or _status(old, "appliedActionableRevision") != _status(new, "appliedActionableRevision")
    )


def runner_update_matters(old: Json, new: Json) -> bool:
    """An EphemeralRunner update matters when its metadata, spec, phase or runnerId changed.

    The listener's job fields (``jobId``, ``jobRepositoryName``...), ``ready`` and
    ``message`` alone do not change how runners are classified.
    """
    return (
        _metadata_changed(old, new, _RUNNER_METADATA)
        or _get(old, "spec") != _get(new, "spec")
        or _status(old, "phase") != _status(new, "phase")
        or _status(old, "runnerId") != _status(new, "runnerId")
    )


def spec_or_metadata_changed(old: Json, new: Json) -> bool:
    """An update matters when the object's spec or watched metadata changed, not its
    status alone: an AutoscalingRunnerSet's own status writes, or the listener
    controller's restart bookkeeping on an AutoscalingListener, enqueue nothing."""
    return _metadata_changed(old, new, _WATCHED_METADATA) or _get(old, "spec") != _get(new, "spec")


ERS_PREDICATE: Final = UpdateFilter(ers_update_matters)
SPEC_OR_METADATA_PREDICATE: Final = UpdateFilter(spec_or_metadata_changed)
RUNNER_PREDICATE: Final = UpdateFilter(runner_update_matters)


def _get(doc: Json, key: str) -> Any:
    value = doc.get(key)
    # An absent section and an empty one are the same object to the reconciler.
    return value if value else None


def _status(doc: Json, key: str) -> Any:
    status = doc.get("status")
    return status.get(key) if isinstance(status, Mapping) else None


def _metadata_changed(old: Json, new: Json, keys: tuple[str, ...]) -> bool:
    old_meta, new_meta = old.get("metadata"), new.get("metadata")
    old_meta = old_meta if isinstance(old_meta, Mapping) else {}
    new_meta = new_meta if isinstance(new_meta, Mapping) else {}
    return any(_get(old_meta, key) != _get(new_meta, key) for key in keys)
