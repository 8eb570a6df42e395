"""OpenAPI documents of what is served, as kube-apiserver publishes them: ``/openapi/v3``
(a root listing one document per group/version, each at a URL carrying its hash) and
``/openapi/v2`` (one document, JSON or protobuf: :mod:`.openapi_proto`).

What kubectl reads from them, and so what they must get right:

- ``kubectl apply`` (``--validate``, on by default) looks for the PATCH operation of the
  object's kind (``x-kubernetes-group-version-kind``) and its ``fieldValidation`` query
  parameter; finding it, kubectl leaves the validation to the server
  (``fieldValidation=Strict``, :mod:`.validation`). Client-side apply builds strategic
  merge patches from the built-in types' ``x-kubernetes-patch-*`` extensions.
- ``kubectl explain`` renders a kind's schema, following ``$ref``s into the document's
  ``components``.

Schemas: the built-in types' from Kubernetes' definitions (:mod:`.structure`; only
kinds, without them), the custom resources' from their CRD's ``openAPIV3Schema`` with
``metadata`` as ObjectMeta, as the apiextensions server builds them. Documents are
built on first request and kept until the served types change.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from typing import Any

from ersctl.kube.copies import json_copy
from ersctl.testing.apiserver import openapi_proto, structure
from ersctl.testing.apiserver.resources import Registry, ResourceType

JsonObject = dict[str, Any]

_META = "io.k8s.apimachinery.pkg.apis.meta.v1"
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_DESCRIPTIONS = {
    "apiVersion": "APIVersion defines the versioned schema of this representation of an "
    "object. Servers should convert recognized schemas to the latest internal value, and "
    "may reject unrecognized values.",
    "kind": "Kind is a string value representing the REST resource this object "
    "represents. Servers may infer this from the endpoint the client submits requests to. "
    "Cannot be updated. In CamelCase.",
    "metadata": "Standard object's metadata.",
}
_QUERY = {
    "dryRun": "When present, indicates that modifications should not be persisted.",
    "fieldManager": "fieldManager is a name associated with the actor or entity that is "
    "making these changes.",
    "fieldValidation": "fieldValidation instructs the server on how to handle objects in "
    "the request (POST/PUT/PATCH) containing unknown or duplicate fields: Ignore, Warn "
    "(the default) or Strict.",
    "force": 'Force is going to "force" Apply requests. It means user will re-acquire '
    "conflicting fields owned by other people.",
}
_PATCH_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
)
_STRATEGIC = "application/strategic-merge-patch+json"


def schema_name(rt: ResourceType, list_kind: bool = False) -> str:
    """The definition name of ``rt``'s kind (or list kind)."""
    kind = rt.list_kind if list_kind else rt.kind
    if not rt.custom:
        found = structure.definition_name(rt.group, rt.version, kind)
        if found:
            return found
    group = ".".join(reversed(rt.group.split("."))) if rt.group else "io.k8s.api.core"
    return f"{group}.{rt.version}.{kind}"


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _gvk(rt: ResourceType, kind: str | None = None) -> JsonObject:
    return {"group": rt.group, "kind": kind or rt.kind, "version": rt.version}


# -- schemas -----------------------------------------------------------------------


def _openapi(node: Any, ref_prefix: str, *, v3: bool) -> Any:
    """A definition as OpenAPI writes it: refs to ``ref_prefix``, a nullable type list
    as its type, IntOrString and Quantity as the strings they are on the wire."""
    if isinstance(node, list):
        return [_openapi(item, ref_prefix, v3=v3) for item in node]
    if not isinstance(node, dict):
        return node
    out: JsonObject = {}
    for key, value in node.items():
        if key == "type" and isinstance(value, list):
            out[key] = next((t for t in value if t != "null"), "object")
        elif key == "oneOf":
            out["type"] = "string"
        elif key == "$ref" and isinstance(value, str):
            out[key] = ref_prefix + value.rsplit("/", 1)[-1]
        elif key == "properties" and isinstance(value, dict):
            out[key] = {
                name: _property(name, child, ref_prefix, v3=v3) for name, child in value.items()
            }
        else:
            out[key] = _openapi(value, ref_prefix, v3=v3)
    if v3 and "$ref" in out and len(out) > 1:  # OpenAPI 3.0 ignores a $ref's siblings
        out = {"allOf": [{"$ref": out.pop("$ref")}], **out}
    return out


def _property(name: str, node: Any, ref_prefix: str, *, v3: bool) -> Any:
    converted = _openapi(node, ref_prefix, v3=v3)
    if name in ("apiVersion", "kind") and isinstance(converted, dict):
        converted.pop("enum", None)  # added by the JSON Schema conversion, not Kubernetes'
    return converted


def _closure(names: list[str]) -> list[str]:
    """``names`` and every definition they refer to, transitively."""
    found: list[str] = []
    pending = list(names)
    while pending:
        name = pending.pop()
        if name in found or name not in structure.definitions():
            continue
        found.append(name)
        pending.extend(_refs(structure.definitions()[name]))
    return sorted(found)


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            yield ref.rsplit("/", 1)[-1]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def _custom_schemas(rt: ResourceType, ref_prefix: str) -> dict[str, JsonObject]:
    """A custom kind and its list, as the apiextensions server publishes them."""
    schema = json_copy(rt.schema or {"type": "object"})
    properties = schema.setdefault("properties", {})
    for name in ("apiVersion", "kind"):
        properties[name] = {"type": "string", "description": _DESCRIPTIONS[name]}
    meta_ref = {"$ref": f"{ref_prefix}{_META}.ObjectMeta"}
    properties["metadata"] = {
        **_wrapped(meta_ref, ref_prefix),
        "description": _DESCRIPTIONS["metadata"],
    }
    schema["x-kubernetes-group-version-kind"] = [_gvk(rt)]
    listed = {
        "description": f"{rt.kind}List is a list of {rt.kind}",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string", "description": _DESCRIPTIONS["apiVersion"]},
            "kind": {"type": "string", "description": _DESCRIPTIONS["kind"]},
            "items": {"type": "array", "items": {"$ref": ref_prefix + schema_name(rt)}},
            "metadata": _wrapped({"$ref": f"{ref_prefix}{_META}.ListMeta"}, ref_prefix),
        },
        "x-kubernetes-group-version-kind": [_gvk(rt, rt.list_kind)],
    }
    return {schema_name(rt): schema, schema_name(rt, True): listed}


def _wrapped(ref: JsonObject, ref_prefix: str) -> JsonObject:
    return {"allOf": [ref]} if ref_prefix.startswith("#/components") else ref


_ALWAYS = tuple(f"{_META}.{name}" for name in ("ObjectMeta", "ListMeta", "Status", "Patch"))
SCALE = "io.k8s.api.autoscaling.v1.Scale"
_SCALE_GVK = {"group": "autoscaling", "kind": "Scale", "version": "v1"}


def schemas(types: list[ResourceType], ref_prefix: str, *, v3: bool) -> dict[str, JsonObject]:
    """Every schema the operations on ``types`` refer to, by name."""
    wanted = list(_ALWAYS)
    custom: dict[str, JsonObject] = {}
    for rt in types:
        if rt.custom:
            custom.update(_custom_schemas(rt, ref_prefix))
        else:
            wanted += [schema_name(rt), schema_name(rt, True)]
        if rt.has_scale:
            wanted.append(SCALE)
    found = {
        name: _openapi(structure.definitions()[name], ref_prefix, v3=v3)
        for name in _closure(wanted)
    }
    for rt in types:  # without the definitions, a kind is known by its name and kind only
        if not rt.custom and schema_name(rt) not in found:
            found[schema_name(rt)] = {
                "type": "object",
                "x-kubernetes-group-version-kind": [_gvk(rt)],
            }
    for name in _ALWAYS:
        found.setdefault(name, {"type": "object"})
    if any(rt.has_scale for rt in types):
        found.setdefault(SCALE, {"type": "object", "x-kubernetes-group-version-kind": [_SCALE_GVK]})
    if _INT_OR_STRING in found:  # a string or an integer, which OpenAPI 2 cannot say
        found[_INT_OR_STRING] = {"type": "string", "format": "int-or-string"}
    return found | custom


# -- operations ----------------------------------------------------------------------


def operations(rt: ResourceType) -> Iterator[tuple[str, str, str, str | None, bool]]:
    """(path, method, action, subresource, on a list) of every operation on ``rt``."""
    base = f"/{_gv_path(rt.group, rt.version)}"
    scoped = (
        f"{base}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"{base}/{rt.plural}"
    )
    named = f"{scoped}/{{name}}"
    yield scoped, "get", "list", None, True
    yield scoped, "post", "post", None, False
    yield scoped, "delete", "deletecollection", None, False
    for method, action in (
        ("get", "get"),
        ("put", "put"),
        ("patch", "patch"),
        ("delete", "delete"),
    ):
        yield named, method, action, None, False
    for subresource in rt.subresources:
        for method in ("put",) if subresource == "finalize" else ("get", "put", "patch"):
            yield f"{named}/{subresource}", method, method, subresource, False
    if rt.namespaced:
        yield f"{base}/{rt.plural}", "get", "list", None, True


def _operation(
    rt: ResourceType,
    path: str,
    method: str,
    action: str,
    listed: bool,
    ref_prefix: str,
    *,
    v3: bool,
) -> JsonObject:
    names = (
        ["dryRun", "fieldManager", "fieldValidation"] if method in ("post", "put", "patch") else []
    )
    if method == "patch":
        names.append("force")
    params: list[JsonObject] = [
        {
            "name": n,
            "in": "query",
            "description": _QUERY[n],
            **({"schema": {"type": "string"}} if v3 else {"type": "string"}),
        }
        for n in names
    ]
    params += [
        {
            "name": p,
            "in": "path",
            "required": True,
            **({"schema": {"type": "string"}} if v3 else {"type": "string"}),
        }
        for p in ("namespace", "name")
        if "{" + p + "}" in path
    ]
    scale = path.endswith("/scale")
    result = ref_prefix + (SCALE if scale else schema_name(rt, listed))
    last = path.rsplit("/", 1)[-1]
    suffix = last.capitalize() if last in rt.subresources else ""
    op: JsonObject = {
        "description": f"{action} {rt.kind}",
        "operationId": f"{action}{rt.kind}{suffix}",
        "parameters": params,
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _SCALE_GVK if scale else _gvk(rt),
    }
    body_types: list[str] = []
    if method in ("post", "put"):
        body_types, body = ["application/json", "application/yaml"], result
    elif method == "patch":
        body_types = [*_PATCH_TYPES, *(() if rt.custom else (_STRATEGIC,))]
        body = f"{ref_prefix}{_META}.Patch"
    if body_types and v3:
        op["requestBody"] = {
            "content": {t: {"schema": {"$ref": body}} for t in body_types},
            "required": True,
        }
    elif body_types:
        op["consumes"] = body_types
        params.append({"name": "body", "in": "body", "required": True, "schema": {"$ref": body}})
    response: JsonObject = {"description": "OK"}
    if v3:
        response["content"] = {"application/json": {"schema": {"$ref": result}}}
    else:
        response["schema"] = {"$ref": result}
        op["produces"] = ["application/json", "application/yaml"]
    op["responses"] = {"200": response}
    return op


def paths(types: list[ResourceType], ref_prefix: str, *, v3: bool) -> JsonObject:
    found: JsonObject = {}
    for rt in sorted(types, key=lambda t: (t.group, t.version, t.plural)):
        for path, method, action, _, listed in operations(rt):
            found.setdefault(path, {})[method] = _operation(
                rt, path, method, action, listed, ref_prefix, v3=v3
            )
    return found


# -- documents -----------------------------------------------------------------------


_INFO = {"title": "Kubernetes", "version": structure.KUBERNETES_VERSION}


def _compact_json(doc: JsonObject) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


class Documents:
    """The OpenAPI documents of one server's registry, built when first asked for and
    rebuilt after the served types change. Thread-safe."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._lock = threading.Lock()
        self._built: dict[tuple[int, str], bytes] = {}

    def _cached(self, key: str, build: Any, encode: Any = None) -> bytes:
        generation = self._registry.generation
        with self._lock:
            found = self._built.get((generation, key))
        if found is None:
            found = (encode or _compact_json)(build())
            with self._lock:
                self._built = {k: v for k, v in self._built.items() if k[0] == generation}
                self._built[(generation, key)] = found
        return found

    def _groups(self) -> dict[tuple[str, str], list[ResourceType]]:
        groups: dict[tuple[str, str], list[ResourceType]] = {}
        for rt in self._registry.all():
            groups.setdefault((rt.group, rt.version), []).append(rt)
        return groups

    def v3_root(self) -> bytes:
        """``/openapi/v3``: where each group/version's document is, by its hash."""

        def build() -> JsonObject:
            listed = {}
            for group, version in sorted(self._groups()):
                digest = hashlib.sha512(self.v3(group, version) or b"").hexdigest().upper()
                url = f"/openapi/v3/{_gv_path(group, version)}?hash={digest}"
                listed[_gv_path(group, version)] = {"serverRelativeURL": url}
            return {"paths": listed}

        return self._cached("v3", build)

    def v3(self, group: str, version: str) -> bytes | None:
        """``/openapi/v3/apis/{group}/{version}`` (or ``api/v1``), None if not served."""
        types = self._groups().get((group, version))
        if not types:
            return None
        prefix = "#/components/schemas/"

        def build() -> JsonObject:
            return {
                "openapi": "3.0.0",
                "info": _INFO,
                "paths": paths(types, prefix, v3=True),
                "components": {"schemas": schemas(types, prefix, v3=True)},
            }

        return self._cached(f"v3/{group}/{version}", build)

    def v2_protobuf(self) -> bytes:
        """``/openapi/v2`` as gnostic's protobuf (:mod:`.openapi_proto`)."""
        return self._cached("v2.pb", lambda: json.loads(self.v2()), encode=openapi_proto.document)

    def v2(self) -> bytes:
        """``/openapi/v2``: everything in one Swagger 2.0 document."""
        types = self._registry.all()
        prefix = "#/definitions/"

        def build() -> JsonObject:
            return {
                "swagger": "2.0",
                "info": _INFO,
                "paths": paths(types, prefix, v3=False),
                "definitions": schemas(types, prefix, v3=False),
            }

        return self._cached("v2", build)
