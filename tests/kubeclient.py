"""Typed views of what the official ``kubernetes`` client leaves untyped: custom objects
(annotated ``object``), the ``metav1.Status`` of an error, and ``kubernetes.watch``
(no annotations at all)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from kubernetes import watch
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
