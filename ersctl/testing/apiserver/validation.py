"""``fieldValidation``: what a write does with fields its type does not know.

``Strict`` refuses the write (400, ``strict decoding error: unknown field "spec.x"``),
``Warn`` (the default) and ``Ignore`` accept it; ``Warn`` names each field in a
``Warning`` header. Either way an unknown field is not stored: a custom resource is
pruned to its schema, and a built-in type's unknown fields are dropped by its decoder.
Which fields are known comes from :mod:`.structure`; a built-in type without a schema
there knows every field. Duplicate fields (the other half of the real check) are not
detected: Python's JSON decoder keeps the last.
"""

from __future__ import annotations

from typing import Any

from ersctl.testing.apiserver import errors, structure
from ersctl.testing.apiserver.messages import Call

JsonObject = dict[str, Any]

DIRECTIVES = ("Ignore", "Warn", "Strict")


def check_fields(call: Call, body: Any) -> list[str]:
    """The warnings for ``body``'s unknown fields under the request's directive; raises
    400 when it is Strict and there are any. ``body`` loses a built-in type's unknown
    fields (in place), as its decoder drops them; a custom resource's are pruned later,
    with its schema's other rules."""
    directive = call.one("fieldValidation") or "Warn"
    if directive not in DIRECTIVES:
        raise errors.bad_request(
            f'fieldValidation: Unsupported value: "{directive}": supported values: '
            + ", ".join(f'"{d}"' for d in DIRECTIVES)
        )
    if not isinstance(body, dict):
        return []
    rt = call.req.rt
    unknown = unknown_fields(body, structure.root(rt.group, rt.version, rt.kind, rt.schema))
    problems = [f'unknown field "{display(path)}"' for path in unknown]
    if problems and directive == "Strict":
        raise errors.bad_request(
            f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
            f"strict decoding error: {', '.join(problems)}"
        )
    if not rt.custom:
        for path in unknown:
            _drop(body, path)
    return problems if directive == "Warn" else []


FieldPath = tuple[str | int, ...]


def display(path: FieldPath) -> str:
    """``spec.items[0].bar``, as the strict decoder names a field."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def unknown_fields(obj: JsonObject, node: JsonObject) -> list[FieldPath]:
    """The paths of the fields in a whole object that its schema does not know."""
    found: list[FieldPath] = []
    node = structure.resolve(node)
    known = structure.knows_fields(node)
    for key, value in obj.items():
        if key in ("apiVersion", "kind"):
            continue
        child = structure.field(node, key, top=True)
        if child is None:
            if known:
                found.append((key,))
            continue
        _walk(value, child, (key,), found)
    return found


def _walk(value: Any, node: JsonObject, path: FieldPath, found: list[FieldPath]) -> None:
    node = structure.resolve(node)
    if isinstance(value, dict):
        known = structure.knows_fields(node)
        for key, child_value in value.items():
            child = structure.field(node, key)
            if child is None:
                if known:
                    found.append((*path, key))
                continue
            _walk(child_value, child, (*path, key), found)
    elif isinstance(value, list):
        items = structure.items(node)
        for index, item in enumerate(value):
            _walk(item, items, (*path, index), found)


def _drop(obj: JsonObject, path: FieldPath) -> None:
    node: Any = obj
    for part in path[:-1]:
        node = node[part]
    node.pop(path[-1], None)
