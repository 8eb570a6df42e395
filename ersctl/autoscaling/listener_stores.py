"""Kubernetes-backed ports of the listener reconciler (``ersctl.autoscaling.listener_ports``).

AutoscalingListener reads are uncached GETs; the listener Pods are read from the
label-selected Pod informer the manager runs for ARC's running-listeners gauge; the
Secrets, ServiceAccounts, Roles and RoleBindings are read by name, uncached (none is
watched: a cluster-wide Secret watch would need ``list``/``watch`` on every Secret).
Every call runs inside ``ersctl.kube.calls.kube_call``: no client-library exception
leaves here. Secret documents are returned, never logged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes import client

from ersctl.api import AutoscalingListener
from ersctl.kube.apireader import ApiReader
from ersctl.kube.calls import builtin_method, json_body, kube_call, server_of
from ersctl.kube.copies import json_copy
from ersctl.kube.errors import ConflictError, NotFoundError, check_fence
from ersctl.kube.store import Store
from ersctl.kube.writer import Writer

Json = dict[str, Any]


class KubeListenerResources:
    """Implements ``ListenerStore`` and ``ObjectStore``. Thread-safe.

    ``pods`` is the listener Pod informer's store; ``fence`` is asked before every
    write (False raises ``NotLeaderError``).
    """

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        pods: Store,
        fence: Callable[[], bool] | None = None,
    ) -> None:
        self._reader = ApiReader(api_client)
        self._writer = Writer(api_client, fence=fence)
        self._core = client.CoreV1Api(api_client)
        self._rbac = client.RbacAuthorizationV1Api(api_client)
        self._server = server_of(api_client)
        self._pods = pods
        self._fence = fence

    # -- AutoscalingListeners ---------------------------------------------------------

    def get_listener(self, namespace: str, name: str) -> AutoscalingListener | None:
        return self._reader.get_listener(namespace, name)

    def patch_listener(self, listener: AutoscalingListener, patch: Json) -> AutoscalingListener:
        return self._writer.patch_listener(listener, patch)

    def patch_listener_status(
        self, listener: AutoscalingListener, patch: Json
    ) -> AutoscalingListener:
        return self._writer.patch_listener_status(listener, patch)

    # -- core and RBAC objects ------------------------------------------------------------

    def get_pod(self, namespace: str, name: str) -> Json | None:
        raw = self._pods.get(namespace, name)
        return None if raw is None else json_copy(raw)

    def get(self, plural: str, namespace: str, name: str) -> Json | None:
        return self._reader.get_builtin(plural, namespace, name)

    def create(self, plural: str, body: Json) -> Json:
        namespace = str(body["metadata"]["namespace"])
        action = f"create {plural}/{namespace}/{body['metadata']['name']}"
        check_fence(self._fence, action)
        with kube_call(action, server=self._server):
            # A dict body is sent as is: a Pod template may hold fields this client's
            # models do not know, which a model round trip would drop.
            resp = self._call("create", plural)(namespace, body, _preload_content=False)
        return json_body(resp, action=action, server=self._server)

    def patch(self, plural: str, namespace: str, name: str, patch: Json) -> Json:
        return self._writer.patch_builtin(plural, namespace, name, patch)

    def delete(self, plural: str, namespace: str, name: str, *, uid: str = "") -> None:
        action = f"delete {plural}/{namespace}/{name}"
        check_fence(self._fence, action)
        options = (
            client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=uid)) if uid else None
        )
        try:
            with kube_call(action, server=self._server):
                self._call("delete", plural)(name, namespace, body=options, _preload_content=False)
        except (NotFoundError, ConflictError):
            return  # gone, or already replaced by another object (the uid precondition)

    def _call(self, verb: str, plural: str) -> Callable[..., Any]:
        return builtin_method(self._core, self._rbac, verb, plural)
