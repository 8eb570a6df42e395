"""Which fields a served CustomResourceDefinition keeps, as kube-apiserver prunes.

A field of a custom resource survives a write when a schema path allows it: a
``properties`` entry, an ``additionalProperties`` schema (a map), or an ancestor with
``x-kubernetes-preserve-unknown-fields: true`` (and, for the whole object, the legacy
``spec.preserveUnknownFields: true``). Anything else is dropped without an error, which
is how a controller that writes a field an older CRD lacks is silently switched off.
Pure: the caller fetches the CRD (``ersctl.kube.crdcheck``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

_PRESERVE = "x-kubernetes-preserve-unknown-fields"


def dropped_fields(crd: Mapping[str, Any], version: str, paths: Iterable[str]) -> list[str]:
    """The ``paths`` (dotted, e.g. ``status.phase``) the API server would prune from
    objects of ``version`` of ``crd``, in the order given. A version the CRD does not
    serve, or one without a schema, keeps nothing."""
    spec = crd.get("spec") or {}
    if spec.get("preserveUnknownFields") is True:
        return []
    schema = _schema_of(spec, version)
    return [path for path in paths if schema is None or not _kept(schema, path.split("."))]


def _schema_of(spec: Mapping[str, Any], version: str) -> Mapping[str, Any] | None:
    for entry in spec.get("versions") or []:
        if entry.get("name") == version and entry.get("served", True):
            schema = (entry.get("schema") or {}).get("openAPIV3Schema")
            return schema if isinstance(schema, Mapping) else None
    return None


def _kept(schema: Mapping[str, Any], segments: list[str]) -> bool:
    node: Mapping[str, Any] = schema
    for segment in segments:
        if node.get(_PRESERVE) is True and segment not in (node.get("properties") or {}):
            return True
        child = (node.get("properties") or {}).get(segment)
        if child is None:
            additional = node.get("additionalProperties")
            if additional is True:
                return True
            if not isinstance(additional, Mapping):
                return False
            child = additional
        if not isinstance(child, Mapping):
            return False
        node = child
    return True
