"""Resource verbs over HTTP: request body/query in, :class:`Response` or
:class:`WatchResponse` out. No socket handling here (see :mod:`.http`)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from ersctl.testing.apiserver import errors, patching, protobuf, tables
from ersctl.testing.apiserver.records import DeleteOptions, Entry
from ersctl.testing.apiserver.routing import ResourceRequest
from ersctl.testing.apiserver.selectors import parse_field_selector, parse_label_selector
from ersctl.testing.apiserver.store import Store
from ersctl.testing.apiserver.watching import (
    Bookmarks,
    Predicate,
    TooLarge,
    TooOld,
    Transform,
    Watcher,
    encode,
    event_line,
)

JsonObject = dict[str, Any]
Query = dict[str, list[str]]

DEFAULT_WATCH_TIMEOUT = 1800.0
# Server-side apply (application/apply-patch+yaml) is not emulated.
_PATCH_TYPES = [patching.JSON_PATCH, patching.MERGE_PATCH]


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    content_type: str = "application/json"


@dataclass(frozen=True)
class WatchResponse:
    """A watch stream: ``first`` lines (e.g. an ERROR event) then the watcher's."""

    watcher: Watcher | None
    deadline: float
    first: bytes = b""
    bookmarks: Bookmarks | None = None


def _one(query: Query, key: str) -> str | None:
    values = query.get(key)
    return values[0] if values else None


def decode_body(body: bytes, content_type: str) -> Any:
    """The request body: JSON, YAML, or protobuf for the few types kubectl's typed
    clients send that way (Secret, ConfigMap, Namespace, ServiceAccount); 415 for
    other protobuf, 400 for a body that does not parse."""
    media = content_type.split(";")[0].strip().lower()
    if media == protobuf.MEDIA_TYPE:
        try:
            return protobuf.decode(body)
        except (protobuf.UnsupportedProtobuf, UnicodeDecodeError) as exc:
            raise errors.unsupported_media_type(
                protobuf.MEDIA_TYPE, ["application/json", "application/yaml"], detail=str(exc)
            ) from None
    if media == "application/yaml":
        try:
            return yaml.safe_load(body)
        except yaml.YAMLError as exc:
            raise errors.bad_request(f"the request body is not valid YAML: {exc}") from None
    return decode_json(body)


def decode_json(body: bytes) -> Any:
    if not body.strip():
        raise errors.bad_request("the request body is empty")
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise errors.bad_request(f"the request body is not valid JSON: {exc}") from None


def _predicates(req: ResourceRequest, query: Query) -> list[Predicate]:
    try:
        label = parse_label_selector(_one(query, "labelSelector"))
        field = parse_field_selector(_one(query, "fieldSelector"), req.rt.plural)
    except ValueError as exc:
        raise errors.bad_request(str(exc)) from None
    return [p for p in (label, field) if p is not None]


def _named(name: str) -> Predicate:
    def matches(obj: JsonObject) -> bool:
        return bool(obj["metadata"].get("name") == name)

    return matches


class Verbs:
    """Executes resource requests against a :class:`Store`."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def handle(
        self, req: ResourceRequest, query: Query, content_type: str, body: bytes, accept: str
    ) -> Response | WatchResponse:
        handler: Callable[..., Response | WatchResponse] = getattr(self, f"_{req.verb}")
        dry_run = query.get("dryRun") or self._dry_run_in_body(req, body)
        if dry_run and req.verb in ("create", "update", "patch", "delete"):
            if dry_run != ["All"]:
                raise errors.bad_request(f"dryRun: Unsupported value: {dry_run[0]!r}")
            return self._dry_run(req, lambda: handler(req, query, content_type, body, accept))
        return handler(req, query, content_type, body, accept)

    def _dry_run_in_body(self, req: ResourceRequest, body: bytes) -> list[str] | None:
        """kubectl sends ``dryRun`` for deletes inside the DeleteOptions body."""
        if req.verb not in ("delete", "deletecollection") or not body.strip():
            return None
        doc = decode_json(body)
        value = doc.get("dryRun") if isinstance(doc, dict) else None
        return [str(v) for v in value] if isinstance(value, list) and value else None

    def _dry_run(
        self, req: ResourceRequest, write: Callable[[], Response | WatchResponse]
    ) -> Response | WatchResponse:
        """``dryRun=All``: every check, nothing stored; answer with what would be."""
        answers: list[Response | WatchResponse] = []
        outcome = self._store.dry_run(lambda: answers.append(write()))
        if outcome is None:
            return answers[0]  # the write would change nothing: its normal answer
        if outcome.removed and req.rt.plural != "pods":
            return self._deleted_status(req, outcome.obj)
        return Response(201 if req.verb == "create" else 200, encode(outcome.obj))

    def _ns(self, req: ResourceRequest) -> str:
        return req.namespace or ""

    def _object(self, entry: Entry, status: int = 200) -> Response:
        return Response(status, entry.raw)

    def _get(
        self, req: ResourceRequest, query: Query, ct: str, body: bytes, accept: str
    ) -> Response:
        assert req.name is not None
        entry = self._store.get(req.rt, self._ns(req), req.name)
        if tables.wants_table(accept):
            return Response(200, encode(tables.table(req.rt, [entry.obj], entry.rv)))
        return self._object(entry)

    def _list(
        self, req: ResourceRequest, query: Query, ct: str, body: bytes, accept: str
    ) -> Response:
        entries, rv = self._store.list_entries(req.rt, req.namespace, _predicates(req, query))
        if tables.wants_table(accept):
            return Response(200, encode(tables.table(req.rt, [e.obj for e in entries], str(rv))))
        head = encode(
            {
                "kind": req.rt.list_kind,
                "apiVersion": req.rt.api_version,
                "metadata": {"resourceVersion": str(rv)},
            }
        )
        return Response(200, head[:-1] + b',"items":[' + b",".join(e.raw for e in entries) + b"]}")

    def _watch(
        self, req: ResourceRequest, query: Query, ct: str, body: bytes, accept: str
    ) -> WatchResponse:
        raw_rv = _one(query, "resourceVersion") or ""
        try:
            since = None if raw_rv in ("", "0") else int(raw_rv)
            timeout = float(_one(query, "timeoutSeconds") or DEFAULT_WATCH_TIMEOUT)
        except ValueError:
            raise errors.bad_request(f'invalid resource version "{raw_rv}"') from None
        predicates = _predicates(req, query)
        if req.name is not None:
            predicates.append(_named(req.name))
        # As the real server: no timeout (or 0) means its own default.
        deadline = time.monotonic() + (timeout if timeout > 0 else DEFAULT_WATCH_TIMEOUT)
        try:
            watcher = self._store.watch(
                req.rt, req.namespace, predicates, since, self._watch_transform(req, accept)
            )
        except TooOld as exc:
            # As kube's watch cache: 200, then an ERROR event carrying 410 Expired.
            status = errors.expired(str(exc)).status
            return WatchResponse(None, deadline, event_line("ERROR", encode(status)))
        except TooLarge as exc:
            # The watch cache waits ~3 s for such a version, then gives up with 504.
            status = errors.too_large_resource_version(str(exc)).status
            return WatchResponse(None, deadline, event_line("ERROR", encode(status)))
        bookmarks = None
        if _one(query, "allowWatchBookmarks") == "true" and watcher.transform is None:
            bookmarks = Bookmarks(
                kind=req.rt.kind,
                api_version=req.rt.api_version,
                deadline=deadline,
                now=time.monotonic(),
            )
        return WatchResponse(watcher, deadline, bookmarks=bookmarks)

    def _watch_transform(self, req: ResourceRequest, accept: str) -> Transform | None:
        if not tables.wants_table(accept):
            return None
        rt = req.rt

        def one_row_table(obj: JsonObject) -> bytes:
            rv = str(obj["metadata"].get("resourceVersion", ""))
            return encode(tables.table(rt, [obj], rv))

        return one_row_table

    def _create(
        self, req: ResourceRequest, query: Query, ct: str, body: bytes, accept: str
    ) -> Response:
        entry = self._store.create(req.rt, self._ns(req), decode_body(body, ct))
        return self._object(entry, 201)

    def _update(
        self, req: ResourceRequest, query: Query, ct: str, body: bytes, accept: str
    ) -> Response:
        assert req.name is not None
        entry = self._store.update(
            req.rt, self._ns(req), req.name, decode_body(body, ct), req.subresource
        )
        return self._object(entry)

    def _patch(
        self, req: ResourceRequest, query: Query, ct: str, body: bytes, accept: str
    ) -> Response:
        assert req.name is not None
        media = ct.split(";")[0].strip().lower()
        if media == patching.MERGE_PATCH:
            apply = patching.merge_patch
        elif media == patching.JSON_PATCH:
            apply = patching.json_patch
        elif media == patching.STRATEGIC_MERGE_PATCH and not req.rt.custom:
            apply = patching.strategic_merge_patch
        else:
            # Strategic merge needs Go struct tags, which custom resources do not have.
            accepted = (
                _PATCH_TYPES if req.rt.custom else [*_PATCH_TYPES, patching.STRATEGIC_MERGE_PATCH]
            )
            raise errors.unsupported_media_type(media, accepted)
        document = decode_json(body)

        def patched(current: JsonObject) -> Any:
            try:
                return apply(current, document)
            except patching.PatchError as exc:
                if exc.malformed:
                    raise errors.bad_request(str(exc)) from None
                raise errors.StatusError(422, "Invalid", str(exc)) from None

        entry = self._store.patch(req.rt, self._ns(req), req.name, patched, req.subresource)
        return self._object(entry)

    def _delete_options(self, query: Query, body: bytes) -> DeleteOptions:
        doc: JsonObject = {}
        if body.strip():
            parsed = decode_json(body)
            if not isinstance(parsed, dict):
                raise errors.bad_request("DeleteOptions must be a JSON object")
            doc = parsed
        pre = doc.get("preconditions") or {}
        propagation = doc.get("propagationPolicy") or _one(query, "propagationPolicy")
        if doc.get("orphanDependents") is True:
            propagation = "Orphan"
        return DeleteOptions(
            uid=pre.get("uid"),
            resource_version=pre.get("resourceVersion"),
            propagation=str(propagation or "Background"),
        )

    def _delete(
        self, req: ResourceRequest, query: Query, ct: str, body: bytes, accept: str
    ) -> Response:
        assert req.name is not None
        options = self._delete_options(query, body)
        obj, deleted = self._store.delete(req.rt, self._ns(req), req.name, options)
        if deleted and req.rt.plural != "pods":
            return self._deleted_status(req, obj)
        return Response(200, encode(obj))

    def _deleted_status(self, req: ResourceRequest, obj: JsonObject) -> Response:
        """What the real server answers for a deleted object of most types (pods
        answer with the object itself)."""
        details: JsonObject = {"name": obj["metadata"]["name"], "kind": req.rt.plural}
        if req.rt.group:
            details["group"] = req.rt.group
        details["uid"] = obj["metadata"].get("uid")
        status = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": details,
        }
        return Response(200, encode(status))

    def _deletecollection(
        self, req: ResourceRequest, query: Query, ct: str, body: bytes, accept: str
    ) -> Response:
        options = self._delete_options(query, body)
        entries, _ = self._store.list_entries(req.rt, req.namespace, _predicates(req, query))
        items = []
        if query.get("dryRun") or self._dry_run_in_body(req, body):
            entries, items = [], [entry.obj for entry in entries]
        for entry in entries:
            meta = entry.obj["metadata"]
            try:
                obj, _ = self._store.delete(
                    req.rt, meta.get("namespace", ""), meta["name"], options
                )
            except errors.StatusError as exc:
                if exc.code != 404:
                    raise
                continue
            items.append(obj)
        doc = {
            "kind": req.rt.list_kind,
            "apiVersion": req.rt.api_version,
            "metadata": {"resourceVersion": str(self._store.resource_version)},
            "items": items,
        }
        return Response(200, encode(doc))
