"""One controller: a work queue of Requests, event handlers that fill it, and workers.

The worker loop is controller-runtime's: take a key (never one another worker holds),
reconcile it, then

- it raised: requeue with per-key exponential backoff;
- it returned ``requeue_after``: forget the failures, requeue after that delay;
- otherwise: forget the failures.

``NotLeaderError`` (the write fence tripped because the lease was lost mid-reconcile)
is not retried: this process is on its way out.

Every line logged during a reconcile carries the object (``kind``, ``namespace``,
``name``), the ``controller`` and a ``reconcileID`` new to that reconcile (as
controller-runtime's), so one reconcile's lines, or one object's, can be selected. A
failed reconcile is logged here, once, as one WARNING; a reconciler that raises leaves
the logging of its failure to this loop.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ersctl.kube.errors import NotLeaderError
from ersctl.kube.metrics import ControllerMetrics
from ersctl.kube.predicates import AlwaysPass, Predicate
from ersctl.kube.queue import Backoff, WorkQueue
from ersctl.kube.reconcile import Reconciler, Request, RetryLater
from ersctl.kube.store import metadata, object_key
from ersctl.platform.logs import log_fields

log = logging.getLogger(__name__)

Json = Mapping[str, Any]
Mapper = Callable[[Json], Iterable[Request]]
"""The Requests an object of a watched resource stands for (``EnqueueMapped``)."""


class Controller:
    """Reconciles the keys its handlers enqueue, with ``workers`` threads.

    ``gate`` is asked before every reconcile; when it answers False the key is
    dropped (the manager gates on holding the leader lease). ``kind`` is the kind of the
    objects it reconciles, for its log lines.
    """

    def __init__(
        self,
        name: str,
        reconciler: Reconciler,
        *,
        workers: int,
        metrics: ControllerMetrics,
        kind: str = "",
        backoff: Backoff | None = None,
        gate: Callable[[], bool] = lambda: True,
    ) -> None:
        if workers < 1:
            raise ValueError("a controller needs at least one worker")
        self.name = name
        self.kind = kind
        self.reconciler = reconciler
        self.queue: WorkQueue[Request] = WorkQueue(backoff=backoff)
        self._workers = workers
        self._metrics = metrics
        self._gate = gate
        self._threads: list[threading.Thread] = []
        metrics.track_queue_depth(name, self.queue.__len__)
        metrics.workers.labels(name).set(workers)

    def start(self) -> None:
        """Start the worker threads (once)."""
        if self._threads:
            return
        for i in range(self._workers):
            thread = threading.Thread(
                target=self._work, name=f"{self.name}-worker-{i}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop handing out keys and wait up to ``timeout`` for reconciles in flight."""
        self.queue.shutdown()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def enqueue(self, request: Request) -> None:
        self.queue.add(request)

    def process_one(self) -> bool:
        """Reconcile the next key; False once the queue is shut down."""
        request = self.queue.get()
        if request is None:
            return False
        try:
            if self._gate():
                self._reconcile(request)
        finally:
            self.queue.done(request)
        return True

    def _work(self) -> None:
        while self.process_one():
            pass

    def _reconcile(self, request: Request) -> None:
        with log_fields(
            controller=self.name,
            kind=self.kind,
            namespace=request.namespace,
            name=request.name,
            reconcileID=uuid.uuid4().hex[:16],
        ):
            self._reconcile_logged(request)

    def _reconcile_logged(self, request: Request) -> None:
        started = time.monotonic()
        try:
            result = self.reconciler.reconcile(request)
        except NotLeaderError as exc:
            log.warning("stopped reconciling: %s", exc)
            return
        except Exception as exc:
            wait = exc.after if isinstance(exc, RetryLater) else 0.0
            delay = self.queue.add_rate_limited(request, at_least=wait)
            self._metrics.observe_reconcile(
                self.name, result="error", seconds=time.monotonic() - started
            )
            log.warning(
                "reconcile failed, retrying in %.3fs: %s: %s", delay, type(exc).__name__, exc
            )
            log.debug("reconcile failed: traceback", exc_info=True)
            return
        self.queue.forget(request)
        outcome = "success"
        if result.requeue_after is not None and result.requeue_after > 0:
            self.queue.add_after(request, result.requeue_after)
            outcome = "requeue_after"
        self._metrics.observe_reconcile(
            self.name, result=outcome, seconds=time.monotonic() - started
        )


class _EnqueueHandler:
    """Informer event handler: the Requests of each event's object(s), if ``predicate``
    agrees. An update enqueues the Requests of both its old and new state."""

    def __init__(self, controller: Controller, predicate: Predicate | None = None) -> None:
        self._controller = controller
        self._predicate = predicate or AlwaysPass()

    def on_add(self, obj: Json) -> None:
        if self._predicate.create(obj):
            self._enqueue(obj)

    def on_update(self, old: Json, new: Json) -> None:
        if self._predicate.update(old, new):
            self._enqueue(old, new)

    def on_delete(self, obj: Json) -> None:
        if self._predicate.delete(obj):
            self._enqueue(obj)

    def _enqueue(self, *objs: Json) -> None:
        for request in {r for obj in objs for r in self._requests(obj)}:
            self._controller.enqueue(request)

    def _requests(self, obj: Json) -> Iterable[Request]:
        raise NotImplementedError


class EnqueueSelf(_EnqueueHandler):
    """Event handler for the primary resource: the object's own key, if ``predicate`` agrees."""

    def _requests(self, obj: Json) -> Iterable[Request]:
        namespace, name = object_key(obj)
        yield Request(namespace, name)


class EnqueueOwner(_EnqueueHandler):
    """Event handler for owned resources: the key of the object's controller owner of
    ``owner_kind`` (same namespace). Objects without such an owner are ignored; an update
    enqueues both owners (a runner moved between sets changes both)."""

    def __init__(
        self, controller: Controller, owner_kind: str, predicate: Predicate | None = None
    ) -> None:
        super().__init__(controller, predicate)
        self._owner_kind = owner_kind

    def _requests(self, obj: Json) -> Iterable[Request]:
        meta = metadata(obj)
        refs = meta.get("ownerReferences")
        for ref in refs if isinstance(refs, list) else ():
            if (
                isinstance(ref, dict)
                and ref.get("controller") is True
                and ref.get("kind") == self._owner_kind
                and ref.get("name")
            ):
                yield Request(str(meta.get("namespace") or ""), str(ref["name"]))


class EnqueueMapped(_EnqueueHandler):
    """Event handler for a resource related by a field rather than an ownerReference
    (an object naming its owner in its spec, possibly in another namespace): the
    Requests ``mapper`` returns for the object."""

    def __init__(
        self, controller: Controller, mapper: Mapper, predicate: Predicate | None = None
    ) -> None:
        super().__init__(controller, predicate)
        self._mapper = mapper

    def _requests(self, obj: Json) -> Iterable[Request]:
        return self._mapper(obj)
