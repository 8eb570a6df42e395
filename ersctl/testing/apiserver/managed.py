"""``metadata.managedFields`` and server-side apply, as kube-apiserver's field manager
(structured-merge-diff's Updater) keeps them.

Every write made through the API is recorded for its field manager (the request's
``fieldManager``, else the User-Agent's product name, as the real server derives it):

- an update (create, update, patch) takes the fields it added or changed, even from
  other managers (an update never conflicts), and gives up the ones it removed;
- an apply merges its configuration into the object and then owns exactly the fields
  that configuration names. Fields it owned before and no longer names are removed from
  the object unless another manager owns them too. A field another manager owns that
  the apply would change is a conflict (409) unless ``force`` moves it to the applier;
  applying the value another manager set makes both owners.

Entries are keyed by manager, operation, subresource and (for updates) API version, as
the real server keys them; an entry is only touched (its ``time`` too) when its set
changes. Left out: version conversion of sets, ``x-kubernetes-unions``, and the
ownership of items inside atomic lists (an atomic list is one field, as in SMD).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ersctl.testing.apiserver import errors, fieldsets, structure
from ersctl.testing.apiserver.fieldsets import Path

JsonObject = dict[str, Any]

APPLY = "Apply"
UPDATE = "Update"
MAX_MANAGER_LENGTH = 128

# Never owned by anyone: identity and server-set metadata (SMD's stripMetaManager, plus
# the deletion fields only the server sets).
_STRIPPED = frozenset(
    ("f:metadata", f"f:{name}")
    for name in (
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "selfLink",
        "managedFields",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    )
)


@dataclass(frozen=True)
class FieldManager:
    """Who writes: the manager's name, the API version and subresource written to."""

    name: str
    api_version: str
    subresource: str = ""


def manager_name(field_manager: str | None, user_agent: str) -> str:
    """The request's ``fieldManager``, else the product of its User-Agent (what comes
    before the first ``/``), as the real server names an unnamed manager."""
    if field_manager:
        if len(field_manager) > MAX_MANAGER_LENGTH:
            raise errors.bad_request(
                f"fieldManager: Too long: may not be more than {MAX_MANAGER_LENGTH} bytes"
            )
        return field_manager
    return user_agent.split("/", 1)[0][:MAX_MANAGER_LENGTH]


@dataclass
class _Entry:
    manager: str
    operation: str
    api_version: str
    subresource: str
    time: str
    fields: set[Path] = field(default_factory=set)

    @property
    def identity(self) -> tuple[str, str, str, str]:
        # An applier is the same entry whatever version it applies with.
        version = "" if self.operation == APPLY else self.api_version
        return (self.manager, self.operation, version, self.subresource)

    def describe(self) -> str:
        """As the conflict message names a manager (printManager)."""
        text = f'"{self.manager}"'
        if self.subresource:
            text += f' with subresource "{self.subresource}"'
        if self.operation == UPDATE:
            text += f" using {self.api_version}"
        return text


def _decode(entries: Any) -> list[_Entry]:
    decoded = []
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, dict) or not entry.get("manager"):
            continue  # "[{}]" is how a client resets the field ownership
        decoded.append(
            _Entry(
                manager=str(entry["manager"]),
                operation=str(entry.get("operation") or UPDATE),
                api_version=str(entry.get("apiVersion") or ""),
                subresource=str(entry.get("subresource") or ""),
                time=str(entry.get("time") or ""),
                fields=fieldsets.from_fields_v1(entry.get("fieldsV1")),
            )
        )
    return decoded


def _encode(entries: list[_Entry]) -> list[JsonObject]:
    encoded = []
    for entry in entries:
        if not entry.fields:
            continue
        doc: JsonObject = {
            "manager": entry.manager,
            "operation": entry.operation,
            "apiVersion": entry.api_version,
            "time": entry.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": fieldsets.to_fields_v1(entry.fields),
        }
        if entry.subresource:
            doc["subresource"] = entry.subresource
        encoded.append(doc)
    return encoded


def _entries(stored: JsonObject | None, new: JsonObject) -> list[_Entry]:
    """What the write starts from: managedFields the request set itself (different from
    the stored ones), else the stored ones. A request that leaves them out keeps them:
    clients that do not know the field cannot wipe it."""
    given = (new.get("metadata") or {}).get("managedFields")
    kept = ((stored or {}).get("metadata") or {}).get("managedFields")
    if given and given != kept:
        return _decode(given)
    return _decode(kept)


def _owned(paths: set[Path]) -> set[Path]:
    return {p for p in paths if p[:2] not in _STRIPPED and p != ("f:metadata",)}


def _find(entries: list[_Entry], writer: FieldManager, operation: str, now: str) -> _Entry:
    wanted = _Entry(writer.name, operation, writer.api_version, writer.subresource, now)
    for entry in entries:
        if entry.identity == wanted.identity:
            return entry
    entries.append(wanted)
    return wanted


def record_update(
    stored: JsonObject | None,
    new: JsonObject,
    node: JsonObject,
    writer: FieldManager,
    now: str,
) -> list[JsonObject]:
    """The managedFields of ``new``, written by an update of ``stored`` (None: a create,
    compared with an empty object of its kind)."""
    entries = _entries(stored, new)
    before = stored if stored is not None else structure.empty_object(node)
    added, modified, removed = fieldsets.compare(before, new, node)
    changed, removed = _owned(added | modified), _owned(removed)
    mine = _find(entries, writer, UPDATE, now)
    for entry in entries:
        if entry is not mine:
            entry.fields -= removed | changed
    updated = (mine.fields - removed) | changed
    if updated != mine.fields:
        mine.fields, mine.time = updated, now
    return _encode(entries)


@dataclass(frozen=True)
class Conflict:
    manager: str
    path: Path


def apply(
    live: JsonObject | None,
    config: JsonObject,
    node: JsonObject,
    writer: FieldManager,
    *,
    force: bool,
    now: str,
    ignored: Callable[[Path], bool],
) -> tuple[JsonObject, list[JsonObject]]:
    """Server-side apply of ``config`` to ``live`` (None: a create): the object to store
    and its managedFields. ``ignored``: paths this apply cannot own (the status on the
    main resource, everything but it on ``/status``). Raises 409 on a conflict without
    ``force``."""
    entries = _entries(live, live or {})
    merged: JsonObject = fieldsets.merge(live or {}, config, node, top=True)
    applied = {p for p in _owned(fieldsets.field_set(config, node)) if not ignored(p)}
    mine = _find(entries, writer, APPLY, now)
    others = [entry for entry in entries if entry is not mine]
    kept_by_others = set().union(*(entry.fields for entry in others))
    merged = fieldsets.remove(merged, (mine.fields - applied) - kept_by_others)
    # As SMD's Updater excludes the ignored fields from the comparison: the strategy
    # resets them afterwards, so they never conflict.
    added, modified, removed = fieldsets.compare(live or {}, merged, node)
    changed = {p for p in _owned(added | modified) if not ignored(p)}
    removed = {p for p in removed if not ignored(p)}
    conflicts = [
        Conflict(entry.describe(), path)
        for entry in others
        for path in sorted(entry.fields & changed)
    ]
    if conflicts and not force:
        raise errors.apply_conflict([(c.manager, fieldsets.display(c.path)) for c in conflicts])
    for entry in others:
        entry.fields -= _owned(removed) | (changed if force else set())
    if applied != mine.fields:
        mine.fields, mine.time = applied, now
    return merged, _encode(entries)
