"""The object store: what each write does before it commits (:mod:`.commits` stores,
versions and publishes it), under the one lock.

Container-like lifecycles live here too: a deleted CRD is kept with a
``deletionTimestamp`` until every object of its kind is gone (deleted here, as the
apiextensions server does); a deleted namespace is kept, Terminating, until its
``spec.finalizers`` are cleared (``/finalize``: what the namespace controller,
:mod:`.namespaces`, does once it has emptied it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ersctl.kube.copies import json_copy
from ersctl.testing.apiserver import crds, errors, managed, schema, semantics
from ersctl.testing.apiserver.commits import Commits, Key
from ersctl.testing.apiserver.fieldsets import Path
from ersctl.testing.apiserver.managed import FieldManager
from ersctl.testing.apiserver.records import (
    FOREGROUND_FINALIZER,
    DeleteOptions,
    Entry,
)
from ersctl.testing.apiserver.resources import CRD_TYPE, Registry, ResourceType
from ersctl.testing.apiserver.watching import encode

JsonObject = dict[str, Any]


class Store(Commits):
    """What every write does before it commits: create, update, patch, apply, delete,
    and the lifecycle of namespaces and CRDs. Thread-safe."""

    def __init__(
        self,
        registry: Registry,
        *,
        history_limit: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(registry, history_limit=history_limit, clock=clock)

    # -- writes --------------------------------------------------------------

    def create(
        self, rt: ResourceType, namespace: str, body: Any, writer: FieldManager | None = None
    ) -> Entry:
        """Store a new object, owned in ``managedFields`` by ``writer`` (None: as the
        body says). Raises AlreadyExists, Invalid, BadRequest, NotFound (namespace),
        Forbidden (namespace terminating) or a 500 (a resourceVersion set)."""
        with self.lock:
            obj = self._conform(rt, semantics.prepare_create(rt, body, namespace, self._clock()))
            self._track(rt, None, obj, writer)
            semantics.admit_create(rt, obj)
            if rt.namespaced:
                self._check_namespace_open(namespace)
            if rt.storage_key == CRD_TYPE.storage_key:
                crds.accept(obj)
            if semantics.metadata_of(body).get("resourceVersion") and not self._dry:
                # Storage refuses it after every other check (a dry run never reaches
                # storage): a create never continues an older object.
                raise errors.resource_version_on_create()
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

    def create_from(self, rt: ResourceType, template: Template) -> Entry:
        """Store a copy of ``template`` as a new object with its own identity (uid,
        creationTimestamp, resourceVersion), sharing the rest with the template and its
        other copies. Raises AlreadyExists."""
        with self.lock:
            meta = template.obj["metadata"]
            key = self._key(rt, "", meta["name"])
            if key in self._objects[rt.storage_key]:
                raise errors.already_exists(rt, key[1])
            identity = semantics.new_identity(self._clock())
            obj = {**template.obj, "metadata": {**meta, **identity}}
            entry = self._commit(rt, key, obj, None, template.encode)
            if rt.storage_key == CRD_TYPE.storage_key:
                self._serve(entry.obj)
            return entry

    def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        subresource: str | None,
        writer: FieldManager | None = None,
    ) -> Entry:
        """PUT semantics. Raises NotFound, Conflict (stale resourceVersion), Invalid,
        BadRequest."""
        semantics.check_body(rt, body)  # the body is decoded before anything is read
        with self.lock:
            current = self.get(rt, namespace, name)
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
            return self._update(rt, current, body, subresource, writer)

    def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        apply: Callable[[JsonObject], Any],
        subresource: str | None,
        writer: FieldManager | None = None,
    ) -> Entry:
        """Apply ``apply`` to a copy of the stored object, then update with the result.

        A ``metadata.resourceVersion`` left in the result by the patch is a
        precondition (409 Conflict when stale)."""
        with self.lock:
            current = self.get(rt, namespace, name)
            patched = apply(json_copy(current.obj))
            semantics.check_shape(rt, patched)
            self._check_identity(rt, namespace, name, patched)
            return self._update(rt, current, patched, subresource, writer)

    def apply(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        config: Any,
        subresource: str | None,
        writer: FieldManager,
        *,
        force: bool,
    ) -> tuple[Entry, bool]:
        """Server-side apply (:mod:`.managed`): create the object from ``config`` or
        merge it in. Returns (entry, created). Raises 409 on a conflict (unless
        ``force``), and what create and update raise."""
        with self.lock:
            config = semantics.check_apply_config(rt, config, name)
            current = self._objects[rt.storage_key].get(self._key(rt, namespace, name))
            if current is None and subresource is not None:
                raise errors.not_found(rt, name)
            merged, fields = managed.apply(
                None if current is None else current.obj,
                config,
                rt.structure,
                writer,
                force=force,
                now=semantics.timestamp(self._clock()),
                ignored=_reset_by(rt, subresource),
            )
            _set_managed_fields(merged, fields)
            if current is None:
                merged.setdefault("metadata", {})["name"] = name
                return self.create(rt, namespace, merged), True
            return self._update(rt, current, merged, subresource, None), False

    def _track(
        self,
        rt: ResourceType,
        current: JsonObject | None,
        new: JsonObject,
        writer: FieldManager | None,
    ) -> None:
        """Record ``writer``'s update of ``current`` into ``new`` in its managedFields."""
        if writer is not None:
            now = semantics.timestamp(self._clock())
            fields = managed.record_update(current, new, rt.structure, writer, now)
            _set_managed_fields(new, fields)

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
        self,
        rt: ResourceType,
        current: Entry,
        body: JsonObject,
        subresource: str | None,
        writer: FieldManager | None,
    ) -> Entry:
        wanted = semantics.metadata_of(body).get("resourceVersion")
        name = current.obj["metadata"]["name"]
        if wanted and str(wanted) != current.rv:
            raise errors.conflict(rt, name)
        new = self._conform(rt, semantics.prepare_update(rt, current.obj, body, subresource))
        self._track(rt, current.obj, new, writer)
        new["metadata"]["resourceVersion"] = current.rv
        if semantics.same_content(new, current.obj):
            return current  # like etcd's GuaranteedUpdate: no write, no event
        if rt.storage_key == CRD_TYPE.storage_key and subresource is None:
            crds.accept(new)
        key = self._key(rt, current.obj["metadata"].get("namespace", ""), name)
        if (
            new["metadata"].get("deletionTimestamp")
            and not _held(rt, new)
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
        (a namespace with ``spec.finalizers``, a CRD with objects) is only marked with
        ``deletionTimestamp`` (a namespace Terminating).
        Raises NotFound, Conflict (failed precondition)."""
        with self.lock:
            current = self.get(rt, namespace, name)
            semantics.check_preconditions(
                rt, current.obj, uid=options.uid, resource_version=options.resource_version
            )
            key = self._key(rt, namespace, name)
            if options.propagation == "Orphan":
                self._orphan_dependents(current.obj)
            container = _is_container(rt)
            foreground = options.propagation == "Foreground"
            if not _held(rt, current.obj) and not container and not foreground:
                return self._remove(rt, key, current), True
            meta = current.obj["metadata"]
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
        marked = json_copy(obj)
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
                    new = json_copy(entry.obj)
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

    def namespace_contents(self, namespace: str) -> list[tuple[ResourceType, str]]:
        """(type, name) of every object in ``namespace``, one type per stored kind."""
        with self.lock:
            found: dict[tuple[str, str], tuple[ResourceType, str]] = {}
            for served in self.registry.all():
                if served.namespaced:
                    for key in self._objects[served.storage_key]:
                        if key[0] == namespace:
                            found.setdefault((served.storage_key, key[1]), (served, key[1]))
            return list(found.values())

    def _crd_objects(self, crd: JsonObject) -> list[tuple[ResourceType, Key]]:
        found: list[tuple[ResourceType, Key]] = []
        for served in self.registry.all():
            if served.custom and served.qualified == crd["metadata"]["name"]:
                found.extend((served, key) for key in self._objects[served.storage_key])
        return list(dict.fromkeys(found))

    def _is_container_in_use(self, rt: ResourceType, obj: JsonObject) -> bool:
        return _is_container(rt) and bool(self._crd_objects(obj))

    def _empty_container(self, rt: ResourceType, crd: JsonObject) -> None:
        """Delete every object of a deleted CRD's kind (honouring finalizers), then the
        CRD if none is left."""
        for served, key in self._crd_objects(crd):
            if key in self._objects[served.storage_key]:
                self.delete(served, key[0], key[1], DeleteOptions())
        self._finish_crd(crd["metadata"]["name"])

    def _finish_crd(self, name: str) -> None:
        entry = self._objects[CRD_TYPE.storage_key].get(("", name))
        if entry is None or not entry.obj["metadata"].get("deletionTimestamp"):
            return
        if entry.obj["metadata"].get("finalizers") or self._crd_objects(entry.obj):
            return
        self._remove(CRD_TYPE, ("", name), entry)

    def _removed(self, rt: ResourceType, key: Key) -> None:
        if rt.custom:
            self._finish_crd(f"{rt.plural}.{rt.group}")


class Template:
    """A cluster-scoped object that many stores create alike (the project's CRDs, which
    every embedded server starts with), prepared once: created in a store of its own
    (defaults, status), the JSON of each top-level field but ``metadata`` encoded. Each
    :meth:`Store.create_from` copy shares those fields (stored objects are never
    mutated) and gets its own identity. Creating the CRDs anew (a deep copy and an
    encoding of Kubernetes' PodSpec schema, twice per CRD) was most of a server's start,
    and over 500 tests start one."""

    def __init__(self, rt: ResourceType, body: JsonObject) -> None:
        self.obj = Store(Registry(), history_limit=1).create(rt, "", body).obj
        self._encoded = {key: encode(value) for key, value in self.obj.items() if key != "metadata"}

    def encode(self, obj: JsonObject) -> bytes:
        """``encode(obj)`` for a copy of this template: the fields it shares with the
        template are not encoded again."""
        fields = (
            encode(key)
            + b":"
            + (self._encoded[key] if value is self.obj.get(key) else encode(value))
            for key, value in obj.items()
        )
        return b"{" + b",".join(fields) + b"}"


def _set_managed_fields(obj: JsonObject, fields: list[JsonObject]) -> None:
    meta = obj.setdefault("metadata", {})
    if fields:
        meta["managedFields"] = fields
    else:
        meta.pop("managedFields", None)


def _reset_by(rt: ResourceType, subresource: str | None) -> Callable[[Path], bool]:
    """The fields an apply to (a subresource of) ``rt`` cannot own, as the strategies'
    reset fields: the status from the main resource, all else from ``/status``."""
    if subresource == "status":
        return lambda path: path[0] != "f:status"
    if rt.has_status:
        return lambda path: path[0] == "f:status"
    return lambda path: False


def _is_container(rt: ResourceType) -> bool:
    """A CRD holds the objects of its kind: deleting it deletes them first."""
    return rt.storage_key == CRD_TYPE.storage_key


def _held(rt: ResourceType, obj: JsonObject) -> bool:
    """Whether something must let go before the object can go: its finalizers, and a
    namespace's ``spec.finalizers`` (``kubernetes``: the namespace controller's)."""
    if obj["metadata"].get("finalizers"):
        return True
    return is_namespace(rt) and bool((obj.get("spec") or {}).get("finalizers"))


def is_namespace(rt: ResourceType) -> bool:
    return rt.plural == "namespaces" and not rt.group


__all__ = ["Store", "Template"]
