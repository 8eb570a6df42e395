"""Private copies of cached documents: a fast deep copy, and copy-on-write runner views.

The cache's documents are shared by every worker and never mutated; readers get
objects that behave as private copies. Copying eagerly is simple but was most of a
reconcile's CPU with thousands of runners per set (about 0.5 s at 10,000), while
the reconciler only *reads* almost all of them (phase, deletion, patch ID). A
:class:`CachedRunner` therefore reads its hot fields from the shared document and
takes its private copy the first time anything touches ``raw``, which every
mutating path of the view (setters, ``status``, ``metadata``, ``labels``...) does.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar, cast

from ersctl.api import EphemeralRunner, JsonObject

_Json = TypeVar("_Json")


def json_copy(value: _Json) -> _Json:
    """A deep copy of a JSON document (dicts, lists, scalars).

    About 1.5x faster than a naive recursive copy and 2x faster than copy.deepcopy: it
    needs no memo (JSON has no shared references) and makes no call for scalar leaves,
    which are most of a document. Copying is most of a reconcile's CPU with thousands of
    runners per set, so this matters; a C round trip (marshal) is no faster and would
    hold the GIL for the whole list, stalling the informers and lease renewals.
    """
    return cast(_Json, _copy(value))


def _copy(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {k: (_copy(v) if type(v) in _CONTAINERS else v) for k, v in value.items()}
    if kind is list:
        return [_copy(v) if type(v) in _CONTAINERS else v for v in value]
    return value


_CONTAINERS: Final = frozenset((dict, list))


class CachedRunner(EphemeralRunner):
    """An EphemeralRunner view over a shared cached document, copied on first write.

    Reading the fields in :data:`READ_THROUGH` costs no copy; anything else goes
    through ``raw``, which makes the private copy first. The shared document is never
    written. Not thread-safe (like any view): one reconcile uses it.
    """

    def __init__(self, shared: JsonObject) -> None:
        # No super().__init__: its only job, setting raw, is what this class defers.
        self._shared = EphemeralRunner(shared)  # read-only use: its getters never write
        self._own: JsonObject | None = None

    @property
    def raw(self) -> JsonObject:
        if self._own is None:
            self._own = json_copy(self._shared.raw)
        return self._own

    @raw.setter
    def raw(self, value: JsonObject) -> None:
        self._own = value

    @property
    def copied(self) -> bool:
        """Whether this view has taken its private copy yet."""
        return self._own is not None

    def _reader(self) -> EphemeralRunner:
        return self._shared if self._own is None else EphemeralRunner(self._own)

    def has_finalizer(self, finalizer: str) -> bool:
        # Read through: a steady runner's reconcile asks this and ``ready`` and nothing
        # else the shared document cannot answer, so it copies nothing (a copy was half
        # of its CPU).
        return self._reader().has_finalizer(finalizer)


READ_THROUGH: Final = (
    "name", "namespace", "uid", "resource_version", "creation_timestamp",
    "deletion_timestamp", "phase", "runner_id", "runner_name", "job_request_id", "job_id",
    "patch_id", "actionable_revision", "ready",
)  # fmt: skip
"""Getters a :class:`CachedRunner` answers from the shared document (pure reads in
``EphemeralRunner``); the derived ones (``is_deleting``, ``has_job``, ``is_done``,
``key``) follow."""


def _read_through(name: str) -> property:
    base = getattr(EphemeralRunner, name)
    assert isinstance(base, property) and base.fget is not None
    getter = base.fget
    return property(lambda self: getter(self._reader()), base.fset, doc=base.__doc__)


for _name in READ_THROUGH:
    setattr(CachedRunner, _name, _read_through(_name))
