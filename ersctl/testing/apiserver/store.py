"""The object store: one lock, one global resourceVersion.

Every write happens under :attr:`Store.lock`, takes the next resourceVersion, and is
published (:mod:`.fanout`) to the watchers of its resource before the lock is
released, so each watcher sees events in commit order. Stored objects are never mutated after they are stored
(writes replace them), which lets readers share them and their cached JSON encoding.

Container-like lifecycles live here too: a deleted namespace (or CRD) is kept with a
``deletionTimestamp`` until everything inside it is gone.
"""

from __future__ import annotations

import copy
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from ersctl.testing.apiserver import crds, errors, schema, semantics
from ersctl.testing.apiserver.fanout import Fanout
from ersctl.testing.apiserver.records import (
    FOREGROUND_FINALIZER,
    DeleteOptions,
    DryRunResult,
    Entry,
    WouldCommit,
)
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


class Store:
    """All objects of all resource types. Thread-safe."""

    def __init__(
        self, registry: Registry, *, history_limit: int, clock: Callable[[], float] = time.time
    ) -> None:
        self.lock = threading.RLock()
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

    def _publish(self, rt: ResourceType, event: WatchEvent) -> None:
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
                return DryRunResult(stop.entry.obj, stop.removed)
            finally:
                self._dry = False
        return None

    def _commit(self, rt: ResourceType, key: Key, obj: JsonObject, old: Entry | None) -> Entry:
        if self._dry:
            obj["metadata"]["resourceVersion"] = old.rv if old is not None else ""
            raise WouldCommit(Entry(obj, b""), removed=False)
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        entry = Entry(obj, encode(obj))
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
        if rt.plural == "namespaces":
            return gone
        if rt.storage_key == CRD_TYPE.storage_key:
            self._stop_serving(gone)
        if key[0]:
            self._finish_namespace(key[0])
        if rt.custom:
            self._finish_crd_of(rt)
        return gone

    # -- writes --------------------------------------------------------------

    def create(self, rt: ResourceType, namespace: str, body: Any) -> Entry:
        """Store a new object. Raises AlreadyExists, Invalid, BadRequest, NotFound
        (namespace) or Forbidden (namespace terminating)."""
        with self.lock:
            obj = self._conform(rt, semantics.prepare_create(rt, body, namespace, self._clock()))
            if rt.namespaced:
                self._check_namespace_open(namespace)
            if rt.storage_key == CRD_TYPE.storage_key:
                crds.accept(obj)
            key = self._key(rt, namespace, obj["metadata"]["name"])
            while key in self._objects[rt.storage_key]:
                if not obj["metadata"].get("generateName"):
                    raise errors.already_exists(rt, key[1])
                obj["metadata"]["name"] = semantics.generated_name(obj["metadata"]["generateName"])
                key = self._key(rt, namespace, obj["metadata"]["name"])
            entry = self._commit(rt, key, obj, None)
            if rt.storage_key == CRD_TYPE.storage_key:
                self._serve(entry.obj)
            return entry

    def update(
        self, rt: ResourceType, namespace: str, name: str, body: Any, subresource: str | None
    ) -> Entry:
        """PUT semantics. Raises NotFound, Conflict (stale resourceVersion), Invalid,
        BadRequest."""
        with self.lock:
            current = self.get(rt, namespace, name)
            semantics.check_shape(rt, body)
            self._check_identity(rt, namespace, name, body)
            uid = semantics.metadata_of(body).get("uid")
            if uid:  # a uid in a PUT body is a precondition, as in DeleteOptions
                semantics.check_preconditions(rt, current.obj, uid=str(uid), resource_version=None)
            if not semantics.metadata_of(body).get("resourceVersion") and not (
                rt.unconditional_update
            ):
                raise errors.invalid(
                    rt,
                    name,
                    "metadata.resourceVersion",
                    "FieldValueInvalid",
                    "Invalid value: 0x0: must be specified for an update",
                )
            return self._update(rt, current, body, subresource)

    def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        apply: Callable[[JsonObject], Any],
        subresource: str | None,
    ) -> Entry:
        """Apply ``apply`` to a copy of the stored object, then update with the result.

        A ``metadata.resourceVersion`` left in the result by the patch is a
        precondition (409 Conflict when stale)."""
        with self.lock:
            current = self.get(rt, namespace, name)
            patched = apply(copy.deepcopy(current.obj))
            semantics.check_shape(rt, patched)
            self._check_identity(rt, namespace, name, patched)
            return self._update(rt, current, patched, subresource)

    def _conform(self, rt: ResourceType, obj: JsonObject) -> JsonObject:
        """Prune and validate a custom resource against its CRD's schema (422)."""
        if not rt.custom or rt.schema is None:
            return obj
        pruned = schema.prune_object(obj, rt.schema)
        violations = schema.validate(pruned, rt.schema)
        if violations:
            raise errors.invalid_fields(rt, str(obj["metadata"].get("name", "")), violations)
        return pruned

    def _check_identity(self, rt: ResourceType, namespace: str, name: str, body: Any) -> None:
        meta = semantics.metadata_of(body)
        if meta.get("name", name) != name:
            raise errors.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on "
                f"the URL ({name})"
            )
        if rt.namespaced and meta.get("namespace", namespace) not in (namespace, ""):
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent "
                "on the request"
            )

    def _update(
        self, rt: ResourceType, current: Entry, body: JsonObject, subresource: str | None
    ) -> Entry:
        wanted = semantics.metadata_of(body).get("resourceVersion")
        name = current.obj["metadata"]["name"]
        if wanted and str(wanted) != current.rv:
            raise errors.conflict(rt, name)
        new = self._conform(rt, semantics.prepare_update(rt, current.obj, body, subresource))
        new["metadata"]["resourceVersion"] = current.rv
        if semantics.same_content(new, current.obj):
            return current  # like etcd's GuaranteedUpdate: no write, no event
        if rt.storage_key == CRD_TYPE.storage_key and subresource is None:
            crds.accept(new)
        key = self._key(rt, current.obj["metadata"].get("namespace", ""), name)
        meta = new["metadata"]
        if (
            meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and not self._is_container_in_use(rt, current.obj)
        ):
            gone = self._remove(rt, key, current)
            return Entry(gone, encode(gone))
        entry = self._commit(rt, key, new, current)
        if rt.storage_key == CRD_TYPE.storage_key:
            self._serve(entry.obj)
        return entry

    def delete(
        self, rt: ResourceType, namespace: str, name: str, options: DeleteOptions
    ) -> tuple[JsonObject, bool]:
        """Delete an object: returns (object, deleted_now). An object with finalizers
        (or a non-empty namespace/CRD) is only marked with ``deletionTimestamp``.
        Raises NotFound, Conflict (failed precondition)."""
        with self.lock:
            current = self.get(rt, namespace, name)
            semantics.check_preconditions(
                rt, current.obj, uid=options.uid, resource_version=options.resource_version
            )
            key = self._key(rt, namespace, name)
            if options.propagation == "Orphan":
                self._orphan_dependents(current.obj)
            meta = current.obj["metadata"]
            container = _is_container(rt)
            foreground = options.propagation == "Foreground"
            if not meta.get("finalizers") and not container and not foreground:
                return self._remove(rt, key, current), True
            if not meta.get("deletionTimestamp"):
                current = self._commit(
                    rt, key, self._marked_for_deletion(rt, current.obj, foreground), current
                )
            if container:
                self._empty_container(rt, current.obj)
                remaining = self._objects[rt.storage_key].get(key)
                if remaining is None:
                    return current.obj, True
                current = remaining
            return current.obj, False

    def _marked_for_deletion(
        self, rt: ResourceType, obj: JsonObject, foreground: bool
    ) -> JsonObject:
        marked = copy.deepcopy(obj)
        meta = marked["metadata"]
        meta["deletionTimestamp"] = semantics.timestamp(self._clock())
        meta["deletionGracePeriodSeconds"] = 0
        if foreground and FOREGROUND_FINALIZER not in meta.get("finalizers", []):
            # The garbage collector removes it once the blocking dependents are gone.
            meta["finalizers"] = [*meta.get("finalizers", []), FOREGROUND_FINALIZER]
        if rt.plural == "namespaces":
            marked.setdefault("status", {})["phase"] = "Terminating"
        return marked

    def _orphan_dependents(self, owner: JsonObject) -> None:
        uid = owner["metadata"].get("uid")
        for storage_key, objects in list(self._objects.items()):
            for key, entry in list(objects.items()):
                refs = entry.obj["metadata"].get("ownerReferences") or []
                kept = [ref for ref in refs if ref.get("uid") != uid]
                if len(kept) != len(refs):
                    rt = self._type_of(storage_key)
                    new = copy.deepcopy(entry.obj)
                    new["metadata"]["ownerReferences"] = kept
                    if not kept:
                        del new["metadata"]["ownerReferences"]
                    if rt is not None:
                        self._commit(rt, key, new, entry)

    def _type_of(self, storage_key: str) -> ResourceType | None:
        for rt in self.registry.all():
            if rt.storage_key == storage_key:
                return rt
        return None

    # -- namespaces and CRDs -------------------------------------------------

    def _check_namespace_open(self, namespace: str) -> None:
        ns_type = self.registry.resolve("namespaces")
        entry = self._objects[ns_type.storage_key].get(("", namespace))
        if entry is None:
            raise errors.namespace_not_found(namespace)
        if entry.obj["metadata"].get("deletionTimestamp"):
            raise errors.forbidden(
                f"unable to create new content in namespace {namespace} because it is being "
                "terminated"
            )

    def _contents(self, rt: ResourceType, container: JsonObject) -> list[tuple[ResourceType, Key]]:
        name = container["metadata"]["name"]
        found = []
        if rt.plural == "namespaces":
            for served in self.registry.all():
                if served.namespaced:
                    for key in self._objects[served.storage_key]:
                        if key[0] == name:
                            found.append((served, key))
        else:
            for served in self.registry.all():
                if served.custom and served.qualified == name:
                    found.extend((served, key) for key in self._objects[served.storage_key])
        return list(dict.fromkeys(found))

    def _is_container_in_use(self, rt: ResourceType, obj: JsonObject) -> bool:
        return _is_container(rt) and bool(self._contents(rt, obj))

    def _empty_container(self, rt: ResourceType, container: JsonObject) -> None:
        """Delete everything inside (honouring finalizers), then the container if empty."""
        for served, key in self._contents(rt, container):
            if key in self._objects[served.storage_key]:
                self.delete(served, key[0], key[1], DeleteOptions())
        self._finish_container(rt, container["metadata"]["name"])

    def _finish_container(self, rt: ResourceType, name: str) -> None:
        entry = self._objects[rt.storage_key].get(("", name))
        if entry is None or not entry.obj["metadata"].get("deletionTimestamp"):
            return
        if entry.obj["metadata"].get("finalizers") or self._contents(rt, entry.obj):
            return
        self._remove(rt, ("", name), entry)

    def _finish_namespace(self, namespace: str) -> None:
        self._finish_container(self.registry.resolve("namespaces"), namespace)

    def _finish_crd_of(self, rt: ResourceType) -> None:
        self._finish_container(CRD_TYPE, f"{rt.plural}.{rt.group}")

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
        :class:`TooOld` when ``since`` is older than the retained history and
        :class:`TooLarge` when it is newer than the newest commit."""
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
        """The resourceVersion a BOOKMARK may claim for ``watcher``: the newest commit,
        when nothing is still queued (e.g. delayed) for it; otherwise None, since a
        client resuming from the bookmark would skip the queued events."""
        with self.lock:
            return self._rv if watcher.idle() else None

    def unwatch(self, watcher: Watcher) -> None:
        with self.lock:
            self._fanout.unregister(watcher)

    def close_watchers(self) -> None:
        with self.lock:
            self._fanout.close_all()


def _is_container(rt: ResourceType) -> bool:
    """Namespaces and CRDs hold other objects: deleting one empties it first."""
    return rt.plural == "namespaces" or rt.storage_key == CRD_TYPE.storage_key


__all__ = ["Store"]
