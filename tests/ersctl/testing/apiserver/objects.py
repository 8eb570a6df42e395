"""Object builders and a small facade over the official client for the API server's
own tests (EphemeralRunnerSets and EphemeralRunners in the test's namespace, over
HTTP). Bodies leave the namespace out: the request's URL names it."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from ersctl import api
from tests.kubeclient import json_object

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


# The smallest runner spec the CRD accepts (ARC's schema requires these three).
RUNNER_SPEC: dict[str, Any] = {
    "githubConfigUrl": "https://github.com/octo-org",
    "githubConfigSecret": "github-config",
    "runnerScaleSetId": 1,
}
# A status write must keep ARC's required count (an empty set has none).
RUNNING: dict[str, Any] = {"phase": "Running", "currentReplicas": 0}


def ers_body(name: str, *, replicas: int = 1, **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": api.API_VERSION,
        "kind": api.ERS_KIND,
        "metadata": {"name": name, **metadata},
        "spec": {"replicas": replicas, "patchID": 0},
    }


def er_body(owner: dict[str, Any] | None = None, **metadata: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {**metadata}
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": api.API_VERSION,
                "kind": api.ERS_KIND,
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    meta.setdefault("generateName", "runner-")
    return {
        "apiVersion": api.API_VERSION,
        "kind": api.ER_KIND,
        "metadata": meta,
        "spec": dict(RUNNER_SPEC),
    }


class Objects:
    """Shorthand for the custom-object calls on EphemeralRunnerSets/Runners in one
    namespace, all over HTTP through the official client."""

    def __init__(self, custom: client.CustomObjectsApi, plural: str, namespace: str) -> None:
        self._custom = custom
        self.plural = plural
        self.namespace = namespace

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        return json_object(
            self._custom.create_namespaced_custom_object(
                api.GROUP, api.VERSION, self.namespace, self.plural, body
            )
        )

    def get(self, name: str) -> dict[str, Any]:
        return json_object(
            self._custom.get_namespaced_custom_object(
                api.GROUP, api.VERSION, self.namespace, self.plural, name
            )
        )

    def list_call(self, **kwargs: Any) -> object:
        """The list call itself, for ``kubernetes.watch.Watch.stream``."""
        return self._custom.list_namespaced_custom_object(
            api.GROUP, api.VERSION, self.namespace, self.plural, **kwargs
        )

    def list(self, **kwargs: Any) -> dict[str, Any]:
        return json_object(
            self._custom.list_namespaced_custom_object(
                api.GROUP, api.VERSION, self.namespace, self.plural, **kwargs
            )
        )

    def patch(
        self, name: str, patch: Any, *, content_type: str = MERGE, status: bool = False
    ) -> dict[str, Any]:
        call = (
            self._custom.patch_namespaced_custom_object_status
            if status
            else self._custom.patch_namespaced_custom_object
        )
        return json_object(
            call(
                api.GROUP,
                api.VERSION,
                self.namespace,
                self.plural,
                name,
                patch,
                _content_type=content_type,
            )
        )

    def replace(self, name: str, body: dict[str, Any], *, status: bool = False) -> dict[str, Any]:
        call = (
            self._custom.replace_namespaced_custom_object_status
            if status
            else self._custom.replace_namespaced_custom_object
        )
        return json_object(call(api.GROUP, api.VERSION, self.namespace, self.plural, name, body))

    def delete(self, name: str, **kwargs: Any) -> dict[str, Any]:
        return json_object(
            self._custom.delete_namespaced_custom_object(
                api.GROUP, api.VERSION, self.namespace, self.plural, name, **kwargs
            )
        )
