"""The kubelet for listener Pods: runs the real ``ghalistener`` of each listener Pod.

A listener Pod (labelled as ARC's AutoscalingListener labels it,
``ersctl.ephemeralrunnerset.metrics.LISTENER_SELECTOR``) names its configuration as ARC's does:
``LISTENER_CONFIG_PATH`` in its container's environment, a file of a Secret volume
mounted at that path's directory (or, with ``subPath``, at the path itself).
:class:`ListenerKubelet` does for such Pods what a kubelet and the image would:

1. a new Pod: the Secret's file is written to a work directory, and
   ``python -m ghalistener`` (the image's ``/ghalistener``) starts with the container's
   plain environment, ``LISTENER_CONFIG_PATH`` pointing at that file and ``KUBECONFIG``
   standing in for the Pod's service account; the Pod turns Running and Ready;
2. the process ends on its own (or is killed, :meth:`ListenerKubelet.kill`): the Pod
   turns Succeeded or Failed with its exit code, 128 + the signal for a killed one as a
   kubelet reports it (``restartPolicy: Never``: recreating it is its controller's
   business);
3. the Pod deleted: the process gets SIGTERM, as a kubelet stops a container.

A Pod whose configuration cannot be resolved (no such variable, volume or Secret key)
is reported Failed with exit code 2 and a message, as a container that cannot start.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from ersctl.ephemeralrunnerset.metrics import LISTENER_SELECTOR
from ersctl.testing.podsim import ObjectStore, exited_status, kubelet_time, running_status
from ghalistener.config import CONFIG_PATH_ENV
from simulation.processes import Program

Json = dict[str, Any]
_CANNOT_START = 2


class PodStore(ObjectStore, Protocol):
    """Object access, as ``ApiServer`` or the tests' ``KubeApi`` provide it, with lists."""

    def list_objects(
        self, resource: str, namespace: str | None = None, *, label_selector: str | None = None
    ) -> list[Json]: ...


class ConfigNotFound(Exception):
    """The Pod does not name a listener configuration this kubelet can find."""


@dataclass(frozen=True)
class ConfigSource:
    """Where a listener Pod's configuration file comes from."""

    container: str
    secret: str
    key: str
    environment: dict[str, str]


def config_source(pod: Json) -> ConfigSource:
    """The container, Secret and key that ``LISTENER_CONFIG_PATH`` of ``pod`` resolves to."""
    spec = pod.get("spec") or {}
    volumes = {v.get("name"): v for v in spec.get("volumes") or ()}
    for container in spec.get("containers") or ():
        environment = {
            str(e["name"]): str(e["value"])
            for e in container.get("env") or ()
            if e.get("name") and "value" in e
        }
        path = environment.get(CONFIG_PATH_ENV)
        if not path:
            continue
        for mount in container.get("volumeMounts") or ():
            key = _key_under(mount, PurePosixPath(path))
            secret = (volumes.get(mount.get("name")) or {}).get("secret") or {}
            if key is not None and secret.get("secretName"):
                key = _item_key(secret, key)
                return ConfigSource(container["name"], secret["secretName"], key, environment)
        raise ConfigNotFound(f"{CONFIG_PATH_ENV}={path} is on no Secret volume of the Pod")
    raise ConfigNotFound(f"no container of the Pod sets {CONFIG_PATH_ENV}")


def _key_under(mount: Json, path: PurePosixPath) -> str | None:
    mounted = PurePosixPath(str(mount.get("mountPath") or "/"))
    if mount.get("subPath"):
        return str(mount["subPath"]) if mounted == path else None
    return str(path.relative_to(mounted)) if path.is_relative_to(mounted) else None


def _item_key(secret: Json, file_name: str) -> str:
    """The Secret key behind ``file_name`` (a volume's ``items`` may rename keys)."""
    for item in secret.get("items") or ():
        if item.get("path") == file_name:
            return str(item["key"])
    return file_name


@dataclass
class _Listener:
    name: str
    container: str
    program: Program
    started_at: str


class ListenerKubelet:
    """Runs the listener of every listener Pod in ``namespace`` (all when None)."""

    def __init__(
        self,
        store: PodStore,
        *,
        kubeconfig: Path,
        workdir: Path,
        namespace: str | None = None,
        on_host: Callable[[Json, bytes], bytes] | None = None,
    ) -> None:
        """``on_host``: what running on this host changes in a Pod's config (the local
        cluster's port mapping, ``simulation.kubelet.listener_config_on_host``)."""
        self._store = store
        self._on_host = on_host
        self._kubeconfig = kubeconfig
        self._workdir = workdir
        self._namespace = namespace
        self._running: dict[str, _Listener] = {}
        self.started: list[str] = []
        """Pod names in the order their listeners started (restarts repeat a name)."""

    def step(self) -> None:
        """Start, report and stop listeners to match the Pods now."""
        live: dict[str, Json] = {}
        # The listener Pods alone, not a copy of every runner Pod 20 times a second.
        for pod in self._store.list_objects(
            "pods", self._namespace, label_selector=LISTENER_SELECTOR
        ):
            meta = pod.get("metadata") or {}
            uid = str(meta.get("uid"))
            live[uid] = pod
            listener = self._running.get(uid)
            if meta.get("deletionTimestamp"):
                continue
            if listener is None:
                phase = (pod.get("status") or {}).get("phase")
                if phase not in ("Succeeded", "Failed"):
                    self._start(uid, pod)
            elif listener.program.exit_code is not None:
                code = listener.program.exit_code
                code = code if code >= 0 else 128 - code  # killed by a signal: 128 + its number
                listener.program.stop()
                del self._running[uid]
                self._report(
                    pod, exited_status(code, listener.container, started_at=listener.started_at)
                )
        for uid in [uid for uid in self._running if _gone(live.get(uid))]:
            self._running.pop(uid).program.stop()

    def running(self) -> list[str]:
        """Names of the Pods whose listener runs now."""
        return [
            listener.name
            for listener in self._running.values()
            if listener.program.exit_code is None
        ]

    def kill(self) -> list[str]:
        """SIGKILL every listener this kubelet runs (a crash, an OOM kill); returns the
        names of their Pods, which the next :meth:`step` reports exited."""
        for listener in self._running.values():
            listener.program.kill()
        return [listener.name for listener in self._running.values()]

    def close(self) -> None:
        """Stop every listener this kubelet started."""
        while self._running:
            self._running.popitem()[1].program.stop()

    def _start(self, uid: str, pod: Json) -> None:
        meta = pod["metadata"]
        try:
            source = config_source(pod)
            secret = self._store.get_object("secrets", meta["namespace"], source.secret)
            encoded = ((secret or {}).get("data") or {}).get(source.key)
            if not encoded:
                raise ConfigNotFound(f"Secret {source.secret} has no key {source.key!r}")
        except ConfigNotFound as exc:
            containers = (pod.get("spec") or {}).get("containers") or [{}]
            status = exited_status(_CANNOT_START, str(containers[0].get("name") or ""))
            status["message"] = str(exc)
            self._report(pod, status)
            return
        directory = self._workdir / meta["namespace"] / meta["name"]
        directory.mkdir(parents=True, exist_ok=True)
        config = directory / PurePosixPath(source.key).name
        data = base64.b64decode(encoded)
        config.write_bytes(data if self._on_host is None else self._on_host(pod, data))
        environment = {
            **source.environment,
            CONFIG_PATH_ENV: str(config),
            "KUBECONFIG": str(self._kubeconfig),
        }
        program = Program(
            name=f"listener {meta['name']}",
            args=["ghalistener"],
            log_path=self._workdir / f"{meta['name']}.log",
            env=environment,
        )
        program.start()
        started_at = kubelet_time()
        self._running[uid] = _Listener(meta["name"], source.container, program, started_at)
        self.started.append(meta["name"])
        self._report(pod, running_status(source.container, started_at=started_at))

    def _report(self, pod: Json, status: Json) -> None:
        meta = pod["metadata"]
        self._store.patch_object(
            "pods", meta["namespace"], meta["name"], {"status": status}, subresource="status"
        )


def _gone(pod: Json | None) -> bool:
    return pod is None or bool((pod.get("metadata") or {}).get("deletionTimestamp"))
