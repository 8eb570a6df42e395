"""The typed writer of ARC's kinds: creates, deletes and merge patches, straight to the
API server, composed of the generic ``ersctl.kube.client.Writer``'s calls.

EphemeralRunnerSets and EphemeralRunners, ARC's other custom objects by plural
(AutoscalingRunnerSets, AutoscalingListeners), the Secrets the controllers own (a
runner's JIT config, a set's proxy variables), and merge patches of the built-in kinds
by plural (the finalizers of what an ARS protected).

Every patch is a JSON merge patch with its content type named explicitly; status
writes go to the ``/status`` subresource. A ``metadata.resourceVersion`` inside a
patch body is the optimistic lock (409 -> ``ConflictError`` when stale).

The generic writer's fence is asked before every write; when it answers False the
write raises ``NotLeaderError`` instead of reaching the server. The manager's writer is
fenced with "do I still hold the leader lease?", so a reconcile that was mid-flight
when the lease was lost cannot write another thing.
"""

from __future__ import annotations

from typing import Any

from ersctl.api import (
    AL_PLURAL,
    ER_PLURAL,
    ERS_PLURAL,
    AutoscalingListener,
    EphemeralRunner,
    EphemeralRunnerSet,
    complete_status_patch,
)
from ersctl.arcclient.kinds import arc
from ersctl.kube import client as kube
from ersctl.kube.resources import BUILTIN


class Writer:
    """Implements ``ersctl.ephemeralrunnerset.ports.Writer`` over the generic
    :class:`ersctl.kube.client.Writer`. Raises ``ersctl.kube.errors.KubeError``."""

    def __init__(self, objects: kube.Writer) -> None:
        self.objects = objects

    def create_runner(self, body: dict[str, Any]) -> EphemeralRunner:
        """Create an EphemeralRunner in ``body.metadata.namespace`` (``generateName`` allowed)."""
        return EphemeralRunner(self.objects.create(arc(ER_PLURAL), body))

    def delete_runner(self, runner: EphemeralRunner) -> None:
        """Delete ``runner`` (its finalizers still hold it until removed). NotFound is success."""
        self.objects.delete(arc(ER_PLURAL), runner.namespace, runner.name)

    def patch_ers(self, ers: EphemeralRunnerSet, patch: dict[str, Any]) -> EphemeralRunnerSet:
        """JSON merge patch on the ERS main resource (finalizers, spec)."""
        return EphemeralRunnerSet(
            self.objects.patch(arc(ERS_PLURAL), ers.namespace, ers.name, patch)
        )

    def patch_ers_status(
        self, ers: EphemeralRunnerSet, patch: dict[str, Any]
    ) -> EphemeralRunnerSet:
        """JSON merge patch on the ERS ``/status`` subresource, completed with the status
        fields ARC's schema requires that ``ers`` lacks (``ersctl.api.complete_status_patch``):
        every status writer goes through here, so none can be refused for them."""
        completed = complete_status_patch(ers, patch)
        return EphemeralRunnerSet(
            self.objects.status.patch(arc(ERS_PLURAL), ers.namespace, ers.name, completed)
        )

    def patch_runner(self, runner: EphemeralRunner, patch: dict[str, Any]) -> EphemeralRunner:
        """JSON merge patch on an EphemeralRunner's main resource (finalizers)."""
        return EphemeralRunner(
            self.objects.patch(arc(ER_PLURAL), runner.namespace, runner.name, patch)
        )

    def patch_runner_status(
        self, runner: EphemeralRunner, patch: dict[str, Any]
    ) -> EphemeralRunner:
        """JSON merge patch on an EphemeralRunner's ``/status`` subresource."""
        return EphemeralRunner(
            self.objects.status.patch(arc(ER_PLURAL), runner.namespace, runner.name, patch)
        )

    def create_object(self, plural: str, body: dict[str, Any]) -> dict[str, Any]:
        """Create one of ARC's custom objects (``plural``) from ``body``, in
        ``body.metadata.namespace`` (``generateName`` allowed)."""
        return self.objects.create(arc(plural), body)

    def patch_object(
        self, plural: str, namespace: str, name: str, patch: dict[str, Any], *, status: bool = False
    ) -> dict[str, Any]:
        """JSON merge patch on one of ARC's custom objects (``status``: its ``/status``)."""
        writer = self.objects.status if status else self.objects
        return writer.patch(arc(plural), namespace, name, patch)

    def delete_object(self, plural: str, namespace: str, name: str) -> None:
        """Delete one of ARC's custom objects (its finalizers hold it until removed).
        NotFound is success."""
        self.objects.delete(arc(plural), namespace, name)

    def patch_listener(
        self, listener: AutoscalingListener, patch: dict[str, Any]
    ) -> AutoscalingListener:
        """JSON merge patch on an AutoscalingListener's main resource (its finalizer)."""
        return AutoscalingListener(
            self.objects.patch(arc(AL_PLURAL), listener.namespace, listener.name, patch)
        )

    def patch_listener_status(
        self, listener: AutoscalingListener, patch: dict[str, Any]
    ) -> AutoscalingListener:
        """JSON merge patch on an AutoscalingListener's ``/status`` (its restarts)."""
        return AutoscalingListener(
            self.objects.status.patch(arc(AL_PLURAL), listener.namespace, listener.name, patch)
        )

    def create_secret(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create the Secret ``body`` describes (``ConflictError`` when the name is taken)."""
        return self.objects.create(BUILTIN["secrets"], body)

    def patch_secret(self, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        """JSON merge patch on a Secret; a ``metadata.resourceVersion`` in it is a lock."""
        return self.patch_builtin("secrets", namespace, name, patch)

    def patch_builtin(
        self, plural: str, namespace: str, name: str, patch: dict[str, Any]
    ) -> dict[str, Any]:
        """JSON merge patch on an object of a built-in kind
        (``ersctl.kube.client.BUILTIN``); a ``metadata.resourceVersion`` in it is a lock."""
        return self.objects.patch(BUILTIN[plural], namespace, name, patch)

    def delete_secret(self, namespace: str, name: str) -> None:
        """Delete a Secret. NotFound is success."""
        self.objects.delete(BUILTIN["secrets"], namespace, name)
