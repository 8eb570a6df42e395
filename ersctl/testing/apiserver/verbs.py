"""Resource verbs: a :class:`~.messages.Call` in, a :class:`~.messages.Response` or
:class:`~.messages.WatchResponse` out. Dispatch, dry runs and the read verbs (get,
list, watch) live here, the writes in :mod:`.writing`. No socket handling here (see
:mod:`.serving`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ersctl.testing.apiserver import errors, tables
from ersctl.testing.apiserver.messages import Call, Response, WatchResponse, decode_json
from ersctl.testing.apiserver.scale import scale_of
from ersctl.testing.apiserver.store import Store
from ersctl.testing.apiserver.watching import (
    Bookmarks,
    Predicate,
    TooOld,
    Transform,
    encode,
    event_line,
)
from ersctl.testing.apiserver.writing import Writes, deleted_status, predicates

JsonObject = dict[str, Any]

DEFAULT_WATCH_TIMEOUT = 1800.0
LIST_FRESHNESS_WAIT = 3.0
"""How long a LIST waits for a resourceVersion the server has not reached (the watch
cache's blockTimeout)."""


def _named(name: str) -> Predicate:
    def matches(obj: JsonObject) -> bool:
        return bool(obj["metadata"].get("name") == name)

    return matches


class Verbs:
    """Executes resource requests against a :class:`Store`."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._writes = Writes(store)

    def handle(self, call: Call) -> Response | WatchResponse:
        verb = call.req.verb
        handlers: dict[str, Callable[[Call], Response | WatchResponse]] = {
            "get": self._get,
            "list": self._list,
            "watch": self._watch,
            "create": self._writes.create,
            "update": self._writes.update,
            "patch": self._writes.patch,
            "delete": self._writes.delete,
        }
        handler = handlers.get(verb, self._deletecollection)
        dry_run = call.query.get("dryRun") or self._dry_run_in_body(call)
        if dry_run and verb in ("create", "update", "patch", "delete"):
            if dry_run != ["All"]:
                raise errors.bad_request(f"dryRun: Unsupported value: {dry_run[0]!r}")
            return self._dry_run(call, lambda: handler(call))
        return handler(call)

    def _deletecollection(self, call: Call) -> Response:
        return self._writes.deletecollection(
            call, dry_run=bool(call.query.get("dryRun") or self._dry_run_in_body(call))
        )

    def _dry_run_in_body(self, call: Call) -> list[str] | None:
        """kubectl sends ``dryRun`` for deletes inside the DeleteOptions body."""
        if call.req.verb not in ("delete", "deletecollection") or not call.body.strip():
            return None
        doc = decode_json(call.body)
        value = doc.get("dryRun") if isinstance(doc, dict) else None
        return [str(v) for v in value] if isinstance(value, list) and value else None

    def _dry_run(
        self, call: Call, write: Callable[[], Response | WatchResponse]
    ) -> Response | WatchResponse:
        """``dryRun=All``: every check, nothing stored; answer with what would be."""
        answers: list[Response | WatchResponse] = []
        outcome = self._store.dry_run(lambda: answers.append(write()))
        if outcome is None:
            return answers[0]  # the write would change nothing: its normal answer
        if outcome.removed and call.req.rt.plural != "pods":
            return deleted_status(call, outcome.obj)
        created = call.req.verb == "create" or outcome.created
        return Response(201 if created else 200, encode(outcome.obj))

    def _get(self, call: Call) -> Response:
        req = call.req
        assert req.name is not None
        entry = self._store.get(req.rt, call.namespace, req.name)
        if req.subresource == "scale":
            return Response(200, encode(scale_of(entry.obj)))
        if tables.wants_table(call.accept):
            include = tables.include_object(call.one("includeObject"))
            return Response(200, encode(tables.table(req.rt, [entry.obj], entry.rv, include)))
        return Response(200, entry.raw)

    def _list(self, call: Call) -> Response:
        req = call.req
        self._wait_until_fresh(call.one("resourceVersion") or "")
        entries, rv = self._store.list_entries(req.rt, req.namespace, predicates(call))
        if tables.wants_table(call.accept):
            include = tables.include_object(call.one("includeObject"))
            doc = tables.table(req.rt, [e.obj for e in entries], str(rv), include)
            return Response(200, encode(doc))
        head = encode(
            {
                "kind": req.rt.list_kind,
                "apiVersion": req.rt.api_version,
                "metadata": {"resourceVersion": str(rv)},
            }
        )
        return Response(200, head[:-1] + b',"items":[' + b",".join(e.raw for e in entries) + b"]}")

    def _wait_until_fresh(self, raw_rv: str) -> None:
        """A LIST at least as fresh as ``raw_rv``: a version the server has not reached
        yet is waited for, then refused with 504, as the watch cache does
        (waitUntilFreshAndBlock). A watch from such a version is no error (see
        :meth:`_watch`)."""
        try:
            wanted = int(raw_rv) if raw_rv else 0
        except ValueError:
            raise errors.bad_request(f'invalid resource version "{raw_rv}"') from None
        if not self._store.wait_for_version(wanted, LIST_FRESHNESS_WAIT):
            current = self._store.resource_version
            raise errors.too_large_resource_version(
                f"Too large resource version: {wanted}, current: {current}"
            )

    def _watch(self, call: Call) -> WatchResponse:
        req = call.req
        raw_rv = call.one("resourceVersion") or ""
        try:
            since = None if raw_rv in ("", "0") else int(raw_rv)
            timeout = float(call.one("timeoutSeconds") or DEFAULT_WATCH_TIMEOUT)
        except ValueError:
            raise errors.bad_request(f'invalid resource version "{raw_rv}"') from None
        selected = predicates(call)
        if req.name is not None:
            selected.append(_named(req.name))
        # As the real server: no timeout (or 0) means its own default.
        deadline = time.monotonic() + (timeout if timeout > 0 else DEFAULT_WATCH_TIMEOUT)
        try:
            transform = self._watch_transform(call)
            watcher = self._store.watch(req.rt, req.namespace, selected, since, transform)
        except TooOld as exc:
            # As kube's watch cache: 200, then an ERROR event carrying 410 Expired.
            status = errors.expired(str(exc)).status
            return WatchResponse(None, deadline, event_line("ERROR", encode(status)))
        bookmarks = None
        if call.one("allowWatchBookmarks") == "true" and watcher.transform is None:
            bookmarks = Bookmarks(
                kind=req.rt.kind,
                api_version=req.rt.api_version,
                deadline=deadline,
                now=time.monotonic(),
            )
        return WatchResponse(watcher, deadline, bookmarks=bookmarks)

    def _watch_transform(self, call: Call) -> Transform | None:
        if not tables.wants_table(call.accept):
            return None
        rt = call.req.rt
        include = tables.include_object(call.one("includeObject"))

        def one_row_table(obj: JsonObject) -> bytes:
            rv = str(obj["metadata"].get("resourceVersion", ""))
            return encode(tables.table(rt, [obj], rv, include))

        return one_row_table
