"""Server-side printing: ``meta.k8s.io/v1`` Tables for clients that ask for them
(kubectl's ``Accept: application/json;as=Table;...``). Columns are Name and Age, or
Name plus a CRD's ``additionalPrinterColumns``."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

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


def _columns(rt: ResourceType) -> tuple[PrinterColumn, ...]:
    if rt.printer_columns:
        return rt.printer_columns
    return (PrinterColumn(name="Age", type="date", json_path=".metadata.creationTimestamp"),)


def _cell(column: PrinterColumn, obj: JsonObject, now: float) -> Any:
    value = _lookup(obj, column.json_path)
    if column.type == "date":
        return _age(value if isinstance(value, str) else None, now)
    return value


def _partial(obj: JsonObject) -> JsonObject:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }


def table(rt: ResourceType, objects: list[JsonObject], resource_version: str) -> JsonObject:
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
    rows = [
        {
            "cells": [obj["metadata"]["name"]] + [_cell(c, obj, now) for c in columns],
            "object": _partial(obj),
        }
        for obj in objects
    ]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": definitions,
        "rows": rows,
    }
