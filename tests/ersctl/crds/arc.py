"""ARC's CRDs for tests, one field list per ARC line (``arc-0.14.yaml`` for 0.14.2,
``arc-0.15.yaml`` for 0.15.1): flattened for a field-by-field comparison, and as whole
ARC-shaped CRDs to load into the embedded API server (a cluster where ARC's CRDs are
installed: 0.14's without the guard fields, 0.15's with them).

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

LINES: Final = ("0.14", "0.15")
"""ARC's CRD lines we are a superset of, oldest first."""
NEWEST: Final = LINES[-1]
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
def _data(line: str) -> JsonObject:
    path = Path(__file__).with_name(f"arc-{line}.yaml")
    loaded: JsonObject = yaml.safe_load(path.read_text(encoding="utf-8"))
    return loaded


def kubernetes_version(line: str = "0.14") -> str:
    return str(_data(line)["kubernetesVersion"])


def crd_entry(kind: str, line: str = "0.14") -> JsonObject:
    """ARC's names, columns and subresources of ``kind`` (a copy)."""
    entries = [*_data(line)["crds"], *_data(line)["autoscalingCrds"]]
    (entry,) = (c for c in entries if c["kind"] == kind)
    return copy.deepcopy(entry)


def pod_spec_samples(line: str = "0.14") -> Fields:
    samples: Fields = _data(line)["podSpecSamples"]
    return copy.deepcopy(samples)


def _expand(node: Any, pod_spec: JsonObject, line: str) -> Any:
    """``node`` with the runner spec, proxy and pod spec placeholders filled in."""
    if isinstance(node, list):
        return [_expand(item, pod_spec, line) for item in node]
    if not isinstance(node, dict):
        return node
    for mark, part in _PARTS.items():
        if node.get(mark):
            return _expand(_data(line)[part], pod_spec, line)
    if node.get(_POD_SPEC_MARK):
        return copy.deepcopy(pod_spec)
    return {key: _expand(value, pod_spec, line) for key, value in node.items()}


_PARTS: Final = {
    "x-arc-runner-spec": "runnerSpec",
    "x-arc-proxy": "proxy",
    "x-arc-pod-template": "podTemplate",
    "x-arc-resource-meta": "resourceMeta",
}
"""Placeholder mark -> the shared part of the field list it stands for."""


def arc_schema_with_marks(kind: str, line: str = "0.14") -> JsonObject:
    """ARC's schema of ``kind`` with each pod template left as a ``x-arc-pod-spec`` mark."""
    schema = crd_entry(kind, line)["schema"]
    return _expand(schema, {_POD_SPEC_MARK: True}, line)  # type: ignore[no-any-return]


def arc_crds(line: str = "0.14", *, autoscaling: bool = False) -> list[JsonObject]:
    """ARC's CRDs of ``crds`` (and with ``autoscaling`` of ``autoscalingCrds`` too: all
    four, as ARC's chart installs them), whole (the pod templates rendered as our
    generator renders them)."""
    pod_spec = pod_spec_schema(kubernetes_definitions(kubernetes_version(line)))
    documents = []
    entries = [*_data(line)["crds"], *(_data(line)["autoscalingCrds"] if autoscaling else [])]
    for entry in entries:
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
                            "schema": {"openAPIV3Schema": _expand(entry["schema"], pod_spec, line)},
                        }
                    ],
                },
            }
        )
    return documents


def flatten(
    schema: JsonObject, path: str = "", into: Fields | None = None, *, line: str = "0.14"
) -> Fields:
    """``schema``'s fields, path -> facts. A ``x-arc-pod-spec`` mark is expanded from
    Kubernetes' own PodSpec schema of ARC ``line``'s version
    (:func:`kubernetes_pod_spec_fields`)."""
    fields: Fields = {} if into is None else into
    if schema.get(_POD_SPEC_MARK):
        for sub, facts in kubernetes_pod_spec_fields(line).items():
            fields[_join(path, sub)] = dict(facts)
        return fields
    facts = {key: schema[key] for key in _FACTS if key in schema}
    if schema.get("x-kubernetes-int-or-string"):
        facts["type"] = "int-or-string"
    fields[path] = facts
    for key, child in (schema.get("properties") or {}).items():
        flatten(child, _join(path, key), fields, line=line)
    if isinstance(schema.get("items"), dict):
        flatten(schema["items"], f"{path}[]", fields, line=line)
    if isinstance(schema.get("additionalProperties"), dict):
        flatten(schema["additionalProperties"], f"{path}{{}}", fields, line=line)
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


def kubernetes_pod_spec_fields(line: str = "0.14") -> Fields:
    """Kubernetes' PodSpec of ARC ``line``'s version, path -> facts, read from the
    published JSON."""
    version = kubernetes_version(line)
    return {path: dict(facts) for path, facts in _kubernetes_pod_spec_fields(version)}


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

    Same type, format, enum and markers at every ARC path; ARC's defaults kept; no
    ``x-kubernetes-preserve-unknown-fields`` in ours where ARC's schema is typed; and
    nothing required in ours that ARC's does not require, so every object ARC's CRD
    accepts is accepted by ours (ARC 0.15 dropped most of 0.14's required lists: an
    object ARC 0.15 writes lacks what 0.14 required, and must still be accepted after
    a switch back). What ARC requires and ours does not is the controller's to write
    (``ersctl`` completes every status write with 0.14's required count).
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
                extra = sorted(set(have.get(key, [])) - set(want.get(key, [])))
                if extra:
                    found.append(f"{where}: required here, not in ARC's: {', '.join(extra)}")
            elif key in want and have.get(key) != want[key]:
                found.append(f"{where}: {key} {have.get(key)!r}, ARC's {want[key]!r}")
            elif key == "x-kubernetes-preserve-unknown-fields" and have.get(key):
                found.append(f"{where}: preserves unknown fields where ARC's is typed")
    return found
