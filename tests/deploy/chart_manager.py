"""ARC's controller Helm chart (``arc_chart/``) in the embedded API server, and our
image's ``/manager`` run exactly as the chart's Deployment says once its image is ours.

- :func:`install_chart`: the chart's objects (ServiceAccount, ClusterRole and binding,
  listener Role and binding, Deployment), ARC's CRDs of the line, the controller's and
  the runners' namespaces.
- :func:`switched`: the Deployment with its container image replaced and nothing else
  (``CONTROLLER_MANAGER_CONTAINER_IMAGE`` still names ARC's image: ``kubectl set image``
  or a patch of the Deployment changes only the container's image).
- :func:`chart_manager`: ``/manager`` from the image's filesystem (the wheel's console
  scripts and the Dockerfile's links) with that container's command, args and
  environment (the namespace field reference resolved, a kubeconfig standing in for
  the Pod's service account), on the chart's probe port; stopped with SIGTERM, as a
  kubelet stops a container.
"""

from __future__ import annotations

import copy
import fcntl
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

import yaml

from ersctl.crds import load_crds
from ersctl.testing.apiserver import ApiServer
from tests.conftest import ROOT
from tests.deploy.image import image_root, run_isolated
from tests.ersctl.crds.arc import arc_crds

CHART: Final = Path(__file__).with_name("arc_chart")
CONTROLLER_NS: Final = "arc-systems"
RUNNERS_NS: Final = "arc-runners"
SERVICE_ACCOUNT: Final = "arc-gha-rs-controller"
OUR_IMAGE: Final = "registry.example.com/gha-scaleset:0.1.0"
WAIT: Final = 60.0
DEGRADED: Final = {("customresourcedefinitions", "get"), ("events", "create")}
"""(resource, verb) of what ARC's chart does not grant the controller and ersctl does
without, saying so once."""
PLURALS: Final = {
    "ServiceAccount": "serviceaccounts",
    "ClusterRole": "clusterroles",
    "ClusterRoleBinding": "clusterrolebindings",
    "Role": "roles",
    "RoleBinding": "rolebindings",
    "Deployment": "deployments",
}


def arc_image(version: str) -> str:
    """The controller image ARC's chart of ``version`` runs (and names as the listener's)."""
    return f"ghcr.io/actions/gha-runner-scale-set-controller:{version}"


def chart(version: str) -> list[dict[str, Any]]:
    text = (CHART / f"controller-{version}.yaml").read_text(encoding="utf-8")
    return [doc for doc in yaml.safe_load_all(text) if doc]


def deployment(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (found,) = [d for d in docs if d["kind"] == "Deployment"]
    return found


def manager_container(deployment: dict[str, Any]) -> dict[str, Any]:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["name"] == "manager"
    return dict(container)


def switched(deployment: dict[str, Any], image: str = OUR_IMAGE) -> dict[str, Any]:
    """``deployment`` with its one container's image set to ``image``, nothing else."""
    changed = copy.deepcopy(deployment)
    (container,) = changed["spec"]["template"]["spec"]["containers"]
    container["image"] = image
    return changed


def pod_env(container: dict[str, Any], namespace: str) -> dict[str, str]:
    """The container's environment as the kubelet gives it (field references to the
    Pod's namespace resolved)."""
    env = {}
    for var in container["env"]:
        if "value" in var:
            env[var["name"]] = var["value"]
        else:
            assert var["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
            env[var["name"]] = namespace
    return env


def install_chart(server: ApiServer, version: str, *, crds: str = "switch") -> list[dict[str, Any]]:
    """The chart's objects, the two namespaces and CRDs: ``crds="switch"`` those of the
    switch (ours over ARC 0.14's, whose CRDs would prune the guard's fields: README;
    ARC 0.15.1's own), ``crds="arc"`` ARC's own of the line (0.14's then need ours
    applied before ``/manager`` starts: ``tests.kubeapi.install_crds``)."""
    docs = chart(version)
    line = version.rpartition(".")[0]
    ours = crds == "switch" and line == "0.14"
    for crd in load_crds() if ours else arc_crds(line, autoscaling=True):
        server.create_object("customresourcedefinitions", crd)
    for namespace in (CONTROLLER_NS, RUNNERS_NS):
        server.create_object("namespaces", {"metadata": {"name": namespace}})
    for doc in docs:
        server.create_object(PLURALS[doc["kind"]], doc)
    return docs


@contextmanager
def the_probe_port() -> Iterator[None]:
    """Hold the chart's probe port (8081, on every address: the args name none) for one
    manager at a time on this machine, whichever worker or checkout runs it."""
    with (Path(tempfile.gettempdir()) / "gha-scaleset-arc-chart-8081.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@dataclass
class ManagerRun:
    """One ``/manager`` process; :meth:`stop` ends it and reads its log."""

    container: dict[str, Any]
    process: subprocess.Popen[str]
    log: IO[str]
    code: int | None = None
    output: str = ""

    def stop(self) -> int:
        """SIGTERM, as a kubelet stops the container; the exit code."""
        if self.code is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.code = self.process.wait(timeout=WAIT)
            except subprocess.TimeoutExpired:
                # One that ignores SIGTERM would keep the probe port from the next chart
                # test (one held it for 40 minutes): kill it, then fail this test.
                self.process.kill()
                self.process.wait()
                raise
            self.log.seek(0)
            self.output = self.log.read()
        return self.code


@contextmanager
def chart_manager(
    server: ApiServer, deployment: dict[str, Any], *, unpacked: Path, workdir: Path
) -> Iterator[ManagerRun]:
    """Run ``deployment``'s ``/manager`` (see the module docstring) until the block
    ends (or :meth:`ManagerRun.stop`)."""
    container = manager_container(deployment)
    (command,) = container["command"]
    workdir.mkdir(parents=True)
    links = image_root(unpacked, workdir / "root", ROOT / "Dockerfile")
    env = pod_env(container, CONTROLLER_NS)
    env["KUBECONFIG"] = str(server.write_kubeconfig(workdir / "kubeconfig"))
    with the_probe_port(), (workdir / "manager.log").open("w+") as log:
        process = run_isolated(
            unpacked, workdir, str(links[command]), *container["args"], env=env, stderr=log
        )
        run = ManagerRun(container, process, log)
        try:
            yield run
        finally:
            run.stop()
