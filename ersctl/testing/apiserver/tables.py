"""Server-side printing: ``meta.k8s.io/v1`` Tables for clients that ask for them
(kubectl's ``Accept: application/json;as=Table;...``). Columns are Name and Age, or
Name plus a CRD's ``additionalPrinterColumns``."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from ersctl.testing.apiserver import errors
from ersctl.testing.apiserver.resources import PrinterColumn, ResourceType

JsonObject = dict[str, Any]

_NAME = {"name": "Name", "type": "string", "format": "name", "description": "", "priority": 0}


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def _age(timestamp: str | None, now: float) -> str:
    if not timestamp:
        return "<unknown>"
    try:
        then = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return "<invalid>"
    seconds = max(0, int(now - then))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 3 * 3600:
        return f"{seconds // 60}m"
    if seconds < 48 * 3600:
        return f"{seconds // 3600}h"
    return f"{seconds // 86400}d"


def _lookup(obj: JsonObject, json_path: str) -> Any:
    node: Any = obj
    for part in json_path.strip().lstrip("{").rstrip("}").lstrip(".").split("."):
        if not part:
            continue
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _col(name: str, path: str, kind: str = "string") -> PrinterColumn:
    return PrinterColumn(name=name, type=kind, json_path=path)


_AGE = _col("Age", ".metadata.creationTimestamp", "date")

# kubectl's familiar columns for the built-in types; "@name" cells are computed.
_BUILTIN_COLUMNS: dict[tuple[str, str], tuple[PrinterColumn, ...]] = {
    ("", "pods"): (
        _col("Ready", "@ready"),
        _col("Status", "@pod-status"),
        _col("Restarts", "@restarts", "integer"),
        _AGE,
    ),
    ("", "namespaces"): (_col("Status", ".status.phase"), _AGE),
    ("", "secrets"): (_col("Type", ".type"), _col("Data", "@data-count", "integer"), _AGE),
    ("", "events"): (
        _col("Type", ".type"),
        _col("Reason", ".reason"),
        _col("Object", "@involved"),
        _col("Message", ".message"),
        _AGE,
    ),
    ("coordination.k8s.io", "leases"): (_col("Holder", ".spec.holderIdentity"), _AGE),
}


def _pod_status(obj: JsonObject) -> str:
    if obj.get("metadata", {}).get("deletionTimestamp"):
        return "Terminating"
    status = obj.get("status") or {}
    return str(status.get("reason") or status.get("phase") or "Unknown")


def _container_statuses(obj: JsonObject) -> list[JsonObject]:
    return list((obj.get("status") or {}).get("containerStatuses") or [])


_COMPUTED: dict[str, Any] = {
    "@ready": lambda obj: (
        f"{sum(1 for c in _container_statuses(obj) if c.get('ready'))}/"
        f"{len((obj.get('spec') or {}).get('containers') or [])}"
    ),
    "@pod-status": _pod_status,
    "@restarts": lambda obj: sum(int(c.get("restartCount", 0)) for c in _container_statuses(obj)),
    "@data-count": lambda obj: len(obj.get("data") or {}),
    "@involved": lambda obj: (
        f"{str((obj.get('involvedObject') or {}).get('kind', '')).lower()}/"
        f"{(obj.get('involvedObject') or {}).get('name', '')}"
    ),
}


def _columns(rt: ResourceType) -> tuple[PrinterColumn, ...]:
    if rt.printer_columns:
        return rt.printer_columns
    return _BUILTIN_COLUMNS.get((rt.group, rt.plural), (_AGE,))


def _cell(column: PrinterColumn, obj: JsonObject, now: float) -> Any:
    if column.json_path.startswith("@"):
        return _COMPUTED[column.json_path](obj)
    value = _lookup(obj, column.json_path)
    if column.type == "date":
        return _age(value if isinstance(value, str) else None, now)
    return value


INCLUDE_OBJECT = ("None", "Metadata", "Object")
"""The values of ``includeObject``: what each row's ``object`` carries (default
Metadata). kubectl asks for Object when it sorts (``--sort-by``) or prints a field."""


def include_object(value: str | None) -> str:
    """``includeObject`` checked: the default, or 400 for a value the server rejects."""
    if value in (None, ""):
        return "Metadata"
    if value not in INCLUDE_OBJECT:
        raise errors.bad_request(
            f'includeObject: Unsupported value: "{value}": supported values: '
            + ", ".join(f'"{v}"' for v in INCLUDE_OBJECT)
        )
    return value


def _row_object(obj: JsonObject, include: str) -> JsonObject | None:
    if include == "Object":
        return obj
    if include == "None":
        return None
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }


def table(
    rt: ResourceType, objects: list[JsonObject], resource_version: str, include: str = "Metadata"
) -> JsonObject:
    """A ``meta.k8s.io/v1`` Table of ``objects``; each row's ``object`` as ``include``
    (:func:`include_object`) says: the full object, its metadata, or nothing."""
    now = time.time()
    columns = _columns(rt)
    definitions = [_NAME] + [
        {
            "name": c.name,
            "type": "string" if c.type == "date" else c.type,
            "format": "",
            "description": "",
            "priority": c.priority,
        }
        for c in columns
    ]
    rows = []
    for obj in objects:
        row: JsonObject = {
            "cells": [obj["metadata"]["name"]] + [_cell(c, obj, now) for c in columns]
        }
        shown = _row_object(obj, include)
        if shown is not None:
            row["object"] = shown
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": definitions,
        "rows": rows,
    }
