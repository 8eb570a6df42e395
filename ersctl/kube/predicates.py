"""Event filters: which watch events are worth a reconcile (controller-runtime's predicates).

Every write a controller makes comes back to it as a watch event. Without filters, its
own status writes would each schedule a reconcile that has nothing to do. A
controller's filters (in its own package) compare exactly the fields its reconciler
reads, with the helpers here.

Creates and deletes always pass; so does an update whose old state is unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

Json = Mapping[str, Any]

WATCHED_METADATA: Final = ("labels", "annotations", "finalizers", "deletionTimestamp")
"""The metadata a reconciler acts on. resourceVersion, managedFields and the like change
on every write and mean nothing to a reconcile."""


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


def spec_or_metadata_changed(old: Json, new: Json) -> bool:
    """An update matters when the object's spec or watched metadata changed, not its
    status alone: a controller's own status writes (its bookkeeping) enqueue nothing."""
    return metadata_changed(old, new, WATCHED_METADATA) or section(old, "spec") != section(
        new, "spec"
    )


SPEC_OR_METADATA_PREDICATE: Final = UpdateFilter(spec_or_metadata_changed)


def section(doc: Json, key: str) -> Any:
    """``doc[key]``, None when absent or empty."""
    value = doc.get(key)
    # An absent section and an empty one are the same object to the reconciler.
    return value if value else None


def status_field(doc: Json, key: str) -> Any:
    """``doc["status"][key]``, None when absent."""
    status = doc.get("status")
    return status.get(key) if isinstance(status, Mapping) else None


def metadata_changed(old: Json, new: Json, keys: tuple[str, ...]) -> bool:
    """Whether any of the metadata ``keys`` differs between ``old`` and ``new``."""
    old_meta, new_meta = old.get("metadata"), new.get("metadata")
    old_meta = old_meta if isinstance(old_meta, Mapping) else {}
    new_meta = new_meta if isinstance(new_meta, Mapping) else {}
    return any(section(old_meta, key) != section(new_meta, key) for key in keys)
