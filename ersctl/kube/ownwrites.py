"""Read your own writes: the newest version of an object this process wrote, while the
informer cache still shows an older one.

Pure bookkeeping (no I/O). Every write answers with the object as the server then
holds it, but the informer shows that version only when its watch event arrives; a
reconcile triggered meanwhile (by another event, often one the write itself caused)
would start from the older cached copy and either send again what it just sent (a
write that changes nothing) or, with a resourceVersion lock, lose a 409 and retry.

So per object the answer to this process's latest write is kept with the resource
versions known to be *older* than it (the versions its writes were computed from). A
reconcile whose cached object has one of those versions starts from the answer
instead; any other cached version (the write's own, anything the server produced
since, or one in between) drops the record and the cache is believed again. Resource
versions are compared only for equality, never ordered: the server makes them opaque.

Keyed by ``namespace/name`` and tied to the uid, so an object deleted and recreated
under the same name never inherits its predecessor's record. Thread-safe.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Final, Generic, TypeVar

from ersctl.kube.reconcile import ObjectRef

_OLDER_LIMIT: Final = 64  # a cache that never moves: stop trusting the record

T = TypeVar("T", bound=ObjectRef)


@dataclass
class _Written(Generic[T]):
    answer: T
    older: set[str] = field(default_factory=set)


class OwnWrites(Generic[T]):
    """See the module docstring."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._written: dict[str, _Written[T]] = {}

    def written(self, sent_on: T, answer: T) -> T:
        """Record that a write computed on ``sent_on`` was answered with ``answer``;
        return ``answer`` (a write-through is then one line)."""
        with self._lock:
            record = self._written.get(answer.key)
            older = set() if record is None or record.answer.uid != answer.uid else record.older
            if record is not None and record.answer.uid == answer.uid:
                older.add(record.answer.resource_version)
            older.add(sent_on.resource_version)
            older.discard(answer.resource_version)
            if len(older) > _OLDER_LIMIT:
                self._written.pop(answer.key, None)
            else:
                self._written[answer.key] = _Written(answer, older)
        return answer

    def newest(self, cached: T) -> T:
        """``cached``, or the answer to this process's write when ``cached`` predates it."""
        with self._lock:
            record = self._written.get(cached.key)
            if record is None:
                return cached
            if record.answer.uid == cached.uid and cached.resource_version in record.older:
                return record.answer
            del self._written[cached.key]  # the cache moved on: believe it again
            return cached

    def forget(self, key: str) -> None:
        """Drop the record of ``key`` (the object is gone)."""
        with self._lock:
            self._written.pop(key, None)
