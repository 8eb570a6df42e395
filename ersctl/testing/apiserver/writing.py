"""The write verbs: create, update, patch (JSON, merge, strategic merge, and
server-side apply), delete and deletecollection, each recorded in ``managedFields`` for
its field manager (:mod:`.managed`) and its body checked as ``fieldValidation`` asks
(:mod:`.validation`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ersctl.testing.apiserver import errors, managed, patching, validation
from ersctl.testing.apiserver.messages import Call, Response, decode_body, decode_json, decode_yaml
from ersctl.testing.apiserver.records import DeleteOptions, Entry
from ersctl.testing.apiserver.scale import rescaled, scale_of
from ersctl.testing.apiserver.selectors import parse_field_selector, parse_label_selector
from ersctl.testing.apiserver.store import Store
from ersctl.testing.apiserver.watching import Predicate, encode

JsonObject = dict[str, Any]

_PATCH_TYPES = [patching.JSON_PATCH, patching.MERGE_PATCH, patching.APPLY_PATCH]


def predicates(call: Call) -> list[Predicate]:
    """The label and field selectors of a list, watch or deletecollection."""
    try:
        label = parse_label_selector(call.one("labelSelector"))
        field = parse_field_selector(call.one("fieldSelector"), call.req.rt.plural)
    except ValueError as exc:
        raise errors.bad_request(str(exc)) from None
    return [p for p in (label, field) if p is not None]


def _writer(call: Call) -> managed.FieldManager:
    name = managed.manager_name(call.one("fieldManager"), call.user_agent)
    return managed.FieldManager(name, call.req.rt.api_version, call.req.subresource or "")


def _answer(entry: Entry, status: int, warnings: list[str]) -> Response:
    return Response(status, entry.raw, warnings=tuple(warnings))


class Writes:
    """Executes write requests against a :class:`Store`."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def create(self, call: Call) -> Response:
        body = decode_body(call.body, call.content_type)
        warnings = validation.check_fields(call, body)
        entry = self._store.create(call.req.rt, call.namespace, body, writer=_writer(call))
        return _answer(entry, 201, warnings)

    def update(self, call: Call) -> Response:
        assert call.req.name is not None
        body = decode_body(call.body, call.content_type)
        if call.req.subresource == "scale":
            return self._rescale(call, lambda _: body)
        warnings = validation.check_fields(call, body)
        entry = self._store.update(
            call.req.rt, call.namespace, call.req.name, body, call.req.subresource, _writer(call)
        )
        return _answer(entry, 200, warnings)

    def patch(self, call: Call) -> Response:
        assert call.req.name is not None
        rt, media = call.req.rt, call.media_type
        if media == patching.APPLY_PATCH:
            return self._apply(call)
        if media == patching.MERGE_PATCH:
            apply = patching.merge_patch
        elif media == patching.JSON_PATCH:
            apply = patching.json_patch
        elif media == patching.STRATEGIC_MERGE_PATCH and not rt.custom:
            apply = patching.strategic_merge_patch
        else:
            # Strategic merge needs Go struct tags, which custom resources do not have.
            accepted = (
                _PATCH_TYPES if rt.custom else [*_PATCH_TYPES, patching.STRATEGIC_MERGE_PATCH]
            )
            raise errors.unsupported_media_type(media, accepted)
        document = decode_json(call.body)
        if call.req.subresource == "scale":
            return self._rescale(call, lambda scale: _patched(apply, scale, document))
        warnings: list[str] = []

        def patched(current: JsonObject) -> Any:
            result = _patched(apply, current, document)
            warnings.extend(validation.check_fields(call, result))
            return result

        entry = self._store.patch(
            rt, call.namespace, call.req.name, patched, call.req.subresource, _writer(call)
        )
        return _answer(entry, 200, warnings)

    def _rescale(self, call: Call, scale: Callable[[JsonObject], Any]) -> Response:
        """A write of ``/scale``: ``scale`` makes the Scale to write from the current one;
        its replicas become the object's ``spec.replicas``. Answers the new Scale."""
        assert call.req.name is not None
        rt = call.req.rt
        entry = self._store.patch(
            rt,
            call.namespace,
            call.req.name,
            lambda current: rescaled(rt, current, scale(scale_of(current))),
            None,
            _writer(call),
        )
        return Response(200, encode(scale_of(entry.obj)))

    def _apply(self, call: Call) -> Response:
        """Server-side apply: create or merge, owned by the request's field manager."""
        assert call.req.name is not None
        if not call.one("fieldManager"):
            raise errors.invalid_patch_options(
                "fieldManager", "FieldValueRequired", "Required value: is required for apply patch"
            )
        force = call.one("force")
        if force not in (None, "true", "false"):
            raise errors.bad_request(f'force: Invalid value: "{force}": must be true or false')
        config = decode_yaml(call.body)
        warnings = validation.check_fields(call, config)
        entry, created = self._store.apply(
            call.req.rt,
            call.namespace,
            call.req.name,
            config,
            call.req.subresource,
            _writer(call),
            force=force == "true",
        )
        return _answer(entry, 201 if created else 200, warnings)

    def _delete_options(self, call: Call) -> DeleteOptions:
        doc: JsonObject = {}
        if call.body.strip():
            parsed = decode_json(call.body)
            if not isinstance(parsed, dict):
                raise errors.bad_request("DeleteOptions must be a JSON object")
            doc = parsed
        pre = doc.get("preconditions") or {}
        propagation = doc.get("propagationPolicy") or call.one("propagationPolicy")
        if doc.get("orphanDependents") is True:
            propagation = "Orphan"
        return DeleteOptions(
            uid=pre.get("uid"),
            resource_version=pre.get("resourceVersion"),
            propagation=str(propagation or "Background"),
        )

    def delete(self, call: Call) -> Response:
        assert call.req.name is not None
        options = self._delete_options(call)
        obj, deleted = self._store.delete(call.req.rt, call.namespace, call.req.name, options)
        if deleted and call.req.rt.plural != "pods":
            return deleted_status(call, obj)
        return Response(200, encode(obj))

    def deletecollection(self, call: Call, *, dry_run: bool) -> Response:
        req = call.req
        options = self._delete_options(call)
        entries, _ = self._store.list_entries(req.rt, req.namespace, predicates(call))
        items = []
        if dry_run:
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


def _patched(apply: Callable[[Any, Any], Any], current: JsonObject, document: Any) -> Any:
    try:
        return apply(current, document)
    except patching.PatchError as exc:
        if exc.malformed:
            raise errors.bad_request(str(exc)) from None
        raise errors.StatusError(422, "Invalid", str(exc)) from None


def deleted_status(call: Call, obj: JsonObject) -> Response:
    """What the real server answers for a deleted object of most types (pods answer
    with the object itself)."""
    rt = call.req.rt
    details: JsonObject = {"name": obj["metadata"]["name"], "kind": rt.plural}
    if rt.group:
        details["group"] = rt.group
    details["uid"] = obj["metadata"].get("uid")
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }
    return Response(200, encode(status))
