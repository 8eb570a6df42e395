"""Garbage collection of dependents, as kube-controller-manager's garbage collector
does with background propagation.

An object whose ``ownerReferences`` all point at owners that no longer exist (no
object of that kind, name and uid) is deleted (its own finalizers still apply). When
only some owners are gone, the dangling references are removed. Owners of a kind the
server does not serve are treated as present, as the real collector cannot resolve
them either.

The collector watches commits through a store observer (cheap, under the store lock)
and does the work on its own thread.
"""

from __future__ import annotations

import copy
import logging
import queue
import threading
from collections import defaultdict
from typing import Any

from ersctl.testing.apiserver.errors import StatusError
from ersctl.testing.apiserver.resources import ResourceType
from ersctl.testing.apiserver.store import DeleteOptions, Store
from ersctl.testing.apiserver.watching import WatchEvent

log = logging.getLogger(__name__)

JsonObject = dict[str, Any]
Dependent = tuple[ResourceType, str, str]  # (type, namespace, name)


class GarbageCollector:
    """Deletes dependents of deleted owners on a background thread."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._dependents: dict[str, set[Dependent]] = defaultdict(set)
        self._queue: queue.SimpleQueue[Dependent | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="apiserver-gc", daemon=True)
        self._idle = threading.Event()
        self._idle.set()

    def start(self) -> None:
        with self._store.lock:
            self._store.observers.append(self._observe)
            for rt in self._store.registry.all():
                for entry in self._store.list_entries(rt, None)[0]:
                    self._track(rt, entry.obj)
        self._thread.start()

    def stop(self) -> None:
        with self._store.lock:
            if self._observe in self._store.observers:
                self._store.observers.remove(self._observe)
        self._queue.put(None)
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _observe(self, rt: ResourceType, event: WatchEvent) -> None:
        """Store observer: keep the owner index; queue dependents of a vanished owner."""
        meta = event.obj["metadata"]
        dependent = (rt, meta.get("namespace", ""), meta["name"])
        if event.old is not None:
            for ref in event.old["metadata"].get("ownerReferences") or []:
                self._dependents[str(ref.get("uid"))].discard(dependent)
        if event.type == "DELETED":
            for ref in meta.get("ownerReferences") or []:
                self._dependents[str(ref.get("uid"))].discard(dependent)
            orphans = self._dependents.pop(str(meta.get("uid")), set())
            for orphan in orphans:
                self._enqueue(orphan)
            return
        if self._track(rt, event.obj) and event.type == "ADDED":
            self._enqueue(dependent)  # its owner may already be gone

    def _track(self, rt: ResourceType, obj: JsonObject) -> bool:
        meta = obj["metadata"]
        refs = meta.get("ownerReferences") or []
        for ref in refs:
            self._dependents[str(ref.get("uid"))].add((rt, meta.get("namespace", ""), meta["name"]))
        return bool(refs)

    def _enqueue(self, dependent: Dependent) -> None:
        self._idle.clear()
        self._queue.put(dependent)

    def _run(self) -> None:
        while True:
            if self._queue.empty():
                self._idle.set()
            item = self._queue.get()
            if item is None:
                return
            try:
                self._collect(*item)
            except StatusError as exc:  # raced with a client write: fine, it is retried
                log.debug("garbage collection of %s/%s: %s", item[1], item[2], exc.message)
                if exc.code == 409:
                    self._queue.put(item)
            except Exception:  # the collector must survive anything
                log.exception("garbage collection of %s/%s failed", item[1], item[2])

    def wait_idle(self, timeout: float) -> bool:
        """Wait until the queue is drained (for deterministic tests and shutdown)."""
        return self._idle.wait(timeout)

    def _owner_exists(self, namespace: str, ref: JsonObject) -> bool:
        owner_type = self._store.registry.by_kind(str(ref.get("apiVersion")), str(ref.get("kind")))
        if owner_type is None:
            return True
        try:
            entry = self._store.get(owner_type, namespace, str(ref.get("name")))
        except StatusError:
            return False
        return bool(entry.obj["metadata"].get("uid") == ref.get("uid"))

    def _collect(self, rt: ResourceType, namespace: str, name: str) -> None:
        with self._store.lock:
            try:
                entry = self._store.get(rt, namespace, name)
            except StatusError:
                return
            refs = entry.obj["metadata"].get("ownerReferences") or []
            present = [ref for ref in refs if self._owner_exists(namespace, ref)]
            if len(present) == len(refs):
                return
            if not present:
                if not entry.obj["metadata"].get("deletionTimestamp"):
                    self._store.delete(
                        rt, namespace, name, DeleteOptions(uid=entry.obj["metadata"]["uid"])
                    )
                return
            patched = copy.deepcopy(entry.obj)
            patched["metadata"]["ownerReferences"] = present
            self._store.update(rt, namespace, name, patched, None)
