"""Label and field selectors, parsed once per request and matched per object.

Label selectors: ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``,
``k`` (exists), ``!k`` (does not exist), comma-separated (AND). Field selectors:
``path=v``, ``path==v``, ``path!=v`` over the field labels a resource supports
(``metadata.name`` and ``metadata.namespace`` everywhere, a few more for core types).
Parse errors raise ``ValueError`` with a one-line message (the caller answers 400).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

JsonObject = dict[str, Any]
Predicate = Callable[[JsonObject], bool]

_SET_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9._/-]+)\s+(in|notin)\s*\(([^)]*)\)\s*$")
_OP_RE = re.compile(r"^\s*([A-Za-z0-9._/-]+)\s*(==|=|!=)\s*([A-Za-z0-9._-]*)\s*$")
_EXISTS_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9._/-]+)\s*$")

_COMMON_FIELDS = ("metadata.name", "metadata.namespace")
_EXTRA_FIELDS: dict[str, tuple[str, ...]] = {
    "pods": (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "status.phase",
        "status.podIP",
    ),
    "events": (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    "secrets": ("type",),
    "namespaces": ("status.phase",),
}


@dataclass(frozen=True)
class _Requirement:
    key: str
    op: str  # "in", "notin", "exists", "!exists"
    values: frozenset[str]

    def matches(self, labels: Mapping[str, Any]) -> bool:
        if self.op == "exists":
            return self.key in labels
        if self.op == "!exists":
            return self.key not in labels
        if self.op == "in":
            return self.key in labels and labels[self.key] in self.values
        return self.key not in labels or labels[self.key] not in self.values


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [part for part in parts if part.strip()]


def _parse_requirement(text: str) -> _Requirement:
    if match := _SET_RE.match(text):
        if match.group(1):
            raise ValueError(f"unable to parse requirement: {text.strip()!r}")
        values = frozenset(v.strip() for v in match.group(4).split(",") if v.strip())
        return _Requirement(match.group(2), match.group(3), values)
    if match := _OP_RE.match(text):
        op = "notin" if match.group(2) == "!=" else "in"
        return _Requirement(match.group(1), op, frozenset({match.group(3)}))
    if match := _EXISTS_RE.match(text):
        return _Requirement(match.group(2), "!exists" if match.group(1) else "exists", frozenset())
    raise ValueError(f"unable to parse requirement: {text.strip()!r}")


def parse_label_selector(text: str | None) -> Predicate | None:
    """A predicate over objects, or None when the selector selects everything."""
    if not text or not text.strip():
        return None
    requirements = [_parse_requirement(part) for part in _split_top_level(text)]

    def matches(obj: JsonObject) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(req.matches(labels) for req in requirements)

    return matches


def _field_value(obj: JsonObject, path: str) -> str:
    node: Any = obj
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict) and path == "source":
        node = node.get("component")
    return "" if node is None else str(node)


def parse_field_selector(text: str | None, plural: str) -> Predicate | None:
    """A predicate over objects of resource ``plural``, or None for "everything"."""
    if not text or not text.strip():
        return None
    allowed = _COMMON_FIELDS + _EXTRA_FIELDS.get(plural, ())
    terms: list[tuple[str, bool, str]] = []
    for part in text.split(","):
        if not part.strip():
            continue
        match = re.match(r"^\s*([A-Za-z.]+)\s*(==|=|!=)\s*(.*?)\s*$", part)
        if not match:
            raise ValueError(f"invalid selector: {part.strip()!r}; can't understand it")
        path, op, value = match.groups()
        if path not in allowed:
            raise ValueError(f'field label not supported: "{path}"')
        terms.append((path, op != "!=", value))

    def matches(obj: JsonObject) -> bool:
        return all((_field_value(obj, path) == value) is equal for path, equal, value in terms)

    return matches
