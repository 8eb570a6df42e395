"""ARC's gha_controller_* gauges, next to ours, with ARC's names and labels."""

from __future__ import annotations

from typing import Any

from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from ersctl import api
from ersctl.wiring import ControllerOptions, build_controller
from tests.ersctl.ephemeralrunner.conftest import NO_SCHEDULER
from tests.ersctl.ephemeralrunnerset.harness import Cluster
from tests.ersctl.ephemeralrunnerset.objects import RUNNER_SPEC
from tests.kubeapi import KubeApi

ARC_GAUGES = tuple(
    f"gha_controller_{bucket}_ephemeral_runners"
    for bucket in ("pending", "running", "succeeded", "failed", "outdated", "deleting")
)


def scrape(kube: KubeApi) -> str:
    """The controller's /metrics text once its caches hold what the server holds."""
    with kube.api_client() as api:
        controller = build_controller(api, ControllerOptions(namespace=kube.namespace))
        try:
            with controller.manager.caches():
                return generate_latest(controller.manager.metrics.registry).decode()
        finally:
            controller.close()


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_each_set_exports_arcs_runner_gauges_counted_from_its_runners_with_arcs_labels(
    kube: KubeApi, cluster: Cluster
) -> None:
    # A count left in the status (ARC wrote it before a switch) is not what is exported:
    # the runners are, by ARC's lifecycle buckets (being deleted first, then the phase).
    cluster.create_ers("plain", status={"pendingEphemeralRunners": 7})
    for phase in ("Pending", None, "Running", "Running", "Running", "Succeeded", "Failed"):
        cluster.add_runner("plain", phase=phase)
    cluster.add_runner("plain", phase="Outdated")
    going = cluster.add_runner("plain", phase="Running")
    kube.delete_object(api.ER_PLURAL, kube.namespace, going)  # its finalizer holds it
    arc_made = {**RUNNER_SPEC, "githubConfigUrl": "https://github.com/octo-org/octo-repo"}
    cluster.create_ers("arc-made-abcde", runner_spec=arc_made, labels={
        "actions.github.com/scale-set-name": "arc-runners",
        "actions.github.com/scale-set-namespace": "arc-systems",
    })  # fmt: skip
    text = scrape(kube)

    got = samples(text)
    plain = (("enterprise", ""), ("name", "plain"), ("namespace", kube.namespace),
             ("organization", "octo-org"), ("repository", ""))  # fmt: skip
    assert [got[(name, plain)] for name in ARC_GAUGES] == [2, 3, 1, 1, 1, 1]
    arc = (("enterprise", ""), ("name", "arc-runners"), ("namespace", "arc-systems"),
           ("organization", "octo-org"), ("repository", "octo-repo"))  # fmt: skip
    assert [got[(name, arc)] for name in ARC_GAUGES] == [0, 0, 0, 0, 0, 0]


def listener_pod(name: str, namespace: str, scale_set: str) -> dict[str, Any]:
    """A listener Pod labelled as ARC's AutoscalingListener labels it."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                "app.kubernetes.io/component": "runner-scale-set-listener",
                "actions.github.com/scale-set-name": scale_set,
                "actions.github.com/scale-set-namespace": "arc-runners",
                "actions.github.com/organization": "octo-org",
            },
        },
        "spec": {
            "schedulerName": NO_SCHEDULER,  # no kubelet runs it: the test reports its phase
            "containers": [{"name": "listener", "image": "ghalistener"}],
        },
    }


def test_running_listeners_are_counted_per_scale_set_as_arcs_gauge(
    kube: KubeApi, cluster: Cluster
) -> None:
    for name, scale_set, phase in (("up-l", "up", "Running"), ("down-l", "down", "Pending")):
        kube.create_object("pods", listener_pod(name, kube.namespace, scale_set))
        status = {"status": {"phase": phase}}  # what its kubelet reports
        kube.patch_object("pods", kube.namespace, name, status, subresource="status")
    text = scrape(kube)

    def labels(scale_set: str) -> tuple[tuple[str, str], ...]:
        return (("enterprise", ""), ("name", scale_set), ("namespace", "arc-runners"),
                ("organization", "octo-org"), ("repository", ""))  # fmt: skip

    got = samples(text)
    assert got[("gha_controller_running_listeners", labels("up"))] == 1
    assert got[("gha_controller_running_listeners", labels("down"))] == 0
