"""Watch events, the bounded event history, and per-client watchers.

Writers call :meth:`Watcher.offer` while holding the store lock; it only renders a
line and puts it on the watcher's own queue, so a slow client never blocks a writer.
The HTTP thread serving the watch drains the queue (:meth:`Watcher.next_line`),
honouring the per-resource delivery delay that emulates a lagging informer cache.
"""

from __future__ import annotations

import json
import queue
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

JsonObject = dict[str, Any]
Predicate = Callable[[JsonObject], bool]
Transform = Callable[[JsonObject], bytes]


def encode(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def event_line(event_type: str, raw_object: bytes) -> bytes:
    return b'{"type":"' + event_type.encode() + b'","object":' + raw_object + b"}\n"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One committed change. ``obj``/``raw`` are the object as the event carries it;
    ``old`` is the previous stored state (for selector transitions)."""

    type: str
    rv: int
    storage_key: str
    namespace: str
    obj: JsonObject
    raw: bytes
    old: JsonObject | None
    committed_at: float = field(default_factory=time.monotonic)

    @property
    def line(self) -> bytes:
        return event_line(self.type, self.raw)


class TooOld(Exception):
    """The requested resourceVersion is older than the retained history."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")


class History:
    """The last ``limit`` events of one resource, oldest first, and the resource's own
    resourceVersion (:attr:`latest`), which only its own events move, as a watch cache's
    does: writes to other resources leave it where it is."""

    def __init__(self, *, limit: int, floor: int) -> None:
        self._events: deque[WatchEvent] = deque()
        self._limit = limit
        # Every event with rv > floor is retained.
        self._floor = floor
        self.latest = floor

    def append(self, event: WatchEvent) -> None:
        if len(self._events) >= self._limit:
            self._floor = self._events.popleft().rv
        self._events.append(event)
        self.latest = event.rv

    def since(self, rv: int) -> list[WatchEvent]:
        """Events after ``rv``, oldest first. Raises :class:`TooOld`."""
        if rv < self._floor:
            raise TooOld(rv, self._floor + 1)
        return [event for event in self._events if event.rv > rv]


class Bookmarks:
    """When a watch that allows bookmarks may get its next BOOKMARK: every minute, and
    2 s before the watch ends, as kube's cacheWatcher.nextBookmarkTime schedules them.
    Whether one is sent then is the store's call (:meth:`~.store.Store.bookmark_version`):
    only when the resource moved past what the watcher has seen."""

    INTERVAL = 60.0

    def __init__(self, *, kind: str, api_version: str, deadline: float, now: float) -> None:
        self._kind = kind
        self._api_version = api_version
        self._deadline = deadline
        self._next = self._after(now)

    def _after(self, now: float) -> float:
        if now >= self._deadline - 2.0:
            return float("inf")  # the pre-timeout bookmark went out already
        return min(now + self.INTERVAL, self._deadline - 2.0)

    def due(self, now: float) -> bool:
        return now >= self._next

    def skip(self, now: float) -> None:
        """Schedule the next chance after this one (taken or not)."""
        self._next = self._after(now + 0.001)

    def line(self, resource_version: int) -> bytes:
        """The BOOKMARK event for ``resource_version``."""
        obj = {
            "kind": self._kind,
            "apiVersion": self._api_version,
            "metadata": {"resourceVersion": str(resource_version)},
        }
        return event_line("BOOKMARK", encode(obj))


_CLOSED = b""
MAX_BACKLOG = 100_000


class Watcher:
    """One watch request's filter and queue of rendered event lines."""

    def __init__(
        self,
        *,
        storage_key: str,
        namespace: str | None,
        predicates: list[Predicate],
        delay: Callable[[], float],
        transform: Transform | None = None,
    ) -> None:
        """``transform``: how to encode an event's object for this client (e.g. as a
        one-row Table for kubectl); None sends the object itself."""
        self.storage_key = storage_key
        self.transform = transform
        self._namespace = namespace
        self._predicates = predicates
        self._delay = delay
        self._queue: queue.SimpleQueue[tuple[float, bytes, int]] = queue.SimpleQueue()
        self.closed = False
        # Events at or below it are not delivered: a watch from a resourceVersion newer
        # than the server's waits for the server to get there, as the watch cache does.
        self.floor = 0
        # The resourceVersion the client has been handed (events, bookmarks): a bookmark
        # is only worth sending for a newer one.
        self.seen = 0

    def _passes(self, obj: JsonObject | None, namespace: str) -> bool:
        if obj is None:
            return False
        if self._namespace is not None and namespace != self._namespace:
            return False
        return all(predicate(obj) for predicate in self._predicates)

    def render(self, event: WatchEvent) -> bytes | None:
        """The line this watcher sees for ``event``, or None. An update that moves an
        object into (out of) the selection is an ADDED (DELETED), as in kube's cacher."""
        now_passes = self._passes(event.obj, event.namespace)
        if event.type != "MODIFIED":
            return self._line(event.type, event.obj, event.raw) if now_passes else None
        old_passes = self._passes(event.old, event.namespace)
        if now_passes:
            return self._line("MODIFIED" if old_passes else "ADDED", event.obj, event.raw)
        if old_passes and event.old is not None:
            old = dict(event.old)
            old["metadata"] = {**old["metadata"], "resourceVersion": str(event.rv)}
            return self._line("DELETED", old, None)
        return None

    def added_line(self, obj: JsonObject, raw: bytes) -> bytes:
        """The synthetic ADDED line for an object that exists when the watch starts."""
        return self._line("ADDED", obj, raw)

    def _line(self, event_type: str, obj: JsonObject, raw: bytes | None) -> bytes:
        if self.transform is not None:
            return event_line(event_type, self.transform(obj))
        return event_line(event_type, encode(obj) if raw is None else raw)

    def offer(self, event: WatchEvent) -> None:
        """Queue ``event`` if it passes the filter. Never blocks: a client that falls
        ``MAX_BACKLOG`` events behind is disconnected (it resumes from its last
        resourceVersion), as kube-apiserver closes unresponsive watchers."""
        if self.closed or event.rv <= self.floor:
            return
        line = self.render(event)
        if line is None:
            return
        if self._queue.qsize() >= MAX_BACKLOG:
            self.close()
            return
        self._queue.put((event.committed_at + self._delay(), line, event.rv))

    def preload(self, lines: list[bytes]) -> None:
        """Initial lines (synthetic ADDED events), delivered first, without delay."""
        now = time.monotonic()
        for line in lines:
            self._queue.put((now, line, 0))

    def replay(self, events: list[WatchEvent]) -> None:
        """Queue past events (a watch resumed from a resourceVersion). They keep their
        delivery delay, so a reconnecting client does not skip the configured lag."""
        for event in events:
            self.offer(event)

    def idle(self) -> bool:
        """Nothing queued: every event offered so far has been handed out."""
        return self._queue.empty()

    def close(self) -> None:
        self.closed = True
        self._queue.put((0.0, _CLOSED, 0))

    def next_line(self, deadline: float, poll: float) -> bytes | None:
        """The next line, waiting for one at most ``poll`` seconds. Returns None on
        timeout, when closed, or when the watch ``deadline`` (monotonic) passes first."""
        remaining = min(deadline - time.monotonic(), poll)
        if self.closed or remaining <= 0:
            return None
        try:
            due, line, rv = self._queue.get(timeout=remaining)
        except queue.Empty:
            return None
        if line == _CLOSED:
            return None
        if due > deadline:
            # The watch ends first; the client resumes from its last resourceVersion
            # and gets this event replayed from the history.
            time.sleep(max(0.0, deadline - time.monotonic()))
            self.closed = True
            return None
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self.seen = max(self.seen, rv)
        return line
