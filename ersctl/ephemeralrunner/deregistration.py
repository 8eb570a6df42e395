"""Registrations of deleted runners removed from the service in the background (what
ARC 0.15's #4664 does, where no job can be lost by it).

A deleted runner whose Pod cannot be running a job (gone, terminated or being deleted:
a runner that is done, failed or never started) has no reason to wait on GitHub: the
reconciler lets it go at once (its finalizers, Pod, JIT Secret and container-hook
objects) and hands the removal of its registration to :class:`BackgroundRemovals`, a
few threads that call the service off the reconcile path, so a slow or failing service
holds no reconcile worker and no runner's replica slot. (A runner whose Pod may be
running a job keeps its registration finalizer until the service lets it go, done in
the reconcile: removing it first is what keeps a job GitHub assigned meanwhile from
dying with the Pod. ARC 0.15 deletes that Pod at once.)

- One request per registration (namespace, name, runner id), claimed until it is done
  with: pushed again while it is queued or waiting it is queued once (the work
  queue's rule), while it is being sent it runs again only if the first did not finish
  with it, so the service is asked once.
- JobStillRunning: tried again :data:`BUSY_RETRY` seconds later (a Pod that failed
  mid-job, whose job the service has not ended yet).
- Another service or credentials error, or the credentials Secret unreadable (the API
  server restarting or overloaded): tried again with backoff (1 s doubling, up to a
  minute) until ``--runner-deregistration-timeout`` has passed since the runner's
  deletion, then given up (``on_abandoned``: the health rules' RegistrationAbandoned
  Warning naming the runner id).
- In memory: what is still queued when the controller stops is dropped, as ARC drops
  it. The service removes a registration whose runner never reports in on its own, and
  a runner let go here could not run a job anyway.

Thread-safe. Nothing here logs a JIT config, only runner names and ids. No Kubernetes
or HTTP import: the service is behind ``ersctl.ephemeralrunner.registration.Registrations``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from ersctl.api import EphemeralRunner, FieldError
from ersctl.ephemeralrunner import health
from ersctl.ephemeralrunner.health import HealthPolicy
from ersctl.ephemeralrunner.registration import Registrations
from ersctl.kube.errors import KubeError
from ersctl.kube.queue import Backoff, WorkQueue
from ersctl.scaleset.ports import ServiceError

log = logging.getLogger(__name__)

BUSY_RETRY: Final = 30.0
"""Seconds between tries at a registration whose runner still runs a job (ARC: 30 s)."""
MIN_WORKERS: Final = 4
"""At least this many threads (ARC's floor): one slow call must not hold the rest."""
RETRY_BACKOFF: Final = Backoff(base=1.0, cap=60.0)


@dataclass(frozen=True)
class Removal:
    """Which registration to remove: the runner's key and the id the service knows."""

    namespace: str
    name: str
    runner_id: int


Abandoned = Callable[[EphemeralRunner, Exception], None]


class BackgroundRemovals:
    """See the module docstring. Threads start with the first :meth:`push`."""

    def __init__(
        self,
        *,
        registrations: Registrations,
        policy: HealthPolicy,
        clock: Callable[[], datetime],
        on_abandoned: Abandoned,
        workers: int = MIN_WORKERS,
    ) -> None:
        self._registrations = registrations
        self._policy = policy
        self._clock = clock
        self._on_abandoned = on_abandoned
        self._workers = max(workers, MIN_WORKERS)
        self._queue: WorkQueue[Removal] = WorkQueue(backoff=RETRY_BACKOFF)
        self._lock = threading.Lock()
        self._claimed: dict[Removal, EphemeralRunner] = {}
        self._threads: list[threading.Thread] = []

    def push(self, runner: EphemeralRunner, runner_id: int) -> None:
        """Remove registration ``runner_id`` of ``runner`` (a copy taken now: the object
        is usually gone by the time a thread gets to it). Never blocks on the service."""
        removal = Removal(runner.namespace, runner.name, runner_id)
        with self._lock:
            self._claimed[removal] = runner
            if not self._threads:
                self._start_locked()
        self._queue.add(removal)

    def pending(self) -> int:
        """Registrations queued, waiting for a retry or being removed now."""
        with self._lock:
            return len(self._claimed)

    def close(self) -> None:
        """Stop the threads; what is still queued is dropped (see the module docstring)."""
        self._queue.shutdown()
        with self._lock:
            threads, self._threads = self._threads, []
            dropped = len(self._claimed)
        for thread in threads:
            thread.join(timeout=5.0)
        if dropped:
            log.info("stopped with %d runner registrations not yet removed", dropped)

    def _start_locked(self) -> None:
        for number in range(self._workers):
            thread = threading.Thread(
                target=self._work, name=f"runner-removal-{number}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def _work(self) -> None:
        while (removal := self._queue.get()) is not None:
            try:
                self._attempt(removal)
            except Exception:  # a bug must not end the thread; the removal is dropped
                log.exception("removing runner %s/%s failed", removal.namespace, removal.name)
                self._release(removal)
            finally:
                self._queue.done(removal)

    def _attempt(self, removal: Removal) -> None:
        with self._lock:
            runner = self._claimed.get(removal)
        if runner is None:
            return  # released already
        try:
            removed = self._registrations.remove(runner, removal.runner_id)
        except (ServiceError, FieldError, KubeError) as exc:
            if health.deregistration_left(runner, now=self._clock(), policy=self._policy) > 0:
                delay = self._queue.add_rate_limited(removal)
                log.info("runner %s: removal failed (%s); again in %gs", runner.key, exc, delay)
                return
            self._release(removal)
            self._on_abandoned(runner, exc)
            return
        if not removed:
            log.info(
                "runner %s is still running a job; removal again in %gs", runner.key, BUSY_RETRY
            )
            self._queue.add_after(removal, BUSY_RETRY)
            return
        self._release(removal)

    def _release(self, removal: Removal) -> None:
        self._queue.forget(removal)
        with self._lock:
            self._claimed.pop(removal, None)
