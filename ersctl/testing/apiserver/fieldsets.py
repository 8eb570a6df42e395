"""Field paths and field sets, as structured-merge-diff (SMD) sees an object, for
server-side apply and ``metadata.managedFields``.

A path is a tuple of elements in their FieldsV1 spelling: ``f:name`` (a field),
``k:{"name":"x"}`` (the item of a list merged by key), ``v:"x"`` (the item of a set).
An object's field set (:func:`field_set`) holds its leaves (scalars, atomic lists and
maps) and its list items, never a map merged key by key itself: exactly what SMD's
ToFieldSet gives, so a set written into ``managedFields`` reads as the real server's.

All functions are pure; ``node`` is a schema node of :mod:`.structure` (``{}`` or
None: schemaless, where maps merge by key and lists are atomic).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ersctl.kube.copies import json_copy
from ersctl.testing.apiserver import structure

JsonObject = dict[str, Any]
Path = tuple[str, ...]

_TOP_LEVEL = frozenset({"apiVersion", "kind"})


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _key_element(item: Any, keys: tuple[str, ...]) -> str | None:
    if not isinstance(item, dict) or not any(key in item for key in keys):
        return None
    return "k:" + _json({key: item[key] for key in keys if key in item})


def _keyed(items: list[Any], keys: tuple[str, ...] | None) -> list[str] | None:
    """The key elements of a list's items, or None when it cannot merge by key."""
    if not keys:
        return None
    elements = [_key_element(item, keys) for item in items]
    if any(e is None for e in elements) or len(set(elements)) != len(elements):
        return None  # a malformed list: treated as atomic rather than refused
    return [e for e in elements if e is not None]


def field_set(
    obj: JsonObject, node: JsonObject | None, nodes: set[Path] | None = None
) -> set[Path]:
    """The field set of a whole object (``apiVersion``/``kind`` left out). With
    ``nodes``, the paths of its maps and lists merged item by item go there too."""
    found: set[Path] = set()
    for key, value in obj.items():
        if key not in _TOP_LEVEL:
            child = structure.field(node or {}, key, top=True)
            _walk(value, child, (f"f:{key}",), found, nodes)
    return found


def _walk(
    value: Any, node: JsonObject | None, path: Path, found: set[Path], nodes: set[Path] | None
) -> None:
    """``found``: the leaves and list items of ``value``; ``nodes`` (when given): the
    maps and lists it merges into, which SMD's Compare counts as added or removed
    with their contents (an empty one is a leaf to Compare; ToFieldSet skips it)."""
    node = node or {}
    if isinstance(value, dict) and not structure.is_atomic_map(node):
        if nodes is not None:
            (nodes if value else found).add(path)
        for key, child in value.items():
            _walk(child, structure.field(node, key), (*path, f"f:{key}"), found, nodes)
        return
    if isinstance(value, list):
        keys = _keyed(value, structure.list_keys(node))
        is_set = structure.is_set(node) and all(not isinstance(v, dict | list) for v in value)
        if nodes is not None and value and (keys is not None or is_set):
            nodes.add(path)
        if keys is not None:
            for element, item in zip(keys, value, strict=True):
                found.add((*path, element))
                _walk(item, structure.items(node), (*path, element), found, nodes)
            return
        if is_set:
            found.update((*path, "v:" + _json(v)) for v in value)
            return
    found.add(path)


def _matches(item: Any, element: str) -> bool:
    if element.startswith("k:"):
        wanted = json.loads(element[2:])
        return isinstance(item, dict) and all(item.get(k) == v for k, v in wanted.items())
    return element.startswith("v:") and item == json.loads(element[2:])


def value_at(obj: Any, path: Path) -> tuple[bool, Any]:
    """(found, value) of the field or item at ``path``."""
    node = obj
    for element in path:
        if element.startswith("f:") and isinstance(node, dict) and element[2:] in node:
            node = node[element[2:]]
        elif isinstance(node, list):
            match = [item for item in node if _matches(item, element)]
            if not match:
                return False, None
            node = match[0]
        else:
            return False, None
    return True, node


def remove(obj: JsonObject, paths: Iterable[Path]) -> JsonObject:
    """A copy of ``obj`` without the fields and items at ``paths`` (missing ones are
    ignored)."""
    result = json_copy(obj)
    for path in sorted(paths, key=len, reverse=True):
        found, parent = value_at(result, path[:-1])
        if not found:
            continue
        last = path[-1]
        if isinstance(parent, dict) and last.startswith("f:"):
            parent.pop(last[2:], None)
        elif isinstance(parent, list):
            parent[:] = [item for item in parent if not _matches(item, last)]
    return result


def merge(live: Any, config: Any, node: JsonObject | None, *, top: bool = False) -> Any:
    """``config`` applied onto ``live``: maps merged key by key (unless atomic), lists
    merged by key or by value where the schema says so (live order, new items after),
    anything else replaced."""
    node = node or {}
    if isinstance(config, dict) and isinstance(live, dict) and not structure.is_atomic_map(node):
        merged = dict(live)
        for key, value in config.items():
            merged[key] = merge(live.get(key), value, structure.field(node, key, top=top))
        return merged
    if isinstance(config, list) and isinstance(live, list):
        keys = structure.list_keys(node)
        live_keys, config_keys = _keyed(live, keys), _keyed(config, keys)
        if live_keys is not None and config_keys is not None:
            result = list(live)
            for element, item in zip(config_keys, config, strict=True):
                if element in live_keys:
                    at = live_keys.index(element)
                    result[at] = merge(live[at], item, structure.items(node))
                else:
                    result.append(json_copy(item))
            return result
        if structure.is_set(node):
            return [*live, *(v for v in config if v not in live)]
    return json_copy(config)


def compare(old: JsonObject, new: JsonObject, node: JsonObject | None) -> tuple[set[Path], ...]:
    """(added, modified, removed) between two versions of an object, as SMD's Compare:
    leaves whose value changed are modified; list items are compared by their fields;
    a map or a list merged by item that appears (or goes) is added (removed) itself,
    with its contents, which is the ``"."`` the real server's managedFields show under
    a map a manager created (``f:labels``, a custom resource's ``f:spec``). Equal
    subtrees are skipped whole (every write compares, most change little)."""
    added: set[Path] = set()
    modified: set[Path] = set()
    removed: set[Path] = set()
    for key in old.keys() | new.keys():
        if key in _TOP_LEVEL or old.get(key) == new.get(key):
            continue
        child = structure.field(node or {}, key, top=True)
        _diff(old.get(key), new.get(key), key in old, key in new, child, (f"f:{key}",),
              (added, modified, removed))  # fmt: skip
    return added, modified, removed


def _diff(
    old: Any,
    new: Any,
    had: bool,
    has: bool,
    node: JsonObject | None,
    path: Path,
    found: tuple[set[Path], set[Path], set[Path]],
) -> None:
    added, modified, removed = found
    if not has or not had:
        target = added if has else removed
        _walk(new if has else old, node, path, target, target)
        return
    node = node or {}
    if isinstance(old, dict) and isinstance(new, dict) and not structure.is_atomic_map(node):
        for key in old.keys() | new.keys():
            if old.get(key) != new.get(key) or (key in old) != (key in new):
                _diff(old.get(key), new.get(key), key in old, key in new,
                      structure.field(node, key), (*path, f"f:{key}"), found)  # fmt: skip
        return
    if isinstance(old, list) and isinstance(new, list):
        keys = structure.list_keys(node)
        old_keys, new_keys = _keyed(old, keys), _keyed(new, keys)
        if old_keys is not None and new_keys is not None:
            before, after = (
                dict(zip(old_keys, old, strict=True)),
                dict(zip(new_keys, new, strict=True)),
            )
            for element in before.keys() | after.keys():
                item = (*path, element)
                if element not in after:
                    removed.add(item)
                    _walk(before[element], structure.items(node), item, removed, removed)
                elif element not in before:
                    added.add(item)
                    _walk(after[element], structure.items(node), item, added, added)
                elif before[element] != after[element]:
                    _diff(before[element], after[element], True, True, structure.items(node),
                          item, found)  # fmt: skip
            return
    old_set: set[Path] = set()
    new_set: set[Path] = set()
    old_nodes: set[Path] = set()
    new_nodes: set[Path] = set()
    _walk(old, node, path, old_set, old_nodes)
    _walk(new, node, path, new_set, new_nodes)
    added.update((new_set | new_nodes) - (old_set | old_nodes))
    removed.update((old_set | old_nodes) - (new_set | new_nodes))
    modified.update(
        p
        for p in old_set & new_set
        if p[-1].startswith("f:")
        and value_at(old, p[len(path) :])[1] != value_at(new, p[len(path) :])[1]
    )


def display(path: Path) -> str:
    """A path as SMD prints it: ``.spec.containers[name="x"].image``."""
    out = []
    for element in path:
        kind, text = element[:2], element[2:]
        if kind == "f:":
            out.append(f".{text}")
        elif kind == "k:":
            fields = json.loads(text)
            out.append("[" + ",".join(f"{k}={_json(v)}" for k, v in sorted(fields.items())) + "]")
        else:
            out.append(f"[={text}]")
    return "".join(out)


# -- FieldsV1 ------------------------------------------------------------------------


def to_fields_v1(paths: Iterable[Path]) -> JsonObject:
    """The FieldsV1 trie of a set: ``{}`` marks a member leaf, ``"."`` a member that
    also has children."""
    root: JsonObject = {}
    members: set[Path] = set(paths)
    for path in sorted(members):
        node = root
        for depth, element in enumerate(path):
            node = node.setdefault(element, {})
            if path[: depth + 1] in members and depth + 1 < len(path):
                node["."] = {}
    return root


def from_fields_v1(doc: Any, prefix: Path = ()) -> set[Path]:
    """The set a FieldsV1 trie encodes (a malformed one reads as what it can)."""
    found: set[Path] = set()
    if not isinstance(doc, dict):
        return found
    for element, child in doc.items():
        if element == ".":
            if prefix:
                found.add(prefix)
            continue
        path = (*prefix, element)
        if isinstance(child, dict) and child:
            found |= from_fields_v1(child, path)
        else:
            found.add(path)
    return found
