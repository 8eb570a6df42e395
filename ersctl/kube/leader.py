"""Leader election with a coordination.k8s.io Lease, via ``kubernetes.leaderelection``.

Replicas of the controller must never reconcile at once: two reconciles of one set in
two processes would both see the same shortfall and both create runners. One process
holds the Lease; the others wait. When the holder cannot renew within
``renew_deadline`` (or finds another holder), the library calls ``on_stopped_leading``
and :meth:`LeaderElector.run` returns.

The library renews every ``retry_period`` (client-go's cadence, a Lease write every 2 s
with the defaults), starting the moment it has acquired the Lease. The holder here
writes only once its last write is :attr:`LeaderElectionConfig.renew_interval` old
(4 s with the defaults): its attempts in between are answered from the record it wrote,
with no request. Other candidates leave a Lease alone while its holder renews it; one
that wrote it anyway (by hand, or a misconfigured replica) is found at the next real
write, which the server refuses (its resourceVersion moved), and the fence counts only
real writes. That halves the Lease's writes and still leaves half the renew deadline for
retries; the others see the record change well within a lease duration.

:meth:`LeaderElector.is_leading` is the fence the manager puts in front of every
reconcile and every write. Beyond the library's flag it also requires a successful
renew within ``renew_deadline``: a renew stuck in a slow request does not let a
process keep acting on a lease that may already have expired for everyone else.

On a clean stop the holder releases the Lease (clears ``holderIdentity``) so a
successor takes over at its next retry instead of waiting out ``lease_duration``.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

from ersctl.kube.calls import kube_call, server_of, translate
from ersctl.kube.errors import KubeError

log = logging.getLogger(__name__)


def default_identity() -> str:
    """``<hostname>_<random>``: unique per process, readable in ``kubectl get lease``."""
    return f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True, kw_only=True)
class LeaderElectionConfig:
    """Where the Lease lives and how it is held (seconds; client-go's defaults).

    The library requires ``lease_duration`` > ``renew_deadline`` > 1.2 x
    ``retry_period`` and ``retry_period`` >= 1; the Lease stores whole seconds, so
    ``lease_duration`` is an int.
    """

    namespace: str
    name: str = "ersctl-leader"
    identity: str = field(default_factory=default_identity)
    lease_duration: int = 15
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    @property
    def renew_interval(self) -> float:
        """How old the holder's last Lease write is when it writes the next one.

        Attempts come a retry period apart, so the write lands by ``(renew_deadline +
        retry_period) / 2`` after the last one, leaving the rest of the renew deadline
        for retries; never sooner than a retry period, so the library's renewal right
        after it acquired the Lease does not repeat the acquiring write.
        """
        return max(self.retry_period, (self.renew_deadline - self.retry_period) / 2)

    def __post_init__(self) -> None:
        if self.retry_period < 1:
            raise ValueError("leader election: retry_period must be >= 1 second")
        if self.renew_deadline <= 1.2 * self.retry_period:
            raise ValueError("leader election: renew_deadline must exceed 1.2 x retry_period")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("leader election: lease_duration must exceed renew_deadline")


class _Stopped(Exception):
    """Raised inside the library's loops to end them when we are asked to stop."""


class _LeaseApi:
    """The three Lease calls the library makes, on our API client. A failure is logged
    here, once, naming the server (the library's own lines about it are chatter, kept
    below INFO by ``ersctl.platform.logs``), then handed to the library as the
    ``ApiException`` it handles: a refused or reset connection (urllib3) would
    otherwise escape its loops and end the campaign thread for good."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self._api = client.CoordinationV1Api(api_client)
        self._server = server_of(api_client)

    def read_namespaced_lease(self, name: str, namespace: str, **kwargs: Any) -> Any:
        # 404: no Lease yet, the library creates it next.
        return self._call(
            f"get leases/{namespace}/{name}",
            lambda: self._api.read_namespaced_lease(name, namespace, **kwargs),
            expected=(404,),
        )

    def create_namespaced_lease(self, namespace: str, body: Any, **kwargs: Any) -> Any:
        # 409: another candidate created it first.
        return self._call(
            f"create leases/{namespace}",
            lambda: self._api.create_namespaced_lease(namespace, body, **kwargs),
            expected=(409,),
        )

    def replace_namespaced_lease(self, name: str, namespace: str, body: Any, **kwargs: Any) -> Any:
        # 409: another candidate took the Lease since we read it.
        return self._call(
            f"update leases/{namespace}/{name}",
            lambda: self._api.replace_namespaced_lease(name, namespace, body, **kwargs),
            expected=(409,),
        )

    def _call(self, action: str, call: Callable[[], Any], *, expected: tuple[int, ...]) -> Any:
        try:
            return call()
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as exc:
            error = translate(exc, action=action, server=self._server)
            level = logging.DEBUG if error.status in expected else logging.WARNING
            log.log(level, "leader election: %s", error)
            if isinstance(exc, ApiException):
                raise  # the library reads its status and body
            raise ApiException(status=0, reason=error.reason) from exc


class _FencedLeaseLock(LeaseLock):
    """The library's Lease lock on our API client, which can end the library's loops
    (they have no stop of their own) and records when a renew last succeeded."""

    def __init__(
        self, api_client: client.ApiClient, cfg: LeaderElectionConfig, stop: threading.Event
    ) -> None:
        super().__init__(cfg.name, cfg.namespace, cfg.identity)  # type: ignore[no-untyped-call]
        # The base class builds a client from the global default configuration.
        self.api_instance = _LeaseApi(api_client)  # type: ignore[assignment]  # duck-typed: the three calls it makes
        self._stop = stop
        self._renew_interval = cfg.renew_interval
        self.last_write = float("-inf")
        # The record of our last successful write while we hold the Lease, and whether
        # the attempt under way (a get, then an update) is answered from it.
        self._written: Any = None
        self._answering = False

    def get(self, name: str, namespace: str) -> tuple[bool, Any]:
        self._check()
        # Decided once per attempt, at its read: a read answered from our record must
        # not be followed by a real update, which would carry the resourceVersion of an
        # older read and be refused (409).
        self._answering = (
            self._written is not None and time.monotonic() - self.last_write < self._renew_interval
        )
        if self._answering:
            return True, self._written
        return super().get(name, namespace)  # type: ignore[no-untyped-call,no-any-return]

    def create(self, name: str, namespace: str, election_record: Any) -> bool:
        self._check()
        ok: bool = super().create(name, namespace, election_record)  # type: ignore[no-untyped-call]
        self._wrote(ok, election_record)
        return ok

    def update(self, name: str, namespace: str, updated_record: Any) -> bool:
        self._check()
        if self._answering:
            # A renewal not yet due: the record we wrote still stands, and the fence
            # (LeaderElector.is_leading) keeps counting from that real write.
            return True
        ok: bool = super().update(name, namespace, updated_record)  # type: ignore[no-untyped-call]
        self._wrote(ok, updated_record)
        return ok

    def _wrote(self, ok: bool, record: Any) -> None:
        # Only a successful write of ours is a record we may answer from; after a
        # refused one (another holder, a conflict) every attempt reads the Lease again.
        self._written = record if ok else None
        if ok:
            self.last_write = time.monotonic()

    def _check(self) -> None:
        if self._stop.is_set():
            raise _Stopped


class LeaderElector:
    """Campaigns for the Lease; see the module docstring. One :meth:`run` per instance."""

    def __init__(
        self,
        api_client: client.ApiClient,
        config: LeaderElectionConfig,
        *,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None],
    ) -> None:
        self.config = config
        self._api_client = api_client
        self._server = server_of(api_client)
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._leading = threading.Event()
        self._lock: _FencedLeaseLock | None = None

    def is_leading(self) -> bool:
        """True while this process holds the Lease and renewed it recently enough."""
        lock = self._lock
        if lock is None or not self._leading.is_set():
            return False
        return time.monotonic() - lock.last_write < self.config.renew_deadline

    def run(self, stop: threading.Event) -> bool:
        """Campaign, lead, and return when leadership ends or ``stop`` is set.

        Returns True when leadership was lost (the caller must stop reconciling and
        should exit), False when it returned because of ``stop``.
        """
        self._lock = lock = _FencedLeaseLock(self._api_client, self.config, stop)
        election = leaderelection.LeaderElection(  # type: ignore[no-untyped-call]
            electionconfig.Config(  # type: ignore[no-untyped-call]
                lock=lock,
                lease_duration=self.config.lease_duration,
                renew_deadline=self.config.renew_deadline,
                retry_period=self.config.retry_period,
                onstarted_leading=self._started,
                onstopped_leading=self._stopped,
            )
        )
        with contextlib.suppress(_Stopped):
            election.run()  # type: ignore[no-untyped-call]
        if not stop.is_set():
            return True  # the library returns only after leadership ended
        if self._leading.is_set():
            self._leading.clear()
            self._on_stopped()
            self._release()
        return False

    def _started(self) -> None:
        log.info(
            "acquired lease %s/%s as %s",
            self.config.namespace,
            self.config.name,
            self.config.identity,
        )
        self._leading.set()
        self._on_started()

    def _stopped(self) -> None:
        if not self._leading.is_set():
            return
        self._leading.clear()
        log.warning("lost lease %s/%s", self.config.namespace, self.config.name)
        self._on_stopped()

    def _release(self) -> None:
        """Clear ``holderIdentity`` if we still hold the Lease (optimistic lock)."""
        api = client.CoordinationV1Api(self._api_client)
        try:
            with kube_call(
                f"release lease {self.config.namespace}/{self.config.name}", server=self._server
            ):
                lease = api.read_namespaced_lease(self.config.name, self.config.namespace)
                if lease.spec is None or lease.spec.holder_identity != self.config.identity:
                    return
                lease.spec.holder_identity = None
                api.replace_namespaced_lease(self.config.name, self.config.namespace, lease)
        except (KubeError, ApiException) as exc:
            log.info("could not release the lease (a successor waits it out): %s", exc)
