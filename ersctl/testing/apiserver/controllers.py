"""The embedded server's controllers (what kube-controller-manager does for the API:
:mod:`.gc`, :mod:`.namespaces`): each a :class:`Controller`, a store observer that
finds the work (cheap: it runs under the store lock), and one :class:`Worker` thread
that does it, committing through the store like any client's write.

Work is an action and the object it concerns; a 409 (the action raced with a client's
write) queues it again, and nothing it raises stops the worker.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

from ersctl.testing.apiserver.errors import StatusError
from ersctl.testing.apiserver.resources import ResourceType
from ersctl.testing.apiserver.store import Store
from ersctl.testing.apiserver.watching import WatchEvent

log = logging.getLogger(__name__)

Item = tuple[ResourceType, str, str]  # (type, namespace, name)
Action = Callable[[ResourceType, str, str], None]


class Worker:
    """Runs queued actions one at a time on its own thread (:meth:`start`, :meth:`stop`)."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[Action, Item] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="apiserver-controllers", daemon=True)
        self._pending = 0
        self._idle = threading.Condition()
        self._timers: set[threading.Timer] = set()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._idle:
            timers, self._timers = list(self._timers), set()
        for timer in timers:
            timer.cancel()
        self._queue.put(None)
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def enqueue(self, action: Action, item: Item, *, after: float = 0.0) -> None:
        """Run ``action(*item)`` on the worker, ``after`` seconds from now at the
        earliest."""
        with self._idle:
            self._pending += 1
            if after > 0:
                timer = threading.Timer(after, self._due, (action, item))
                timer.daemon = True
                self._timers.add(timer)
                timer.start()
                return
        self._queue.put((action, item))

    def _due(self, action: Action, item: Item) -> None:
        with self._idle:
            self._timers = {
                t for t in self._timers if t.is_alive() and t is not threading.current_thread()
            }
        self._queue.put((action, item))

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing is queued, scheduled or in progress. False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def _run(self) -> None:
        while (work := self._queue.get()) is not None:
            action, item = work
            try:
                action(*item)
            except StatusError as exc:  # raced with a client write: try again
                log.debug("%s of %s/%s: %s", action.__name__, item[1], item[2], exc.message)
                if exc.code == 409:
                    self.enqueue(action, item)
            except Exception:  # a controller must survive anything
                log.exception("%s of %s/%s failed", action.__name__, item[1], item[2])
            finally:
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()


class Controller:
    """A controller over a store: :meth:`start` registers :meth:`observe` for every
    commit and lets :meth:`resync` look at what is there already; :meth:`stop` ends it."""

    def __init__(self, store: Store, worker: Worker) -> None:
        self._store = store
        self._worker = worker

    def start(self) -> None:
        with self._store.lock:
            self._store.observers.append(self.observe)
            self.resync()

    def stop(self) -> None:
        with self._store.lock:
            if self.observe in self._store.observers:
                self._store.observers.remove(self.observe)

    def observe(self, rt: ResourceType, event: WatchEvent) -> None:
        """A commit (under the store lock: must not block)."""

    def resync(self) -> None:
        """The objects there at start (under the store lock)."""
