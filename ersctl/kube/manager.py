"""The manager: shared informers and their caches, the API reader, the fenced writer,
the event recorder, leader election and the controllers, started and stopped together.

It knows no kind: each controller declares what it watches when it registers
(controller-runtime's builder: ``for_`` its primary kind, ``owns`` the kinds whose
controller owner enqueues, ``watches`` kinds mapped to requests, ``predicates`` the
event filters), and the manager starts an informer for each kind it is given. Usage::

    manager = Manager(api_client, namespace="arc-runners", leader_election=config)
    reconciler = SomeReconciler(cache=manager.store(SETS), writer=manager.writer, ...)
    manager.add_controller("some", reconciler, for_=SETS, owns=[RUNNERS],
                           predicates={SETS.plural: SOME_PREDICATE})
    manager.run(stop_event)        # blocks; raises LeadershipLost if the lease is lost

Order at start: informers (every replica keeps a warm cache) -> wait for the caches
to sync -> campaign for the lease (when enabled) -> workers and periodic resync while
leading. Losing the lease stops reconciling at once: the workers' gate and the write
fence close, the queues shut down, and :meth:`Manager.run` raises.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final

from kubernetes import client

from ersctl.kube.client import Reader, Writer
from ersctl.kube.controller import Controller, EnqueueMapped, EnqueueOwner, EnqueueSelf, Mapper
from ersctl.kube.events import EventRecorder
from ersctl.kube.informer import Informer
from ersctl.kube.leader import LeaderElectionConfig, LeaderElector
from ersctl.kube.metrics import ControllerMetrics
from ersctl.kube.predicates import Predicate
from ersctl.kube.queue import Backoff
from ersctl.kube.reconcile import Reconciler, Request
from ersctl.kube.resources import Kind
from ersctl.kube.store import OWNER_UID_INDEX, Store, controller_owner_uid
from ersctl.platform.errors import Failure

log = logging.getLogger(__name__)


class LeadershipLost(Failure):
    """The leader lease was lost; the manager stopped reconciling."""


class CacheSyncError(Failure):
    """The informers could not list their resources in time."""


class SyncInterrupted(Exception):
    """A stop was asked for before the caches synced (:meth:`Manager.caches`)."""


GRACEFUL_SHUTDOWN: Final = 30.0
"""Seconds a stopping manager gives the reconciles in flight, all controllers together
(controller-runtime's default). The Pod's ``terminationGracePeriodSeconds`` must be
longer, or the kubelet kills a reconcile mid-way (ARC's chart since #4556: 35)."""


class Manager:
    """See the module docstring. Build, add controllers, then :meth:`run` once.
    ``graceful_shutdown``: see :data:`GRACEFUL_SHUTDOWN`."""

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        namespace: str | None = None,
        workers: int = 2,
        leader_election: LeaderElectionConfig | None = None,
        resync_period: float = 600.0,
        backoff: Backoff | None = None,
        watch_timeout: int = 300,
        relist_backoff: Backoff | None = None,
        metrics: ControllerMetrics | None = None,
        graceful_shutdown: float = GRACEFUL_SHUTDOWN,
    ) -> None:
        self._api_client = api_client
        self.namespace = namespace
        self.workers = workers
        self.resync_period = resync_period
        self.metrics = metrics if metrics is not None else ControllerMetrics()
        self._backoff = backoff
        self._watch_timeout = watch_timeout
        self._relist_backoff = relist_backoff
        self._graceful_shutdown = graceful_shutdown
        self._informers: dict[str, Informer] = {}
        self._kinds: dict[str, Kind] = {}
        self._controllers: list[tuple[Controller, str]] = []  # (controller, primary plural)
        self._elector = (
            None
            if leader_election is None
            else LeaderElector(
                api_client,
                leader_election,
                on_started_leading=self._start_leading,
                on_stopped_leading=self._stop_reconciling,
            )
        )
        self._halt = threading.Event()  # stop requested or lease lost
        self._lost = threading.Event()
        self.metrics.leader.set_function(lambda: 1.0 if self.is_leading() else 0.0)
        identity = leader_election.identity if leader_election else ""
        self.api_reader = Reader(api_client)
        self.writer = Writer(api_client, fence=self.is_leading)
        self.events = EventRecorder(api_client, instance=identity, fence=self.is_leading)

    def is_leading(self) -> bool:
        """May this process reconcile and write now? Always True without leader election."""
        if self._lost.is_set():
            return False
        return self._elector is None or self._elector.is_leading()

    def has_synced(self) -> bool:
        """True once every informer has applied its first list (readiness)."""
        return all(informer.has_synced() for informer in self._informers.values())

    def add_controller(
        self,
        name: str,
        reconciler: Reconciler,
        *,
        for_: Kind,
        owns: Sequence[Kind | str] = (),
        watches: Mapping[Kind | str, Mapper] | None = None,
        predicates: Mapping[str, Predicate] | None = None,
        workers: int | None = None,
    ) -> Controller:
        """Register a controller for ``for_``, enqueued also by events on ``owns`` (mapped
        to their controller owner of ``for_``'s kind) and on each of ``watches`` (mapped
        by its function: the Requests an object stands for). A kind is watched from its
        first mention; a name is an informer given to :meth:`add_informer`.
        ``predicates`` maps an informer's name (a kind's plural) to its event filter
        (default: every event passes); a name that is none of these informers' is a
        ``ValueError`` (a misspelt plural would otherwise filter nothing)."""
        predicates = predicates or {}
        watched_names = {for_.plural, *map(_name, owns), *map(_name, watches or {})}
        if unknown := sorted(set(predicates) - watched_names):
            raise ValueError(f"controller {name}: predicates for {unknown}, not watched")
        controller = Controller(
            name,
            reconciler,
            workers=workers or self.workers,
            metrics=self.metrics,
            kind=for_.name,
            backoff=self._backoff,
            gate=self.is_leading,
        )
        self._informer(for_).add_handler(EnqueueSelf(controller, predicates.get(for_.plural)))
        for owned in owns:
            filter_ = predicates.get(_name(owned))
            self._informer(owned).add_handler(EnqueueOwner(controller, for_.name, filter_))
        for watched, mapper in (watches or {}).items():
            filter_ = predicates.get(_name(watched))
            self._informer(watched).add_handler(EnqueueMapped(controller, mapper, filter_))
        self._controllers.append((controller, for_.plural))
        return controller

    def run(self, stop: threading.Event) -> None:
        """Run until ``stop`` is set. Raises :class:`LeadershipLost` if the lease is lost."""
        threads = self._start_informers()
        try:
            if self._wait_for_sync(stop):
                if self._elector is None:
                    self._start_leading()
                else:
                    threads.append(self._start_thread("leader-election", self._campaign, stop))
                threads.append(self._start_thread("resync", self._resync_loop, self._halt))
                while not stop.is_set() and not self._halt.is_set():
                    stop.wait(0.1)
        finally:
            self._halt.set()
            # One window for all: every controller stops handing out keys at once, and
            # the reconciles in flight share one deadline (waited for controller after
            # controller, the Pod's grace period would run out before the last).
            deadline = time.monotonic() + self._graceful_shutdown
            for controller, _ in self._controllers:
                controller.queue.shutdown()
            for controller, _ in self._controllers:
                controller.shutdown(timeout=max(0.0, deadline - time.monotonic()))
            self.events.flush()  # counts still waiting for their heartbeat
            self._stop_informers(threads)
        if self._lost.is_set():
            raise LeadershipLost("lost the leader lease; stopped reconciling")

    @contextmanager
    def caches(
        self, timeout: float = 60.0, *, stop: threading.Event | None = None
    ) -> Iterator[None]:
        """Run only the informers (no campaign, no workers) while the block runs; for
        one-off passes such as ``ersctl reconcile --once``. Raises :class:`CacheSyncError`
        when they do not sync within ``timeout``, :class:`SyncInterrupted` when ``stop``
        is set first (a SIGTERM during start-up must not wait out the timeout)."""
        threads = self._start_informers()
        try:
            stop = stop or threading.Event()
            if not self._wait_for_sync(stop, until=time.monotonic() + timeout):
                if stop.is_set():
                    raise SyncInterrupted("stopped before the caches synced")
                raise CacheSyncError(f"caches did not sync within {timeout:g}s")
            yield
        finally:
            self._halt.set()
            self._stop_informers(threads)

    def _start_informers(self) -> list[threading.Thread]:
        return [
            self._start_thread(f"informer-{plural}", informer.run, self._halt)
            for plural, informer in self._informers.items()
        ]

    def _stop_informers(self, threads: list[threading.Thread]) -> None:
        for informer in self._informers.values():
            informer.interrupt()
        # One deadline for all: a thread stuck in a request the server never answers
        # must not add its wait to the next one's (the threads are daemons).
        deadline = time.monotonic() + 10
        for thread in threads:  # the campaign thread records a lost lease before it ends
            thread.join(timeout=max(0.0, deadline - time.monotonic()))

    def add_informer(self, plural: str, informer: Informer) -> None:
        """Watch one more resource through ``informer`` (e.g. the runner controller's
        Pods), so controllers may name ``plural`` in ``owns``; it runs, syncs (readiness
        waits for it) and stops with the others. Call before :meth:`add_controller`."""
        if plural in self._informers:
            raise ValueError(f"the manager watches {plural!r} already")
        self._informers[plural] = informer

    def store(self, kind: Kind | str) -> Store:
        """The cache of ``kind`` (watched from now on), or of an informer by name."""
        return self._informer(kind).store

    def _informer(self, kind: Kind | str) -> Informer:
        name = _name(kind)
        informer = self._informers.get(name)
        if isinstance(kind, str) or informer is not None:
            if informer is None:
                raise ValueError(f"the manager watches no {name!r}: give its Kind")
            if isinstance(kind, Kind) and self._kinds.get(name, kind) != kind:
                raise ValueError(f"{name!r} is declared twice, differently: {kind}")
            return informer
        relist: dict[str, Any] = {"backoff": self._relist_backoff} if self._relist_backoff else {}
        informer = Informer(
            self._api_client,
            kind.resource,
            namespace=self.namespace,
            store=Store(indexers={OWNER_UID_INDEX: controller_owner_uid}),
            watch_timeout=self._watch_timeout,
            on_relist=self.metrics.relists.labels(name).inc,
            share_specs=kind.share_specs,
            **relist,
        )
        self._informers[name] = informer
        self._kinds[name] = kind
        return informer

    def _wait_for_sync(self, stop: threading.Event, *, until: float = math.inf) -> bool:
        while not self.has_synced():
            if stop.wait(0.02) or time.monotonic() >= until:
                return False
        if stop.is_set():
            # Asked for while the last informer synced (a signal handler runs between
            # any two steps of this thread): the stop wins, nothing is reconciled.
            return False
        log.info(
            "caches synced: %s",
            ", ".join(f"{plural}={len(inf.store)}" for plural, inf in self._informers.items()),
        )
        return True

    def _campaign(self, stop: threading.Event) -> None:
        assert self._elector is not None
        if self._elector.run(stop):
            self._lost.set()
            self._stop_reconciling()

    def _start_leading(self) -> None:
        # No resync needed here: the informers' adds have been queueing every key
        # since they synced (a follower fills its queues, it just does not work them).
        for controller, _ in self._controllers:
            controller.start()

    def _stop_reconciling(self) -> None:
        # The gate and the write fence already answer False (is_leading); shutting
        # the queues down also stops idle workers from picking up more keys.
        self._halt.set()
        for controller, _ in self._controllers:
            controller.queue.shutdown()

    def resync(self) -> None:
        """Enqueue every cached object of every controller's primary resource."""
        for controller, primary in self._controllers:
            for namespace, name in self._informers[primary].store.list_keys():
                controller.enqueue(Request(namespace, name))

    def _resync_loop(self, halt: threading.Event) -> None:
        last = time.monotonic()
        while not halt.wait(min(1.0, self.resync_period)):
            if time.monotonic() - last >= self.resync_period:
                last = time.monotonic()
                if self.is_leading():
                    self.resync()

    @staticmethod
    def _start_thread(
        name: str, target: Callable[[threading.Event], object], arg: threading.Event
    ) -> threading.Thread:
        thread = threading.Thread(target=target, args=(arg,), name=name, daemon=True)
        thread.start()
        return thread


def _name(kind: Kind | str) -> str:
    return kind if isinstance(kind, str) else kind.plural
