"""The structure of every served type, for what needs more than JSON: server-side
apply (which lists merge by key, which maps are atomic), strict field validation (which
fields exist) and the OpenAPI documents.

Two sources: a CRD's ``openAPIV3Schema`` for custom resources, and Kubernetes' own
OpenAPI definitions (v1.32, the version this server reports) for the built-in types.
Those come from the ``kubernetes-validate`` package (a test dependency, so the server
stays usable without it): read on first use, kept for the process. Without it, built-in
types are treated as schemaless, as structured-merge-diff treats unknown types: maps
merge key by key, lists are atomic, no field is unknown.

A schema node is a JSON object: ``$ref`` (to a definition), ``properties``,
``additionalProperties``, ``items``, ``x-kubernetes-list-type`` (atomic, set, map) with
``x-kubernetes-list-map-keys``, ``x-kubernetes-map-type`` (granular, atomic),
``x-kubernetes-preserve-unknown-fields``.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path
from typing import Any

JsonObject = dict[str, Any]

KUBERNETES_VERSION = "v1.32.0"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_REF_PREFIX = "#/$defs/"

# ObjectMeta as structured-merge-diff sees it, for when the definitions are missing:
# a custom resource's schema says only ``metadata: {type: object}``, but the server
# merges its metadata as ObjectMeta.
_OBJECT_META_FALLBACK: JsonObject = {
    "type": "object",
    "properties": {
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "finalizers": {
            "type": "array",
            "items": {"type": "string"},
            "x-kubernetes-list-type": "set",
        },
        "ownerReferences": {
            "type": "array",
            "items": {"type": "object"},
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["uid"],
        },
    },
    "x-kubernetes-preserve-unknown-fields": True,
}


@functools.cache
def definitions() -> dict[str, JsonObject]:
    """Kubernetes' OpenAPI definitions by name (``io.k8s.api.core.v1.Pod``), with refs
    as ``#/$defs/<name>`` and nullable types as ``[type, "null"]``; empty when the
    kubernetes-validate package is not installed."""
    # Located without importing the package (and its JSON Schema libraries). A program
    # started through ersctl.platform.cli.launch marks it absent (none runs this server).
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        return {}
    base = Path(next(iter(spec.submodule_search_locations)))
    path = base / "kubernetes-json-schema" / f"{KUBERNETES_VERSION}-local" / "_definitions.json"
    if not path.is_file():
        return {}
    loaded: JsonObject = json.loads(path.read_text(encoding="utf-8"))
    return dict(loaded["$defs"])


@functools.cache
def _names_by_kind() -> dict[tuple[str, str, str], str]:
    found: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or ():
            found.setdefault((gvk.get("group", ""), gvk["version"], gvk["kind"]), name)
    return found


def definition_name(group: str, version: str, kind: str) -> str | None:
    """The definition of a built-in kind, or None (a custom kind, or no definitions)."""
    return _names_by_kind().get((group, version, kind))


def root(group: str, version: str, kind: str, crd_schema: JsonObject | None) -> JsonObject:
    """The schema of a whole object of this kind (``{}``, schemaless, when unknown)."""
    if crd_schema is not None:
        return crd_schema
    name = definition_name(group, version, kind)
    return {"$ref": _REF_PREFIX + name} if name else {}


def resolve(node: JsonObject | None) -> JsonObject:
    """``node`` with its ``$ref`` followed (``{}`` for None or an unknown reference)."""
    if node is None:
        return {}
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
        return definitions().get(ref.removeprefix(_REF_PREFIX), {})
    return node


def field(node: JsonObject, key: str, *, top: bool = False) -> JsonObject | None:
    """The schema of ``key`` in an object of schema ``node``; None when the schema does
    not know the field (unknown to it, or schemaless). ``top``: ``node`` is a whole
    object's, whose ``metadata`` is ObjectMeta whatever a CRD says."""
    node = resolve(node)
    if top and key == "metadata":
        meta = definitions().get(OBJECT_META)
        return meta if meta is not None else _OBJECT_META_FALLBACK
    properties = node.get("properties") or {}
    if key in properties:
        return resolve(properties[key])
    additional = node.get("additionalProperties")
    if isinstance(additional, dict):
        return resolve(additional)
    return None


def items(node: JsonObject) -> JsonObject:
    """The schema of a list's items (``{}`` when unknown)."""
    found = resolve(node).get("items")
    return resolve(found) if isinstance(found, dict) else {}


def list_keys(node: JsonObject) -> tuple[str, ...] | None:
    """The key fields of a list merged by key (``x-kubernetes-list-type: map``), or
    None for a list that is atomic or a set."""
    node = resolve(node)
    if node.get("x-kubernetes-list-type") != "map":
        return None
    return tuple(node.get("x-kubernetes-list-map-keys") or ())


def is_set(node: JsonObject) -> bool:
    """A list of unique scalars merged by value (``x-kubernetes-list-type: set``)."""
    return resolve(node).get("x-kubernetes-list-type") == "set"


def is_atomic_map(node: JsonObject) -> bool:
    """An object replaced as a whole (``x-kubernetes-map-type: atomic``)."""
    return resolve(node).get("x-kubernetes-map-type") == "atomic"


def knows_fields(node: JsonObject) -> bool:
    """Whether an object of this schema has a fixed set of fields (so another field is
    unknown): it lists properties and neither keeps unknown fields nor takes any key."""
    node = resolve(node)
    return (
        bool(node.get("properties"))
        and not node.get("x-kubernetes-preserve-unknown-fields")
        and not isinstance(node.get("additionalProperties"), dict)
        and node.get("additionalProperties") is not True
    )


def empty_object(node: JsonObject) -> JsonObject:
    """What a new object of this kind holds before a create fills it in, as the real
    server's field manager compares a create with: a built-in kind (its Go struct)
    serializes ``spec`` and ``status`` and, inside, the fields its schema requires
    (empty objects, or null); a custom resource is empty. Struct fields that are
    neither (a template's ``spec``) read as absent: a schema cannot tell them from
    pointers."""
    if "$ref" not in node:
        return {}
    properties = resolve(node).get("properties") or {}
    return {
        key: _required_fields(properties[key]) for key in ("spec", "status") if key in properties
    }


def _required_fields(node: JsonObject) -> JsonObject:
    resolved = resolve(node)
    properties = resolved.get("properties") or {}
    found: JsonObject = {}
    for key in resolved.get("required") or ():
        child = resolve(properties.get(key))
        found[key] = _required_fields(child) if child.get("properties") else None
    return found
