"""A deduplicating, rate-limited work queue with client-go's workqueue semantics.

- **Dedupe**: a key waiting in the queue is held once, however often it is added.
- **Never two workers on one key**: a key handed out by :meth:`WorkQueue.get` is
  "processing" until :meth:`WorkQueue.done`. Adding it meanwhile marks it *dirty*; it
  re-enters the queue at ``done()``, so the change that arrived mid-reconcile is seen
  by one more reconcile, never by a second concurrent one.
- **Delays**: :meth:`add_after` parks a key until its time; a key parked twice keeps
  the earlier time.
- **Backoff**: :meth:`add_rate_limited` parks a key for ``base * 2**failures`` (capped);
  :meth:`forget` resets its failure count after a success.

Thread-safe. Time comes from an injectable monotonic clock, so tests drive delays
without sleeping (``get(block=False)`` promotes every key that is due).
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, kw_only=True)
class Backoff:
    """Per-key exponential backoff: ``min(base * 2**failures, cap)`` seconds.

    The defaults are controller-runtime's (5 ms doubling up to 1000 s).
    """

    base: float = 0.005
    cap: float = 1000.0

    def delay(self, failures: int) -> float:
        """The delay before retry number ``failures + 1`` (``failures`` >= 0)."""
        if failures >= 64:  # 2**64 * base overflows any sensible cap
            return self.cap
        return float(min(self.base * 2.0**failures, self.cap))


class WorkQueue(Generic[K]):
    """See the module docstring. ``get`` returns None once the queue is shut down."""

    def __init__(
        self, *, backoff: Backoff | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._backoff = backoff or Backoff()
        self._clock = clock
        self._cond = threading.Condition()
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._waiting: dict[K, float] = {}  # key -> ready time (earliest wins)
        self._heap: list[tuple[float, int, K]] = []  # may hold stale entries
        self._seq = itertools.count()
        self._failures: dict[K, int] = {}
        self._shutting_down = False

    def add(self, key: K) -> None:
        """Queue ``key`` now (no-op when already queued; deferred when processing)."""
        with self._cond:
            self._add_locked(key)

    def add_after(self, key: K, delay: float) -> None:
        """Queue ``key`` after ``delay`` seconds (at once when ``delay`` <= 0)."""
        with self._cond:
            if self._shutting_down:
                return
            if delay <= 0:
                self._add_locked(key)
                return
            ready = self._clock() + delay
            if self._waiting.get(key, float("inf")) <= ready:
                return
            self._waiting[key] = ready
            heapq.heappush(self._heap, (ready, next(self._seq), key))
            self._cond.notify()

    def add_rate_limited(self, key: K, *, at_least: float = 0.0) -> float:
        """Queue ``key`` after its backoff delay, or after ``at_least`` seconds when that
        is longer; returns the delay in seconds."""
        with self._cond:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
        delay = max(self._backoff.delay(failures), at_least)
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        """Reset ``key``'s failure count (call after a successful reconcile)."""
        with self._cond:
            self._failures.pop(key, None)

    def failures(self, key: K) -> int:
        """How many times ``key`` was requeued with backoff since it was last forgotten."""
        with self._cond:
            return self._failures.get(key, 0)

    def get(self, *, block: bool = True, timeout: float | None = None) -> K | None:
        """The next key, now marked processing; None when shut down or nothing came.

        The caller must call :meth:`done` with the key when it has finished.
        """
        deadline = None if timeout is None else self._clock() + timeout
        with self._cond:
            while True:
                self._promote_due_locked()
                if self._queue:
                    key = self._queue.popleft()
                    self._processing.add(key)
                    self._dirty.discard(key)
                    return key
                if self._shutting_down or not block:
                    return None
                wait = self._wait_time_locked(deadline)
                if wait is not None and wait <= 0:
                    return None
                self._cond.wait(wait)

    def done(self, key: K) -> None:
        """Finish processing ``key``; requeue it if it was added meanwhile."""
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._queue.append(key)
                self._cond.notify()

    def shutdown(self) -> None:
        """Make every ``get`` return None; later adds are ignored."""
        with self._cond:
            self._shutting_down = True
            self._cond.notify_all()

    def __len__(self) -> int:
        """Keys ready to be handed out (the queue depth; excludes delayed keys)."""
        with self._cond:
            return len(self._queue)

    def delayed(self) -> int:
        """Keys parked until a later time."""
        with self._cond:
            return len(self._waiting)

    def _add_locked(self, key: K) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        if key in self._processing:
            return
        self._queue.append(key)
        self._cond.notify()

    def _promote_due_locked(self) -> None:
        now = self._clock()
        while self._heap and self._heap[0][0] <= now:
            ready, _, key = heapq.heappop(self._heap)
            if self._waiting.get(key) == ready:
                del self._waiting[key]
                self._add_locked(key)

    def _wait_time_locked(self, deadline: float | None) -> float | None:
        now = self._clock()
        waits = []
        if self._heap:
            waits.append(self._heap[0][0] - now)
        if deadline is not None:
            waits.append(deadline - now)
        # Re-check at least once a second, so a waiter never sleeps on a stale bound.
        return max(0.0, min(waits)) if waits else 1.0
