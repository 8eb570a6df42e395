"""What the API server fills in that a client left out: the built-in kinds' defaults (a
Pod's, a workload's template, a binding's subjects) and a Pod's admission additions,
as a real kube-apiserver stores them, so a test of what a controller wrote reads the
same against either server."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from tests.ersctl.ephemeralrunner.conftest import NO_SCHEDULER
from tests.kubeapi import KubeApi
from tests.kubeclient import request

TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {
        "schedulerName": NO_SCHEDULER,
        "containers": [{"name": "web", "image": "registry.example.com/web:1.0"}],
    },
}


def test_a_pod_gets_the_podspec_container_and_volume_defaults(
    kube_client: client.ApiClient, namespace: str
) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {
            "schedulerName": NO_SCHEDULER,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "ports": [{"containerPort": 8080}],
                    "env": [
                        {
                            "name": "NS",
                            "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
                        }
                    ],
                    "livenessProbe": {"httpGet": {"port": 8080}},
                    "resources": {"limits": {"memory": "64Mi"}},
                },
                {"name": "pinned", "image": "busybox:1.36"},
            ],
            "volumes": [{"name": "config", "secret": {"secretName": "s"}}, {"name": "scratch"}],
        },
    }

    pod = request(kube_client, "POST", f"/api/v1/namespaces/{namespace}/pods", body)

    spec = pod["spec"]
    assert (spec["dnsPolicy"], spec["restartPolicy"]) == ("ClusterFirst", "Always")
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["securityContext"] == {}
    assert spec["enableServiceLinks"] is True
    main, pinned = spec["containers"]
    assert (main["imagePullPolicy"], pinned["imagePullPolicy"]) == ("Always", "IfNotPresent")
    assert main["terminationMessagePath"] == "/dev/termination-log"
    assert main["terminationMessagePolicy"] == "File"
    assert main["ports"] == [{"containerPort": 8080, "protocol": "TCP"}]
    assert main["env"][0]["valueFrom"]["fieldRef"]["apiVersion"] == "v1"
    assert main["livenessProbe"] == {
        "httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert main["resources"] == {"limits": {"memory": "64Mi"}, "requests": {"memory": "64Mi"}}
    assert pinned["resources"] == {}
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["config"]["secret"] == {"secretName": "s", "defaultMode": 420}
    assert volumes["scratch"] == {"name": "scratch", "emptyDir": {}}
    assert pod["status"]["qosClass"] == "Burstable"
    # Admission (DefaultTolerationSeconds): not-ready and unreachable nodes tolerated 300 s.
    tolerated = {(t["key"], t.get("tolerationSeconds")) for t in spec["tolerations"]}
    assert {
        ("node.kubernetes.io/not-ready", 300),
        ("node.kubernetes.io/unreachable", 300),
    } <= tolerated


def _dry_run_create(api_client: client.ApiClient, path: str, body: dict[str, Any]) -> Any:
    # Nothing is stored, so no controller of a real cluster acts on it.
    return request(api_client, "POST", path, body, query=[("dryRun", "All")])


def test_workloads_get_their_defaults_and_their_templates_the_podspecs(
    kube_client: client.ApiClient, namespace: str
) -> None:
    base = f"/apis/apps/v1/namespaces/{namespace}"
    selector = {"matchLabels": {"app": "web"}}
    deployment = _dry_run_create(
        kube_client,
        f"{base}/deployments",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {"selector": selector, "template": TEMPLATE},
        },
    )
    stateful = _dry_run_create(
        kube_client,
        f"{base}/statefulsets",
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db"},
            "spec": {"selector": selector, "serviceName": "db", "template": TEMPLATE},
        },
    )

    spec = deployment["spec"]
    assert (spec["replicas"], spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (
        1,
        10,
        600,
    )
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    template = spec["template"]["spec"]
    assert (template["restartPolicy"], template["terminationGracePeriodSeconds"]) == ("Always", 30)
    assert template["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert "enableServiceLinks" not in template  # a Pod's default, not a template's
    spec = stateful["spec"]
    assert (spec["replicas"], spec["podManagementPolicy"]) == (1, "OrderedReady")
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}


def test_a_bindings_user_and_group_subjects_get_the_rbac_api_group(
    kube_client: client.ApiClient, namespace: str
) -> None:
    binding = request(
        kube_client,
        "POST",
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "b"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
            "subjects": [
                {"kind": "User", "name": "alice"},
                {"kind": "ServiceAccount", "name": "robot", "namespace": namespace},
            ],
        },
    )

    assert binding["subjects"] == [
        {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"},
        {"kind": "ServiceAccount", "name": "robot", "namespace": namespace},
    ]


def test_a_namespace_is_labelled_with_its_name(kube: KubeApi) -> None:
    namespace = kube.get_object("namespaces", "", kube.namespace)

    assert namespace is not None
    assert namespace["metadata"]["labels"]["kubernetes.io/metadata.name"] == kube.namespace
