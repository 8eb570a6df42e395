"""The uncached API reader of ARC's kinds: GET/LIST straight to the API server, through
the generic ``ersctl.kube.client.Reader``.

controller-runtime's ``APIReader``: use sparingly, every call is a request. The
reconcile contract uses it where a lagging cache would create runners nobody asked
for (the marker read of the scale-up guard, the re-reads before status writes).
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
)
from ersctl.arcclient.kinds import arc
from ersctl.kube import client as kube
from ersctl.kube.resources import BUILTIN


class ApiReader:
    """Implements ``ersctl.ephemeralrunnerset.ports.ApiReader`` over the generic
    :class:`ersctl.kube.client.Reader`. Raises ``ersctl.kube.errors.KubeError``."""

    def __init__(self, objects: kube.Reader) -> None:
        self.objects = objects

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
        return [EphemeralRunnerSet(item) for item in self.list_objects(ERS_PLURAL, namespace)]

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
        return [EphemeralRunner(item) for item in self.list_objects(ER_PLURAL, namespace)]

    def get_object(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        """One of ARC's live custom objects (``plural``), or None when it does not exist."""
        return self.objects.get(arc(plural), namespace, name)

    def list_objects(self, plural: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """ARC's live custom objects of ``plural`` (of one namespace, or cluster-wide)."""
        return self.objects.list(arc(plural), namespace)

    def get_secret(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The live Secret as JSON (``data`` values base64-encoded), or None when absent."""
        return self.get_builtin("secrets", namespace, name)

    def get_configmap(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The live ConfigMap as JSON, or None when absent (a set's CA bundle: ConfigMaps
        are not watched, so a replaced CA is read at the next GitHub call)."""
        return self.get_builtin("configmaps", namespace, name)

    def get_builtin(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        """A live object of a built-in kind (``ersctl.kube.resources.BUILTIN``:
        ``secrets``, ``serviceaccounts``, ``roles``...) as JSON, or None when absent."""
        return self.objects.get(BUILTIN[plural], namespace, name)
