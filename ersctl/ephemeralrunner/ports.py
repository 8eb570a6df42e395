"""What the EphemeralRunner reconciler needs from the world (consumer-defined ports).

``ersctl.ephemeralrunner.stores`` implements the Kubernetes side; the scale-set service is the
port both controllers share (``ersctl.scaleset.ports.RunnerServices``, implemented by
``ersctl.scaleset.clients``). Kubernetes errors arrive as ``ersctl.kube.errors.KubeError``
(``NotFoundError``, ``ConflictError``); service errors as
``ersctl.scaleset.ports.ServiceError``.
"""

from __future__ import annotations

from typing import Any, Protocol

from ersctl.api import EphemeralRunner
from ersctl.scaleset.ports import RunnerServices as RunnerServices


class RunnerStore(Protocol):
    """EphemeralRunner reads and writes."""

    def get_runner(self, namespace: str, name: str) -> EphemeralRunner | None:
        """The runner, or None when it does not exist."""
        ...

    def patch_runner(self, runner: EphemeralRunner, patch: dict[str, Any]) -> EphemeralRunner:
        """Merge patch on the main resource; a ``metadata.resourceVersion`` in it is a lock."""
        ...

    def patch_runner_status(
        self, runner: EphemeralRunner, patch: dict[str, Any]
    ) -> EphemeralRunner:
        """Merge patch on ``/status``; a ``metadata.resourceVersion`` in it is a lock."""
        ...

    def delete_runner(self, runner: EphemeralRunner) -> None:
        """Delete the runner (its finalizers then run). NotFound is success."""
        ...


class PodStore(Protocol):
    def get_pod(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def create_pod(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create; ``ConflictError`` when the name is taken."""
        ...

    def delete_pod(self, namespace: str, name: str, *, uid: str = "", force: bool = False) -> None:
        """Delete (only the Pod with ``uid`` when given; ``force``: no grace period, as
        for a Pod whose node is gone). NotFound is success."""
        ...

    def patch_pod(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        """Merge ``patch`` into the Pod. NotFound is success (it is gone)."""
        ...


class SecretStore(Protocol):
    def get_secret(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def create_secret(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create; ``ConflictError`` when the name is taken."""
        ...

    def delete_secret(self, namespace: str, name: str) -> None:
        """Delete. NotFound is success."""
        ...


class HookResources(Protocol):
    """What Kubernetes container mode's hooks create for a runner: job Pods and Secrets
    labelled ``runner-pod=<runner name>`` in its namespace, which no ownerReference ties
    to the runner (ARC deletes them when their runner goes; so do we)."""

    def delete_linked(self, namespace: str, runner_name: str) -> int:
        """Delete those Pods and Secrets (the ones not already being deleted) and return
        how many still exist, deletions in progress included: 0 means all are gone."""
        ...


class RunnerMetricsSink(Protocol):
    """What the reconciler counts (``ersctl.ephemeralrunner.metrics`` exports it)."""

    def registered(self, namespace: str) -> None: ...

    def pod_created(self, namespace: str) -> None: ...

    def pod_failed(self, namespace: str) -> None: ...

    def runner_finished(self, namespace: str, phase: str) -> None: ...

    def runner_fault(self, namespace: str, mode: str) -> None:
        """A health rule found a runner failing in ``mode`` (``modes.Mode``)."""
        ...


class NoRunnerMetrics:
    """A :class:`RunnerMetricsSink` that counts nothing (the default)."""

    def registered(self, namespace: str) -> None:
        """Ignore."""

    def pod_created(self, namespace: str) -> None:
        """Ignore."""

    def pod_failed(self, namespace: str) -> None:
        """Ignore."""

    def runner_finished(self, namespace: str, phase: str) -> None:
        """Ignore."""

    def runner_fault(self, namespace: str, mode: str) -> None:
        """Ignore."""
