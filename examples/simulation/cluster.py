"""The Kubernetes side of the simulation: the API it runs on, the objects it starts
from, and the agent's view.

:class:`Kubernetes` is what the simulation uses of its API: the embedded server, or an
existing cluster behind a recording proxy (``simulation.remote``). :func:`create_objects`
makes what a platform team would apply by hand: a namespace, the GitHub credentials
Secret (key ``github_token``, as the controller reads it) and the EphemeralRunnerSet at
zero replicas; with the AutoscalingRunnerSet path, the namespace, the Secret and
:func:`ars_document` are all it applies. Its Pods name a scheduler that does not exist
(:data:`SIMULATED_SCHEDULER`), so on a cluster no node runs them: the simulation's
kubelets play them. :class:`DirectCluster` is the runner agent's access to the
EphemeralRunners: not through the programs' API address, so the agent's writes never
appear in the request log that the report counts.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

from ersctl.api import (
    API_VERSION,
    ARS_KIND,
    ER_PLURAL,
    ERS_KIND,
    ERS_PLURAL,
    EphemeralRunner,
    ERPhase,
)
from ersctl.testing.apiserver import RequestLog, StatusError
from ersctl.testing.apiserver.hooks import Fault

NAMESPACE = "arc-runners"
ERS_NAME = "arc-runner-set"
SECRET_NAME = "github-credentials"  # noqa: S105 (a Secret's name, not a secret)
ARS_NAME = "arc-runner-set"
SIMULATED_SCHEDULER = "gha-scaleset-simulation"
"""The scheduler the simulation's Pods name: none runs on a cluster, so they stay
unscheduled, for the simulation's kubelets alone to play."""


class Kubernetes(Protocol):
    """What the simulation uses of its Kubernetes API (``ApiServer`` has all of it):
    object access, the kubeconfig for the programs under test, the log of their
    requests, and faults injected into them."""

    @property
    def request_log(self) -> RequestLog: ...

    def write_kubeconfig(self, path: Path) -> Path: ...

    def get_object(self, resource: str, namespace: str, name: str) -> dict[str, Any] | None: ...

    def list_objects(
        self, resource: str, namespace: str | None = None, *, label_selector: str | None = None
    ) -> list[dict[str, Any]]: ...

    def create_object(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]: ...

    def patch_object(
        self,
        resource: str,
        namespace: str,
        name: str,
        patch: dict[str, Any],
        *,
        subresource: str | None = None,
    ) -> dict[str, Any]: ...

    def delete_object(self, resource: str, namespace: str, name: str) -> None: ...

    def inject_fault(
        self,
        *,
        verb: str | None = None,
        resource: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
        code: int = 500,
        times: int = 1,
        latency: float = 0.0,
    ) -> Fault: ...

    def drop_watches(self, resource: str | None = None) -> None: ...


def runner_pod_spec() -> dict[str, Any]:
    """The runner Pod spec of the set (the simulation's agent plays what runs in it)."""
    return {
        "restartPolicy": "Never",
        "schedulerName": SIMULATED_SCHEDULER,
        "containers": [{"name": "runner", "image": "ghcr.io/actions/actions-runner:latest"}],
    }


def create_objects(
    api: Kubernetes, *, config_url: str, token: str, scale_set_id: int, namespace: str = NAMESPACE
) -> None:
    """The namespace, the credentials Secret and the EphemeralRunnerSet (0 replicas)."""
    create_credentials(api, token=token, namespace=namespace)
    document = ers_document(config_url=config_url, scale_set_id=scale_set_id, namespace=namespace)
    api.create_object(ERS_PLURAL, document)


def write_listener_config(
    path: Path,
    *,
    config_url: str,
    token: str,
    scale_set_id: int,
    min_runners: int,
    max_runners: int,
    namespace: str = NAMESPACE,
    **more: Any,
) -> Path:
    """The config of a listener started by hand for the set (the path without an
    AutoscalingRunnerSet), readable by its owner only (it holds the token)."""
    config = {
        "configure_url": config_url,
        "github_token": token,
        "ephemeral_runner_set_namespace": namespace,
        "ephemeral_runner_set_name": ERS_NAME,
        "runner_scale_set_id": scale_set_id,
        "min_runners": min_runners,
        "max_runners": max_runners,
        "log_level": "info",
        "log_format": "text",
        **more,
    }
    path.write_text(json.dumps(config, indent=2))
    path.chmod(0o600)
    return path


def create_credentials(api: Kubernetes, *, token: str, namespace: str = NAMESPACE) -> None:
    """The namespace and the GitHub credentials Secret in it."""
    api.create_object(
        "namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    )
    api.create_object(
        "secrets",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": SECRET_NAME, "namespace": namespace},
            "data": {"github_token": base64.b64encode(token.encode()).decode()},
        },
    )


def ars_document(
    *,
    config_url: str,
    scale_set_name: str,
    min_runners: int,
    max_runners: int,
    namespace: str = NAMESPACE,
) -> dict[str, Any]:
    """The AutoscalingRunnerSet a platform team applies for one scale set: the
    controller registers the scale set and makes its runner set and listener."""
    listener = {"schedulerName": SIMULATED_SCHEDULER, "containers": [{"name": "listener"}]}
    return {
        "apiVersion": API_VERSION,
        "kind": ARS_KIND,
        "metadata": {"name": ARS_NAME, "namespace": namespace},
        "spec": {
            "githubConfigUrl": config_url,
            "githubConfigSecret": SECRET_NAME,
            "runnerScaleSetName": scale_set_name,
            "minRunners": min_runners,
            "maxRunners": max_runners,
            "template": {"spec": runner_pod_spec()},
            "listenerTemplate": {"spec": listener},
        },
    }


def ers_document(
    *, config_url: str, scale_set_id: int, namespace: str = NAMESPACE
) -> dict[str, Any]:
    """The EphemeralRunnerSet the listener and the controller work on."""
    return {
        "apiVersion": API_VERSION,
        "kind": ERS_KIND,
        "metadata": {
            "name": ERS_NAME,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/name": ERS_NAME},
        },
        "spec": {
            "replicas": 0,
            "patchID": 0,
            "ephemeralRunnerSpec": {
                "githubConfigUrl": config_url,
                "githubConfigSecret": SECRET_NAME,
                "runnerScaleSetId": scale_set_id,
                "spec": runner_pod_spec(),
            },
        },
    }


def bucket(runner: EphemeralRunner) -> str:
    """The timeline's bucket of a runner: deleting, running (has a job), finished, pending."""
    if runner.is_deleting:
        return "deleting"
    if runner.phase == ERPhase.RUNNING:
        return "running"
    if runner.is_done:
        return "finished"
    return "pending"


class DirectCluster:
    """:class:`simulation.agent.Cluster` over the simulation's own API access.

    A runner that vanished between the listing and a write is not an error: the agent
    sees it gone on its next pass.
    """

    def __init__(self, api: Kubernetes, namespace: str = NAMESPACE) -> None:
        self._api = api
        self._namespace = namespace

    def runners(self) -> list[EphemeralRunner]:
        listed = self._api.list_objects(ER_PLURAL, self._namespace)
        return [EphemeralRunner(obj) for obj in listed]

    def patch_status(self, name: str, status: Mapping[str, Any]) -> None:
        self._patch(name, {"status": dict(status)}, subresource="status")

    def release_finalizers(self, name: str) -> None:
        self._patch(name, {"metadata": {"finalizers": None}})

    def _patch(self, name: str, patch: dict[str, Any], *, subresource: str | None = None) -> None:
        with unless_gone():
            self._api.patch_object(ER_PLURAL, self._namespace, name, patch, subresource=subresource)


@contextmanager
def unless_gone() -> Iterator[None]:
    """A write to an object deleted meanwhile (404) is no error: there is nothing left
    to write to, and whoever wrote sees it gone on the next pass."""
    try:
        yield
    except StatusError as exc:
        if exc.code != 404:
            raise
