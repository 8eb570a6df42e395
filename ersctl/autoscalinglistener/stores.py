"""Kubernetes-backed ports of the listener reconciler (``ersctl.autoscalinglistener.ports``).

AutoscalingListener reads are uncached GETs; the listener Pods are read from the
label-selected Pod informer the manager runs for ARC's running-listeners gauge; the
Secrets, ServiceAccounts, Roles and RoleBindings are read by name, uncached (none is
watched: a cluster-wide Secret watch would need ``list``/``watch`` on every Secret).
Every call is one of the generic client's (``ersctl.kube.client``): no client-library
exception leaves here. Secret documents are returned, never logged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ersctl.api import AutoscalingListener
from ersctl.arcclient.reader import ApiReader
from ersctl.arcclient.writer import Writer
from ersctl.kube import client as kube
from ersctl.kube.client import BUILTIN, ApiClient, Preconditions
from ersctl.kube.copies import json_copy
from ersctl.kube.store import Store

Json = dict[str, Any]


class KubeListenerResources:
    """Implements ``ListenerStore`` and ``ObjectStore``. Thread-safe.

    ``pods`` is the listener Pod informer's store; ``fence`` is asked before every
    write (False raises ``NotLeaderError``).
    """

    def __init__(
        self,
        api_client: ApiClient,
        *,
        pods: Store,
        fence: Callable[[], bool] | None = None,
    ) -> None:
        self._reader = ApiReader(kube.Reader(api_client))
        self._writer = Writer(kube.Writer(api_client, fence=fence))
        self._pods = pods

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
        return self._writer.objects.create(BUILTIN[plural], body)

    def patch(self, plural: str, namespace: str, name: str, patch: Json) -> Json:
        return self._writer.patch_builtin(plural, namespace, name, patch)

    def delete(self, plural: str, namespace: str, name: str, *, uid: str = "") -> None:
        # A failed uid precondition: already replaced by another object.
        preconditions = Preconditions(uid=uid) if uid else None
        self._writer.objects.delete(BUILTIN[plural], namespace, name, preconditions=preconditions)
