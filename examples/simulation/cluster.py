"""The Kubernetes side of the simulation: the objects it starts from, and the agent's view.

:func:`create_objects` makes what a platform team would apply by hand: a namespace, the
GitHub credentials Secret (key ``github_token``, as the controller reads it) and the
EphemeralRunnerSet at zero replicas; with the AutoscalingRunnerSet path, the namespace,
the Secret and :func:`ars_document` are all it applies. :class:`DirectCluster` is the runner agent's
access to the EphemeralRunners: in-process calls on the embedded API server, so the
agent's writes never appear in the request log that the report counts.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ersctl.api import (
    API_VERSION,
    ARS_KIND,
    ER_PLURAL,
    ERS_KIND,
    ERS_PLURAL,
    EphemeralRunner,
    ERPhase,
)
from ersctl.testing.apiserver import ApiServer, StatusError

NAMESPACE = "arc-runners"
ERS_NAME = "arc-runner-set"
SECRET_NAME = "github-credentials"  # noqa: S105 (a Secret's name, not a secret)
ARS_NAME = "arc-runner-set"


def runner_pod_spec() -> dict[str, Any]:
    """The runner Pod spec of the set (the simulation's agent plays what runs in it)."""
    return {
        "restartPolicy": "Never",
        "containers": [{"name": "runner", "image": "ghcr.io/actions/actions-runner:latest"}],
    }


def create_objects(api: ApiServer, *, config_url: str, token: str, scale_set_id: int) -> None:
    """The namespace, the credentials Secret and the EphemeralRunnerSet (0 replicas)."""
    create_credentials(api, token=token)
    api.create_object(ERS_PLURAL, ers_document(config_url=config_url, scale_set_id=scale_set_id))


def write_listener_config(
    path: Path,
    *,
    config_url: str,
    token: str,
    scale_set_id: int,
    min_runners: int,
    max_runners: int,
    **more: Any,
) -> Path:
    """The config of a listener started by hand for the set (the path without an
    AutoscalingRunnerSet), readable by its owner only (it holds the token)."""
    config = {
        "configure_url": config_url,
        "github_token": token,
        "ephemeral_runner_set_namespace": NAMESPACE,
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


def create_credentials(api: ApiServer, *, token: str) -> None:
    """The namespace and the GitHub credentials Secret in it."""
    api.create_object(
        "namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    )
    api.create_object(
        "secrets",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": SECRET_NAME, "namespace": NAMESPACE},
            "data": {"github_token": base64.b64encode(token.encode()).decode()},
        },
    )


def ars_document(
    *, config_url: str, scale_set_name: str, min_runners: int, max_runners: int
) -> dict[str, Any]:
    """The AutoscalingRunnerSet a platform team applies for one scale set: the
    controller registers the scale set and makes its runner set and listener."""
    return {
        "apiVersion": API_VERSION,
        "kind": ARS_KIND,
        "metadata": {"name": ARS_NAME, "namespace": NAMESPACE},
        "spec": {
            "githubConfigUrl": config_url,
            "githubConfigSecret": SECRET_NAME,
            "runnerScaleSetName": scale_set_name,
            "minRunners": min_runners,
            "maxRunners": max_runners,
            "template": {"spec": runner_pod_spec()},
        },
    }


def ers_document(*, config_url: str, scale_set_id: int) -> dict[str, Any]:
    """The EphemeralRunnerSet the listener and the controller work on."""
    return {
        "apiVersion": API_VERSION,
        "kind": ERS_KIND,
        "metadata": {
            "name": ERS_NAME,
            "namespace": NAMESPACE,
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
    """:class:`simulation.agent.Cluster` over the in-process API server.

    A runner that vanished between the listing and a write is not an error: the agent
    sees it gone on its next pass.
    """

    def __init__(self, api: ApiServer) -> None:
        self._api = api

    def runners(self) -> list[EphemeralRunner]:
        return [EphemeralRunner(obj) for obj in self._api.list_objects(ER_PLURAL, NAMESPACE)]

    def patch_status(self, name: str, status: Mapping[str, Any]) -> None:
        self._patch(name, {"status": dict(status)}, subresource="status")

    def release_finalizers(self, name: str) -> None:
        self._patch(name, {"metadata": {"finalizers": None}})

    def _patch(self, name: str, patch: dict[str, Any], *, subresource: str | None = None) -> None:
        with unless_gone():
            self._api.patch_object(ER_PLURAL, NAMESPACE, name, patch, subresource=subresource)


@contextmanager
def unless_gone() -> Iterator[None]:
    """A write to an object deleted meanwhile (404) is no error: there is nothing left
    to write to, and whoever wrote sees it gone on the next pass."""
    try:
        yield
    except StatusError as exc:
        if exc.code != 404:
            raise
