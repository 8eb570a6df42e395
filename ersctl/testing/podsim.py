"""Simulated runner Pods: what a kubelet running the runner image would report.

For simulations and tests without a cluster (the end-to-end simulation's runner agent,
this package's tests). The runner controller reads only the Pod status fields
``ersctl.ephemeralrunner.phases`` names; :class:`RunnerPods` writes exactly those, through an
object store with the embedded API server's direct-access methods:

- :meth:`RunnerPods.start`: the runner process starts with the JIT config from the
  Pod's Secret (as ``ACTIONS_RUNNER_INPUT_JITCONFIG`` would hand it over), connects to
  the service (``connect``: JIT config -> runner id, e.g.
  ``GitHubSimulator.connect_runner``), and the Pod is Running and Ready;
- :meth:`RunnerPods.exit`: the runner container terminates with an exit code (0 after
  its job, 7 for a deprecated version, anything else for a failure), and the Pod phase
  follows as the kubelet sets it for ``restartPolicy: Never``.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from ersctl.ephemeralrunner.pods import ENV_JIT_CONFIG, RUNNER_CONTAINER

Json = dict[str, Any]


class ObjectStore(Protocol):
    """Direct object access, as ``ersctl.testing.apiserver.ApiServer`` provides it."""

    def get_object(self, resource: str, namespace: str, name: str) -> Json | None: ...

    def patch_object(
        self,
        resource: str,
        namespace: str,
        name: str,
        patch: Json,
        *,
        subresource: str | None = None,
    ) -> Json: ...


class PodNotStartable(Exception):
    """The Pod, its runner container or its JIT config Secret is missing."""


def kubelet_time() -> str:
    """Now, as a kubelet writes container times (RFC 3339, whole seconds, UTC)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def running_status(container: str = RUNNER_CONTAINER, *, started_at: str | None = None) -> Json:
    """A Pod whose (runner) ``container`` runs and is ready, since ``started_at`` (now),
    its Ready condition stamped with that time as a kubelet stamps it."""
    since = started_at or kubelet_time()
    return {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": since}],
        "containerStatuses": [
            {"name": container, "ready": True, "state": {"running": {"startedAt": since}}}
        ],
    }


def exited_status(
    exit_code: int, container: str = RUNNER_CONTAINER, *, started_at: str | None = None
) -> Json:
    """A Pod whose (runner) ``container`` exited with ``exit_code`` just now (restartPolicy
    Never), having started at ``started_at`` (also now when not given), with the reason
    and times a kubelet reports (the listener controller resets its restart backoff
    for a listener that ran long enough: without the times it never could)."""
    finished_at = kubelet_time()
    return {
        "phase": "Succeeded" if exit_code == 0 else "Failed",
        "conditions": [{"type": "Ready", "status": "False"}],
        "containerStatuses": [
            {
                "name": container,
                "ready": False,
                "state": {
                    "terminated": {
                        "exitCode": exit_code,
                        "reason": "Completed" if exit_code == 0 else "Error",
                        "startedAt": started_at or finished_at,
                        "finishedAt": finished_at,
                    }
                },
            }
        ],
    }


class RunnerPods:
    """Plays kubelet and runner binary for the runner Pods of one namespace."""

    def __init__(
        self, store: ObjectStore, *, namespace: str, connect: Callable[[str], Json]
    ) -> None:
        self._store = store
        self._namespace = namespace
        self._connect = connect

    def start(self, pod_name: str, *, started_at: str | None = None) -> int:
        """Start the runner of Pod ``pod_name``, running and ready since ``started_at``
        (now); returns the runner id it connected as."""
        jit = self.jit_config(pod_name)
        runner_id = int(self._connect(jit)["id"])
        self._set_status(pod_name, running_status(started_at=started_at))
        return runner_id

    def exit(self, pod_name: str, exit_code: int = 0) -> None:
        """The runner container of Pod ``pod_name`` ends with ``exit_code``."""
        self._set_status(pod_name, exited_status(exit_code))

    def jit_config(self, pod_name: str) -> str:
        """The JIT config the Pod's runner container receives through its env."""
        pod = self._store.get_object("pods", self._namespace, pod_name)
        if pod is None:
            raise PodNotStartable(f"pod {self._namespace}/{pod_name} does not exist")
        ref = _jit_secret_ref(pod)
        secret = self._store.get_object("secrets", self._namespace, ref["name"])
        encoded = ((secret or {}).get("data") or {}).get(ref["key"])
        if not encoded:
            raise PodNotStartable(f"secret {ref['name']} has no {ref['key']}")
        return base64.b64decode(encoded).decode("utf-8")

    def _set_status(self, pod_name: str, status: Json) -> None:
        self._store.patch_object(
            "pods", self._namespace, pod_name, {"status": status}, subresource="status"
        )


def _jit_secret_ref(pod: Json) -> Json:
    for container in (pod.get("spec") or {}).get("containers") or ():
        if container.get("name") != RUNNER_CONTAINER:
            continue
        for env in container.get("env") or ():
            if env.get("name") == ENV_JIT_CONFIG:
                ref = (env.get("valueFrom") or {}).get("secretKeyRef")
                if isinstance(ref, dict) and ref.get("name") and ref.get("key"):
                    return ref
    raise PodNotStartable(f"pod has no {ENV_JIT_CONFIG} from a Secret")
