"""Per-resource event history and watchers: where committed events go.

Not thread-safe on its own: the store calls every method while holding its lock, so
publishing an event, registering a watcher and replaying history are atomic with
respect to commits (no event is missed or seen twice).
"""

from __future__ import annotations

from collections import defaultdict

from ersctl.testing.apiserver.watching import (
    History,
    Predicate,
    Transform,
    Watcher,
    WatchEvent,
)


class Fanout:
    """Histories, watchers and delivery delays, keyed by storage key."""

    def __init__(self, *, history_limit: int) -> None:
        self._history_limit = history_limit
        self._history: dict[str, History] = {}
        self._watchers: dict[str, set[Watcher]] = defaultdict(set)
        self._delays: dict[str, float] = {}

    def track(self, storage_key: str, current_rv: int) -> History:
        """The history of ``storage_key``, started at ``current_rv`` when new."""
        history = self._history.get(storage_key)
        if history is None:
            history = History(limit=self._history_limit, floor=current_rv)
            self._history[storage_key] = history
        return history

    def publish(self, event: WatchEvent) -> None:
        self.track(event.storage_key, event.rv - 1).append(event)
        for watcher in self._watchers[event.storage_key]:
            watcher.offer(event)

    def set_delay(self, storage_key: str, seconds: float) -> None:
        self._delays[storage_key] = seconds

    def register(
        self,
        storage_key: str,
        *,
        namespace: str | None,
        predicates: list[Predicate],
        transform: Transform | None,
        initial: list[tuple[dict[str, object], bytes]] | None,
        since: int,
        current_rv: int,
    ) -> Watcher:
        """A new watcher that first gets ``initial`` (synthetic ADDED events) or, when
        that is None, every event after ``since``. Raises TooOld. A ``since`` newer than
        ``current_rv`` is no error: the watcher gets nothing until events pass it (the
        watch cache answers so, with no ERROR event; only a LIST gives up, with 504)."""
        watcher = Watcher(
            storage_key=storage_key,
            namespace=namespace,
            predicates=predicates,
            delay=lambda: self._delays.get(storage_key, 0.0),
            transform=transform,
        )
        if initial is not None:
            watcher.preload([watcher.added_line(obj, raw) for obj, raw in initial])
            watcher.seen = current_rv
        elif since > current_rv:
            watcher.floor = watcher.seen = since
        else:
            watcher.seen = since
            watcher.replay(self.track(storage_key, current_rv).since(since))
        self._watchers[storage_key].add(watcher)
        return watcher

    def latest(self, storage_key: str) -> int:
        """The resource's own resourceVersion: its newest event's, or where its history
        started (like a watch cache's, other resources' writes do not move it)."""
        history = self._history.get(storage_key)
        return 0 if history is None else history.latest

    def unregister(self, watcher: Watcher) -> None:
        self._watchers[watcher.storage_key].discard(watcher)

    def forget(self, storage_key: str) -> None:
        """A resource stopped being served: end its watches."""
        for watcher in self._watchers.pop(storage_key, set()):
            watcher.close()

    def close_all(self, storage_key: str | None = None) -> None:
        """End every watch (of ``storage_key`` only, when given)."""
        for key, watchers in self._watchers.items():
            if storage_key in (None, key):
                for watcher in watchers:
                    watcher.close()
