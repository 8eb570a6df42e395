"""What the EphemeralRunner reconciler needs from the world (consumer-defined ports).

``ersctl.runner.kube`` implements the Kubernetes side, ``ersctl.runner.service`` the
scale-set service side. Kubernetes errors arrive as ``ersctl.errors.KubeError``
(``NotFoundError``, ``ConflictError``); service errors as
``ghalistener.actions.errors.ActionsError`` subclasses.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

from ersctl.api import EphemeralRunner
from ghalistener.actions.types import JitConfig, RunnerReference


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

    def delete_pod(self, namespace: str, name: str, *, uid: str = "") -> None:
        """Delete (only the Pod with ``uid`` when given). NotFound is success."""
        ...


class SecretStore(Protocol):
    def get_secret(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def create_secret(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create; ``ConflictError`` when the name is taken."""
        ...

    def delete_secret(self, namespace: str, name: str) -> None:
        """Delete. NotFound is success."""
        ...


class RunnerService(Protocol):
    """The scale-set service calls the runner controller makes (``ActionsClient`` has them)."""

    def generate_jit_runner_config(
        self, scale_set_id: int, name: str, work_folder: str = "_work"
    ) -> JitConfig: ...

    def get_runner_by_name(self, name: str) -> RunnerReference | None: ...

    def remove_runner(self, runner_id: int) -> None: ...


class RunnerServices(Protocol):
    def service_for(self, runner: EphemeralRunner) -> AbstractContextManager[RunnerService]:
        """Hold the service client for ``runner``'s credentials (``spec.githubConfigSecret``
        in its namespace) and configuration URL for the block; valid only inside it.
        Entering raises ``ersctl.api.FieldError`` when they are absent or unusable;
        calls raise ``ersctl.errors.NotLeaderError`` once the leader lease is lost."""
        ...


class RunnerMetricsSink(Protocol):
    """What the reconciler counts (``ersctl.runner.metrics`` exports it)."""

    def registered(self, namespace: str) -> None: ...

    def pod_created(self, namespace: str) -> None: ...

    def pod_failed(self, namespace: str) -> None: ...

    def runner_finished(self, namespace: str, phase: str) -> None: ...


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
