"""The cached reader: the informer stores of sets and runners seen through
``ersctl.ephemeralrunnerset.ports.CachedReader``, and copy-on-write runner views.

Reads never do I/O and may lag behind the API server by the watch latency (or more,
when a watch is delayed). Every object handed out behaves as a private deep copy, so
the reconciler may mutate it freely without corrupting the cache other workers read:
sets are copied at once; runners are copy-on-write views (:class:`CachedRunner`),
because copying thousands of runners was most of a reconcile's CPU (about 0.5 s at
10,000), while the reconciler only *reads* almost all of them (phase, deletion, patch
ID). A :class:`CachedRunner` therefore reads its hot fields from the shared document
and takes its private copy the first time anything touches ``raw``, which every
mutating path of the view (setters, ``status``, ``metadata``, ``labels``...) does.
"""

from __future__ import annotations

from typing import Any, Final

from ersctl.api import EphemeralRunner, EphemeralRunnerSet, JsonObject
from ersctl.arcclient.kinds import RUNNERS, SETS
from ersctl.kube.copies import json_copy
from ersctl.kube.manager import Manager
from ersctl.kube.store import OWNER_UID_INDEX, Store, metadata


class CachedReader:
    """Implements ``ersctl.ephemeralrunnerset.ports.CachedReader`` over an ERS store and a runner store.

    ``runners`` must carry the ``owner-uid`` index
    (:func:`ersctl.kube.store.controller_owner_uid`).
    """

    def __init__(self, *, sets: Store, runners: Store) -> None:
        self._sets = sets
        self._runners = runners

    def get_ers(self, namespace: str, name: str) -> EphemeralRunnerSet | None:
        """A copy of the cached ERS, or None when the cache does not hold it."""
        raw = self._sets.get(namespace, name)
        return None if raw is None else EphemeralRunnerSet(json_copy(raw))

    def list_owned_runners(self, ers: EphemeralRunnerSet) -> list[EphemeralRunner]:
        """Copy-on-write views of the cached runners controlled by ``ers`` (by
        ownerReference uid), oldest first (creationTimestamp, then name)."""
        if not ers.uid:
            return []
        namespace = ers.namespace
        owned = [
            raw
            for raw in self._runners.by_index(OWNER_UID_INDEX, ers.uid)
            if metadata(raw).get("namespace") == namespace
        ]
        owned.sort(key=_age_key)
        return [CachedRunner(raw) for raw in owned]

    def get_runner(self, namespace: str, name: str) -> EphemeralRunner | None:
        """A copy-on-write view of the cached runner, or None when the cache does not hold it."""
        raw = self._runners.get(namespace, name)
        return None if raw is None else CachedRunner(raw)

    def list_ers(self, namespace: str | None = None) -> list[EphemeralRunnerSet]:
        """Copies of every cached ERS (optionally of one namespace)."""
        return [EphemeralRunnerSet(json_copy(raw)) for raw in self._sets.values(namespace)]


def cached_reader(manager: Manager) -> CachedReader:
    """The sets and runners ``manager`` caches (watched from now on)."""
    return CachedReader(sets=manager.store(SETS), runners=manager.store(RUNNERS))


def _age_key(raw: dict[str, Any]) -> tuple[str, str]:
    meta = metadata(raw)
    return (str(meta.get("creationTimestamp") or ""), str(meta.get("name") or ""))


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
