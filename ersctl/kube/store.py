"""The thread-safe object store an informer fills, with secondary indexes.

Objects are the JSON documents the API server sent, keyed by ``(namespace, name)``.
A stored document is never mutated: an update replaces it whole. Readers may
therefore hold a document outside the lock, but must copy it before changing it
(``ersctl.arcclient.cache`` does).

Indexes map an index value to the keys of the objects that produce it, e.g. the
``owner-uid`` index maps an ERS uid to the runners it controls, so listing one
set's runners costs its own size, not the size of the cache.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

Json = dict[str, Any]
ObjectKey = tuple[str, str]
IndexFunc = Callable[[Json], Iterable[str]]

OWNER_UID_INDEX: Final = "owner-uid"


def metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj["metadata"]``, or an empty mapping when it is absent or not an object."""
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def object_key(obj: Mapping[str, Any]) -> ObjectKey:
    """``(namespace, name)`` of a document (empty strings when absent)."""
    meta = metadata(obj)
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def controller_owner_uid(obj: Json) -> list[str]:
    """Index function: the uid of the ownerReference with ``controller: true``, if any."""
    refs = metadata(obj).get("ownerReferences")
    for ref in refs if isinstance(refs, list) else ():
        if isinstance(ref, dict) and ref.get("controller") is True and ref.get("uid"):
            return [str(ref["uid"])]
    return []


@dataclass(frozen=True)
class Delta:
    """One change a relist found: ``old`` None = added, ``new`` None = deleted."""

    old: Json | None
    new: Json | None


class Store:
    """A thread-safe map of documents with secondary indexes (see module docstring)."""

    def __init__(self, *, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._lock = threading.RLock()
        self._items: dict[ObjectKey, Json] = {}
        self._indexers = dict(indexers or {})
        self._indexes: dict[str, dict[str, set[ObjectKey]]] = {n: {} for n in self._indexers}

    def get(self, namespace: str, name: str) -> Json | None:
        """The stored document (shared: do not mutate), or None."""
        with self._lock:
            return self._items.get((namespace, name))

    def values(self, namespace: str | None = None) -> list[Json]:
        """Every stored document, optionally only those of one namespace (shared)."""
        with self._lock:
            if namespace is None:
                return list(self._items.values())
            return [obj for (ns, _), obj in self._items.items() if ns == namespace]

    def list_keys(self) -> list[ObjectKey]:
        with self._lock:
            return list(self._items)

    def by_index(self, index: str, value: str) -> list[Json]:
        """Documents whose index function ``index`` yields ``value`` (shared)."""
        with self._lock:
            keys = self._indexes[index].get(value, ())
            return [self._items[key] for key in keys]

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def upsert(self, obj: Json) -> Json | None:
        """Store ``obj`` (add or replace); returns the document it replaced, if any."""
        key = object_key(obj)
        with self._lock:
            old = self._items.get(key)
            if old is not None:
                self._unindex(key, old)
            self._items[key] = obj
            self._index(key, obj)
            return old

    def delete(self, obj: Json) -> Json | None:
        """Remove the document with ``obj``'s key; returns the removed one, if any."""
        key = object_key(obj)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._unindex(key, old)
            return old

    def replace(self, objs: Iterable[Json]) -> list[Delta]:
        """Make the store hold exactly ``objs`` (a relist); returns what changed.

        Unchanged documents (same resourceVersion) yield no delta, so a relist after a
        dropped watch only replays what was missed.
        """
        deltas: list[Delta] = []
        with self._lock:
            seen: set[ObjectKey] = set()
            for obj in objs:
                key = object_key(obj)
                seen.add(key)
                old = self._items.get(key)
                if old is None or _rv(old) != _rv(obj):
                    self.upsert(obj)
                    deltas.append(Delta(old, obj))
            for key in [k for k in self._items if k not in seen]:
                deltas.append(Delta(self._items[key], None))
                self.delete(self._items[key])
        return deltas

    def _index(self, key: ObjectKey, obj: Json) -> None:
        for name, func in self._indexers.items():
            for value in func(obj):
                self._indexes[name].setdefault(value, set()).add(key)

    def _unindex(self, key: ObjectKey, obj: Json) -> None:
        for name, func in self._indexers.items():
            index = self._indexes[name]
            for value in func(obj):
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]


def _rv(obj: Json) -> str:
    return str(metadata(obj).get("resourceVersion") or "")
