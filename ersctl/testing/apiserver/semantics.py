"""What the API server does to an object on create and update, as pure functions.

Mirrors kube-apiserver's generic registry and strategies:

- create: server-set ``uid``, ``creationTimestamp``, ``generation: 1`` (custom
  resources and CRDs), ``generateName``; a custom resource with a status subresource
  loses any ``status`` in the request; the built-in kinds' defaults
  (:mod:`.defaults`); after the write is recorded in ``managedFields``
  (:func:`admit_create`), a Pod's admission additions, and pods and namespaces get
  their initial status.
- update of the main resource: ``status`` is kept from the stored object when the type
  has a status subresource; ``uid``, ``creationTimestamp``, ``generation``,
  ``deletionTimestamp`` cannot be changed by the client; ``generation`` is bumped when
  anything outside ``metadata`` (and ``status``) changes; defaults filled in again.
- update of ``/status``: only ``status`` is taken from the request; of a namespace's
  ``/finalize`` only ``spec.finalizers``; everything else stays as stored.
"""

from __future__ import annotations

import base64
import re
import secrets
import uuid
from datetime import UTC, datetime
from typing import Any

from ersctl.kube.copies import json_copy
from ersctl.testing.apiserver import defaults, errors
from ersctl.testing.apiserver.resources import ResourceType
from ersctl.testing.apiserver.watching import encode

JsonObject = dict[str, Any]

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SERVER_OWNED = ("uid", "creationTimestamp", "generation", "deletionTimestamp")


def timestamp(now: float) -> str:
    """RFC 3339 with second precision, as ``metav1.Time`` marshals."""
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def generated_name(prefix: str) -> str:
    """``generateName`` + 5 random characters (the prefix cut to 58 characters)."""
    suffix = "".join(secrets.choice(_NAME_CHARS) for _ in range(5))
    return prefix[:58] + suffix


def metadata_of(obj: JsonObject) -> JsonObject:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def check_shape(rt: ResourceType, obj: Any) -> JsonObject:
    """The request body as an object; 400 when it is not one, or names another kind."""
    if not isinstance(obj, dict):
        raise errors.bad_request("the request body must be a JSON object")
    if "metadata" in obj and not isinstance(obj["metadata"], dict):
        raise errors.bad_request("metadata must be an object")
    kind = obj.get("kind")
    api_version = obj.get("apiVersion")
    if kind not in (None, "", rt.kind):
        raise errors.bad_request(
            f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})"
        )
    if api_version not in (None, "") and _group_of(str(api_version)) != rt.group:
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected "
            f"API version ({rt.api_version})"
        )
    return obj


def check_body(rt: ResourceType, body: Any) -> JsonObject:
    """A create or update request's body, checked as the server decodes it: a custom
    object must name its ``kind`` (400 before any other check: the apiextensions server
    decodes unstructured JSON, which cannot take the kind from the URL as the built-in
    types' decoder does), then :func:`check_shape`."""
    if rt.custom and isinstance(body, dict) and not body.get("kind"):
        raise errors.missing_kind(rt, encode(body))
    return check_shape(rt, body)


def check_apply_config(rt: ResourceType, config: Any, name: str) -> JsonObject:
    """A server-side apply configuration: of this kind and version (400 ``invalid
    object type`` otherwise, as the field manager's version check words it), named as
    the URL names it, and without ``managedFields``."""
    if not isinstance(config, dict):
        raise errors.bad_request("the apply configuration must be an object")
    api_version, kind = str(config.get("apiVersion") or ""), str(config.get("kind") or "")
    if (api_version, kind) != (rt.api_version, rt.kind):
        group, _, version = api_version.rpartition("/")
        raise errors.bad_request(f"invalid object type: {group}/{version}, Kind={kind}")
    meta = metadata_of(config)
    if meta.get("name", name) != name:
        raise errors.bad_request(
            f"the name of the object ({meta.get('name')}) does not match the name on the "
            f"URL ({name})"
        )
    if meta.get("managedFields") is not None:
        raise errors.bad_request("metadata.managedFields must be nil")
    return config


def _group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def _validate_metadata(rt: ResourceType, obj: JsonObject) -> None:
    meta = obj["metadata"]
    name = meta.get("name", "")
    pattern = _LABEL_RE if rt.plural == "namespaces" else _SUBDOMAIN_RE
    limit = 63 if rt.plural == "namespaces" else 253
    if not isinstance(name, str) or not pattern.match(name) or len(name) > limit:
        raise errors.invalid(
            rt,
            str(name),
            "metadata.name",
            "FieldValueInvalid",
            f'Invalid value: "{name}": a lowercase RFC 1123 name must consist of lower case '
            "alphanumeric characters, '-' or '.', and must start and end with an "
            "alphanumeric character",
        )
    for section in ("labels", "annotations"):
        values = meta.get(section)
        if values is None:
            continue
        if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
            raise errors.bad_request(f"metadata.{section} must be a map of strings")
    _check_annotations_size(rt, str(name), meta.get("annotations") or {})
    finalizers = meta.get("finalizers")
    if finalizers is not None and (
        not isinstance(finalizers, list) or not all(isinstance(f, str) for f in finalizers)
    ):
        raise errors.bad_request("metadata.finalizers must be a list of strings")
    owners = meta.get("ownerReferences")
    if owners is not None and not isinstance(owners, list):
        raise errors.bad_request("metadata.ownerReferences must be a list")
    _validate_owner_references(rt, str(name), owners or [])


TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
"""ValidateAnnotationsSize's limit on all keys and values together, in bytes: what
refuses ``kubectl apply`` (client-side) of a CRD whose last-applied annotation, a copy
of the whole manifest, is larger (ARC's CRDs)."""


def _check_annotations_size(rt: ResourceType, name: str, annotations: dict[str, str]) -> None:
    size = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        raise errors.invalid(
            rt,
            name,
            "metadata.annotations",
            "FieldValueTooLong",
            f"Too long: may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes",
        )


def _validate_owner_references(rt: ResourceType, name: str, owners: list[Any]) -> None:
    """ValidateOwnerReferences: every reference names its owner completely, and at
    most one is the controller (the garbage collector relies on both)."""
    field = "metadata.ownerReferences"
    for ref in owners:
        if not isinstance(ref, dict):
            raise errors.bad_request(f"{field} must be a list of objects")
        for key, label in (
            ("apiVersion", "version"),
            ("kind", "kind"),
            ("name", "name"),
            ("uid", "uid"),
        ):
            if not ref.get(key):
                raise errors.invalid(
                    rt,
                    name,
                    f"{field}.{key}",
                    "FieldValueInvalid",
                    f'Invalid value: "": {label} must not be empty',
                )
    controllers = [ref["name"] for ref in owners if ref.get("controller") is True]
    if len(controllers) > 1:
        raise errors.invalid(
            rt,
            name,
            field,
            "FieldValueInvalid",
            'Only one reference can have Controller set to true. Found "true" in '
            f"references for {' and '.join(controllers)}",
        )


def new_identity(now: float) -> JsonObject:
    """The metadata a server gives every object it creates: a new ``uid`` and the
    ``creationTimestamp`` of ``now``."""
    return {"uid": str(uuid.uuid4()), "creationTimestamp": timestamp(now)}


def prepare_create(rt: ResourceType, body: Any, namespace: str, now: float) -> JsonObject:
    """The object to store for a create request (without resourceVersion: a create
    that sets one is refused later, by :class:`~.store.Store`, as storage refuses it)."""
    obj = json_copy(check_body(rt, body))
    obj["apiVersion"] = rt.api_version
    obj["kind"] = rt.kind
    meta = obj.setdefault("metadata", {})
    if rt.namespaced:
        if meta.get("namespace") not in (None, "", namespace):
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent "
                "on the request"
            )
        meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
    if not meta.get("name"):
        prefix = meta.get("generateName")
        if not prefix:
            raise errors.invalid(
                rt,
                "",
                "metadata.name",
                "FieldValueRequired",
                "Required value: name or generateName is required",
            )
        meta["name"] = generated_name(str(prefix))
    for key in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"):
        meta.pop(key, None)
    meta.update(new_identity(now))
    if rt.tracks_generation:
        meta["generation"] = 1
    else:
        meta.pop("generation", None)
    _normalize(rt, obj)
    if rt.custom:
        _initial_status(rt, obj)
    _validate_metadata(rt, obj)
    return obj


def admit_create(rt: ResourceType, obj: JsonObject) -> None:
    """What a create does after its field manager recorded it (so nobody owns what it
    adds): the admission plugins' additions (:func:`.defaults.admit`) and a built-in
    kind's initial status (a Pod's phase and QoS class, a Namespace's phase and
    finalizer)."""
    if not rt.custom:
        defaults.admit(rt.group, rt.plural, obj)
        _initial_status(rt, obj)


def _normalize(rt: ResourceType, obj: JsonObject) -> None:
    """Type-specific defaulting (:mod:`.defaults`); a Secret's write-only ``stringData``
    is folded into ``data`` (base64), and its ``type`` defaults to Opaque."""
    if not rt.custom:
        defaults.fill_in(rt.group, rt.plural, obj)
    if rt.plural != "secrets" or rt.group:
        return
    string_data = obj.pop("stringData", None) or {}
    if not isinstance(string_data, dict):
        raise errors.bad_request("stringData must be a map of strings")
    if string_data:
        data = obj.setdefault("data", {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
    obj.setdefault("type", "Opaque")


def _initial_status(rt: ResourceType, obj: JsonObject) -> None:
    if rt.custom and rt.has_status:
        obj.pop("status", None)
    elif rt.plural == "pods":
        obj["status"] = {"phase": "Pending", "qosClass": defaults.qos_class(obj)}
    elif rt.plural == "namespaces":
        obj["status"] = {"phase": "Active"}
        obj.setdefault("spec", {"finalizers": ["kubernetes"]})


def _without(obj: JsonObject, *keys: str) -> JsonObject:
    return {k: v for k, v in obj.items() if k not in keys}


def prepare_update(
    rt: ResourceType, old: JsonObject, body: Any, subresource: str | None
) -> JsonObject:
    """The object to store for an update of ``old`` with ``body`` (precondition checked
    by the caller; the result carries no resourceVersion)."""
    new: JsonObject = json_copy(check_shape(rt, body))
    if subresource == "finalize":  # a namespace's: only its spec.finalizers change
        merged = json_copy(old)
        spec = merged.setdefault("spec", {})
        spec["finalizers"] = (new.get("spec") or {}).get("finalizers") or []
        if not spec["finalizers"]:
            del spec["finalizers"]
        merged["metadata"].pop("resourceVersion", None)
        return merged
    if subresource == "status":
        merged = json_copy(old)
        if "status" in new:
            merged["status"] = new["status"]
        else:
            merged.pop("status", None)
        merged["metadata"].pop("resourceVersion", None)
        if "managedFields" in metadata_of(new):  # as tracked for this status write
            merged["metadata"]["managedFields"] = new["metadata"]["managedFields"]
        return merged
    new["apiVersion"] = old["apiVersion"]
    new["kind"] = old["kind"]
    meta = new.setdefault("metadata", {})
    old_meta = old["metadata"]
    _check_metadata_update(rt, old_meta, meta)
    for key in _SERVER_OWNED:
        if key in old_meta:
            meta[key] = old_meta[key]
        else:
            meta.pop(key, None)
    if "deletionGracePeriodSeconds" in old_meta:
        meta["deletionGracePeriodSeconds"] = old_meta["deletionGracePeriodSeconds"]
    meta.pop("resourceVersion", None)
    if rt.has_status:
        if "status" in old:
            new["status"] = old["status"]
        else:
            new.pop("status", None)
    _normalize(rt, new)
    if rt.tracks_generation and _without(new, "metadata") != _without(old, "metadata"):
        meta["generation"] = int(old_meta.get("generation", 0)) + 1
    _validate_metadata(rt, new)
    return new


def _check_metadata_update(rt: ResourceType, old_meta: JsonObject, meta: JsonObject) -> None:
    """What ValidateObjectMetaUpdate rejects: a changed uid, and new finalizers on an
    object that is being deleted."""
    name = str(old_meta.get("name", ""))
    if meta.get("uid") and meta["uid"] != old_meta.get("uid"):
        raise errors.invalid(
            rt,
            name,
            "metadata.uid",
            "FieldValueInvalid",
            f'Invalid value: "{meta["uid"]}": field is immutable',
        )
    if old_meta.get("deletionTimestamp"):
        added = [
            f for f in meta.get("finalizers") or [] if f not in (old_meta.get("finalizers") or [])
        ]
        if added:
            listed = ", ".join(f'"{f}"' for f in added)
            raise errors.invalid(
                rt,
                name,
                "metadata.finalizers",
                "FieldValueForbidden",
                "Forbidden: no new finalizers can be added if the object is being deleted, "
                f"found new finalizers []string{{{listed}}}",
            )


def same_content(a: JsonObject, b: JsonObject) -> bool:
    """Equal apart from ``metadata.resourceVersion`` (a no-op write is not stored)."""
    meta_a = _without(metadata_of(a), "resourceVersion")
    meta_b = _without(metadata_of(b), "resourceVersion")
    return meta_a == meta_b and _without(a, "metadata") == _without(b, "metadata")


def check_preconditions(
    rt: ResourceType, obj: JsonObject, *, uid: str | None, resource_version: str | None
) -> None:
    """DeleteOptions.preconditions: 409 Conflict when uid or resourceVersion differ."""
    meta = obj["metadata"]
    name, actual_uid, actual_rv = meta["name"], meta.get("uid"), meta.get("resourceVersion")
    if uid and uid != actual_uid:
        raise errors.conflict(
            rt,
            name,
            f"Precondition failed: UID in precondition: {uid}, UID in object meta: {actual_uid}",
        )
    if resource_version and resource_version != actual_rv:
        raise errors.conflict(
            rt,
            name,
            f"Precondition failed: ResourceVersion in precondition: {resource_version}, "
            f"ResourceVersion in object meta: {actual_rv}",
        )
