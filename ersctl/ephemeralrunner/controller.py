"""Registers the EphemeralRunner controller on the runtime's manager.

The controller's primary resource is ``ephemeralrunners`` (every update passes, as
ARC's ResourceVersionChangedPredicate: phase, finalizers and deletion all matter, and
so do the listener's job fields, which alone turn a Pending runner Running; the set
controller's ``RUNNER_PREDICATE`` drops job-field-only updates and must not be used
here);
it owns the runner Pods, watched through a label-selected :class:`PodInformer` and mapped to the
EphemeralRunner named by their controller ownerReference. Runners and Pods are read
from the informer caches (:class:`CachedRunners`, :class:`CachedPods`), so a resync of
steady runners sends no request. JIT Secrets are not watched: the controller creates and deletes them itself, and a cluster-wide Secret
watch would need ``list``/``watch`` on every Secret (see examples/deploy RBAC).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Final

from ersctl.api import EphemeralRunner
from ersctl.arcclient.cache import CachedReader, cached_reader
from ersctl.arcclient.kinds import RUNNERS
from ersctl.ephemeralrunner.defaults import DEFAULT_WORKERS
from ersctl.ephemeralrunner.health import HealthPolicy
from ersctl.ephemeralrunner.metrics import RunnerMetrics
from ersctl.ephemeralrunner.phases import STARTING_REASONS, FailurePolicy
from ersctl.ephemeralrunner.pods import DISRUPTION_ANNOTATIONS, RUNNER_CONTAINER, RUNNER_POD_LABEL
from ersctl.ephemeralrunner.ports import RunnerServices
from ersctl.ephemeralrunner.reconciler import RunnerReconciler
from ersctl.ephemeralrunner.stores import KubeRunnerResources
from ersctl.kube.client import ApiClient
from ersctl.kube.copies import json_copy
from ersctl.kube.informer import PodInformer
from ersctl.kube.manager import Manager
from ersctl.kube.ownwrites import OwnWrites
from ersctl.kube.predicates import AlwaysPass
from ersctl.kube.store import OWNER_UID_INDEX, Store, controller_owner_uid

CONTROLLER_NAME: Final = "ephemeralrunner"
PODS: Final = "pods"
RUNNER_POD_SELECTOR: Final = f"{RUNNER_POD_LABEL}=True"
CREATED_POD_TTL: Final = 30.0
"""Seconds a created Pod the cache has not shown is believed to exist (watch latency is
far less; a Pod deleted before the cache ever saw it is then looked for again)."""


def runner_pod_informer(api_client: ApiClient, *, namespace: str | None = None) -> PodInformer:
    """List+watch of runner Pods only (label ``actions-ephemeral-runner=True``), cached
    without their spec (:func:`pod_state_only`)."""
    return PodInformer(
        api_client,
        selector=RUNNER_POD_SELECTOR,
        namespace=namespace,
        store=Store(indexers={OWNER_UID_INDEX: controller_owner_uid}),
        transform=pod_state_only,
    )


POD_METADATA_READ: Final = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "ownerReferences",
)
"""What anything reads of a cached runner Pod's metadata: its key, uid, age and deletion
(the reconciler and its health rules), resourceVersion (the informer), ownerReferences
(the owner index and the event mapping to its runner)."""
POD_STATUS_READ: Final = ("phase", "reason", "message")
POD_CONDITIONS_READ: Final = ("Ready", "PodScheduled")
"""The conditions read: readiness (and since when it is lost), and the scheduler's."""


def pod_state_only(pod: dict[str, Any]) -> dict[str, Any]:
    """A runner Pod as the cache keeps it: what ``PodState.from_pod`` and the runtime
    read (:data:`POD_METADATA_READ`, the disruption annotations; the status's phase,
    reason and message, :data:`POD_CONDITIONS_READ`, the runner container's status, the
    init containers' and any other container's that waits for a cause), nothing else.

    Most of a Pod is never read: its spec (the whole runner template, unshared: each
    names its own JIT Secret), labels, the other annotations, conditions and containers.
    A cached runner Pod took 13.6 KiB with them, 3.6 without (measured).
    """
    metadata = pod.get("metadata") or {}
    status = pod.get("status") or {}
    kept: dict[str, Any] = {k: status[k] for k in POD_STATUS_READ if k in status}
    conditions = [
        c for c in status.get("conditions") or () if _field(c, "type") in POD_CONDITIONS_READ
    ]
    if conditions:
        kept["conditions"] = conditions
    containers = [cs for cs in status.get("containerStatuses") or () if _read_container(cs)]
    if containers:
        kept["containerStatuses"] = containers
    if status.get("initContainerStatuses"):
        kept["initContainerStatuses"] = status["initContainerStatuses"]
    kept_meta = {k: metadata[k] for k in POD_METADATA_READ if k in metadata}
    annotations = metadata.get("annotations") or {}
    protection = {k: annotations[k] for k in DISRUPTION_ANNOTATIONS if k in annotations}
    if protection:
        kept_meta["annotations"] = protection
    return {
        "apiVersion": pod.get("apiVersion", "v1"),
        "kind": pod.get("kind", "Pod"),
        "metadata": kept_meta,
        "status": kept,
    }


def _read_container(status: object) -> bool:
    """The runner container's status, or another's that waits for a reason worth
    reporting (an image that does not pull...)."""
    if _field(status, "name") == RUNNER_CONTAINER:
        return True
    state = _field(status, "state")
    waiting = _field(state, "waiting")
    return _field(waiting, "reason") not in (None, *STARTING_REASONS)


def _field(item: object, name: str) -> object:
    return item.get(name) if isinstance(item, dict) else None


class CachedPods:
    """``PodStore`` reading runner Pods from the informer's cache (no request; may lag
    by the watch latency) and writing through to the API server.

    A Pod this process created is answered from the create's answer until the cache
    shows it (at most ``CREATED_POD_TTL`` seconds): the runner's own status write lands
    first, and its watch event often brings a reconcile before the Pod's does, which
    would otherwise read the Secret again, create the Pod again and lose a 409.
    Another lagging read is safe: a failed Pod seen twice is deleted with a uid
    precondition and recorded under its uid, so it counts once.
    """

    def __init__(
        self,
        informer: PodInformer,
        writer: KubeRunnerResources,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = informer.store
        self._writer = writer
        self._clock = clock
        self._lock = threading.Lock()
        self._created: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}

    def get_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        raw = self._store.get(namespace, name)
        with self._lock:
            created = self._created.pop((namespace, name), None)
            fresh = created is not None and self._clock() - created[0] < CREATED_POD_TTL
            if raw is None and created is not None and fresh:
                self._created[(namespace, name)] = created  # not shown yet: keep it
                raw = created[1]
        copied: dict[str, Any] | None = None if raw is None else json_copy(raw)
        return copied

    def create_pod(self, body: dict[str, Any]) -> dict[str, Any]:
        answer = self._writer.create_pod(body)
        metadata = answer.get("metadata") or {}
        key = (str(metadata.get("namespace")), str(metadata.get("name")))
        with self._lock:
            self._created[key] = (self._clock(), answer)
        return answer

    def delete_pod(self, namespace: str, name: str, *, uid: str = "", force: bool = False) -> None:
        with self._lock:
            self._created.pop((namespace, name), None)
        self._writer.delete_pod(namespace, name, uid=uid, force=force)

    def patch_pod(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        self._writer.patch_pod(namespace, name, patch)


class CachedRunners:
    """``RunnerStore`` reading EphemeralRunners from the manager's informer cache (no
    request), with this process's own writes the cache has not shown yet
    (``ersctl.kube.ownwrites``), and writing through to the API server.

    A read that lags someone else's write is safe: every phase and finalizer write
    carries the runner's resourceVersion, so the API server refuses it (409) and the
    reconcile is retried; the watch event of that write enqueues the runner anyway. The
    exception is a failed Pod's record (and the Failed phase that rides in it at the
    failure limit), which must land once its Pod is deleted.

    A runner whose last finalizer this process removed while it was being deleted is
    gone at the server, whatever the cache still shows: it reads as None until the cache
    lets it go too. The server answers that patch with the runner as it was before
    (its finalizers still listed), so without this a reconcile queued meanwhile (by the
    Pod's deletion, or the write's own event) would patch the finalizers again and get
    a 404.
    """

    def __init__(self, reader: CachedReader, writer: KubeRunnerResources) -> None:
        self._reader = reader
        self._writer = writer
        self._own = OwnWrites[EphemeralRunner]()
        self._released: dict[str, str] = {}  # key -> uid of a runner let go (see above)

    def get_runner(self, namespace: str, name: str) -> EphemeralRunner | None:
        key = f"{namespace}/{name}"
        cached = self._reader.get_runner(namespace, name)
        if cached is None:
            self._own.forget(key)
            self._released.pop(key, None)
            return None
        if self._released.get(key) == cached.uid:
            return None
        return self._own.newest(cached)

    def patch_runner(self, runner: EphemeralRunner, patch: dict[str, Any]) -> EphemeralRunner:
        answer = self._writer.patch_runner(runner, patch)
        finalizers = (patch.get("metadata") or {}).get("finalizers")
        if runner.is_deleting and finalizers == []:
            self._own.forget(runner.key)
            self._released[runner.key] = runner.uid
            return answer
        return self._own.written(runner, answer)

    def patch_runner_status(
        self, runner: EphemeralRunner, patch: dict[str, Any]
    ) -> EphemeralRunner:
        return self._own.written(runner, self._writer.patch_runner_status(runner, patch))

    def delete_runner(self, runner: EphemeralRunner) -> None:
        self._writer.delete_runner(runner)


def add_runner_controller(
    manager: Manager,
    api_client: ApiClient,
    *,
    services: RunnerServices,
    policy: FailurePolicy | None = None,
    health: HealthPolicy | None = None,
    workers: int = DEFAULT_WORKERS,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> RunnerReconciler:
    """Build the runner reconciler and register it (and the Pod informer) on ``manager``,
    with ``workers`` threads of its own (not the manager's count, which the set
    controllers share): runners are many and each waits on GitHub once.

    Kubernetes writes are fenced by the manager's leadership, like the set controller's;
    ``services`` (shared with the set controller: one client per credentials Secret)
    fences the GitHub calls.
    """
    resources = KubeRunnerResources(api_client, fence=manager.is_leading)
    informer = runner_pod_informer(api_client, namespace=manager.namespace)
    reconciler = RunnerReconciler(
        runners=CachedRunners(cached_reader(manager), resources),
        pods=CachedPods(informer, resources),
        secrets=resources,
        hooks=resources,
        services=services,
        events=manager.events,
        policy=policy,
        health=health,
        clock=clock,
        metrics=RunnerMetrics(manager.metrics.registry),
        removal_workers=workers,
    )
    manager.add_informer(PODS, informer)
    manager.add_controller(
        CONTROLLER_NAME,
        reconciler,
        for_=RUNNERS,
        owns=[PODS],
        predicates={RUNNERS.plural: AlwaysPass(), PODS: AlwaysPass()},
        workers=workers,
    )
    return reconciler
