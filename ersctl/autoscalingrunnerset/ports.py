"""What the AutoscalingRunnerSet reconciler needs from the world (consumer-defined
ports). Kubernetes-backed implementations: ``ersctl.autoscalingrunnerset.controller`` (cache,
API reader, writer) and ``ersctl.scaleset.scalesets`` (GitHub). Pure.

Errors: Kubernetes calls raise ``ersctl.kube.errors.KubeError`` subclasses; GitHub
calls raise ``ersctl.scaleset.ports.ServiceError`` (its subclass
:class:`ScaleSetNameTakenError` for a name registered in another runner group) and
``NotLeaderError``; entering ``scale_sets_for`` raises ``CredentialsFieldError`` naming
the ARS field whose Secret, URL, proxy or CA cannot be used.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

from ersctl.api import AutoscalingListener, AutoscalingRunnerSet, EphemeralRunnerSet
from ersctl.kube.errors import NotFoundError
from ersctl.kube.reconcile import EventRecorder as EventRecorder
from ersctl.scaleset.ports import RunnerGroupNotFoundError as RunnerGroupNotFoundError
from ersctl.scaleset.ports import ScaleSet as ScaleSet
from ersctl.scaleset.ports import ScaleSetNameTakenError as ScaleSetNameTakenError
from ersctl.scaleset.ports import ScaleSetService as ScaleSetService

JsonObject = dict[str, Any]


class ArsGoneError(NotFoundError):
    """The ARS being reconciled is gone (404 on its own patch): a reconcile that read a
    cache still showing it, after another one had finished its teardown."""


class ScaleSetServices(Protocol):
    def scale_sets_for(self, ars: AutoscalingRunnerSet) -> AbstractContextManager[ScaleSetService]:
        """Resolve ``ars``'s credentials (read once on entering) and hold its service
        for the block."""
        ...


class Objects(Protocol):
    """Reads (the informer cache: may lag) and writes (straight to the API server) of
    the objects the reconciler handles. Bodies are JSON documents."""

    def get_ars(self, namespace: str, name: str) -> AutoscalingRunnerSet | None: ...

    def owned_runner_sets(
        self, ars: AutoscalingRunnerSet, *, live: bool = False
    ) -> list[EphemeralRunnerSet]:
        """The ERSs whose controller ownerReference is ``ars`` (``live``: read from the
        API server rather than the cache), oldest first."""
        ...

    def get_runner_set(self, namespace: str, name: str) -> EphemeralRunnerSet | None:
        """An ERS by name, read from the API server (whoever owns it)."""
        ...

    def get_listener(
        self, namespace: str, name: str, *, live: bool = False
    ) -> AutoscalingListener | None: ...

    def listeners_of(
        self, ars: AutoscalingRunnerSet, *, live_in: str | None = None
    ) -> list[AutoscalingListener]:
        """Every AL that names ``ars`` in its spec: those the cache holds, in any
        namespace; with ``live_in``, those the API server lists in that namespace."""
        ...

    def patch_ars(self, ars: AutoscalingRunnerSet, patch: JsonObject) -> AutoscalingRunnerSet:
        """Raises :class:`ArsGoneError` when the ARS no longer exists."""
        ...

    def patch_ars_status(
        self, ars: AutoscalingRunnerSet, patch: JsonObject
    ) -> AutoscalingRunnerSet:
        """Raises :class:`ArsGoneError` when the ARS no longer exists."""
        ...

    def create_runner_set(self, body: JsonObject) -> EphemeralRunnerSet: ...

    def patch_runner_set(
        self, ers: EphemeralRunnerSet, patch: JsonObject
    ) -> EphemeralRunnerSet: ...

    def delete_runner_set(self, ers: EphemeralRunnerSet) -> None: ...

    def create_listener(self, body: JsonObject) -> AutoscalingListener: ...

    def patch_listener(
        self, listener: AutoscalingListener, patch: JsonObject
    ) -> AutoscalingListener: ...

    def delete_listener(self, listener: AutoscalingListener) -> None: ...

    def get_builtin(self, plural: str, namespace: str, name: str) -> JsonObject | None:
        """A Secret, ServiceAccount, Role or RoleBinding (by resource ``plural``), live:
        none is watched. None when absent."""
        ...

    def patch_builtin(
        self, plural: str, namespace: str, name: str, patch: JsonObject
    ) -> JsonObject:
        """JSON merge patch; a ``metadata.resourceVersion`` in it is a lock."""
        ...
