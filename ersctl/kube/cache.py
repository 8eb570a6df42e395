"""The cached reader: the informer stores seen through ``ersctl.ports.CachedReader``.

Reads never do I/O and may lag behind the API server by the watch latency (or more,
when a watch is delayed). Every object handed out is a private deep copy, so the
reconciler may mutate it freely without corrupting the cache other workers read.
"""

from __future__ import annotations

from typing import Any, Final

from ersctl.api import EphemeralRunner, EphemeralRunnerSet
from ersctl.kube.store import OWNER_UID_INDEX, Store, metadata


class CachedReader:
    """Implements ``ersctl.ports.CachedReader`` over an ERS store and a runner store.

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
        """Copies of the cached runners controlled by ``ers`` (by ownerReference uid),
        oldest first (creationTimestamp, then name), so callers get a stable order."""
        if not ers.uid:
            return []
        namespace = ers.namespace
        owned = [
            raw
            for raw in self._runners.by_index(OWNER_UID_INDEX, ers.uid)
            if metadata(raw).get("namespace") == namespace
        ]
        owned.sort(key=_age_key)
        return [EphemeralRunner(json_copy(raw)) for raw in owned]

    def list_ers(self, namespace: str | None = None) -> list[EphemeralRunnerSet]:
        """Copies of every cached ERS (optionally of one namespace)."""
        return [EphemeralRunnerSet(json_copy(raw)) for raw in self._sets.values(namespace)]


def json_copy(value: Any) -> Any:
    """A deep copy of a JSON document (dicts, lists, scalars).

    About 1.5x faster than a naive recursive copy and 2x faster than copy.deepcopy: it
    needs no memo (JSON has no shared references) and makes no call for scalar leaves,
    which are most of a document. Copying is most of a reconcile's CPU with thousands of
    runners per set, so this matters; a C round trip (marshal) is no faster and would
    hold the GIL for the whole list, stalling the informers and lease renewals.
    """
    kind = type(value)
    if kind is dict:
        return {k: (json_copy(v) if type(v) in _CONTAINERS else v) for k, v in value.items()}
    if kind is list:
        return [json_copy(v) if type(v) in _CONTAINERS else v for v in value]
    return value


_CONTAINERS: Final = frozenset((dict, list))


def _age_key(raw: dict[str, Any]) -> tuple[str, str]:
    meta = metadata(raw)
    return (str(meta.get("creationTimestamp") or ""), str(meta.get("name") or ""))
