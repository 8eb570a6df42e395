"""Kubernetes-backed ports of the runner reconciler (``ersctl.runner.ports``).

EphemeralRunner writes go through the runtime's :class:`~ersctl.kube.writer.Writer`
(merge patches, the leader fence); reads of the runner, its Pod and its Secret are
uncached GETs. On the manager, runners and Pods are read from the informer caches
instead (``ersctl.runner.controller``); the Secret stays a GET (Secrets are not watched). Every call runs inside
``ersctl.kube.errors.kube_call``: ``kubernetes.client.ApiException`` never leaves here.
Secret documents are returned to the caller, never logged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from kubernetes import client

from ersctl.api import EphemeralRunner
from ersctl.kube.apireader import ApiReader
from ersctl.kube.calls import json_body, kube_call, merge_patch, server_of
from ersctl.kube.errors import ConflictError, NotFoundError, check_fence
from ersctl.kube.writer import Writer
from ersctl.runner.pods import HOOK_LINK_LABEL


class KubeRunnerResources:
    """Implements ``RunnerStore``, ``PodStore``, ``SecretStore`` and ``HookResources``. Thread-safe.

    ``fence`` is asked before every write; False raises ``NotLeaderError``.
    """

    def __init__(
        self, api_client: client.ApiClient, *, fence: Callable[[], bool] | None = None
    ) -> None:
        self._api_client = api_client
        self._core = client.CoreV1Api(api_client)
        self._server = server_of(api_client)
        self._api = ApiReader(api_client)
        self._writer = Writer(api_client, fence=fence)
        self._fence = fence

    # -- EphemeralRunners ---------------------------------------------------------------

    def get_runner(self, namespace: str, name: str) -> EphemeralRunner | None:
        return self._api.get_runner(namespace, name)

    def patch_runner(self, runner: EphemeralRunner, patch: dict[str, Any]) -> EphemeralRunner:
        return self._writer.patch_runner(runner, patch)

    def patch_runner_status(
        self, runner: EphemeralRunner, patch: dict[str, Any]
    ) -> EphemeralRunner:
        return self._writer.patch_runner_status(runner, patch)

    def delete_runner(self, runner: EphemeralRunner) -> None:
        self._writer.delete_runner(runner)

    # -- Pods -----------------------------------------------------------------------------

    def get_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        action = f"get pods/{namespace}/{name}"
        try:
            with kube_call(action, server=self._server):
                resp = self._core.read_namespaced_pod(name, namespace, _preload_content=False)
        except NotFoundError:
            return None
        return json_body(resp, action=action, server=self._server)

    def create_pod(self, body: dict[str, Any]) -> dict[str, Any]:
        namespace = body["metadata"]["namespace"]
        action = f"create pods/{namespace}/{body['metadata']['name']}"
        check_fence(self._fence, action)
        with kube_call(action, server=self._server):
            # A dict body is sent as is: the pod template may hold fields this client's
            # models do not know, which a V1Pod round trip would drop.
            resp = self._core.create_namespaced_pod(
                namespace,
                body,  # type: ignore[arg-type]
                _preload_content=False,
            )
        return json_body(resp, action=action, server=self._server)

    def delete_pod(self, namespace: str, name: str, *, uid: str = "", force: bool = False) -> None:
        action = f"{'force-' if force else ''}delete pods/{namespace}/{name}"
        check_fence(self._fence, action)
        options = None
        if uid or force:
            options = client.V1DeleteOptions(
                grace_period_seconds=0 if force else None,
                preconditions=client.V1Preconditions(uid=uid) if uid else None,
            )
        try:
            with kube_call(action, server=self._server):
                # Raw response: the client's models reject Pods some kubelets and emulators
                # write (e.g. container statuses without an image), and we need no body.
                self._core.delete_namespaced_pod(
                    name, namespace, body=options, _preload_content=False
                )
        except (NotFoundError, ConflictError):
            return  # gone, or already replaced by another Pod (the uid precondition)

    def patch_pod(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        action = f"patch pods/{namespace}/{name}"
        check_fence(self._fence, action)
        path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"
        try:
            with kube_call(action, server=self._server):
                merge_patch(self._api_client, path, patch)
        except NotFoundError:
            return  # gone meanwhile: nothing left to protect

    # -- Secrets --------------------------------------------------------------------------

    def get_secret(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._api.get_secret(namespace, name)

    def create_secret(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._writer.create_secret(body)

    def delete_secret(self, namespace: str, name: str) -> None:
        self._writer.delete_secret(namespace, name)

    # -- container hook resources ---------------------------------------------------

    def delete_linked(self, namespace: str, runner_name: str) -> int:
        """See ``ersctl.runner.ports.HookResources``. Uncached lists, on purpose: the
        hooks' Pods and Secrets are in no informer, and this runs once per deleted runner
        in container mode (then every 5 s while they terminate)."""
        selector = f"{HOOK_LINK_LABEL}={runner_name}"
        remaining = 0
        for kind, lister, deleter in (
            ("pods", self._core.list_namespaced_pod, self._core.delete_namespaced_pod),
            ("secrets", self._core.list_namespaced_secret, self._core.delete_namespaced_secret),
        ):
            action = f"list {kind} in {namespace} with {selector}"
            with kube_call(action, server=self._server):
                resp = lister(namespace, label_selector=selector, _preload_content=False)
            for item in json_body(resp, action=action, server=self._server).get("items") or ():
                remaining += 1
                metadata = item.get("metadata") or {}
                if metadata.get("deletionTimestamp"):
                    continue
                name = str(metadata.get("name"))
                action = f"delete {kind}/{namespace}/{name}"
                check_fence(self._fence, action)
                try:
                    with kube_call(action, server=self._server):
                        deleter(name, namespace, _preload_content=False)
                except NotFoundError:
                    remaining -= 1
        return remaining
