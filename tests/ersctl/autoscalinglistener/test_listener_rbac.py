"""The Role the listener controller grants against what the listener really sends.

The controller makes a listener's config Secret and Role; the real ``ghalistener run``
then starts from that very config (the file the Pod mounts, named by
``LISTENER_CONFIG_PATH`` as in the Pod) against the embedded API server and the GitHub
simulator, while a job is assigned, started and completed. Every request it sent (the
server's request log) must be allowed by the generated Role (sufficient), and every
grant of the Role must have been used (least privilege): the approach of
tests/deploy/test_rbac_in_practice.py for the deployment's RBAC.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from ersctl.arcclient.reader import ApiReader
from ersctl.autoscalinglistener.inputs import ScaleSetInputs
from ersctl.autoscalinglistener.reconciler import ListenerReconciler
from ersctl.autoscalinglistener.stores import KubeListenerResources
from ersctl.kube.client import Reader
from ersctl.kube.events import EventRecorder
from ersctl.kube.reconcile import Request
from ersctl.kube.store import Store
from ersctl.testing.apiserver import ApiServer
from ghalistener.testing.model import GitHubSimulator
from ghalistener.testing.server import serve
from tests.deploy.rbac import grants
from tests.deploy.test_rbac_in_practice import (
    assert_requests_need_exactly,
    listener_through_one_job,
)
from tests.ersctl.autoscalinglistener.conftest import (
    RUNNER_SET,
    b64,
    listener_body,
    listener_settings,
)
from tests.ghalistener.arc_configs import PAT

WAIT = 60.0
NS = "arc-runners"
LISTENER_NS = "arc-systems"


def runner_set(namespace: str, config_url: str, scale_set: int) -> dict[str, Any]:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunnerSet",
        "metadata": {"name": RUNNER_SET, "namespace": namespace},
        "spec": {
            "replicas": 0,
            "patchID": 0,
            "ephemeralRunnerSpec": {
                "githubConfigUrl": config_url,
                "githubConfigSecret": "github-credentials",
                "runnerScaleSetId": scale_set,
                "spec": {"containers": [{"name": "runner", "image": "runner"}]},
            },
        },
    }


def make_listener(server: ApiServer, config_url: str, scale_set: int) -> None:
    """The listener's config Secret and Role, made by the production reconciler (its
    own client; the test writes through the server's direct API, which is not logged)."""
    body = listener_body(LISTENER_NS, NS, githubConfigUrl=config_url, runnerScaleSetId=scale_set)
    server.create_object("autoscalinglisteners", body)
    with server.api_client() as api:
        resources = KubeListenerResources(api, pods=Store())
        reader = ApiReader(Reader(api))
        reconciler = ListenerReconciler(
            listeners=resources,
            objects=resources,
            inputs=ScaleSetInputs(get_secret=reader.get_secret, get_configmap=reader.get_configmap),
            events=EventRecorder(api),
            settings=listener_settings(),
        )
        reconciler.reconcile(Request(LISTENER_NS, body["metadata"]["name"]))


@pytest.mark.embedded_only("the request log")
def test_the_listener_started_from_the_generated_config_needs_exactly_the_generated_role(
    apiserver: ApiServer, tmp_path: Path
) -> None:
    sim = GitHubSimulator(hold_seconds=0.5)
    github = serve(sim, port=0)
    scale_set = int(sim.create_scale_set(name="arc-runners")["id"])
    config_url = f"{github.url}/my-org"
    for ns in (NS, LISTENER_NS):
        apiserver.create_object("namespaces", {"metadata": {"name": ns}})
    apiserver.create_object(
        "secrets",
        {
            "metadata": {"name": "github-credentials", "namespace": NS},
            "data": {"github_token": b64(PAT)},
        },
    )
    apiserver.create_object("ephemeralrunnersets", runner_set(NS, config_url, scale_set))
    runner = f"{RUNNER_SET}-runner-abcde"
    apiserver.create_object(
        "ephemeralrunners",
        {
            "apiVersion": "actions.github.com/v1alpha1",
            "kind": "EphemeralRunner",
            "metadata": {"name": runner, "namespace": NS},
            "spec": runner_set(NS, config_url, scale_set)["spec"]["ephemeralRunnerSpec"],
        },
    )
    make_listener(apiserver, config_url, scale_set)
    (secret,) = apiserver.list_objects("secrets", LISTENER_NS)
    config = tmp_path / "config.json"
    config.write_bytes(base64.b64decode(secret["data"]["config.json"]))
    (role,) = apiserver.list_objects("roles", NS)
    granted = grants(role["rules"])

    kubeconfig = apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    apiserver.request_log.clear()
    try:
        output = listener_through_one_job(
            apiserver,
            sim,
            scale_set=scale_set,
            runner=runner,
            namespace=NS,
            set_name=RUNNER_SET,
            config=config,
            kubeconfig=kubeconfig,
            log=tmp_path / "listener.log",
        )
    finally:
        github.stop()
    assert PAT not in output
    assert_requests_need_exactly(apiserver, granted, namespace=NS)
