"""Patch documents: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and a
strategic-merge approximation for built-in types.

All functions are pure: they return a new document and never mutate their inputs.
A patch that cannot be applied raises :class:`PatchError` with a one-line message;
``test`` failures and bad paths are the caller's 422/409, malformed documents its 400.
"""

from __future__ import annotations

from typing import Any

from ersctl.kube.copies import json_copy

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


class PatchError(ValueError):
    """The patch is malformed (``malformed=True``) or does not apply to the document."""

    def __init__(self, message: str, *, malformed: bool = False) -> None:
        super().__init__(message)
        self.malformed = malformed


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return json_copy(patch)
    result = json_copy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """A merge patch with the strategic-merge directives (``$patch``,
    ``$setElementOrder/...``, ``$retainKeys``, ...) dropped.

    Lists are replaced rather than merged by key: good enough for what kubectl sends
    to the few built-in types served here, and documented as an approximation.
    """
    return merge_patch(target, _strip_directives(patch))


def _strip_directives(patch: Any) -> Any:
    if isinstance(patch, dict):
        return {k: _strip_directives(v) for k, v in patch.items() if not k.startswith("$")}
    if isinstance(patch, list):
        return [_strip_directives(item) for item in patch]
    return patch


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise PatchError(f"invalid JSON pointer {path!r}", malformed=True)
    return [_unescape(token) for token in path.split("/")[1:]] if path else []


def _resolve(doc: Any, tokens: list[str]) -> Any:
    node = doc
    for token in tokens:
        node = _child(node, token)
    return node


def _child(node: Any, token: str) -> Any:
    if isinstance(node, dict):
        if token not in node:
            raise PatchError(f"missing value at {token!r}")
        return node[token]
    if isinstance(node, list):
        index = _index(node, token, allow_end=False)
        return node[index]
    raise PatchError(f"cannot descend into a scalar at {token!r}")


def _index(node: list[Any], token: str, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(node)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise PatchError(f"invalid array index {token!r}")
    index = int(token)
    if index > len(node) or (index == len(node) and not allow_end):
        raise PatchError(f"array index {index} out of bounds")
    return index


def _add(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return json_copy(value)
    parent = _resolve(doc, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = json_copy(value)
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, allow_end=True), json_copy(value))
    else:
        raise PatchError("cannot add to a scalar")
    return doc


def _remove(doc: Any, tokens: list[str]) -> tuple[Any, Any]:
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent = _resolve(doc, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"unable to remove nonexistent key: {last}")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, last, allow_end=False))
    raise PatchError("cannot remove from a scalar")


def _apply_op(doc: Any, op: Any) -> Any:
    if not isinstance(op, dict) or not isinstance(op.get("op"), str):
        raise PatchError("each JSON patch operation must be an object with an 'op'", malformed=True)
    kind = op["op"]
    tokens = _pointer(op.get("path"))
    if kind in ("add", "replace", "test") and "value" not in op:
        raise PatchError(f"{kind} operation does not have a value", malformed=True)
    if kind == "add":
        return _add(doc, tokens, op["value"])
    if kind == "remove":
        return _remove(doc, tokens)[0]
    if kind == "replace":
        doc, _ = _remove(doc, tokens) if tokens else (doc, None)
        return _add(doc, tokens, op["value"])
    if kind == "test":
        if _resolve(doc, tokens) != op["value"]:
            raise PatchError(f"testing value {op.get('path')} failed")
        return doc
    if kind in ("move", "copy"):
        source = _pointer(op.get("from"))
        if kind == "move":
            doc, value = _remove(doc, source)
        else:
            value = json_copy(_resolve(doc, source))
        return _add(doc, tokens, value)
    raise PatchError(f"Unexpected kind: {kind}", malformed=True)


def json_patch(target: Any, patch: Any) -> Any:
    """RFC 6902: apply the operations in order, atomically (the input is untouched)."""
    if not isinstance(patch, list):
        raise PatchError("a JSON patch must be a list of operations", malformed=True)
    doc = json_copy(target)
    for op in patch:
        doc = _apply_op(doc, op)
    return doc
