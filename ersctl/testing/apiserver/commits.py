"""Stored objects, their commits and their watch events: one lock, one global
resourceVersion.

Every commit happens under :attr:`Commits.lock`, takes the next resourceVersion, and is
published (:mod:`.fanout`) to the watchers of its resource before the lock is released,
so each watcher sees events in commit order. Stored objects are never mutated after
they are stored (writes replace them), which lets readers share them and their cached
JSON encoding. What a write does before it commits is :class:`~.store.Store`'s.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from ersctl.testing.apiserver import errors
from ersctl.testing.apiserver.fanout import Fanout
from ersctl.testing.apiserver.records import DryRunResult, Entry, WouldCommit
from ersctl.testing.apiserver.resources import CRD_TYPE, Registry, ResourceType, types_from_crd
from ersctl.testing.apiserver.watching import (
    Predicate,
    Transform,
    Watcher,
    WatchEvent,
    encode,
)

JsonObject = dict[str, Any]
Key = tuple[str, str]  # (namespace or "", name)
Observer = Callable[[ResourceType, WatchEvent], None]


class Commits:
    """All objects of all resource types, and who watches them. Thread-safe."""

    def __init__(
        self, registry: Registry, *, history_limit: int, clock: Callable[[], float] = time.time
    ) -> None:
        self.lock = threading.RLock()
        self._committed = threading.Condition(self.lock)
        self.registry = registry
        self._clock = clock
        self._rv = 0
        self._objects: dict[str, dict[Key, Entry]] = defaultdict(dict)
        self._fanout = Fanout(history_limit=history_limit)
        for rt in registry.all():
            self._fanout.track(rt.storage_key, 0)
        self.observers: list[Observer] = []
        self._dry = False

    # -- reads ---------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        with self.lock:
            return self._rv

    def _key(self, rt: ResourceType, namespace: str, name: str) -> Key:
        return (namespace if rt.namespaced else "", name)

    def get(self, rt: ResourceType, namespace: str, name: str) -> Entry:
        """The stored entry; raises NotFound."""
        with self.lock:
            entry = self._objects[rt.storage_key].get(self._key(rt, namespace, name))
        if entry is None:
            raise errors.not_found(rt, name)
        return entry

    def list_entries(
        self, rt: ResourceType, namespace: str | None, predicates: Sequence[Predicate] = ()
    ) -> tuple[list[Entry], int]:
        """Entries sorted by (namespace, name), and the list's resourceVersion."""
        with self.lock:  # copy under the lock, sort and filter outside it
            items = list(self._objects[rt.storage_key].items())
            rv = self._rv
        items.sort(key=lambda item: item[0])
        return [
            entry
            for (ns, _), entry in items
            if (namespace is None or ns == namespace)
            and all(predicate(entry.obj) for predicate in predicates)
        ], rv

    # -- commits -------------------------------------------------------------

    def wait_for_version(self, rv: int, timeout: float) -> bool:
        """Wait until the newest commit is at least ``rv``; False after ``timeout``."""
        with self._committed:
            return self._committed.wait_for(lambda: self._rv >= rv, timeout)

    def _publish(self, rt: ResourceType, event: WatchEvent) -> None:
        self._committed.notify_all()
        self._fanout.publish(event)
        for observer in self.observers:
            observer(rt, event)

    def dry_run(self, write: Callable[[], object]) -> DryRunResult | None:
        """Run ``write`` (a create/update/patch/delete of this store) with every check
        but without storing anything: the first commit is where it stops. Returns what
        would have been written, or None when the write would change nothing.
        Raises what the write raises."""
        with self.lock:
            self._dry = True
            try:
                write()
            except WouldCommit as stop:
                return DryRunResult(stop.entry.obj, stop.removed, stop.created)
            finally:
                self._dry = False
        return None

    def _commit(
        self,
        rt: ResourceType,
        key: Key,
        obj: JsonObject,
        old: Entry | None,
        encoder: Callable[[JsonObject], bytes] = encode,
    ) -> Entry:
        """Store ``obj`` at the next resourceVersion and publish it; ``encoder`` makes
        its JSON (the same bytes as :func:`.watching.encode`)."""
        if self._dry:
            obj["metadata"]["resourceVersion"] = old.rv if old is not None else ""
            raise WouldCommit(Entry(obj, b""), removed=False, created=old is None)
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        entry = Entry(obj, encoder(obj))
        self._objects[rt.storage_key][key] = entry
        kind = "ADDED" if old is None else "MODIFIED"
        self._publish(
            rt,
            WatchEvent(
                kind,
                self._rv,
                rt.storage_key,
                key[0],
                obj,
                entry.raw,
                None if old is None else old.obj,
            ),
        )
        return entry

    def _remove(self, rt: ResourceType, key: Key, current: Entry) -> JsonObject:
        """Delete for good; the DELETED event carries the last stored state."""
        if self._dry:
            raise WouldCommit(current, removed=True)
        self._rv += 1
        gone = dict(current.obj)
        gone["metadata"] = {**current.obj["metadata"], "resourceVersion": str(self._rv)}
        del self._objects[rt.storage_key][key]
        self._publish(
            rt, WatchEvent("DELETED", self._rv, rt.storage_key, key[0], gone, encode(gone), None)
        )
        if rt.storage_key == CRD_TYPE.storage_key:
            self._stop_serving(gone)
        self._removed(rt, key)
        return gone

    def _removed(self, rt: ResourceType, key: Key) -> None:
        """Called under the lock after an object is gone for good (a hook)."""

    def _serve(self, crd: JsonObject) -> None:
        types = types_from_crd(crd)
        self.registry.serve_crd(crd["metadata"]["name"], types)
        for rt in types:
            self._fanout.track(rt.storage_key, self._rv)

    def _stop_serving(self, crd: JsonObject) -> None:
        for rt in self.registry.unserve_crd(crd["metadata"]["name"]):
            self._objects.pop(rt.storage_key, None)
            self._fanout.forget(rt.storage_key)

    # -- watch ---------------------------------------------------------------

    def set_delay(self, rt: ResourceType, seconds: float) -> None:
        with self.lock:
            self._fanout.set_delay(rt.storage_key, seconds)

    def watch(
        self,
        rt: ResourceType,
        namespace: str | None,
        predicates: list[Predicate],
        since: int | None,
        transform: Transform | None = None,
    ) -> Watcher:
        """A registered watcher. ``since`` None: synthetic ADDED events for the current
        objects first; otherwise every event after ``since`` is replayed. Raises
        :class:`TooOld` when ``since`` is older than the retained history; a ``since``
        newer than the newest commit waits for commits to pass it."""
        with self.lock:
            initial = None
            if since is None:
                entries, _ = self.list_entries(rt, namespace, predicates)
                initial = [(entry.obj, entry.raw) for entry in entries]
            return self._fanout.register(
                rt.storage_key,
                namespace=namespace,
                predicates=predicates,
                transform=transform,
                initial=initial,
                since=since or 0,
                current_rv=self._rv,
            )

    def bookmark_version(self, watcher: Watcher) -> int | None:
        """The resourceVersion a BOOKMARK would claim for ``watcher``, or None when none
        is due. It is the resource's own version (not the global one: the watch cache
        knows only its resource), and only worth a BOOKMARK once it is past what the
        watcher has been handed. None too while events are still queued (e.g. delayed)
        for the watcher: a client resuming from the bookmark would skip them."""
        with self.lock:
            latest = self._fanout.latest(watcher.storage_key)
            return latest if watcher.idle() and latest > watcher.seen else None

    def unwatch(self, watcher: Watcher) -> None:
        with self.lock:
            self._fanout.unregister(watcher)

    def close_watchers(self, rt: ResourceType | None = None) -> None:
        """End every open watch (of ``rt`` only, when given)."""
        with self.lock:
            self._fanout.close_all(None if rt is None else rt.storage_key)
