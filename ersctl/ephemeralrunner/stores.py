"""Kubernetes-backed ports of the runner reconciler (``ersctl.ephemeralrunner.ports``).

EphemeralRunner writes go through the typed :class:`~ersctl.arcclient.writer.Writer`
(merge patches, the leader fence); reads of the runner, its Pod and its Secret are
uncached GETs. On the manager, runners and Pods are read from the informer caches
instead (``ersctl.ephemeralrunner.controller``); the Secret stays a GET (Secrets are not watched).
Every call is one of the generic client's (``ersctl.kube.client``), whose errors are
``ersctl.kube.errors.KubeError``.
Secret documents are returned to the caller, never logged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ersctl.api import EphemeralRunner
from ersctl.arcclient.reader import ApiReader
from ersctl.arcclient.writer import Writer
from ersctl.ephemeralrunner.pods import HOOK_LINK_LABEL
from ersctl.kube import client as kube
from ersctl.kube.client import BUILTIN, ApiClient, Preconditions
from ersctl.kube.errors import NotFoundError

PODS = BUILTIN["pods"]


class KubeRunnerResources:
    """Implements ``RunnerStore``, ``PodStore``, ``SecretStore`` and ``HookResources``. Thread-safe.

    ``fence`` is asked before every write; False raises ``NotLeaderError``.
    """

    def __init__(self, api_client: ApiClient, *, fence: Callable[[], bool] | None = None) -> None:
        self._api = ApiReader(kube.Reader(api_client))
        self._writer = Writer(kube.Writer(api_client, fence=fence))
        self._objects = self._writer.objects

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
        return self._api.objects.get(PODS, namespace, name)

    def create_pod(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._objects.create(PODS, body)

    def delete_pod(self, namespace: str, name: str, *, uid: str = "", force: bool = False) -> None:
        # A failed uid precondition: the Pod was already replaced by another one.
        self._objects.delete(
            PODS,
            namespace,
            name,
            preconditions=Preconditions(uid=uid) if uid else None,
            grace_period=0 if force else None,
        )

    def patch_pod(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        try:
            self._objects.patch(PODS, namespace, name, patch)
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
        """See ``ersctl.ephemeralrunner.ports.HookResources``. Uncached lists, on purpose: the
        hooks' Pods and Secrets are in no informer, and this runs once per deleted runner
        in container mode (then every 5 s while they terminate)."""
        selector = f"{HOOK_LINK_LABEL}={runner_name}"
        remaining = 0
        for resource in (PODS, BUILTIN["secrets"]):
            for item in self._api.objects.list(resource, namespace, label_selector=selector):
                remaining += 1
                metadata = item.get("metadata") or {}
                if metadata.get("deletionTimestamp"):
                    continue
                if not self._objects.delete(resource, namespace, str(metadata.get("name"))):
                    remaining -= 1
        return remaining
