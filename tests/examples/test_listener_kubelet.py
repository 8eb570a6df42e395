"""The simulation's kubelet for listener Pods runs the real ``ghalistener`` from a Pod
laid out as ARC's AutoscalingListener lays it out (``/ghalistener``,
``LISTENER_CONFIG_PATH`` on a Secret volume), against the test's Kubernetes API and
the GitHub simulator; it reports the process's end and stops it with its Pod."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from simulation.listeners import ConfigNotFound, ListenerKubelet, config_source

from ersctl.testing.podsim import kubelet_time
from ghalistener.testing.model import GitHubSimulator
from ghalistener.testing.server import SimulatorServer, serve
from tests.ersctl.ephemeralrunner.conftest import NO_SCHEDULER
from tests.ghalistener.arc_configs import pat_config_metrics_off
from tests.ghalistener.test_arc_config import ers_spec
from tests.ghalistener.test_cli_subprocess import create_ers
from tests.kubeapi import KubeApi
from tests.polling import eventually

pytestmark = pytest.mark.slow

CONFIG_DIR = "/etc/gha-listener"


def listener_pod(name: str, secret: str, **mount: Any) -> dict[str, Any]:
    """A listener Pod as ARC's AutoscalingListener controller builds it."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {"app.kubernetes.io/component": "runner-scale-set-listener"},
        },
        "spec": {
            "schedulerName": NO_SCHEDULER,
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "listener",
                    "image": "ghcr.io/actions/gha-runner-scale-set-controller:0.14.2",
                    "command": ["/ghalistener"],
                    "env": [{"name": "LISTENER_CONFIG_PATH", "value": f"{CONFIG_DIR}/config.json"}],
                    "volumeMounts": [
                        {"name": "listener-config", "mountPath": CONFIG_DIR, "readOnly": True}
                        | mount
                    ],
                }
            ],
            "volumes": [{"name": "listener-config", "secret": {"secretName": secret}}],
        },
    }


def config_secret(name: str, config: str) -> dict[str, Any]:
    encoded = base64.b64encode(config.encode()).decode()
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
            "data": {"config.json": encoded}}  # fmt: skip


@pytest.fixture
def github() -> Iterator[tuple[GitHubSimulator, SimulatorServer]]:
    simulator = GitHubSimulator(hold_seconds=30)
    simulator.create_scale_set(name="arc-runners")
    with serve(simulator, port=0) as server:
        yield simulator, server


@pytest.fixture
def kubelet(kube: KubeApi, tmp_path: Path) -> Iterator[ListenerKubelet]:
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    running = ListenerKubelet(
        kube, kubeconfig=kubeconfig, workdir=tmp_path / "pods", namespace=kube.namespace
    )
    try:
        yield running
    finally:
        running.close()


def create(kube: KubeApi, body: dict[str, Any]) -> None:
    body["metadata"]["namespace"] = kube.namespace
    kube.create_object("pods" if body["kind"] == "Pod" else "secrets", body)


def create_listener(kube: KubeApi, server: SimulatorServer) -> None:
    """A set, and a listener Pod "l" whose config (Secret "l-config") names it."""
    create_ers(kube)
    create(
        kube,
        config_secret("l-config", pat_config_metrics_off(f"{server.url}/octo", kube.namespace)),
    )
    create(kube, listener_pod("l", "l-config"))


def phase(kube: KubeApi, name: str) -> tuple[str | None, int | None]:
    pod = kube.get_object("pods", kube.namespace, name) or {}
    status = pod.get("status") or {}
    (container, *_) = status.get("containerStatuses") or [{}]
    code = ((container.get("state") or {}).get("terminated") or {}).get("exitCode")
    return status.get("phase"), code


def container_state(kube: KubeApi, name: str) -> dict[str, Any]:
    pod = kube.get_object("pods", kube.namespace, name) or {}
    (container, *_) = (pod.get("status") or {}).get("containerStatuses") or [{}]
    return dict(container.get("state") or {})


def test_a_listener_pod_runs_the_listener_that_scales_its_set_until_the_pod_goes(
    kube: KubeApi,
    kubelet: ListenerKubelet,
    github: tuple[GitHubSimulator, SimulatorServer],
) -> None:
    simulator, server = github
    create_listener(kube, server)

    kubelet.step()
    assert phase(kube, "l") == ("Running", None)
    eventually(lambda: simulator.state()["sessions"], what="the listener's session", timeout=20)
    simulator.enqueue_job(1)
    eventually(lambda: ers_spec(kube)["replicas"] == 1, what="the set scaled", timeout=20)

    kube.delete_object("pods", kube.namespace, "l")
    kubelet.step()

    eventually(lambda: not simulator.state()["sessions"], what="its session deleted", timeout=10)
    assert kubelet.started == ["l"]


def test_a_listener_that_exits_leaves_its_pod_failed_with_the_exit_code_and_is_not_rerun(
    kube: KubeApi, kubelet: ListenerKubelet, github: tuple[GitHubSimulator, SimulatorServer]
) -> None:
    _, server = github
    broken = pat_config_metrics_off(f"{server.url}/octo", kube.namespace).replace(
        '"max_runners"', '"max_runner"'
    )
    create(kube, config_secret("l-config", broken))
    create(kube, listener_pod("l", "l-config"))
    kubelet.step()

    def ended() -> bool:
        kubelet.step()
        return phase(kube, "l")[0] == "Failed"

    eventually(ended, what="the Pod failed", timeout=20)
    kubelet.step()
    assert phase(kube, "l") == ("Failed", 2), "a configuration error is exit 2"
    assert kubelet.started == ["l"], "restartPolicy Never: not started again"


def test_a_killed_listener_leaves_its_pod_failed_with_137_as_a_kubelet_reports_sigkill(
    kube: KubeApi, kubelet: ListenerKubelet, github: tuple[GitHubSimulator, SimulatorServer]
) -> None:
    _, server = github
    create_listener(kube, server)
    kubelet.step()
    running = container_state(kube, "l")["running"]
    # Kubelet times are whole seconds: let one pass, so a start time taken at the exit
    # would differ from the real one.
    eventually(lambda: kubelet_time() > running["startedAt"], what="the next second")

    assert kubelet.kill() == ["l"]
    kubelet.step()

    assert phase(kube, "l") == ("Failed", 137)
    # As a kubelet reports it: the listener controller resets its restart backoff for a
    # listener that ran long enough, which it reads from these times.
    terminated = container_state(kube, "l")["terminated"]
    assert terminated["reason"] == "Error"
    assert terminated["startedAt"] == running["startedAt"] <= terminated["finishedAt"]


def test_a_pod_without_a_resolvable_config_fails_as_a_container_that_cannot_start(
    kube: KubeApi, kubelet: ListenerKubelet
) -> None:
    create(kube, listener_pod("l", "missing-secret"))

    kubelet.step()

    assert phase(kube, "l") == ("Failed", 2)
    assert kubelet.started == []


def test_the_config_is_found_through_a_sub_path_mount_and_renamed_items() -> None:
    pod = listener_pod("l", "s", mountPath=f"{CONFIG_DIR}/config.json", subPath="listener.json")
    assert (config_source(pod).secret, config_source(pod).key) == ("s", "listener.json")
    renamed = listener_pod("l", "s")
    renamed["spec"]["volumes"][0]["secret"]["items"] = [{"key": "cfg", "path": "config.json"}]
    assert config_source(renamed).key == "cfg"
    elsewhere = listener_pod("l", "s", mountPath="/somewhere/else")
    with pytest.raises(ConfigNotFound, match="is on no Secret volume"):
        config_source(elsewhere)
