"""Values the store hands around: stored entries, delete options, dry-run results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

JsonObject = dict[str, Any]

FOREGROUND_FINALIZER = "foregroundDeletion"


@dataclass(frozen=True, slots=True)
class Entry:
    """A stored object and its JSON encoding (both immutable by convention)."""

    obj: JsonObject
    raw: bytes

    @property
    def rv(self) -> str:
        return str(self.obj["metadata"]["resourceVersion"])


class WouldCommit(Exception):
    """Raised at the first commit of a dry run, carrying what would have been stored
    (``removed``: the write would delete the object; ``created``: create it)."""

    def __init__(self, entry: Entry, *, removed: bool, created: bool = False) -> None:
        super().__init__("dry run")
        self.entry = entry
        self.removed = removed
        self.created = created


@dataclass(frozen=True, slots=True)
class DryRunResult:
    """The outcome of a write run with ``dryRun=All``: nothing was stored."""

    obj: JsonObject
    removed: bool
    created: bool = False


@dataclass(frozen=True, kw_only=True)
class DeleteOptions:
    """``DeleteOptions`` that matter here: preconditions and propagation policy
    (Background, Foreground or Orphan)."""

    uid: str | None = None
    resource_version: str | None = None
    propagation: str = "Background"
