"""What the EphemeralRunnerSet reconciler needs from the world (consumer-defined ports).

The reconciler declares these small protocols; the controller runtime (``ersctl.kube``)
provides Kubernetes-backed implementations, and tests may provide in-memory ones for
pure logic. The split between :class:`CachedReader` and :class:`ApiReader` is the one
controller-runtime draws: decisions read the informer cache, which may lag; the few
reads the reconcile contract marks "API reader" go straight to the API server because
a lagging read there creates runners nobody asked for (docs/architecture.md, "The
guard").

Errors: implementations raise ``ersctl.kube.errors.KubeError`` subclasses
(``ConflictError`` for 409, ``NotFoundError`` for 404); never
``kubernetes.client.ApiException``.
"""

from __future__ import annotations

from typing import Any, Protocol

from ersctl.api import EphemeralRunner, EphemeralRunnerSet
from ersctl.kube.reconcile import EventRecorder as EventRecorder
from ersctl.scaleset.ports import RunnerServices as RunnerServices


class CachedReader(Protocol):
    """The informer cache. May lag behind the API server; never does I/O."""

    def get_ers(self, namespace: str, name: str) -> EphemeralRunnerSet | None:
        """A copy of the cached ERS (safe to mutate), or None when not cached."""
        ...

    def list_owned_runners(self, ers: EphemeralRunnerSet) -> list[EphemeralRunner]:
        """Copies of the cached runners whose controller ownerReference uid is ``ers.uid``."""
        ...


class ApiReader(Protocol):
    """Uncached GET/LIST straight to the API server. Use sparingly: each call is a request."""

    def get_ers(self, namespace: str, name: str) -> EphemeralRunnerSet | None:
        """The live ERS, or None when it does not exist."""
        ...

    def list_owned_runners(self, ers: EphemeralRunnerSet) -> list[EphemeralRunner]:
        """The live runners in ``ers.namespace`` controlled by ``ers`` (by ownerReference uid)."""
        ...

    def get_runner(self, namespace: str, name: str) -> EphemeralRunner | None:
        """The live EphemeralRunner, or None when it does not exist."""
        ...

    def get_secret(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The live Secret as JSON (``data`` values base64-encoded), or None when absent."""
        ...


class Writer(Protocol):
    """Writes go straight to the API server."""

    def create_runner(self, body: dict[str, Any]) -> EphemeralRunner:
        """Create an EphemeralRunner from ``body`` (``generateName`` allowed).

        Called from several threads at once: a scale-up creates with bounded concurrency.
        """
        ...

    def delete_runner(self, runner: EphemeralRunner) -> None:
        """Delete ``runner``. NotFound counts as success."""
        ...

    def patch_ers(self, ers: EphemeralRunnerSet, patch: dict[str, Any]) -> EphemeralRunnerSet:
        """JSON merge patch on the main resource (e.g. finalizers)."""
        ...

    def patch_ers_status(
        self, ers: EphemeralRunnerSet, patch: dict[str, Any]
    ) -> EphemeralRunnerSet:
        """JSON merge patch on ``/status``.

        A ``metadata.resourceVersion`` inside ``patch`` is the optimistic lock: the
        server answers 409 (``ConflictError``) when it is stale.
        """
        ...

    def patch_runner(self, runner: EphemeralRunner, patch: dict[str, Any]) -> EphemeralRunner:
        """JSON merge patch on an EphemeralRunner's main resource (e.g. finalizers)."""
        ...

    def create_secret(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create a Secret (a set's proxy Secret); ``ConflictError`` when the name is taken."""
        ...

    def patch_secret(self, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        """JSON merge patch on a Secret; a ``metadata.resourceVersion`` in it is a lock."""
        ...

    def delete_secret(self, namespace: str, name: str) -> None:
        """Delete a Secret. NotFound counts as success."""
        ...


class ReconcileMetrics(Protocol):
    """Counters the reconciler reports. The runtime exports them (Prometheus)."""

    def runners_created(self, ers: EphemeralRunnerSet, count: int) -> None: ...

    def runners_deleted(self, ers: EphemeralRunnerSet, count: int) -> None: ...

    def scale_up_suppressed(self, ers: EphemeralRunnerSet) -> None: ...

    def failed_runner_deleted(self, ers: EphemeralRunnerSet) -> None: ...


class NoMetrics:
    """A :class:`ReconcileMetrics` that records nothing (the default)."""

    def runners_created(self, ers: EphemeralRunnerSet, count: int) -> None:
        """Ignore."""

    def runners_deleted(self, ers: EphemeralRunnerSet, count: int) -> None:
        """Ignore."""

    def scale_up_suppressed(self, ers: EphemeralRunnerSet) -> None:
        """Ignore."""

    def failed_runner_deleted(self, ers: EphemeralRunnerSet) -> None:
        """Ignore."""
