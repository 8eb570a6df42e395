"""The writer: creates, deletes and merge patches, straight to the API server.

EphemeralRunnerSets and EphemeralRunners, ARC's other custom objects by plural
(AutoscalingRunnerSets, AutoscalingListeners), the Secrets the controllers own (a
runner's JIT config, a set's proxy variables), and merge patches of the built-in kinds
by plural (the finalizers of what an ARS protected).

Every patch is a JSON merge patch with its content type named explicitly; status
writes go to the ``/status`` subresource. A ``metadata.resourceVersion`` inside a
patch body is the optimistic lock (409 -> ``ConflictError`` when stale).

The optional ``fence`` is asked before every write; when it answers False the write
raises ``NotLeaderError`` instead of reaching the server. The manager fences writes
with "do I still hold the leader lease?", so a reconcile that was mid-flight when the
lease was lost cannot write another thing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes import client

from ersctl.api import (
    AL_PLURAL,
    ER_PLURAL,
    ERS_PLURAL,
    GROUP,
    VERSION,
    AutoscalingListener,
    EphemeralRunner,
    EphemeralRunnerSet,
    complete_status_patch,
)
from ersctl.kube.calls import (
    MERGE_PATCH,
    builtin_method,
    custom_object_path,
    json_body,
    kube_call,
    merge_patch,
    server_of,
)
from ersctl.kube.errors import NotFoundError, check_fence


class Writer:
    """Implements ``ersctl.runnerset.ports.Writer``. Raises ``ersctl.kube.errors.KubeError``."""

    def __init__(
        self, api_client: client.ApiClient, *, fence: Callable[[], bool] | None = None
    ) -> None:
        self._custom = client.CustomObjectsApi(api_client)
        self._core = client.CoreV1Api(api_client)
        self._rbac = client.RbacAuthorizationV1Api(api_client)
        self._server = server_of(api_client)
        self._fence = fence

    def create_runner(self, body: dict[str, Any]) -> EphemeralRunner:
        """Create an EphemeralRunner in ``body.metadata.namespace`` (``generateName`` allowed)."""
        namespace = str((body.get("metadata") or {}).get("namespace") or "")
        if not namespace:
            raise ValueError("create_runner: body.metadata.namespace is required")
        action = f"create {ER_PLURAL} in {namespace}"
        check_fence(self._fence, action)
        with kube_call(action, server=self._server):
            resp = self._custom.create_namespaced_custom_object(
                GROUP, VERSION, namespace, ER_PLURAL, body, _preload_content=False
            )
        return EphemeralRunner(json_body(resp, action=action, server=self._server))

    def delete_runner(self, runner: EphemeralRunner) -> None:
        """Delete ``runner`` (its finalizers still hold it until removed). NotFound is success."""
        action = f"delete {ER_PLURAL}/{runner.key}"
        check_fence(self._fence, action)
        try:
            with kube_call(action, server=self._server):
                self._custom.delete_namespaced_custom_object(
                    GROUP, VERSION, runner.namespace, ER_PLURAL, runner.name
                )
        except NotFoundError:
            return

    def patch_ers(self, ers: EphemeralRunnerSet, patch: dict[str, Any]) -> EphemeralRunnerSet:
        """JSON merge patch on the ERS main resource (finalizers, spec)."""
        return EphemeralRunnerSet(self._patch(ERS_PLURAL, ers.namespace, ers.name, patch))

    def patch_ers_status(
        self, ers: EphemeralRunnerSet, patch: dict[str, Any]
    ) -> EphemeralRunnerSet:
        """JSON merge patch on the ERS ``/status`` subresource, completed with the status
        fields ARC's schema requires that ``ers`` lacks (``ersctl.api.complete_status_patch``):
        every status writer goes through here, so none can be refused for them."""
        completed = complete_status_patch(ers, patch)
        return EphemeralRunnerSet(
            self._patch(ERS_PLURAL, ers.namespace, ers.name, completed, status=True)
        )

    def patch_runner(self, runner: EphemeralRunner, patch: dict[str, Any]) -> EphemeralRunner:
        """JSON merge patch on an EphemeralRunner's main resource (finalizers)."""
        return EphemeralRunner(self._patch(ER_PLURAL, runner.namespace, runner.name, patch))

    def patch_runner_status(
        self, runner: EphemeralRunner, patch: dict[str, Any]
    ) -> EphemeralRunner:
        """JSON merge patch on an EphemeralRunner's ``/status`` subresource."""
        return EphemeralRunner(
            self._patch(ER_PLURAL, runner.namespace, runner.name, patch, status=True)
        )

    def create_object(self, plural: str, body: dict[str, Any]) -> dict[str, Any]:
        """Create one of ARC's custom objects (``plural``) from ``body``, in
        ``body.metadata.namespace`` (``generateName`` allowed)."""
        namespace = str((body.get("metadata") or {}).get("namespace") or "")
        if not namespace:
            raise ValueError(f"create {plural}: body.metadata.namespace is required")
        action = f"create {plural} in {namespace}"
        check_fence(self._fence, action)
        with kube_call(action, server=self._server):
            resp = self._custom.create_namespaced_custom_object(
                GROUP, VERSION, namespace, plural, body, _preload_content=False
            )
        return json_body(resp, action=action, server=self._server)

    def patch_object(
        self, plural: str, namespace: str, name: str, patch: dict[str, Any], *, status: bool = False
    ) -> dict[str, Any]:
        """JSON merge patch on one of ARC's custom objects (``status``: its ``/status``)."""
        return self._patch(plural, namespace, name, patch, status=status)

    def delete_object(self, plural: str, namespace: str, name: str) -> None:
        """Delete one of ARC's custom objects (its finalizers hold it until removed).
        NotFound is success."""
        action = f"delete {plural}/{namespace}/{name}"
        check_fence(self._fence, action)
        try:
            with kube_call(action, server=self._server):
                self._custom.delete_namespaced_custom_object(
                    GROUP, VERSION, namespace, plural, name, _preload_content=False
                )
        except NotFoundError:
            return

    def patch_listener(
        self, listener: AutoscalingListener, patch: dict[str, Any]
    ) -> AutoscalingListener:
        """JSON merge patch on an AutoscalingListener's main resource (its finalizer)."""
        return AutoscalingListener(self._patch(AL_PLURAL, listener.namespace, listener.name, patch))

    def patch_listener_status(
        self, listener: AutoscalingListener, patch: dict[str, Any]
    ) -> AutoscalingListener:
        """JSON merge patch on an AutoscalingListener's ``/status`` (its restarts)."""
        return AutoscalingListener(
            self._patch(AL_PLURAL, listener.namespace, listener.name, patch, status=True)
        )

    def create_secret(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create the Secret ``body`` describes (``ConflictError`` when the name is taken)."""
        namespace = body["metadata"]["namespace"]
        action = f"create secrets/{namespace}/{body['metadata']['name']}"
        check_fence(self._fence, action)
        with kube_call(action, server=self._server):
            resp = self._core.create_namespaced_secret(
                namespace,
                body,  # type: ignore[arg-type]
                _preload_content=False,
            )
        return json_body(resp, action=action, server=self._server)

    def patch_secret(self, namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        """JSON merge patch on a Secret; a ``metadata.resourceVersion`` in it is a lock."""
        return self.patch_builtin("secrets", namespace, name, patch)

    def patch_builtin(
        self, plural: str, namespace: str, name: str, patch: dict[str, Any]
    ) -> dict[str, Any]:
        """JSON merge patch on an object of a built-in kind
        (``ersctl.kube.calls.BUILTIN_KINDS``); a ``metadata.resourceVersion`` in it is a
        lock."""
        action = f"patch {plural}/{namespace}/{name}"
        check_fence(self._fence, action)
        with kube_call(action, server=self._server):
            resp = builtin_method(self._core, self._rbac, "patch", plural)(
                name, namespace, patch, _content_type=MERGE_PATCH, _preload_content=False
            )
        return json_body(resp, action=action, server=self._server)

    def delete_secret(self, namespace: str, name: str) -> None:
        """Delete a Secret. NotFound is success."""
        action = f"delete secrets/{namespace}/{name}"
        check_fence(self._fence, action)
        try:
            with kube_call(action, server=self._server):
                self._core.delete_namespaced_secret(name, namespace, _preload_content=False)
        except NotFoundError:
            return

    def _patch(
        self, plural: str, namespace: str, name: str, patch: dict[str, Any], *, status: bool = False
    ) -> dict[str, Any]:
        action = f"patch {plural}/{namespace}/{name}{'/status' if status else ''}"
        check_fence(self._fence, action)
        path = custom_object_path(
            GROUP, VERSION, namespace, plural, name, subresource="status" if status else ""
        )
        with kube_call(action, server=self._server):
            resp = merge_patch(self._custom.api_client, path, patch)
        return json_body(resp, action=action, server=self._server)
