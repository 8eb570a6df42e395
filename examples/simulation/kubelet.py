"""The local cluster's kubelet for the Pods a ReplicaSet owns (the controller Deployment's,
``examples/deploy``): each container runs as this checkout's program, as a kubelet runs
the image.

- A container whose command and arguments start with ``ersctl`` or ``ghalistener`` (the
  image's programs) runs as ``python -m ersctl|ghalistener`` with the rest of them, its
  environment's values and ``fieldRef``s (``metadata.name``, ``metadata.namespace``,
  ``status.podIP``, ``spec.nodeName``), and ``KUBECONFIG`` standing in for the Pod's
  service account. Any other container is reported waiting (``ImageNotRun``).
- Pod networking: every process runs on this host, so each ``containerPort`` a
  container declares is given a free port of 127.0.0.1 (:class:`PodPorts`), and an
  address its arguments tell it to listen on with all interfaces (``:8080``,
  ``--metrics-addr=0.0.0.0:8080``) at such a port becomes that one, as each Pod's own
  network would let it bind its port. The Pod reports ``podIP`` 127.0.0.1.
- The Pod turns Running; Ready when its readiness probe's ``httpGet`` answers 2xx or 3xx
  (tried every second until then, then every ``periodSeconds``), or at once without one.
  Liveness probes are not run.
- A process that exits is started again (``restartPolicy: Always``: 1, 2, 4 ... 30 s
  later, ``CrashLoopBackOff`` meanwhile, ``restartCount`` counted); a Pod deleted gets
  its processes SIGTERMed.

:class:`RunnerKubelets` plays the runner Pods of every namespace (``simulation.pods``),
and :func:`listener_config_on_host` gives a listener Pod's config the same port
mapping (``simulation.listeners`` runs those).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from ersctl.api import ER_PLURAL
from ersctl.testing.apiserver import StatusError
from ersctl.testing.podsim import RunnerPods, kubelet_time
from ersctl.testing.ports import unused_port
from simulation.agent import AgentTiming
from simulation.cluster import Kubernetes
from simulation.github_side import GitHubSide
from simulation.listeners import PodStore
from simulation.pods import PodAgent
from simulation.processes import Program

Json = dict[str, Any]
PROGRAMS = ("ersctl", "ghalistener")
NODE_NAME = "local"
POD_IP = "127.0.0.1"
_BACKOFF_MAX = 30.0


class PodPorts:
    """A Pod's declared ports, each given a free port of this host."""

    def __init__(self, declared: Iterable[int]) -> None:
        self.mapped = {int(port): unused_port() for port in declared}

    def address(self, text: str) -> str:
        """``text`` with an all-interfaces address of a declared port replaced by its
        mapped one (anything else unchanged)."""
        host, sep, port = text.rpartition(":")
        if not sep or host not in ("", "0.0.0.0") or not port.isdigit():
            return text
        mapped = self.mapped.get(int(port))
        return text if mapped is None else f"{POD_IP}:{mapped}"

    def arguments(self, args: list[str]) -> list[str]:
        out = []
        for arg in args:
            flag, sep, value = arg.partition("=")
            out.append(
                f"{flag}={self.address(value)}"
                if sep and flag.startswith("-")
                else self.address(arg)
            )
        return out


def declared_ports(container: Json) -> list[int]:
    return [int(p["containerPort"]) for p in container.get("ports") or () if p.get("containerPort")]


def listener_config_on_host(pod: Json, config: bytes) -> bytes:
    """A listener Pod's config with its ``metrics_addr`` mapped as the Pod's ports are."""
    doc = json.loads(config)
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    ports = PodPorts(declared_ports(containers[0]))
    if isinstance(doc, dict) and isinstance(doc.get("metrics_addr"), str):
        doc["metrics_addr"] = ports.address(doc["metrics_addr"])
    return json.dumps(doc).encode()


def _environment(pod: Json, container: Json) -> dict[str, str]:
    fields = {
        "metadata.name": pod["metadata"]["name"],
        "metadata.namespace": pod["metadata"]["namespace"],
        "status.podIP": POD_IP,
        "spec.nodeName": NODE_NAME,
    }
    env = {}
    for entry in container.get("env") or ():
        if "value" in entry:
            env[str(entry["name"])] = str(entry["value"])
        ref = ((entry.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
        if ref in fields:
            env[str(entry["name"])] = fields[ref]
    return env


@dataclass
class _Container:
    pod: str
    name: str
    image: str
    program: Program
    ports: PodPorts
    named_ports: dict[str, int]
    probe: Json | None
    started_at: str = field(default_factory=kubelet_time)
    ready: bool = False
    restarts: int = 0
    next_probe: float = 0.0
    restart_at: float | None = None
    last_exit: int | None = None


class ProgramKubelet:
    """Runs the first container of every Pod a ReplicaSet owns (all namespaces)."""

    def __init__(self, store: PodStore, *, kubeconfig: Path, workdir: Path) -> None:
        self._store = store
        self._kubeconfig = kubeconfig
        self._workdir = workdir
        self._running: dict[str, _Container] = {}
        workdir.mkdir(parents=True, exist_ok=True)

    def step(self) -> None:
        live: set[str] = set()
        for pod in self._store.list_objects("pods"):
            meta = pod["metadata"]
            owners = meta.get("ownerReferences") or ()
            if meta.get("deletionTimestamp") or not any(
                o.get("kind") == "ReplicaSet" for o in owners
            ):
                continue
            uid = str(meta["uid"])
            live.add(uid)
            container = self._running.get(uid)
            if container is None:
                self._start(uid, pod)
            else:
                self._tend(pod, container)
        for uid in [uid for uid in self._running if uid not in live]:
            self._running.pop(uid).program.stop()

    def close(self) -> None:
        while self._running:
            self._running.popitem()[1].program.stop()

    def _start(self, uid: str, pod: Json) -> None:
        container = ((pod.get("spec") or {}).get("containers") or [{}])[0]
        argv = [*(container.get("command") or ()), *(container.get("args") or ())]
        program = Path(str(argv[0])).name if argv else ""
        if program not in PROGRAMS:
            waiting = {
                "waiting": {
                    "reason": "ImageNotRun",
                    "message": f"the local cluster runs only {', '.join(PROGRAMS)}",
                }
            }
            self._report(
                pod,
                {
                    "phase": "Pending",
                    "containerStatuses": [
                        {
                            "name": container.get("name", ""),
                            "ready": False,
                            "restartCount": 0,
                            "state": waiting,
                        }
                    ],
                },
            )
            return
        ports = PodPorts(declared_ports(container))
        meta = pod["metadata"]
        running = _Container(
            pod=meta["name"],
            name=str(container["name"]),
            image=str(container.get("image") or ""),
            program=Program(
                name=f"pod {meta['namespace']}/{meta['name']}",
                args=[program, *ports.arguments([str(a) for a in argv[1:]])],
                log_path=self._workdir / f"{meta['namespace']}_{meta['name']}.log",
                env={**_environment(pod, container), "KUBECONFIG": str(self._kubeconfig)},
            ),
            ports=ports,
            named_ports={
                str(p["name"]): int(p["containerPort"])
                for p in container.get("ports") or ()
                if p.get("name") and p.get("containerPort")
            },
            probe=(container.get("readinessProbe") or None),
        )
        running.ready = running.probe is None
        running.program.start()
        self._running[uid] = running
        self._report(pod, self._status(running))

    def _tend(self, pod: Json, container: _Container) -> None:
        now = time.monotonic()
        if container.restart_at is not None:
            if now >= container.restart_at:
                container.restart_at, container.started_at = None, kubelet_time()
                container.ready = container.probe is None
                container.program.start()
                self._report(pod, self._status(container))
            return
        code = container.program.exit_code
        if code is not None:
            container.program.stop()
            container.restarts += 1
            container.last_exit, container.ready = code, False
            container.restart_at = now + min(_BACKOFF_MAX, 2.0 ** (container.restarts - 1))
            self._report(pod, self._status(container))
        elif not container.ready and now >= container.next_probe:
            container.next_probe = now + 1.0
            if self._probe(container):
                container.ready = True
                self._report(pod, self._status(container))

    def _probe(self, container: _Container) -> bool:
        action = (container.probe or {}).get("httpGet") or {}
        port = action.get("port")
        port = container.named_ports.get(port) if isinstance(port, str) else port
        mapped = container.ports.mapped.get(int(port)) if port is not None else None
        if mapped is None:
            return True  # nothing this kubelet can ask: take it as ready
        try:
            answer = httpx.get(f"http://{POD_IP}:{mapped}{action.get('path', '/')}", timeout=1.0)
        except httpx.HTTPError:
            return False
        return 200 <= answer.status_code < 400

    def _status(self, container: _Container) -> Json:
        state: Json = {"running": {"startedAt": container.started_at}}
        if container.restart_at is not None:
            state = {
                "waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": f"back-off restarting the failed container (exit code {container.last_exit})",
                }
            }
        ready = "True" if container.ready else "False"
        status: Json = {
            "phase": "Running",
            "podIP": POD_IP,
            "hostIP": POD_IP,
            "conditions": [
                {"type": "Ready", "status": ready},
                {"type": "ContainersReady", "status": ready},
            ],
            "containerStatuses": [
                {
                    "name": container.name,
                    "image": container.image,
                    "ready": container.ready,
                    "started": container.restart_at is None,
                    "restartCount": container.restarts,
                    "state": state,
                }
            ],
        }
        if container.last_exit is not None:
            status["containerStatuses"][0]["lastState"] = {
                "terminated": {"exitCode": container.last_exit}
            }
        return status

    def _report(self, pod: Json, status: Json) -> None:
        meta = pod["metadata"]
        self._store.patch_object(
            "pods", meta["namespace"], meta["name"], {"status": status}, subresource="status"
        )


class RunnerKubelets:
    """The runner Pods of every namespace with EphemeralRunners, each played by a
    ``simulation.pods.PodAgent`` against the GitHub simulator: a runner connects with
    its JIT config, takes a job and works on it ``job_seconds``, then exits 0."""

    def __init__(self, store: Kubernetes, github: GitHubSide, *, job_seconds: float) -> None:
        self._store = store
        self._github = github
        self._job_seconds = job_seconds
        self._agents: dict[str, PodAgent] = {}

    def step(self) -> None:
        try:
            runners = self._store.list_objects(ER_PLURAL)
        except StatusError as exc:
            if exc.code != 404:
                raise
            runners = []  # the CRDs are not installed yet
        for runner in runners:
            namespace = runner["metadata"]["namespace"]
            if namespace not in self._agents:
                self._agents[namespace] = self._agent(namespace)
        for agent in self._agents.values():
            agent.step()

    def _agent(self, namespace: str) -> PodAgent:
        duration: Callable[[str], float] = lambda _: self._job_seconds  # noqa: E731
        return PodAgent(
            api=self._store,
            pods=RunnerPods(self._store, namespace=namespace, connect=self._github.connect),
            service=self._github,
            timing=AgentTiming(),
            job_duration=duration,
            clock=time.time,
            namespace=namespace,
        )
