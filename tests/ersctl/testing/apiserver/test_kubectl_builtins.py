"""kubectl on the built-in kinds, as against a real cluster: the columns it shows,
``kubectl scale`` through a workload's ``/scale``, a ``kind: List`` validated against
the OpenAPI v2 document (which kubectl reads as protobuf), and a namespace deleted with
what is in it; and what kube-controller-manager adds (a ServiceAccount ``default`` in
every namespace)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client import ApiException

from tests.ersctl.ephemeralrunner.conftest import NO_SCHEDULER
from tests.kubeapi import KubeApi, fresh_name
from tests.kubeclient import request
from tests.kubectl import Kubectl, needs_kubectl
from tests.polling import eventually

pytestmark = needs_kubectl


def deployment(name: str = "web", replicas: int = 0) -> dict[str, Any]:
    """A Deployment whose Pods no kubelet runs (a scheduler that does not exist)."""
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "schedulerName": NO_SCHEDULER,
                    "containers": [{"name": name, "image": "registry.example.com/web:1.0"}],
                },
            },
        },
    }


def _apply(kubectl: Kubectl, *docs: dict[str, Any]) -> None:
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))


def test_kubectl_get_shows_the_columns_of_the_built_in_kinds(
    kubectl: Kubectl, namespace: str
) -> None:
    rbac = "rbac.authorization.k8s.io/v1"
    _apply(
        kubectl,
        deployment(),
        {"apiVersion": rbac, "kind": "Role", "metadata": {"name": "reader"}, "rules": []},
        {
            "apiVersion": rbac,
            "kind": "RoleBinding",
            "metadata": {"name": "readers"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": namespace}],
        },
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}},
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "e"},
            "involvedObject": {"kind": "Pod", "name": "x", "namespace": namespace},
            "type": "Warning",
            "reason": "Tested",
            "message": "a test event",
        },
    )

    def table(*args: str) -> tuple[list[str], dict[str, list[str]]]:
        header, *rows = kubectl.table(*args)
        return header, {row[0] if header[0] == "NAME" else row[-1]: row for row in rows}

    header, rows = table("deployment")
    assert header == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert rows["web"][1:4] == ["0/0", "0", "0"]
    header, rows = table("role")
    assert header == ["NAME", "CREATED AT"]
    header, rows = table("rolebinding")
    assert header == ["NAME", "ROLE", "AGE"]
    assert rows["readers"][1] == "Role/reader"
    header, rows = table("configmap", "c")
    assert (header, rows["c"][1]) == (["NAME", "DATA", "AGE"], "1")
    header, rows = table("serviceaccount", "robot")
    assert (header, rows["robot"][1]) == (["NAME", "SECRETS", "AGE"], "0")
    header, *events = kubectl.table("events")
    assert header == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert ["Warning", "Tested", "pod/x", "a test event"] in [row[1:] for row in events]


def test_kubectl_scale_writes_a_workloads_replicas_through_its_scale(
    kubectl: Kubectl, kube_client: client.ApiClient, namespace: str
) -> None:
    _apply(kubectl, deployment(replicas=0))

    kubectl("scale", "deployment/web", "--replicas=2")

    path = f"/apis/apps/v1/namespaces/{namespace}/deployments/web"
    assert request(kube_client, "GET", path)["spec"]["replicas"] == 2
    scale = request(kube_client, "GET", f"{path}/scale")
    assert (scale["apiVersion"], scale["kind"]) == ("autoscaling/v1", "Scale")
    assert scale["spec"] == {"replicas": 2}
    assert scale["status"]["selector"] == "app=web"


def test_kubectl_applies_a_list_validating_its_items_with_the_openapi_v2_document(
    kubectl: Kubectl,
) -> None:
    # kubectl validates the items of a List against /openapi/v2, which it asks for in
    # protobuf; an answer it cannot read fails the apply before anything is sent.
    def listed(**extra: Any) -> dict[str, Any]:
        item = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, **extra}
        return {"apiVersion": "v1", "kind": "List", "items": [item]}

    refused = kubectl("apply", "-f", "-", stdin=yaml.safe_dump(listed(bogus=1)), check=False)
    _apply(kubectl, listed(data={"a": "1"}))

    assert refused.returncode == 1
    assert 'unknown field "bogus"' in refused.stderr
    assert kubectl.json("get", "configmap", "c")["data"] == {"a": "1"}


def _namespace_gone(core: client.CoreV1Api, name: str) -> bool:
    try:
        core.read_namespace(name)
    except ApiException as exc:
        return bool(exc.status == 404)
    return False


@pytest.mark.needs_gc("the namespace controller empties and removes the namespace")
def test_deleting_a_namespace_answers_it_terminating_then_empties_and_removes_it(
    kube: KubeApi, kube_client: client.ApiClient
) -> None:
    team = kube.create_namespace("team")
    core = client.CoreV1Api(kube_client)
    secret = client.V1Secret(metadata=client.V1ObjectMeta(name="s"), string_data={"a": "1"})
    core.create_namespaced_secret(team, secret)

    answer = request(kube_client, "DELETE", f"/api/v1/namespaces/{team}")

    assert (answer["kind"], answer["status"]["phase"]) == ("Namespace", "Terminating")
    assert answer["metadata"]["deletionTimestamp"]
    eventually(lambda: _namespace_gone(core, team), timeout=60, what=f"namespace {team} gone")
    listed = request(kube_client, "GET", "/api/v1/secrets")["items"]
    assert [s for s in listed if s["metadata"]["namespace"] == team] == []


@pytest.mark.needs_gc("the namespace controller removes the namespace")
def test_kubectl_deletes_a_namespace_and_what_is_in_it_in_one_command(
    kube: KubeApi, kubectl: Kubectl, kube_client: client.ApiClient, tmp_path: Path
) -> None:
    # As `kubectl delete -k examples/deploy/scale-set`: the namespace first, then its
    # objects, each found while the namespace is Terminating.
    team = fresh_name("team")
    kube.clean_up_namespace(team)
    manifest = tmp_path / "team.yaml"
    manifest.write_text(
        yaml.safe_dump_all(
            [
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": team}},
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": "s", "namespace": team},
                },
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {"name": "robot", "namespace": team},
                },
            ]
        )
    )
    kubectl("apply", "-f", str(manifest))

    deleted = kubectl("delete", "-f", str(manifest), check=False)

    assert deleted.returncode == 0, deleted.stderr
    assert len(deleted.stdout.strip().splitlines()) == 3
    core = client.CoreV1Api(kube_client)
    eventually(lambda: _namespace_gone(core, team), timeout=60, what=f"namespace {team} gone")


@pytest.mark.needs_gc("the service account controller")
def test_every_namespace_has_a_default_service_account_made_again_when_deleted(
    kube: KubeApi, kube_client: client.ApiClient
) -> None:
    core = client.CoreV1Api(kube_client)

    def default_uid() -> str | None:
        try:
            account = core.read_namespaced_service_account("default", kube.namespace)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return account.metadata.uid if account.metadata is not None else None

    first = eventually(default_uid, timeout=30, what="ServiceAccount default")
    core.delete_namespaced_service_account("default", kube.namespace)

    def replaced() -> str | None:
        uid = default_uid()
        return uid if uid != first else None

    eventually(replaced, timeout=30, what="ServiceAccount default made again")
