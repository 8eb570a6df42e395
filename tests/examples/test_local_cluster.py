"""The local cluster's parts (``examples/local_cluster.py``): the Deployment and
ReplicaSet controllers against the embedded server, and the kubelet's Pod networking
(declared ports mapped to free ones of this host). The whole of it, with kubectl, is
tests/deploy/test_readme_local.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from simulation.kubelet import PodPorts, listener_config_on_host
from simulation.workloads import HASH_LABEL, Workloads

from ersctl.testing.apiserver import ApiServer


def _deployment(replicas: int, image: str = "gha-scaleset:0.1.0") -> dict[str, Any]:
    labels = {"app": "ersctl"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "ersctl", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "ersctl", "image": image}]},
            },
        },
    }


def _ready(server: ApiServer, pod: dict[str, Any]) -> None:
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    server.patch_object(
        "pods", "default", pod["metadata"]["name"], {"status": status}, subresource="status"
    )


@pytest.mark.embedded_only("reads and writes through the embedded server's direct access")
def test_a_deployment_gets_a_replica_set_and_its_pods_and_reports_them_rolled_out() -> None:
    with ApiServer() as server:
        server.create_object("deployments", _deployment(replicas=2))
        workloads = Workloads(server)

        workloads.step()
        pods = server.list_objects("pods", "default")
        for pod in pods:
            _ready(server, pod)
        workloads.step()

        (replica_set,) = server.list_objects("replicasets", "default")
        deployment = server.get_object("deployments", "default", "ersctl")

    assert replica_set["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    digest = replica_set["metadata"]["labels"][HASH_LABEL]
    assert replica_set["metadata"]["name"] == f"ersctl-{digest}"
    assert len(pods) == 2
    assert all(
        p["metadata"]["ownerReferences"][0]["name"] == replica_set["metadata"]["name"] for p in pods
    )
    assert all(p["metadata"]["labels"][HASH_LABEL] == digest for p in pods)
    assert deployment is not None
    status = deployment["status"]
    # What `kubectl rollout status` reads to say "successfully rolled out".
    assert status["observedGeneration"] == deployment["metadata"]["generation"]
    assert (status["updatedReplicas"], status["availableReplicas"], status["replicas"]) == (2, 2, 2)


@pytest.mark.embedded_only("reads and writes through the embedded server's direct access")
def test_a_new_template_gets_a_new_replica_set_and_the_old_one_scales_to_zero() -> None:
    with ApiServer() as server:
        server.create_object("deployments", _deployment(replicas=1))
        workloads = Workloads(server)
        workloads.step()
        server.patch_object(
            "deployments",
            "default",
            "ersctl",
            {"spec": _deployment(1, "gha-scaleset:0.2.0")["spec"]},
        )

        workloads.step()
        workloads.step()

        replica_sets = {
            rs["spec"]["template"]["spec"]["containers"][0]["image"]: rs
            for rs in server.list_objects("replicasets", "default")
        }
        (pod,) = server.list_objects("pods", "default")

    assert replica_sets["gha-scaleset:0.1.0"]["spec"]["replicas"] == 0
    assert replica_sets["gha-scaleset:0.2.0"]["spec"]["replicas"] == 1
    assert pod["spec"]["containers"][0]["image"] == "gha-scaleset:0.2.0"


def test_a_pods_declared_port_on_all_interfaces_is_given_a_free_port_of_the_host() -> None:
    ports = PodPorts([8080])
    mapped = ports.mapped[8080]

    assert ports.arguments(["ersctl", "reconcile", "--metrics-addr=:8080", "--leader-elect"]) == [
        "ersctl", "reconcile", f"--metrics-addr=127.0.0.1:{mapped}", "--leader-elect"
    ]  # fmt: skip
    assert ports.address("0.0.0.0:8080") == f"127.0.0.1:{mapped}"
    assert ports.address(":9090") == ":9090"  # not a declared port: left as it is
    assert ports.address("10.0.0.1:8080") == "10.0.0.1:8080"  # one address: left as it is


def test_a_listener_pods_metrics_address_is_mapped_as_its_declared_port() -> None:
    pod = {"spec": {"containers": [{"name": "listener", "ports": [{"containerPort": 8080}]}]}}
    config = json.dumps({"metrics_addr": ":8080", "min_runners": 0}).encode()

    mapped = json.loads(listener_config_on_host(pod, config))

    host, _, port = mapped["metrics_addr"].rpartition(":")
    assert (host, mapped["min_runners"]) == ("127.0.0.1", 0)
    assert port.isdigit() and port != "8080"
