"""Garbage collection of dependents, as kube-controller-manager's garbage collector
does with background propagation.

An object whose ``ownerReferences`` all point at owners that no longer exist (no
object of that kind, name and uid) is deleted (its own finalizers still apply). When
only some owners are gone, the dangling references are removed. Owners of a kind the
server does not serve are treated as present, as the real collector cannot resolve
them either.

The collector watches commits through a store observer (cheap, under the store lock)
and does the work on the controllers' worker (:mod:`.controllers`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ersctl.kube.copies import json_copy
from ersctl.testing.apiserver.controllers import Action, Controller, Worker
from ersctl.testing.apiserver.errors import StatusError
from ersctl.testing.apiserver.records import FOREGROUND_FINALIZER, DeleteOptions
from ersctl.testing.apiserver.resources import ResourceType
from ersctl.testing.apiserver.store import Store
from ersctl.testing.apiserver.watching import WatchEvent

JsonObject = dict[str, Any]
Dependent = tuple[ResourceType, str, str]  # (type, namespace, name)


class GarbageCollector(Controller):
    """Deletes dependents of deleted owners on the controllers' worker, and finishes
    foreground deletions (owners held by the ``foregroundDeletion`` finalizer)."""

    def __init__(self, store: Store, worker: Worker) -> None:
        super().__init__(store, worker)
        self._dependents: dict[str, set[Dependent]] = defaultdict(set)
        self._foreground: dict[str, Dependent] = {}  # owner uid -> owner

    def resync(self) -> None:
        for rt in self._store.registry.all():
            for entry in self._store.list_entries(rt, None)[0]:
                self._track(rt, entry.obj)

    # -- bookkeeping (store observer: runs under the store lock, must not block) --

    def observe(self, rt: ResourceType, event: WatchEvent) -> None:
        meta = event.obj["metadata"]
        item = (rt, meta.get("namespace", ""), meta["name"])
        if event.old is not None:
            self._untrack(item, event.old)
        if event.type == "DELETED":
            self._untrack(item, event.obj)
            self._foreground.pop(str(meta.get("uid")), None)
            for orphan in self._dependents.pop(str(meta.get("uid")), set()):
                self._enqueue(self._collect, orphan)
            for ref in meta.get("ownerReferences") or []:
                owner = self._foreground.get(str(ref.get("uid")))
                if owner is not None:
                    self._enqueue(self._finish_foreground, owner)
            return
        if self._track(rt, event.obj) and event.type == "ADDED":
            self._enqueue(self._collect, item)  # its owner may already be gone
        if meta.get("deletionTimestamp") and FOREGROUND_FINALIZER in meta.get("finalizers", []):
            self._foreground[str(meta.get("uid"))] = item
            self._enqueue(self._finish_foreground, item)

    def _track(self, rt: ResourceType, obj: JsonObject) -> bool:
        meta = obj["metadata"]
        refs = meta.get("ownerReferences") or []
        for ref in refs:
            self._dependents[str(ref.get("uid"))].add((rt, meta.get("namespace", ""), meta["name"]))
        return bool(refs)

    def _untrack(self, item: Dependent, obj: JsonObject) -> None:
        for ref in obj["metadata"].get("ownerReferences") or []:
            uid = str(ref.get("uid"))
            dependents = self._dependents.get(uid)
            if dependents is not None:
                dependents.discard(item)
                if not dependents:
                    del self._dependents[uid]

    def _enqueue(self, action: Action, item: Dependent) -> None:
        self._worker.enqueue(action, item)

    def _owner_exists(self, namespace: str, ref: JsonObject) -> bool:
        owner_type = self._store.registry.by_kind(str(ref.get("apiVersion")), str(ref.get("kind")))
        if owner_type is None:
            return True  # a kind nobody serves: the real collector cannot tell either
        try:
            entry = self._store.get(owner_type, namespace, str(ref.get("name")))
        except StatusError:
            return False
        return bool(entry.obj["metadata"].get("uid") == ref.get("uid"))

    def _collect(self, rt: ResourceType, namespace: str, name: str) -> None:
        """Delete the object if all its owners are gone; drop references to gone ones."""
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
                    uid = entry.obj["metadata"]["uid"]
                    self._store.delete(rt, namespace, name, DeleteOptions(uid=uid))
                return
            patched = json_copy(entry.obj)
            patched["metadata"]["ownerReferences"] = present
            self._store.update(rt, namespace, name, patched, None)

    def _finish_foreground(self, rt: ResourceType, namespace: str, name: str) -> None:
        """Delete the owner's dependents; once no blocking one is left, remove the
        ``foregroundDeletion`` finalizer so the owner can go."""
        with self._store.lock:
            try:
                owner = self._store.get(rt, namespace, name).obj
            except StatusError:
                return
            uid = str(owner["metadata"].get("uid"))
            blocking = 0
            for dep_rt, dep_ns, dep_name in list(self._dependents.get(uid, ())):
                try:
                    dependent = self._store.get(dep_rt, dep_ns, dep_name).obj
                except StatusError:
                    continue
                if not dependent["metadata"].get("deletionTimestamp"):
                    self._store.delete(dep_rt, dep_ns, dep_name, DeleteOptions())
                refs = dependent["metadata"].get("ownerReferences") or []
                blocking += any(r.get("uid") == uid and r.get("blockOwnerDeletion") for r in refs)
            if blocking:
                return  # the dependents' DELETED events bring us back here
            finalizers = [
                f for f in owner["metadata"].get("finalizers", []) if f != FOREGROUND_FINALIZER
            ]
            self._store.patch(
                rt,
                namespace,
                name,
                lambda current: {
                    **current,
                    "metadata": {**current["metadata"], "finalizers": finalizers},
                },
                None,
            )
