"""Typed views of what the official ``kubernetes`` client leaves untyped: custom objects
(annotated ``object``), the ``metav1.Status`` of an error, and ``kubernetes.watch``
(no annotations at all); one request to any path (:func:`request`, the one of
``ersctl.testing.objects``); and a record of what a client sent (:class:`SentRequests`),
which works against any API server."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from kubernetes import client, watch
from kubernetes.client import ApiException

from ersctl.testing.objects import request

__all__ = ["SentRequests", "json_object", "new_watch", "request", "status_of", "unlike"]


def json_object(value: object) -> dict[str, Any]:
    """A custom object as the client returns it (annotated ``object``): a JSON object."""
    assert isinstance(value, dict), f"expected a JSON object, got {type(value).__name__}"
    return value


def status_of(exc: ApiException) -> dict[str, Any]:
    """The ``metav1.Status`` an error response carried."""
    assert exc.body is not None, f"no body in {exc}"
    return json_object(json.loads(exc.body))


class WatchStream(Protocol):
    """What the tests use of ``kubernetes.watch.Watch`` (which has no annotations)."""

    def stream(
        self, func: Callable[..., object], *args: Any, **kwargs: Any
    ) -> Iterator[dict[str, Any]]: ...

    def stop(self) -> None: ...


new_watch: Callable[[], WatchStream] = watch.Watch
"""A fresh ``kubernetes.watch.Watch``, typed."""


def unlike(wanted: Any, stored: Any, path: str = "") -> list[str]:
    """The paths where ``stored`` does not hold what ``wanted`` sets: every field of
    ``wanted`` with its value, lists item by item, anything else only in ``stored``.
    For what a manifest sets and a real API server keeps, filling in defaults beside."""
    if isinstance(wanted, dict) and isinstance(stored, dict):
        return [
            found
            for key, value in wanted.items()
            for found in unlike(value, stored.get(key), f"{path}.{key}")
        ]
    if isinstance(wanted, list) and isinstance(stored, list) and len(wanted) == len(stored):
        return [
            found
            for index, (item, kept) in enumerate(zip(wanted, stored, strict=True))
            for found in unlike(item, kept, f"{path}[{index}]")
        ]
    return [] if wanted == stored else [path or "."]


@dataclass(kw_only=True)
class Sent:
    """One request an ``ApiClient`` sent, and the status it got (None: no answer, or not
    yet); read as the embedded server's request log names a request (verb, resource,
    name, subresource), so a test can ask either."""

    method: str
    path: str
    query: dict[str, list[str]]
    content_type: str
    body: Any
    status: int | None

    def _parts(self) -> tuple[str | None, str | None, str | None]:
        """(resource, name, subresource) of a path under /api/v1 or /apis/g/v."""
        parts = self.path.strip("/").split("/")
        rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
        if len(rest) >= 3 and rest[0] == "namespaces":
            rest = rest[2:]
        padded = [*rest, None, None, None]
        return padded[0], padded[1], padded[2]

    @property
    def resource(self) -> str | None:
        return self._parts()[0]

    @property
    def name(self) -> str | None:
        return self._parts()[1]

    @property
    def subresource(self) -> str | None:
        return self._parts()[2]

    @property
    def verb(self) -> str:
        named = self.name is not None
        if self.method == "GET":
            if (self.query.get("watch") or [""])[0] in ("true", "1"):
                return "watch"
            return "get" if named else "list"
        if self.method == "DELETE":
            return "delete" if named else "deletecollection"
        return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(self.method, "")

    def targets(self, plural: str, name: str | None = None, subresource: str | None = None) -> bool:
        """Whether it addresses ``plural`` (and that object, and that subresource)."""
        return (
            self.resource == plural
            and (name is None or self.name == name)
            and self.subresource == subresource
        )


class SentRequests:
    """What some ``ApiClient``s send, recorded at their REST client (the seam under every
    call they make), in order: what the server received, whichever server it is."""

    def __init__(self, *api_clients: client.ApiClient) -> None:
        self._lock = threading.Lock()
        self._records: list[Sent] = []
        for api_client in api_clients:
            self.attach(api_client)

    def attach(self, api_client: client.ApiClient) -> None:
        """Record what ``api_client`` sends from now on too."""
        rest = api_client.rest_client
        send: Callable[..., Any] = rest.request

        def recording(
            method: str, url: str, headers: Any = None, body: Any = None, **kw: Any
        ) -> Any:
            # Recorded before it is sent: the server may apply it, and a test see its
            # effect, before the answer is back; a record made only then lagged the
            # effect, and a count taken after seeing the effect missed it.
            split = urlsplit(url)
            sent = Sent(
                method=method,
                path=split.path,
                query=parse_qs(split.query),
                content_type=str((headers or {}).get("Content-Type", "")),
                body=body,
                status=None,
            )
            self._append(sent)
            try:
                response = send(method, url, headers, body, **kw)
                sent.status = int(response.status)
                return response
            except client.ApiException as exc:
                sent.status = exc.status
                raise

        rest.request = recording  # type: ignore[method-assign,assignment]

    def _append(self, sent: Sent) -> None:
        with self._lock:
            self._records.append(sent)

    def records(self) -> list[Sent]:
        with self._lock:
            return list(self._records)

    def clear(self) -> None:
        with self._lock:
            self._records.clear()
