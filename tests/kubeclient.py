"""Typed views of what the official ``kubernetes`` client leaves untyped: custom objects
(annotated ``object``), the ``metav1.Status`` of an error, and ``kubernetes.watch``
(no annotations at all)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from kubernetes import client, watch
from kubernetes.client import ApiException


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


def request(
    api_client: client.ApiClient,
    method: str,
    path: str,
    body: object = None,
    *,
    content_type: str = "application/json",
    query: list[tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """One request through the official client (its address, TLS and credentials) to a
    path of the API, for what its typed calls do not cover (any resource by plural,
    server-side apply). Returns the JSON answer; raises ``ApiException`` for an error."""
    serialized = api_client.param_serialize(
        method=method,
        resource_path=path,
        query_params=query or [],
        header_params={"Content-Type": content_type, "Accept": "application/json"},
        body=body,
        auth_settings=["BearerToken"],
    )
    method, url, headers, payload, post = serialized
    response = api_client.call_api(
        method, url, header_params=headers, body=payload, post_params=post
    )
    response.read()  # type: ignore[no-untyped-call]
    answer = api_client.response_deserialize(response, {"2XX": "object"}).data
    return json_object(answer)
