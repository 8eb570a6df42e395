"""ARC 0.14's CRDs for tests: the field list in ``arc-0.14.yaml``, flattened for a
field-by-field comparison, and as whole ARC-shaped CRDs to load into the embedded
API server (a cluster where ARC's CRDs are installed, without the guard fields).

A flattened schema maps a field path (``spec.ephemeralRunnerSpec.spec.containers[].name``;
``[]`` a list item, ``{}`` a map value) to the facts the comparison reads: ``type``
(``int-or-string`` for Kubernetes' integer-or-string fields), ``format``,
``required``, ``enum``, ``default`` and the ``x-kubernetes-*`` markers.

The pod template's field list comes from Kubernetes' published schema of ARC's
Kubernetes version, walked here on its own (:func:`kubernetes_pod_spec_fields`), not
through ``ersctl.crds.podspec``: the comparison then checks that conversion too.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any, Final

import yaml

from ersctl.crds.generate import kubernetes_definitions
from ersctl.crds.podspec import POD_SPEC, pod_spec_schema

JsonObject = dict[str, Any]
Fields = dict[str, JsonObject]

DATA: Final = Path(__file__).with_name("arc-0.14.yaml")
GROUP: Final = "actions.github.com"

_FACTS: Final = (
    "type",
    "format",
    "required",
    "enum",
    "default",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
)
_POD_SPEC_MARK: Final = "x-arc-pod-spec"


@functools.cache
def _data() -> JsonObject:
    loaded: JsonObject = yaml.safe_load(DATA.read_text(encoding="utf-8"))
    return loaded


def kubernetes_version() -> str:
    return str(_data()["kubernetesVersion"])


def crd_entry(kind: str) -> JsonObject:
    """ARC's names, columns and subresources of ``kind`` (a copy)."""
    (entry,) = (c for c in _data()["crds"] if c["kind"] == kind)
    return copy.deepcopy(entry)


def pod_spec_samples() -> Fields:
    samples: Fields = _data()["podSpecSamples"]
    return copy.deepcopy(samples)


def _expand(node: Any, pod_spec: JsonObject) -> Any:
    """``node`` with the runner spec, proxy and pod spec placeholders filled in."""
    if isinstance(node, list):
        return [_expand(item, pod_spec) for item in node]
    if not isinstance(node, dict):
        return node
    if node.get("x-arc-runner-spec"):
        return _expand(_data()["runnerSpec"], pod_spec)
    if node.get("x-arc-proxy"):
        return _expand(_data()["proxy"], pod_spec)
    if node.get("x-arc-resource-meta"):
        return _expand(_data()["resourceMeta"], pod_spec)
    if node.get(_POD_SPEC_MARK):
        return copy.deepcopy(pod_spec)
    return {key: _expand(value, pod_spec) for key, value in node.items()}


def arc_schema_with_marks(kind: str) -> JsonObject:
    """ARC's schema of ``kind`` with each pod template left as a ``x-arc-pod-spec`` mark."""
    return _expand(crd_entry(kind)["schema"], {_POD_SPEC_MARK: True})  # type: ignore[no-any-return]


def arc_crds() -> list[JsonObject]:
    """ARC's CRDs, whole (the pod templates rendered as our generator renders them)."""
    pod_spec = pod_spec_schema(kubernetes_definitions(kubernetes_version()))
    documents = []
    for entry in _data()["crds"]:
        kind = entry["kind"]
        documents.append(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": f"{entry['plural']}.{GROUP}"},
                "spec": {
                    "group": GROUP,
                    "names": {
                        "kind": kind,
                        "listKind": f"{kind}List",
                        "plural": entry["plural"],
                        "singular": kind.lower(),
                    },
                    "scope": "Namespaced",
                    "versions": [
                        {
                            "name": "v1alpha1",
                            "served": True,
                            "storage": True,
                            "subresources": entry["subresources"],
                            "additionalPrinterColumns": entry["additionalPrinterColumns"],
                            "schema": {"openAPIV3Schema": _expand(entry["schema"], pod_spec)},
                        }
                    ],
                },
            }
        )
    return documents


def flatten(schema: JsonObject, path: str = "", into: Fields | None = None) -> Fields:
    """``schema``'s fields, path -> facts. A ``x-arc-pod-spec`` mark is expanded from
    Kubernetes' own PodSpec schema (:func:`kubernetes_pod_spec_fields`)."""
    fields: Fields = {} if into is None else into
    if schema.get(_POD_SPEC_MARK):
        for sub, facts in kubernetes_pod_spec_fields().items():
            fields[_join(path, sub)] = dict(facts)
        return fields
    facts = {key: schema[key] for key in _FACTS if key in schema}
    if schema.get("x-kubernetes-int-or-string"):
        facts["type"] = "int-or-string"
    fields[path] = facts
    for key, child in (schema.get("properties") or {}).items():
        flatten(child, _join(path, key), fields)
    if isinstance(schema.get("items"), dict):
        flatten(schema["items"], f"{path}[]", fields)
    if isinstance(schema.get("additionalProperties"), dict):
        flatten(schema["additionalProperties"], f"{path}{{}}", fields)
    return fields


def _join(path: str, key: str) -> str:
    if not key:
        return path
    if not path or key.startswith("["):
        return f"{path}{key}"
    return f"{path}.{key}"


@functools.cache
def _kubernetes_pod_spec_fields(version: str) -> tuple[tuple[str, JsonObject], ...]:
    definitions = kubernetes_definitions(version)
    fields: Fields = {}
    _walk_source(definitions, {"$ref": f"#/$defs/{POD_SPEC}"}, "", fields)
    return tuple(fields.items())


def kubernetes_pod_spec_fields() -> Fields:
    """Kubernetes' PodSpec of ARC's version, path -> facts, read from the published JSON."""
    return {path: dict(facts) for path, facts in _kubernetes_pod_spec_fields(kubernetes_version())}


def _walk_source(definitions: JsonObject, node: JsonObject, path: str, fields: Fields) -> None:
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name.endswith(("resource.Quantity", "intstr.IntOrString")):
            fields[path] = {"type": "int-or-string", "x-kubernetes-int-or-string": True}
            return
        if name.endswith(("meta.v1.Time", "meta.v1.MicroTime")):
            fields[path] = {"type": "string", "format": "date-time"}
            return
        if name.endswith("meta.v1.ObjectMeta"):
            fields[path] = {"type": "object"}
            return
        node = definitions[name]
    facts: JsonObject = {key: node[key] for key in _FACTS if key in node and key != "default"}
    kind = node.get("type")
    if isinstance(kind, list):
        facts["type"] = next(t for t in kind if t != "null")
    fields[path] = facts
    for key, child in (node.get("properties") or {}).items():
        _walk_source(definitions, child, _join(path, key), fields)
    if isinstance(node.get("items"), dict):
        _walk_source(definitions, node["items"], f"{path}[]", fields)
    if isinstance(node.get("additionalProperties"), dict):
        _walk_source(definitions, node["additionalProperties"], f"{path}{{}}", fields)


def differences(arc: Fields, ours: Fields) -> list[str]:
    """Where ``ours`` is not a typed superset of ``arc``: one line per difference.

    Same type, format, enum and markers at every ARC path; every ARC-required property
    required; ARC's defaults kept; no ``x-kubernetes-preserve-unknown-fields`` in ours
    where ARC's schema is typed.
    """
    found = []
    for path, want in arc.items():
        have = ours.get(path)
        where = path or "<root>"
        if have is None:
            found.append(f"{where}: missing")
            continue
        for key in _FACTS:
            if key == "required":
                lost = sorted(set(want.get(key, [])) - set(have.get(key, [])))
                if lost:
                    found.append(f"{where}: not required: {', '.join(lost)}")
            elif key in want and have.get(key) != want[key]:
                found.append(f"{where}: {key} {have.get(key)!r}, ARC's {want[key]!r}")
            elif key == "x-kubernetes-preserve-unknown-fields" and have.get(key):
                found.append(f"{where}: preserves unknown fields where ARC's is typed")
    return found
