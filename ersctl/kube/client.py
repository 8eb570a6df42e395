"""The one Kubernetes client of both programs: generic reads and writes of any kind.

controller-runtime's ``client.Reader`` / ``client.Writer`` / ``SubResourceWriter`` in
Python, over JSON documents: a :class:`Resource` names the kind (custom or built-in)
by group, version and plural; :class:`Reader` gets and lists, :class:`Writer`
creates, merge-patches and deletes (with uid / resourceVersion preconditions),
:class:`SubResourceWriter` (``Writer.status``) patches the ``/status`` subresource
(JSON merge patch, or JSON patch when a ``test`` operation must hold). The typed views the controllers use (``ersctl.arcclient``, the
controllers' stores, the listener's publisher) are compositions of these calls, so
each request is written once.

Every request goes through the client's own ``param_serialize`` / ``call_api`` (its
default headers, credentials, REST client and connection pool) but not its generated
API methods: they validate every argument with pydantic and wrap the answer, which cost
the listener a quarter of its CPU and the controllers' writer ~160 us a patch in a
burst. Bodies are sent as the dicts they are: a Pod template may hold fields this
client's models do not know, which a model round trip would drop. Errors leave as
``ersctl.kube.errors.KubeError`` (``ersctl.kube.calls.kube_call``).

A :class:`Writer`'s ``fence`` is asked before every write; when it answers False the
write raises ``NotLeaderError`` instead of reaching the server (the manager fences
with "do I still hold the leader lease?").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import urllib3
from kubernetes.client import ApiClient as ApiClient  # the boundary's name for a connection
from kubernetes.client.exceptions import ApiException

from ersctl.kube.calls import JSON_PATCH, MERGE_PATCH, json_body, kube_call, server_of
from ersctl.kube.errors import ConflictError, NotFoundError, check_fence
from ersctl.kube.resources import BUILTIN as BUILTIN
from ersctl.kube.resources import Resource as Resource

Json = dict[str, Any]
Timeout = float | tuple[float, float]
"""A request's timeout: in all, or (to connect, to read)."""


@dataclass(frozen=True, kw_only=True)
class Preconditions:
    """A delete's preconditions: it is refused (409) when the object's uid or
    resourceVersion is no longer the one given (another object took the name, or it
    changed since it was read). Empty strings are not checked."""

    uid: str = ""
    resource_version: str = ""


def action_of(verb: str, resource: Resource, namespace: str, name: str = "") -> str:
    """How an action is named in errors and logs: ``patch pods/ns/name``."""
    return f"{verb} {resource.plural}/{namespace}" + (f"/{name}" if name else "")


class Requests:
    """Requests to the API server: answered with their JSON document (:meth:`send`), or
    with the open response (:meth:`open`, which the informers' lists and watches
    stream)."""

    def __init__(self, api_client: ApiClient) -> None:
        self._api_client = api_client
        self.server = server_of(api_client)

    def send(
        self,
        method: str,
        path: str,
        *,
        action: str,
        body: Any = None,
        query: list[tuple[str, str]] | None = None,
        content_type: str = "application/json",
        timeout: Timeout | None = None,
    ) -> Json:
        response = self.open(
            method,
            path,
            action=action,
            body=body,
            query=query,
            content_type=content_type,
            timeout=timeout,
        )
        return json_body(response, action=action, server=self.server)

    def open(
        self,
        method: str,
        path: str,
        *,
        action: str,
        body: Any = None,
        query: list[tuple[str, str]] | None = None,
        content_type: str = "application/json",
        timeout: Timeout | None = None,
    ) -> urllib3.BaseHTTPResponse:
        """The response with a success status, its body not yet read (a watch streams
        it); any other status raises ``KubeError``. The caller reads or closes it."""
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        with kube_call(action, server=self.server):
            method, url, headers, payload, _ = self._api_client.param_serialize(
                method,
                path,
                query_params=query,
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
            )
            response = self._api_client.call_api(
                method, url, headers, payload, _request_timeout=timeout
            )
            if not 200 <= response.status <= 299:
                response.read()  # type: ignore[no-untyped-call]
                raise ApiException.from_response(http_resp=response, body=None, data=None)
        return cast(urllib3.BaseHTTPResponse, response.response)


class Reader:
    """Uncached GET and LIST (controller-runtime's ``APIReader``: every call is a
    request). Raises ``KubeError``."""

    def __init__(self, api_client: ApiClient) -> None:
        self._requests = Requests(api_client)

    def get(
        self, resource: Resource, namespace: str, name: str, *, timeout: Timeout | None = None
    ) -> Json | None:
        """The live object, or None when it does not exist."""
        action = action_of("get", resource, namespace, name)
        path = resource.object_path(namespace, name)
        try:
            return self._requests.send("GET", path, action=action, timeout=timeout)
        except NotFoundError:
            return None

    def list(
        self, resource: Resource, namespace: str | None = None, *, label_selector: str = ""
    ) -> list[Json]:
        """The live objects (of one namespace, or cluster-wide; ``label_selector``:
        only those it picks)."""
        action = f"list {resource.plural}" + (f" in {namespace}" if namespace else "")
        query = [("labelSelector", label_selector)] if label_selector else None
        path = resource.collection_path(namespace)
        doc = self._requests.send("GET", path, action=action, query=query)
        return [item for item in doc.get("items") or () if isinstance(item, dict)]


class SubResourceWriter:
    """Patches (merge or JSON) of one part of objects: their ``/status`` subresource
    (controller-runtime's ``SubResourceWriter``, ``Writer.status``), or ("") the
    objects themselves."""

    def __init__(
        self, requests: Requests, fence: Callable[[], bool] | None, subresource: str
    ) -> None:
        self._requests = requests
        self._fence = fence
        self._subresource = subresource

    def patch(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        patch: Json,
        *,
        timeout: Timeout | None = None,
    ) -> Json:
        """JSON merge patch; a ``metadata.resourceVersion`` in ``patch`` is the
        optimistic lock (stale: ``ConflictError``)."""
        return self._send_patch(resource, namespace, name, patch, MERGE_PATCH, timeout)

    def json_patch(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        operations: list[Json],
        *,
        timeout: Timeout | None = None,
    ) -> Json:
        """JSON patch (RFC 6902): ``operations`` applied in order, all or none; a failed
        ``test`` operation is refused with 422 (``KubeError`` with status 422)."""
        return self._send_patch(resource, namespace, name, operations, JSON_PATCH, timeout)

    def _send_patch(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        body: Json | list[Json],
        content_type: str,
        timeout: Timeout | None,
    ) -> Json:
        action = action_of("patch", resource, namespace, name)
        action += f"/{self._subresource}" if self._subresource else ""
        check_fence(self._fence, action)
        path = resource.object_path(namespace, name, self._subresource)
        return self._requests.send(
            "PATCH", path, action=action, body=body, content_type=content_type, timeout=timeout
        )


class Writer:
    """Creates, merge patches and deletes of any kind; :attr:`status` writes the status
    subresource. Raises ``KubeError``; ``NotLeaderError`` when the fence is closed."""

    def __init__(self, api_client: ApiClient, *, fence: Callable[[], bool] | None = None) -> None:
        self._requests = Requests(api_client)
        self._fence = fence
        self._objects = SubResourceWriter(self._requests, fence, "")
        self.status = SubResourceWriter(self._requests, fence, "status")

    def create(self, resource: Resource, body: Json) -> Json:
        """Create the object ``body`` describes in ``body.metadata.namespace``
        (``generateName`` allowed); ``ConflictError`` when the name is taken."""
        meta = body.get("metadata") or {}
        namespace = str(meta.get("namespace") or "")
        if not namespace:
            raise ValueError(f"create {resource.plural}: body.metadata.namespace is required")
        action = action_of("create", resource, namespace, str(meta.get("name") or ""))
        check_fence(self._fence, action)
        path = resource.collection_path(namespace)
        return self._requests.send("POST", path, action=action, body=body)

    def patch(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        patch: Json,
        *,
        timeout: Timeout | None = None,
    ) -> Json:
        """JSON merge patch on the object; a ``metadata.resourceVersion`` in ``patch`` is
        the optimistic lock (stale: ``ConflictError``)."""
        return self._objects.patch(resource, namespace, name, patch, timeout=timeout)

    def delete(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        *,
        preconditions: Preconditions | None = None,
        grace_period: int | None = None,
    ) -> bool:
        """Delete the object (its finalizers hold it until removed). False when there
        was nothing to delete: it does not exist, or a precondition failed (the name now
        belongs to another object, which is not the one meant)."""
        verb = "force-delete" if grace_period == 0 else "delete"
        action = action_of(verb, resource, namespace, name)
        check_fence(self._fence, action)
        try:
            self._requests.send(
                "DELETE",
                resource.object_path(namespace, name),
                action=action,
                body=_delete_options(preconditions, grace_period),
            )
        except NotFoundError:
            return False
        except ConflictError:
            if preconditions is None:
                raise
            return False
        return True


def _delete_options(preconditions: Preconditions | None, grace_period: int | None) -> Json | None:
    options: Json = {}
    if preconditions is not None:
        wanted = {"uid": preconditions.uid, "resourceVersion": preconditions.resource_version}
        options["preconditions"] = {key: value for key, value in wanted.items() if value}
    if grace_period is not None:
        options["gracePeriodSeconds"] = grace_period
    return options or None
