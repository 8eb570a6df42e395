"""The event recorder: core v1 Events about our objects, aggregated like client-go's.

An Event repeated for the same object (same uid, type, reason and message) within
``window`` seconds bumps ``count`` and ``lastTimestamp`` on the existing Event with
one merge patch, instead of creating another object: a set that stays suppressed
for an hour leaves one Event with a count, not hundreds.

Best effort: recording never raises. A failure is logged (with the reason, never the
object's content) and the reconcile goes on.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from kubernetes import client

from ersctl.api import API_VERSION, KubeObject
from ersctl.kube.calls import MERGE_PATCH, kube_call, server_of
from ersctl.kube.errors import NotFoundError
from ersctl.platform.errors import Failure

log = logging.getLogger(__name__)

_MESSAGE_LIMIT: Final = 1024
_REMEMBERED: Final = 4096  # aggregation keys kept (least recently used dropped)

_Key = tuple[str, str, str, str]  # (uid or namespace/name, type, reason, message)


@dataclass
class _Seen:
    name: str
    namespace: str
    count: int
    last_seen: float  # monotonic


class EventRecorder:
    """Implements ``ersctl.runnerset.ports.EventRecorder``. Thread-safe.

    ``fence`` (optional) is asked before each write; when it answers False the event is
    dropped (a process that lost its lease stays silent).
    """

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        component: str = "ersctl",
        instance: str = "",
        window: float = 600.0,
        fence: Callable[[], bool] | None = None,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._core = client.CoreV1Api(api_client)
        self._server = server_of(api_client)
        self._component = component
        self._instance = instance
        self._window = window
        self._fence = fence
        self._clock = clock
        self._now = now
        self._lock = threading.Lock()
        self._seen: OrderedDict[_Key, _Seen] = OrderedDict()

    def event(self, obj: KubeObject, *, type: str, reason: str, message: str) -> None:
        """Record an Event about ``obj`` (``type`` "Normal" or "Warning"). Never raises."""
        if self._fence is not None and not self._fence():
            return
        message = (
            message if len(message) <= _MESSAGE_LIMIT else message[: _MESSAGE_LIMIT - 3] + "..."
        )
        key: _Key = (obj.uid or obj.key, type, reason, message)
        try:
            if not self._bump(key):
                self._create(obj, key)
        except (Failure, ValueError) as exc:
            log.warning("could not record event %s on %s: %s", reason, obj.key, exc)

    def _bump(self, key: _Key) -> bool:
        """Aggregate into a recent Event with the same key; False when there is none."""
        with self._lock:
            seen = self._seen.get(key)
            if seen is None or self._clock() - seen.last_seen > self._window:
                return False
            seen.count += 1
            seen.last_seen = self._clock()
            self._seen.move_to_end(key)
            name, namespace, count = seen.name, seen.namespace, seen.count
        patch = {"count": count, "lastTimestamp": self._timestamp()}
        try:
            with kube_call(f"patch events/{namespace}/{name}", server=self._server):
                self._core.patch_namespaced_event(
                    name, namespace, patch, _content_type=MERGE_PATCH, _preload_content=False
                )
        except NotFoundError:  # expired or deleted meanwhile: start a new one
            with self._lock:
                self._seen.pop(key, None)
            return False
        return True

    def _create(self, obj: KubeObject, key: _Key) -> None:
        _, type_, reason, message = key
        stamp = self._timestamp()
        name = f"{obj.name}.{uuid.uuid4().hex[:16]}"
        body = self._body(obj, name=name, type_=type_, reason=reason, message=message, stamp=stamp)
        with kube_call(f"create events in {obj.namespace}", server=self._server):
            self._core.create_namespaced_event(
                obj.namespace, _event_model(body), _preload_content=False
            )
        with self._lock:
            self._seen[key] = _Seen(name, obj.namespace, 1, self._clock())
            self._seen.move_to_end(key)
            while len(self._seen) > _REMEMBERED:
                self._seen.popitem(last=False)

    def _body(
        self, obj: KubeObject, *, name: str, type_: str, reason: str, message: str, stamp: str
    ) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": obj.namespace},
            "involvedObject": {
                # List items of built-in kinds arrive without apiVersion/kind; our view
                # classes are named after their kinds (EphemeralRunnerSet, ...).
                "apiVersion": obj.raw.get("apiVersion") or API_VERSION,
                "kind": obj.raw.get("kind") or type(obj).__name__,
                "name": obj.name,
                "namespace": obj.namespace,
                "uid": obj.uid,
                "resourceVersion": obj.resource_version,
            },
            "type": type_,
            "reason": reason,
            "message": message,
            "count": 1,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "source": {"component": self._component},
            "reportingComponent": self._component,
            "reportingInstance": self._instance,
        }

    def _timestamp(self) -> str:
        return self._now().strftime("%Y-%m-%dT%H:%M:%SZ")


def _event_model(body: dict[str, Any]) -> client.CoreV1Event:
    model = client.CoreV1Event.from_dict(body)
    if model is None:  # from_dict returns None only for a None input
        raise ValueError("event body is empty")
    return model
