"""The kustomize components for ARC's container modes (examples/deploy/container-modes):
switched on as the overlay's comment says, each renders the runner Pod template (and,
for kubernetes, the hooks' RBAC) that ARC's gha-runner-scale-set chart renders for
``containerMode.type``, the result is valid and the embedded API server's CRD
validation accepts it.

The expected fields below are written down from ARC's chart (actions-runner-controller,
charts/gha-runner-scale-set, as stored at commits 00b8f13e (templates/_helpers.tpl:
dind-init-container, dind-container, dind-runner-container, dind-volume,
dind-work-volume, kubernetes-mode-runner-container, kubernetes-mode-work-volume),
0041559 (values.yaml, which lists the rendered template of both modes), 11c4b95c
(templates/kube_mode_role.yaml) and tests/template_test.go (EnableDinD,
EnableKubernetesMode and the kube-mode RBAC test: names ``<name>-gha-rs-kube-mode``,
five rules in this order)), for Kubernetes 1.29 and later, where the chart makes dockerd
a native sidecar (an init container with ``restartPolicy: Always``).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from ersctl.crds import load_crds
from ersctl.testing.apiserver import ApiServer
from tests.deploy.test_deploy import (
    BASE,
    apply_install,
    assert_holds_nothing_a_controller_writes,
    assert_valid,
    by_kind,
    crd_schemas,
    kubectl,
    one,
    render,
)

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is absent")

RUNNER_IMAGE = "ghcr.io/actions/actions-runner:latest"

DIND_INIT_CONTAINERS = [
    {
        "name": "init-dind-externals",
        "image": RUNNER_IMAGE,  # the runner container's image
        "command": ["cp"],
        "args": ["-r", "/home/runner/externals/.", "/home/runner/tmpDir/"],
        "volumeMounts": [{"name": "dind-externals", "mountPath": "/home/runner/tmpDir"}],
    },
    {
        "name": "dind",
        "image": "docker:dind",
        "args": ["dockerd", "--host=unix:///var/run/docker.sock", "--group=$(DOCKER_GROUP_GID)"],
        "env": [{"name": "DOCKER_GROUP_GID", "value": "123"}],
        "securityContext": {"privileged": True},
        "restartPolicy": "Always",
        "startupProbe": {
            "exec": {"command": ["docker", "info"]},
            "initialDelaySeconds": 0,
            "failureThreshold": 24,
            "periodSeconds": 5,
        },
        "volumeMounts": [
            {"name": "work", "mountPath": "/home/runner/_work"},
            {"name": "dind-sock", "mountPath": "/var/run"},
            {"name": "dind-externals", "mountPath": "/home/runner/externals"},
        ],
    },
]
DIND_RUNNER_ENV = [
    {"name": "DOCKER_HOST", "value": "unix:///var/run/docker.sock"},
    {"name": "RUNNER_WAIT_FOR_DOCKER_IN_SECONDS", "value": "120"},
]
DIND_RUNNER_MOUNTS = [
    {"name": "work", "mountPath": "/home/runner/_work"},
    {"name": "dind-sock", "mountPath": "/var/run"},
]
DIND_VOLUMES = [
    {"name": "dind-sock", "emptyDir": {}},
    {"name": "dind-externals", "emptyDir": {}},
    {"name": "work", "emptyDir": {}},
]

KUBE_MODE_NAME = "arc-runners-gha-rs-kube-mode"
KUBE_RUNNER_ENV = [
    {"name": "ACTIONS_RUNNER_CONTAINER_HOOKS", "value": "/home/runner/k8s/index.js"},
    {"name": "ACTIONS_RUNNER_POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    {"name": "ACTIONS_RUNNER_REQUIRE_JOB_CONTAINER", "value": "true"},
]
KUBE_RUNNER_MOUNTS = [{"name": "work", "mountPath": "/home/runner/_work"}]
KUBE_ROLE_RULES = [
    {
        "apiGroups": [""],
        "resources": ["pods"],
        "verbs": ["get", "list", "create", "delete", "update", "patch"],
    },
    {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["get", "create"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "list", "create", "delete"]},
    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "create", "delete"]},
]


def with_mode(tmp_path: Path, mode: str) -> Path:
    """A copy of examples/deploy whose scale-set overlay has ``mode`` switched on by
    uncommenting its line, as the overlay's comment tells the user."""
    copy = tmp_path / "deploy"
    shutil.copytree(BASE, copy)
    kustomization = copy / "scale-set" / "kustomization.yaml"
    lines = kustomization.read_text(encoding="utf-8").splitlines()
    switched = []
    for line in lines:
        if line == "# components:":
            line = "components:"
        elif line.startswith(f"#   - ../container-modes/{mode} "):
            line = line.removeprefix("# ").split("#")[0].rstrip()
        switched.append(line)
    assert f"  - ../container-modes/{mode}" in switched, "the overlay's comment names the mode"
    kustomization.write_text("\n".join(switched) + "\n", encoding="utf-8")
    return copy / "scale-set"


def runner_pod(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (ars,) = by_kind(docs, "AutoscalingRunnerSet")
    spec: dict[str, Any] = ars["spec"]["template"]["spec"]
    return spec


def test_dind_renders_what_arcs_chart_renders(tmp_path: Path) -> None:
    docs = render(with_mode(tmp_path, "dind"))
    pod = runner_pod(docs)
    assert pod["initContainers"] == DIND_INIT_CONTAINERS
    (runner,) = pod["containers"]
    assert runner["name"] == "runner"
    assert runner["env"] == DIND_RUNNER_ENV
    assert runner["volumeMounts"] == DIND_RUNNER_MOUNTS
    assert pod["volumes"] == DIND_VOLUMES
    # the overlay's runner is kept: image, command, resources, its no-permission account
    plain = runner_pod(render(BASE / "scale-set"))
    (plain_runner,) = plain["containers"]
    for field in ("image", "command", "resources"):
        assert runner[field] == plain_runner[field]
    assert pod["serviceAccountName"] == plain["serviceAccountName"]
    assert pod["restartPolicy"] == "Never"


def test_dind_copies_externals_from_the_runner_image_the_user_chose(tmp_path: Path) -> None:
    overlay = with_mode(tmp_path, "dind")
    ars_file = overlay / "autoscalingrunnerset.yaml"
    ars_file.write_text(
        ars_file.read_text(encoding="utf-8").replace(RUNNER_IMAGE, "registry.example.com/r:2")
    )
    pod = runner_pod(render(overlay))
    assert pod["containers"][0]["image"] == "registry.example.com/r:2"
    assert pod["initContainers"][0]["image"] == "registry.example.com/r:2"


def test_kubernetes_mode_renders_what_arcs_chart_renders(tmp_path: Path) -> None:
    docs = render(with_mode(tmp_path, "kubernetes"))
    pod = runner_pod(docs)
    (runner,) = pod["containers"]
    assert runner["env"] == KUBE_RUNNER_ENV
    assert runner["volumeMounts"] == KUBE_RUNNER_MOUNTS
    (work,) = pod["volumes"]
    assert work["name"] == "work"
    claim = work["ephemeral"]["volumeClaimTemplate"]["spec"]
    assert claim["accessModes"] == ["ReadWriteOnce"]
    assert claim["resources"]["requests"]["storage"]
    assert "initContainers" not in pod
    # the hooks' identity, bound to the hooks' Role, in the set's namespace
    assert pod["serviceAccountName"] == KUBE_MODE_NAME
    account = one(docs, "ServiceAccount", KUBE_MODE_NAME)
    role = one(docs, "Role", KUBE_MODE_NAME)
    binding = one(docs, "RoleBinding", KUBE_MODE_NAME)
    namespace = by_kind(docs, "AutoscalingRunnerSet")[0]["metadata"]["namespace"]
    assert {d["metadata"]["namespace"] for d in (account, role, binding)} == {namespace}
    assert role["rules"] == KUBE_ROLE_RULES
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": KUBE_MODE_NAME,
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": KUBE_MODE_NAME, "namespace": namespace}
    ]
    # ARC's chart renders no no-permission account in this mode; nor does the overlay
    assert [d["metadata"]["name"] for d in by_kind(docs, "ServiceAccount")] == [KUBE_MODE_NAME]


def test_a_template_whose_first_container_is_not_the_runner_is_refused(tmp_path: Path) -> None:
    overlay = with_mode(tmp_path, "dind")
    ars_file = overlay / "autoscalingrunnerset.yaml"
    ars_file.write_text(ars_file.read_text(encoding="utf-8").replace("- name: runner", "- name: x"))
    done = subprocess.run(
        ["kubectl", "kustomize", str(overlay)], capture_output=True, text=True, check=False
    )
    assert done.returncode != 0
    assert "/spec/template/spec/containers/0/name" in done.stderr


@pytest.mark.parametrize("mode", ["dind", "kubernetes"])
def test_each_mode_is_valid_and_holds_nothing_a_controller_writes(
    tmp_path: Path, mode: str
) -> None:
    docs = render(with_mode(tmp_path, mode))
    # the shipped CRDs, which the install renders unchanged (test_deploy)
    assert_valid(docs, crd_schemas(load_crds()))
    assert_holds_nothing_a_controller_writes(docs)


@pytest.mark.embedded_only("applies cluster-scoped objects and fixed-name namespaces")
@pytest.mark.parametrize("mode", ["dind", "kubernetes"])
def test_the_api_server_accepts_each_mode(tmp_path: Path, mode: str) -> None:
    overlay = with_mode(tmp_path, mode)
    docs = render(overlay)
    with ApiServer(crds=False) as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        apply_install(kubeconfig)
        kubectl(kubeconfig, "apply", "--server-side", "-k", str(overlay))
        (ars,) = by_kind(docs, "AutoscalingRunnerSet")
        stored = server.get_object("autoscalingrunnersets", "arc-runners", "arc-runners")
        assert stored is not None
        assert stored["spec"] == ars["spec"]
        # and the CRD's validation bites: a volume without a name is refused
        broken = yaml.safe_load(yaml.safe_dump(ars))
        del broken["spec"]["template"]["spec"]["volumes"][0]["name"]
        done = subprocess.run(
            ["kubectl", "--kubeconfig", str(kubeconfig), "apply", "--server-side", "-f", "-"],
            input=yaml.safe_dump(broken),
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode != 0, done.stdout
