"""CustomResourceDefinition acceptance: what the apiextensions server checks before
serving a CRD, and the status its controllers would write (names accepted,
Established), set at once instead of a moment later."""

from __future__ import annotations

from typing import Any

from ersctl.kube.copies import json_copy
from ersctl.testing.apiserver import errors
from ersctl.testing.apiserver.resources import CRD_TYPE, ResourceType, types_from_crd

JsonObject = dict[str, Any]


def _invalid(crd: JsonObject, field: str, problem: str) -> errors.StatusError:
    name = str(crd["metadata"].get("name"))
    return errors.invalid(CRD_TYPE, name, field, "FieldValueInvalid", f"Invalid value: {problem}")


def _served_types(crd: JsonObject) -> list[ResourceType]:
    try:
        types = types_from_crd(crd)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _invalid(crd, "spec", f"malformed CustomResourceDefinition ({exc})") from exc
    if not types:
        raise _invalid(crd, "spec.versions", "no served version")
    expected = f"{types[0].plural}.{types[0].group}"
    if crd["metadata"]["name"] != expected:
        raise _invalid(
            crd,
            "metadata.name",
            f'"{crd["metadata"]["name"]}": must be spec.names.plural+"."+spec.group',
        )
    return types


def _condition(kind: str, reason: str, message: str) -> JsonObject:
    return {"type": kind, "status": "True", "reason": reason, "message": message}


def accept(crd: JsonObject) -> list[ResourceType]:
    """Validate ``crd`` (422 Invalid) and fill in its status; returns the types it
    serves."""
    types = _served_types(crd)
    crd["status"] = {
        "acceptedNames": json_copy(crd["spec"]["names"]),
        "conditions": [
            _condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            _condition(
                "Established", "InitialNamesAccepted", "the initial names have been accepted"
            ),
        ],
        "storedVersions": [v["name"] for v in crd["spec"]["versions"] if v.get("storage", True)],
    }
    return types
