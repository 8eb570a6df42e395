"""Test hooks: the request log, fault injection and an authorizer."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True, kw_only=True)
class RequestRecord:
    """One HTTP request as the server received it, and the status it answered.

    ``verb`` is the Kubernetes verb (get, list, watch, create, update, patch, delete,
    deletecollection) or "" for non-resource paths (discovery, /version)."""

    method: str
    path: str
    query: dict[str, list[str]]
    content_type: str
    body: bytes
    status: int
    verb: str = ""
    resource: str | None = None
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None
    at: float = field(default_factory=time.time)
    """When the server answered (``time.time()``): for latencies measured against it."""


class RequestLog:
    """Thread-safe, append-only log of requests, in the order they were answered.

    Keeps the newest ``limit`` records, so a long-running standalone server does not
    grow without bound."""

    def __init__(self, *, limit: int = 100_000) -> None:
        self._lock = threading.Lock()
        self._records: deque[RequestRecord] = deque(maxlen=limit)

    def append(self, record: RequestRecord) -> None:
        with self._lock:
            self._records.append(record)

    def records(self) -> list[RequestRecord]:
        with self._lock:
            return list(self._records)

    def clear(self) -> None:
        with self._lock:
            self._records.clear()


@dataclass(kw_only=True)
class Fault:
    """Fail (or, with ``latency`` > 0, delay) the next ``times`` matching requests, or
    every one with ``times`` -1 (until cleared, as the GitHub simulator's faults: a
    benchmark's network latency). ``None`` in a filter field matches anything. With ``hold``, a matching request waits
    until that event is set, then is served normally (a test opens a race this way:
    ``taken`` tells it the request is being held)."""

    verb: str | None
    resource: str | None
    name: str | None
    subresource: str | None
    code: int
    times: int
    latency: float
    hold: threading.Event | None = None
    remaining: int = field(init=False)
    taken: threading.Event = field(init=False, default_factory=threading.Event)

    def __post_init__(self) -> None:
        if self.times == 0 or self.times < -1:
            raise ValueError("times must be positive, or -1 for 'until cleared'")
        self.remaining = self.times

    def matches(self, verb: str, resource: str | None, name: str | None, sub: str | None) -> bool:
        return (
            self.remaining != 0
            and self.verb in (None, verb)
            and self.resource in (None, resource)
            and self.name in (None, name)
            and self.subresource in (None, sub)
        )


class Faults:
    """The armed faults; :meth:`take` consumes one use of the first match."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []

    def add(self, fault: Fault) -> None:
        with self._lock:
            self._faults.append(fault)

    def take(
        self, verb: str, resource: str | None, name: str | None, subresource: str | None
    ) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.matches(verb, resource, name, subresource):
                    if fault.remaining > 0:
                        fault.remaining -= 1
                    fault.taken.set()
                    if fault.remaining == 0:
                        self._faults.remove(fault)
                    return fault
        return None

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()


@dataclass(frozen=True, kw_only=True)
class Access:
    """What one resource request asks to do, as RBAC sees it (``subresource`` and
    ``name`` None when the request has none; ``namespace`` None for a cluster-scoped
    resource or a request across all namespaces)."""

    verb: str
    group: str
    resource: str
    subresource: str | None
    namespace: str | None
    name: str | None


Authorizer = Callable[[Access], "str | None"]
"""Access -> None to allow it, or why it is forbidden (answered 403 Forbidden)."""


class Authorization:
    """The authorizer the HTTP requests are checked against; none: all allowed."""

    def __init__(self) -> None:
        self._authorizer: Authorizer | None = None

    def set(self, authorizer: Authorizer | None) -> None:
        self._authorizer = authorizer

    def denied(self, access: Access) -> str | None:
        authorizer = self._authorizer
        return None if authorizer is None else authorizer(access)
