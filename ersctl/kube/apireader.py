"""The uncached API reader: GET/LIST straight to the API server.

controller-runtime's ``APIReader``: use sparingly, every call is a request. The
reconcile contract uses it where a lagging cache would create runners nobody asked
for (the marker read of the scale-up guard, the re-reads before status writes).
"""

from __future__ import annotations

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
)
from ersctl.kube.calls import builtin_method, json_body, kube_call, server_of
from ersctl.kube.errors import NotFoundError


class ApiReader:
    """Implements ``ersctl.runnerset.ports.ApiReader``. Raises ``ersctl.kube.errors.KubeError``."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self._custom = client.CustomObjectsApi(api_client)
        self._server = server_of(api_client)
        self._core = client.CoreV1Api(api_client)
        self._rbac = client.RbacAuthorizationV1Api(api_client)

    def get_ers(self, namespace: str, name: str) -> EphemeralRunnerSet | None:
        """The live ERS, or None when it does not exist."""
        raw = self.get_object(ERS_PLURAL, namespace, name)
        return None if raw is None else EphemeralRunnerSet(raw)

    def get_runner(self, namespace: str, name: str) -> EphemeralRunner | None:
        """The live EphemeralRunner, or None when it does not exist."""
        raw = self.get_object(ER_PLURAL, namespace, name)
        return None if raw is None else EphemeralRunner(raw)

    def get_listener(self, namespace: str, name: str) -> AutoscalingListener | None:
        """The live AutoscalingListener, or None when it does not exist."""
        raw = self.get_object(AL_PLURAL, namespace, name)
        return None if raw is None else AutoscalingListener(raw)

    def list_ers(self, namespace: str | None = None) -> list[EphemeralRunnerSet]:
        """Every live ERS (of one namespace, or cluster-wide)."""
        return [EphemeralRunnerSet(item) for item in self._list(ERS_PLURAL, namespace)]

    def list_owned_runners(self, ers: EphemeralRunnerSet) -> list[EphemeralRunner]:
        """The live runners in ``ers.namespace`` controlled by ``ers`` (ownerReference uid)."""
        runners = []
        for runner in self.list_runners(ers.namespace):
            owner = runner.controller_owner()
            if owner is not None and owner.get("uid") == ers.uid:
                runners.append(runner)
        return runners

    def list_runners(self, namespace: str | None = None) -> list[EphemeralRunner]:
        """Every live EphemeralRunner (of one namespace, or cluster-wide)."""
        return [EphemeralRunner(item) for item in self._list(ER_PLURAL, namespace)]

    def get_object(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        """One of ARC's live custom objects (``plural``), or None when it does not exist."""
        action = f"get {plural}/{namespace}/{name}"
        try:
            with kube_call(action, server=self._server):
                resp = self._custom.get_namespaced_custom_object(
                    GROUP, VERSION, namespace, plural, name, _preload_content=False
                )
        except NotFoundError:
            return None
        return json_body(resp, action=action, server=self._server)

    def list_objects(self, plural: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """ARC's live custom objects of ``plural`` (of one namespace, or cluster-wide)."""
        return self._list(plural, namespace)

    def get_secret(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The live Secret as JSON (``data`` values base64-encoded), or None when absent."""
        return self.get_builtin("secrets", namespace, name)

    def get_configmap(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The live ConfigMap as JSON, or None when absent (a set's CA bundle: ConfigMaps
        are not watched, so a replaced CA is read at the next GitHub call)."""
        return self.get_builtin("configmaps", namespace, name)

    def get_builtin(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        """A live object of a built-in kind (``ersctl.kube.calls.BUILTIN_KINDS``:
        ``secrets``, ``serviceaccounts``, ``roles``...) as JSON, or None when absent."""
        action = f"get {plural}/{namespace}/{name}"
        try:
            with kube_call(action, server=self._server):
                read = builtin_method(self._core, self._rbac, "read", plural)
                resp = read(name, namespace, _preload_content=False)
        except NotFoundError:
            return None
        return json_body(resp, action=action, server=self._server)

    def _list(self, plural: str, namespace: str | None) -> list[dict[str, Any]]:
        with kube_call(f"list {plural}", server=self._server):
            if namespace is None:
                resp = self._custom.list_cluster_custom_object(
                    GROUP, VERSION, plural, _preload_content=False
                )
            else:
                resp = self._custom.list_namespaced_custom_object(
                    GROUP, VERSION, namespace, plural, _preload_content=False
                )
        items = json_body(resp, action=f"list {plural}", server=self._server).get("items") or []
        return [item for item in items if isinstance(item, dict)]
