"""The cached reader: the informer stores seen through ``ersctl.runnerset.ports.CachedReader``.

Reads never do I/O and may lag behind the API server by the watch latency (or more,
when a watch is delayed). Every object handed out behaves as a private deep copy, so
the reconciler may mutate it freely without corrupting the cache other workers read:
sets are copied at once; runners are copy-on-write views (``ersctl.kube.copies``),
because copying thousands of runners was most of a reconcile's CPU.
"""

from __future__ import annotations

from typing import Any

from ersctl.api import EphemeralRunner, EphemeralRunnerSet
from ersctl.kube.copies import CachedRunner, json_copy
from ersctl.kube.store import OWNER_UID_INDEX, Store, metadata


class CachedReader:
    """Implements ``ersctl.runnerset.ports.CachedReader`` over an ERS store and a runner store.

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


def _age_key(raw: dict[str, Any]) -> tuple[str, str]:
    meta = metadata(raw)
    return (str(meta.get("creationTimestamp") or ""), str(meta.get("name") or ""))
