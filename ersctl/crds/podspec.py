"""Kubernetes' own ``core/v1`` PodSpec schema, turned into a structural CRD schema.

The source is the JSON schema Kubernetes publishes per version, as the
``kubernetes-validate`` package ships it (``_definitions.json``: OpenAPI definitions
with ``$ref`` links and nullable types). A CRD schema may hold neither, so
:func:`pod_spec_schema` inlines every reference and renders each type the way
controller-gen renders the same Go types in ARC's CRDs:

- ``type: [T, "null"]`` -> ``type: T`` (a CRD field is absent, not null);
- ``resource.Quantity`` -> integer-or-string with Kubernetes' quantity pattern, and
  ``intstr.IntOrString`` -> integer-or-string (``cpu: 1`` and ``cpu: "500m"`` both
  validate; ``type: string`` would reject the first);
- ``metav1.Time`` -> a ``date-time`` string, and an embedded ``ObjectMeta`` (the
  ephemeral volume's claim template) -> ``type: object``;
- the ``+default`` markers the published JSON drops come back: ``protocol: TCP`` on a
  container port, ``service: ""`` on a gRPC probe and ``name: ""`` on every inlined
  ``LocalObjectReference``. A real
  API server refuses a ``x-kubernetes-list-map-keys`` key that is neither required nor
  defaulted, which ``ports`` (keyed by ``containerPort`` and ``protocol``) would be;
- OpenAPI-only extensions (``x-kubernetes-patch-*``, ``x-kubernetes-unions``) are
  dropped: the apiextensions API rejects unknown schema keys.

Pure: the caller loads the definitions (``ersctl.crds.generate``).
"""

from __future__ import annotations

from typing import Any, Final

JsonObject = dict[str, Any]

POD_SPEC: Final = "io.k8s.api.core.v1.PodSpec"

_QUANTITY: Final = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_INT_OR_STRING: Final = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_TIMES: Final = frozenset(
    {"io.k8s.apimachinery.pkg.apis.meta.v1.Time", "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"}
)
_OBJECT_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_LOCAL_OBJECT_REFERENCE: Final = "io.k8s.api.core.v1.LocalObjectReference"
# The +default markers of PodSpec's types other than LocalObjectReference's (found by
# its description below): (definition, property) -> default.
_DEFAULTS: Final[dict[tuple[str, str], object]] = {
    ("io.k8s.api.core.v1.ContainerPort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.GRPCAction", "service"): "",
}

# Kubernetes' quantity grammar (k8s.io/apimachinery resource.Quantity), as
# controller-gen writes it next to every quantity.
QUANTITY_PATTERN: Final = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)

# The keys of an apiextensions/v1 JSONSchemaProps that this conversion carries over.
_KEPT: Final = frozenset(
    {
        "description",
        "type",
        "format",
        "items",
        "properties",
        "additionalProperties",
        "required",
        "enum",
        "default",
        "pattern",
        "minimum",
        "maximum",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
    }
)


def pod_spec_schema(definitions: JsonObject) -> JsonObject:
    """The structural schema of ``core/v1`` PodSpec from Kubernetes' definitions.

    ``definitions`` is the ``$defs`` mapping of ``_definitions.json``. Raises KeyError
    when a referenced definition is missing (a malformed source).
    """
    return _Converter(definitions).definition(POD_SPEC)


class _Converter:
    def __init__(self, definitions: JsonObject) -> None:
        self._defs = definitions
        reference_name = definitions[_LOCAL_OBJECT_REFERENCE]["properties"]["name"]
        # An inlined LocalObjectReference shows only as a `name` with its description.
        self._reference_name_text = reference_name.get("description")

    def definition(self, name: str) -> JsonObject:
        special = _special(name)
        if special is not None:
            return special
        source = self._defs[name]
        out = self.node(source)
        for key, prop in (out.get("properties") or {}).items():
            default = self._default_of(name, key, prop)
            if default is not None:
                prop["default"] = default
        return out

    def node(self, source: JsonObject) -> JsonObject:
        ref = source.get("$ref")
        if isinstance(ref, str):
            target = self.definition(ref.rsplit("/", 1)[-1])
            if "description" in source:  # the field's own words, as controller-gen keeps
                target = {**target, "description": source["description"]}
            return target
        out: JsonObject = {}
        for key, value in source.items():
            if key not in _KEPT:
                continue
            if key == "type":
                out["type"] = _plain_type(value)
            elif key == "items" or (key == "additionalProperties" and isinstance(value, dict)):
                out[key] = self.node(value)
            elif key == "properties":
                out[key] = {prop: self.node(child) for prop, child in sorted(value.items())}
            else:
                out[key] = value
        if "oneOf" in source or "anyOf" in source:
            # Only Quantity and IntOrString use them, and those are handled above.
            raise ValueError(f"unsupported schema composition in {sorted(source)}")
        return out

    def _default_of(self, owner: str, key: str, prop: JsonObject) -> object:
        if (owner, key) in _DEFAULTS:
            return _DEFAULTS[(owner, key)]
        if key == "name" and prop.get("description") == self._reference_name_text:
            return ""
        return None


def _special(name: str) -> JsonObject | None:
    if name == _QUANTITY:
        return {**_int_or_string(), "pattern": QUANTITY_PATTERN}
    if name == _INT_OR_STRING:
        return _int_or_string()
    if name in _TIMES:
        return {"type": "string", "format": "date-time"}
    if name == _OBJECT_META:
        return {"type": "object"}
    return None


def _int_or_string() -> JsonObject:
    return {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }


def _plain_type(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        types = [t for t in value if t != "null"]
        if len(types) == 1 and isinstance(types[0], str):
            return types[0]
    raise ValueError(f"unsupported schema type {value!r}")
