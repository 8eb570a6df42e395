"""ARC's controller Deployment, as ARC's Helm chart renders it (``arc_chart/``), runs our
image's ``/manager`` unchanged.

For ARC 0.14.2 and 0.15.1: the Deployment with its image replaced by ours and nothing
else, its command, args and environment exactly (``tests/deploy/chart_manager.py``:
the namespace field reference resolved, plus a kubeconfig where a Pod has its service
account), run from the image's filesystem (the wheel's console scripts and the
Dockerfile's links), against the embedded API server answering 403 to whatever the
chart's RBAC does not grant the controller's ServiceAccount, with the CRDs of the switch
(ours over ARC 0.14's, ARC 0.15.1's own) and the GitHub simulator. An
AutoscalingRunnerSet as ARC's scale-set chart makes it becomes a working scale set:
registered, its runner set, its listener (in the controller's namespace, with the
chart's listener image and ARC's listener command), and a scale-up registers a runner
and makes its Pod; deleted, everything it made goes. The chart's readiness probe answers; what ARC's RBAC does not grant
(reading CRDs, Events) costs one WARNING each and is the only thing refused.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ersctl import api
from ersctl.testing.apiserver import ApiServer
from ghalistener.testing import GitHubSimulator, serve
from tests import local_http
from tests.deploy.chart_manager import (
    CONTROLLER_NS,
    DEGRADED,
    RUNNERS_NS,
    SERVICE_ACCOUNT,
    WAIT,
    chart_manager,
    deployment,
    install_chart,
    manager_container,
    switched,
)
from tests.deploy.rbac import BoundRules
from tests.ersctl.autoscalingrunnerset.conftest import runner_template
from tests.polling import eventually


def install(server: ApiServer, version: str, config_url: str) -> list[dict[str, Any]]:
    """The chart (``install_chart``), and a scale set as ARC's gha-runner-scale-set
    chart makes one (its Secret and its ARS)."""
    docs = install_chart(server, version)
    token = base64.b64encode(b"ghp_chartSECRET").decode()
    secret = {"metadata": {"name": "arc-runners-gha-rs-github-secret", "namespace": RUNNERS_NS}}
    server.create_object("secrets", {**secret, "data": {"github_token": token}})
    ars = {
        "apiVersion": api.API_VERSION,
        "kind": api.ARS_KIND,
        "metadata": {"name": "arc-runners", "namespace": RUNNERS_NS},
        "spec": {
            "githubConfigUrl": config_url,
            "githubConfigSecret": secret["metadata"]["name"],
            "maxRunners": 5,
            "minRunners": 0,
            "template": runner_template(),
        },
    }
    server.create_object(api.ARS_PLURAL, ars)
    return docs


def found(check: Callable[[], dict[str, Any] | None], what: str) -> dict[str, Any]:
    value = eventually(check, timeout=WAIT, what=what)
    assert value is not None
    return value


def a_working_scale_set(server: ApiServer, listener_image: str) -> None:
    """The ARS registered, its runner set and listener made, a scale-up served."""

    def only(plural: str, namespace: str) -> dict[str, Any] | None:
        objects = server.list_objects(plural, namespace)
        return objects[0] if len(objects) == 1 else None

    eventually(
        lambda: ((server.get_object(api.ARS_PLURAL, RUNNERS_NS, "arc-runners") or {})
                 .get("status", {}).get("phase") == "Running"),
        timeout=WAIT, what="the ARS running",
    )  # fmt: skip
    ers = found(lambda: only(api.ERS_PLURAL, RUNNERS_NS), "its runner set")
    listener = found(lambda: only(api.AL_PLURAL, CONTROLLER_NS), "its listener")
    pod = found(
        lambda: server.get_object("pods", CONTROLLER_NS, listener["metadata"]["name"]),
        "the listener pod, in the controller's namespace",
    )
    (container,) = pod["spec"]["containers"]
    assert (container["image"], container["command"]) == (listener_image, ["/ghalistener"])
    # What the listener does when a job comes: scale the set up.
    spec = {"spec": {"replicas": 1, "patchID": 1}}
    server.patch_object(api.ERS_PLURAL, RUNNERS_NS, ers["metadata"]["name"], spec)
    runner = found(lambda: only(api.ER_PLURAL, RUNNERS_NS), "a runner")
    eventually(
        lambda: (
            (server.get_object(api.ER_PLURAL, RUNNERS_NS, runner["metadata"]["name"]) or {})
            .get("status", {})
            .get("runnerId")
        ),
        timeout=WAIT,
        what="the runner registered",
    )
    eventually(
        lambda: server.get_object("pods", RUNNERS_NS, runner["metadata"]["name"]),
        timeout=WAIT,
        what="the runner pod",
    )


def _none_left(server: ApiServer, plural: str, namespace: str) -> Callable[[], bool]:
    return lambda: server.list_objects(plural, namespace) == []


def deleted_to_the_last_object(server: ApiServer) -> None:
    """The ARS deleted: everything it made goes, within ARC's permissions too."""
    server.delete_object(api.ARS_PLURAL, RUNNERS_NS, "arc-runners")
    for plural, namespace in (
        (api.ARS_PLURAL, RUNNERS_NS),
        (api.AL_PLURAL, CONTROLLER_NS),
        (api.ERS_PLURAL, RUNNERS_NS),
        (api.ER_PLURAL, RUNNERS_NS),
        ("pods", CONTROLLER_NS),
        ("roles", RUNNERS_NS),
    ):
        eventually(
            _none_left(server, plural, namespace),
            timeout=WAIT,
            what=f"no {plural} left in {namespace}",
        )


@pytest.mark.embedded_only("a server of its own, enforcing the chart's RBAC")
@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.14.2", "0.15.1"])
def test_arcs_chart_deployment_runs_our_manager_unchanged_under_arcs_rbac(
    version: str, unpacked: Path, sim: GitHubSimulator, tmp_path: Path
) -> None:
    with ApiServer(crds=False) as server, serve(sim, port=0) as github:
        docs = install(server, version, f"{github.url}/my-org")
        server.authorize(BoundRules.of(docs, namespace=CONTROLLER_NS, name=SERVICE_ACCOUNT).denied)
        chart_deployment = switched(deployment(docs))
        probe = manager_container(chart_deployment)["readinessProbe"]["httpGet"]
        with chart_manager(
            server, chart_deployment, unpacked=unpacked, workdir=tmp_path / "manager"
        ) as manager:
            a_working_scale_set(server, _listener_image(chart_deployment))
            url = f"http://127.0.0.1:{probe['port']}{probe['path']}"
            assert local_http.get(url, timeout=5).status_code == 200
            deleted_to_the_last_object(server)
        refused = {(r.resource, r.verb) for r in server.request_log.records() if r.status == 403}
    code, output = manager.code, manager.output
    assert code == 0, output[-3000:]
    assert refused == DEGRADED, output[-3000:]
    warnings = [line for line in output.splitlines() if " WARNING " in line]
    assert len([w for w in warnings if "cannot read the CRDs (Forbidden)" in w]) == 1, warnings
    assert len([w for w in warnings if "cannot record Events (Forbidden)" in w]) == 1, warnings
    assert "ghp_chartSECRET" not in output


def _listener_image(chart_deployment: dict[str, Any]) -> str:
    env = {e["name"]: e.get("value") for e in manager_container(chart_deployment)["env"]}
    return str(env["CONTROLLER_MANAGER_CONTAINER_IMAGE"])
