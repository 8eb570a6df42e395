"""Structural-schema handling for custom resources, as kube-apiserver applies a CRD's
``openAPIV3Schema``: unknown fields are pruned (silently dropped) unless
``x-kubernetes-preserve-unknown-fields`` keeps them, ``null`` is dropped where the
schema is not ``nullable``, then the result is validated (type, enum, required,
minimum/maximum, unique items of ``set`` and keys of ``map`` lists) and violations
become one 422 Invalid listing every field.
"""

from __future__ import annotations

import json
from typing import Any

JsonObject = dict[str, Any]
Violation = tuple[str, str, str]  # (field path, cause type, message)

_OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
_PRESERVE = "x-kubernetes-preserve-unknown-fields"


def prune_object(obj: JsonObject, schema: JsonObject) -> JsonObject:
    """The object with unknown fields removed; apiVersion/kind/metadata always stay
    (metadata keeps only ObjectMeta's fields)."""
    pruned = prune(obj, schema)
    result: JsonObject = pruned if isinstance(pruned, dict) else {}
    for key in ("apiVersion", "kind"):
        if key in obj:
            result[key] = obj[key]
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        result["metadata"] = {k: v for k, v in meta.items() if k in _OBJECT_META_FIELDS}
    return result


def prune(value: Any, schema: JsonObject | None) -> Any:
    if schema is None:
        return value
    if isinstance(value, dict):
        return _prune_map(value, schema)
    if isinstance(value, list):
        items = schema.get("items")
        return [prune(item, items if isinstance(items, dict) else None) for item in value]
    return value


def _prune_map(value: JsonObject, schema: JsonObject) -> JsonObject:
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    preserve = bool(schema.get(_PRESERVE))
    out: JsonObject = {}
    for key, child in value.items():
        if key in properties:
            child_schema = properties[key]
        elif isinstance(additional, dict):
            child_schema = additional
        elif additional is True or preserve:
            out[key] = child
            continue
        else:
            continue  # pruned: not in the schema
        if child is None and not child_schema.get("nullable"):
            continue
        out[key] = prune(child, child_schema)
    return out


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


def _type_name(value: Any) -> str:
    for name, types in (
        ("boolean", (bool,)),
        ("integer", (int,)),
        ("number", (float,)),
        ("string", (str,)),
        ("object", (dict,)),
        ("array", (list,)),
    ):
        if isinstance(value, types):
            return name
    return "null"


def _type_ok(value: Any, expected: str) -> bool:
    if isinstance(value, bool) and expected != "boolean":
        return False
    if expected == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(expected, (object,)))


def validate(value: Any, schema: JsonObject | None, path: str = "") -> list[Violation]:
    """Every violation of ``schema`` in ``value`` (empty when valid)."""
    if schema is None or value is None:
        return []
    expected = schema.get("type")
    if isinstance(expected, str) and not _type_ok(value, expected):
        actual = _type_name(value)
        return [
            (
                path,
                "FieldValueTypeInvalid",
                f'Invalid value: "{actual}": {path} in body must be of type {expected}: "{actual}"',
            )
        ]
    found = _check_enum_and_bounds(value, schema, path)
    if isinstance(value, dict):
        found.extend(_validate_map(value, schema, path))
    elif isinstance(value, list):
        found.extend(_duplicates(value, schema, path))
        if isinstance(schema.get("items"), dict):
            for index, item in enumerate(value):
                found.extend(validate(item, schema["items"], f"{path}[{index}]"))
    return found


def _duplicates(items: list[Any], schema: JsonObject, path: str) -> list[Violation]:
    """The uniqueness a list type promises (ValidateListSetsAndMaps): the items of a
    ``set``, the keys (``x-kubernetes-list-map-keys``) of a ``map``'s items. Each value
    seen again is named once, at its second place (422 ``Duplicate value``): two
    containers or volumes of one name in a custom resource's PodSpec are refused."""
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "set":
        identities = list(items)
    elif list_type == "map":
        keys = schema.get("x-kubernetes-list-map-keys") or []
        identities = [
            {key: item[key] for key in keys if key in item} if isinstance(item, dict) else {}
            for item in items
        ]
    else:
        return []
    seen: dict[str, int] = {}
    found: list[Violation] = []
    for index, identity in enumerate(identities):
        text = json.dumps(identity, separators=(",", ":"), sort_keys=True)
        seen[text] = seen.get(text, 0) + 1
        if seen[text] == 2:
            found.append((f"{path}[{index}]", "FieldValueDuplicate", f"Duplicate value: {text}"))
    return found


def _check_enum_and_bounds(value: Any, schema: JsonObject, path: str) -> list[Violation]:
    found: list[Violation] = []
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        allowed = ", ".join(f'"{v}"' for v in enum)
        found.append(
            (
                path,
                "FieldValueNotSupported",
                f"Unsupported value: {value!r}: supported values: {allowed}",
            )
        )
    if not isinstance(value, int | float) or isinstance(value, bool):
        return found
    if "minimum" in schema and value < schema["minimum"]:
        found.append(
            (
                path,
                "FieldValueInvalid",
                f"Invalid value: {value}: {path} in body should be greater than or equal "
                f"to {schema['minimum']}",
            )
        )
    if "maximum" in schema and value > schema["maximum"]:
        found.append(
            (
                path,
                "FieldValueInvalid",
                f"Invalid value: {value}: {path} in body should be less than or equal to "
                f"{schema['maximum']}",
            )
        )
    return found


def _validate_map(value: JsonObject, schema: JsonObject, path: str) -> list[Violation]:
    found: list[Violation] = []
    prefix = f"{path}." if path else ""
    for key in schema.get("required") or []:
        if key not in value:
            found.append((f"{prefix}{key}", "FieldValueRequired", "Required value"))
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    for key, child in value.items():
        if path == "" and key in ("apiVersion", "kind", "metadata"):
            continue
        child_schema = properties.get(key, additional if isinstance(additional, dict) else None)
        found.extend(validate(child, child_schema, f"{prefix}{key}"))
    return found
