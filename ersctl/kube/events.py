"""The event recorder: core v1 Events about our objects, aggregated like client-go's.

Three rules keep Events from costing the API server more writes than the work they
describe (a set that churns through hundreds of runners an hour would otherwise leave
hundreds of Events, each one a write):

- *One Event per object and reason* (client-go's correlator): a repeat of the same
  type and reason on the same object within ``window`` seconds counts into the existing
  Event (its ``count``, ``lastTimestamp`` and latest message), instead of creating
  another object.
- *Counts are written on a heartbeat* (as events.k8s.io series are): a repeat is
  counted in memory and sent with one merge patch at most every ``heartbeat`` seconds
  per Event, by a timer, so a burst of repeats costs one write, not one each.
- *A per-object rate limit* on new Events (client-go's spam filter, same defaults:
  ``burst`` at once, then one per ``refill_every`` seconds): an object that keeps
  producing new reasons cannot flood the namespace. Dropped ones are logged.

Best effort: recording never raises. A failure is logged (with the reason, never the
object's content) and the reconcile goes on. Where RBAC forbids Events (ARC's Helm chart
grants the controller none), one WARNING says so and every Event after it goes to the
log instead (a Warning at WARNING, a Normal at INFO), without another request. :meth:`EventRecorder.flush` writes
every pending count at once (on shutdown, and in tests).
"""

from __future__ import annotations

import logging
import math
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from ersctl.kube.client import BUILTIN, ApiClient, Writer
from ersctl.kube.errors import ForbiddenError, NotFoundError
from ersctl.kube.reconcile import EventReason, ObjectRef
from ersctl.platform.errors import Failure
from ersctl.platform.ratelimit import TokenBucket

log = logging.getLogger(__name__)

EVENTS: Final = BUILTIN["events"]

_MESSAGE_LIMIT: Final = 1024
_REMEMBERED: Final = 4096  # aggregation keys and rate buckets kept (least recently used dropped)

_Key = tuple[str, str, str]  # (uid or namespace/name, type, reason)


@dataclass
class _Seen:
    """One Event this recorder created, and what the server has not been told yet."""

    name: str
    namespace: str
    count: int
    message: str
    last_seen: float  # monotonic
    written_count: int  # the count the server holds
    written_at: float  # monotonic time of the last write
    timer: threading.Timer | None = None


class EventRecorder:
    """Implements the controllers' ``EventRecorder`` port (``ersctl.kube.reconcile``).
    Thread-safe.

    ``fence`` (optional) is asked before each write; when it answers False the event is
    dropped (a process that lost its lease stays silent). ``heartbeat`` 0 writes every
    repeat at once.
    """

    def __init__(
        self,
        api_client: ApiClient,
        *,
        component: str = "ersctl",
        instance: str = "",
        window: float = 600.0,
        heartbeat: float = 30.0,
        burst: int = 25,
        refill_every: float = 300.0,
        fence: Callable[[], bool] | None = None,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        # Unfenced: the fence is asked before each event, which is dropped (not raised)
        # when it is closed.
        self._objects = Writer(api_client)
        self._component = component
        self._instance = instance
        self._window = window
        self._heartbeat = heartbeat
        self._burst = burst
        self._refill_every = refill_every
        self._fence = fence
        self._clock = clock
        self._now = now
        self._lock = threading.Lock()
        self._seen: OrderedDict[_Key, _Seen] = OrderedDict()
        # client-go's spam filter: a token bucket per object.
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()
        self._forbidden = threading.Event()

    def event(self, obj: ObjectRef, *, type: str, reason: EventReason, message: str) -> None:
        """Record an Event about ``obj`` (``type`` "Normal" or "Warning"). Never raises."""
        if self._fence is not None and not self._fence():
            return
        message = (
            message if len(message) <= _MESSAGE_LIMIT else message[: _MESSAGE_LIMIT - 3] + "..."
        )
        if self._forbidden.is_set():
            # INFO even for a Warning: the start-up check said once, as a WARNING, that
            # Events are forbidden, and a failed reconcile's own WARNING line follows
            # (two WARNINGs per failure under ARC's chart RBAC otherwise).
            log.info("event %s %s on %s: %s", type, reason, obj.key, message)
            return
        key: _Key = (obj.uid or obj.key, type, reason)
        try:
            if self._count_repeat(key, message):
                return
            if not self._take_token(key[0]):
                log.debug("event %s on %s dropped by the per-object rate limit", reason, obj.key)
                return
            self._create(obj, key, message)
        except ForbiddenError as exc:
            if not self._forbidden.is_set():
                self._forbidden.set()
                log.warning(
                    "cannot record Events (%s): this controller's RBAC grants no events "
                    "create; Events go to the log instead",
                    exc.reason or "Forbidden",
                )
            self.event(obj, type=type, reason=reason, message=message)
        except (Failure, ValueError) as exc:
            log.warning("could not record event %s on %s: %s", reason, obj.key, exc)

    def flush(self) -> None:
        """Write every count not yet sent now. Never raises."""
        with self._lock:
            keys = [key for key, seen in self._seen.items() if seen.count > seen.written_count]
        for key in keys:
            self._write_count(key)

    def _count_repeat(self, key: _Key, message: str) -> bool:
        """Count into a recent Event with the same key; False when there is none."""
        with self._lock:
            seen = self._seen.get(key)
            now = self._clock()
            if seen is None or now - seen.last_seen > self._window:
                return False
            seen.count += 1
            seen.message = message
            seen.last_seen = now
            self._seen.move_to_end(key)
            due = seen.written_at + self._heartbeat - now
            if due > 0:
                if seen.timer is None:
                    seen.timer = threading.Timer(due, self._write_count, args=(key,))
                    seen.timer.daemon = True
                    seen.timer.start()
                return True
        self._write_count(key)
        return True

    def _write_count(self, key: _Key) -> None:
        """Send the key's pending count and latest message (one merge patch). Never raises."""
        with self._lock:
            seen = self._seen.get(key)
            if seen is None:
                return
            if seen.timer is not None:
                seen.timer.cancel()
                seen.timer = None
            if seen.count <= seen.written_count:
                return
            name, namespace, count, message = seen.name, seen.namespace, seen.count, seen.message
            seen.written_count, seen.written_at = count, self._clock()
        if self._fence is not None and not self._fence():
            return
        patch = {"count": count, "message": message, "lastTimestamp": self._timestamp()}
        try:
            self._objects.patch(EVENTS, namespace, name, patch)
        except NotFoundError:  # expired or deleted meanwhile: the next repeat starts anew
            with self._lock:
                self._seen.pop(key, None)
        except Failure as exc:
            log.warning("could not update event %s/%s: %s", namespace, name, exc)

    def _take_token(self, subject: str) -> bool:
        with self._lock:
            bucket = self._buckets.get(subject)
            if bucket is None:
                rate = 1.0 / self._refill_every if self._refill_every else math.inf
                bucket = TokenBucket(rate=rate, burst=self._burst, clock=self._clock)
                self._buckets[subject] = bucket
                while len(self._buckets) > _REMEMBERED:
                    self._buckets.popitem(last=False)
            self._buckets.move_to_end(subject)
        return bucket.try_take()

    def _create(self, obj: ObjectRef, key: _Key, message: str) -> None:
        _, type_, reason = key
        stamp = self._timestamp()
        name = f"{obj.name}.{uuid.uuid4().hex[:16]}"
        body = self._body(obj, name=name, type_=type_, reason=reason, message=message, stamp=stamp)
        self._objects.create(EVENTS, body)
        with self._lock:
            now = self._clock()
            self._seen[key] = _Seen(name, obj.namespace, 1, message, now, 1, now)
            self._seen.move_to_end(key)
            while len(self._seen) > _REMEMBERED:
                _, dropped = self._seen.popitem(last=False)
                if dropped.timer is not None:
                    dropped.timer.cancel()

    def _body(
        self, obj: ObjectRef, *, name: str, type_: str, reason: str, message: str, stamp: str
    ) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": obj.namespace},
            "involvedObject": {
                "apiVersion": obj.api_version,
                "kind": obj.kind,
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
