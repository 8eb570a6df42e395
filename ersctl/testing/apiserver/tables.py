"""Server-side printing: ``meta.k8s.io/v1`` Tables for clients that ask for them
(kubectl's ``Accept: application/json;as=Table;...``). Columns are a built-in kind's
(:mod:`.printers`), or Name plus a CRD's ``additionalPrinterColumns`` (Name and Age
when it has none)."""

from __future__ import annotations

import time
from typing import Any

from ersctl.testing.apiserver import errors, printers
from ersctl.testing.apiserver.printers import Column
from ersctl.testing.apiserver.resources import PrinterColumn, ResourceType

JsonObject = dict[str, Any]


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def _lookup(obj: JsonObject, json_path: str) -> Any:
    node: Any = obj
    for part in json_path.strip().lstrip("{").rstrip("}").lstrip(".").split("."):
        if not part:
            continue
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _custom(column: PrinterColumn) -> Column:
    """A CRD's printer column: its JSON path's value, a date as the time since it."""
    if column.type == "date":
        return Column(
            column.name,
            "string",
            lambda obj, now: printers.since(_lookup(obj, column.json_path), now),
            column.priority,
        )
    return Column(
        column.name, column.type, lambda obj, _: _lookup(obj, column.json_path), column.priority
    )


def _columns(rt: ResourceType) -> tuple[Column, ...]:
    if rt.printer_columns:
        return (printers.name_column(), *(_custom(c) for c in rt.printer_columns))
    if rt.custom:
        return (printers.name_column(), printers.AGE)
    return printers.columns(rt.group, rt.plural)


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
    definitions = [
        {
            "name": c.name,
            "type": c.type,
            "format": c.format,
            "description": "",
            "priority": c.priority,
        }
        for c in columns
    ]
    rows = []
    for obj in objects:
        row: JsonObject = {"cells": [c.cell(obj, now) for c in columns]}
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
