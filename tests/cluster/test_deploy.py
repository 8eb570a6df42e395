"""The kustomize base in examples/deploy: it renders, every object is valid for the
Kubernetes version we document, the RBAC is least-privilege, and the Dockerfile keeps
its promises.

Schemas: built-in kinds are validated with ``kubernetes-validate`` against Kubernetes
**v1.32** (the kubectl on the build machines, and the version the README documents),
in strict mode so a misspelt field fails; custom resources against the
``openAPIV3Schema`` of the CRD rendered alongside them.
"""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from ersctl.cli import main as ersctl_main
from ersctl.crds import load_crds
from ersctl.testing.apiserver import ApiServer
from ghalistener.config import load_config as load_listener_config
from tests.cluster.image import dockerfile_stages

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "examples" / "deploy"
KUBERNETES_VERSION = "1.32"

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is absent")


def render() -> list[dict[str, Any]]:
    out = subprocess.run(
        ["kubectl", "kustomize", str(BASE)], check=True, capture_output=True, text=True
    ).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


@pytest.fixture(scope="module")
def rendered_once() -> list[dict[str, Any]]:
    return render()


@pytest.fixture
def rendered(rendered_once: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A fresh copy per test: tests change documents to check that validation bites."""
    return copy.deepcopy(rendered_once)


def by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [doc for doc in docs if doc["kind"] == kind]


def one(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [doc for doc in by_kind(docs, kind) if doc["metadata"]["name"] == name]
    return found


def crd_schemas(docs: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> openAPIV3Schema of every CRD version in ``docs``."""
    schemas = {}
    for crd in by_kind(docs, "CustomResourceDefinition"):
        for version in crd["spec"]["versions"]:
            key = (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
            schemas[key] = version["schema"]["openAPIV3Schema"]
    return schemas


def test_the_base_renders_every_kind_the_deployment_needs(rendered: list[dict[str, Any]]) -> None:
    kinds = {doc["kind"] for doc in rendered}
    assert kinds == {
        "Namespace",
        "CustomResourceDefinition",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Secret",
        "Deployment",
        "EphemeralRunnerSet",
    }


def test_every_rendered_object_is_valid_for_the_documented_kubernetes_version(
    rendered: list[dict[str, Any]],
) -> None:
    custom = crd_schemas(rendered)
    for doc in rendered:
        key = (doc["apiVersion"], doc["kind"])
        if key in custom:
            jsonschema.Draft202012Validator(custom[key]).validate(doc)
        else:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_the_validation_rejects_a_misspelt_field(rendered: list[dict[str, Any]]) -> None:
    # Guards the test above against validating nothing (e.g. a schema lookup that
    # silently accepts everything).
    deployment = one(rendered, "Deployment", "ersctl")
    deployment["spec"]["replicaz"] = 2
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)
    ers = by_kind(rendered, "EphemeralRunnerSet")[0]
    ers["spec"]["replicas"] = "two"
    schema = crd_schemas(rendered)[(ers["apiVersion"], "EphemeralRunnerSet")]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(ers)


def test_the_rendered_crds_are_the_package_files_unchanged(rendered: list[dict[str, Any]]) -> None:
    rendered_crds = by_kind(rendered, "CustomResourceDefinition")
    shipped = load_crds()
    for crd in rendered_crds:
        # the base adds its part-of label; everything else is the shipped file
        crd["metadata"].get("labels", {}).pop("app.kubernetes.io/part-of", None)
        if not crd["metadata"].get("labels"):
            crd["metadata"].pop("labels", None)
    key = lambda doc: doc["metadata"]["name"]  # noqa: E731
    assert sorted(rendered_crds, key=key) == sorted(shipped, key=key)


def rules_of(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield from doc.get("rules", [])


def test_no_role_grants_wildcards_or_escalation(rendered: list[dict[str, Any]]) -> None:
    for role in by_kind(rendered, "Role") + by_kind(rendered, "ClusterRole"):
        for rule in rules_of(role):
            for field in ("apiGroups", "resources", "verbs"):
                assert "*" not in rule.get(field, []), (role["metadata"]["name"], rule)
            assert not {"escalate", "bind", "impersonate"} & set(rule["verbs"])


def grants(rules: list[dict[str, Any]]) -> set[tuple[str, str, str, tuple[str, ...]]]:
    """(apiGroup, resource, verb, resourceNames) for every combination a rule list grants."""
    return {
        (group, resource, verb, tuple(rule.get("resourceNames", ())))
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_the_listener_may_only_patch_its_set_and_runner_status_in_its_namespace(
    rendered: list[dict[str, Any]],
) -> None:
    role = one(rendered, "Role", "arc-runners-listener")
    assert role["metadata"]["namespace"] == "arc-runners"
    assert grants(role["rules"]) == {
        ("actions.github.com", "ephemeralrunnersets", "patch", ("arc-runners",)),
        ("actions.github.com", "ephemeralrunners/status", "patch", ()),
    }
    binding = one(rendered, "RoleBinding", "arc-runners-listener")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "arc-runners-listener",
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "arc-runners-listener", "namespace": "arc-runners"}
    ]
    # the listener's set is the one its config and the sample name
    ers = by_kind(rendered, "EphemeralRunnerSet")[0]
    assert (ers["metadata"]["namespace"], ers["metadata"]["name"]) == ("arc-runners", "arc-runners")
    # and it is bound to nothing cluster-wide
    for crb in by_kind(rendered, "ClusterRoleBinding"):
        assert all(s["name"] != "arc-runners-listener" for s in crb["subjects"])


def test_the_controller_gets_exactly_the_calls_it_makes(rendered: list[dict[str, Any]]) -> None:
    granted = grants(one(rendered, "ClusterRole", "gha-scaleset-controller")["rules"])
    core = {(g, r, v) for g, r, v, _ in granted}
    expected = {
        *(
            ("actions.github.com", "ephemeralrunnersets", v)
            for v in ("get", "list", "watch", "create", "delete", "patch")
        ),
        *(("actions.github.com", "autoscalingrunnersets", v) for v in ("list", "watch", "patch")),
        ("actions.github.com", "autoscalingrunnersets/status", "patch"),
        ("actions.github.com", "autoscalingrunnersets/finalizers", "update"),
        *(
            ("actions.github.com", "autoscalinglisteners", v)
            for v in ("get", "list", "watch", "create", "patch", "delete")
        ),
        ("actions.github.com", "ephemeralrunnersets/status", "patch"),
        *(
            ("actions.github.com", "ephemeralrunners", v)
            for v in ("get", "list", "watch", "create", "delete", "patch")
        ),
        ("actions.github.com", "ephemeralrunners/status", "patch"),
        ("actions.github.com", "ephemeralrunnersets/finalizers", "update"),
        ("actions.github.com", "ephemeralrunners/finalizers", "update"),
        *(("", "pods", v) for v in ("get", "list", "watch", "create", "delete")),
        *(
            ("actions.github.com", "autoscalinglisteners", v)
            for v in ("get", "list", "watch", "patch")
        ),
        ("actions.github.com", "autoscalinglisteners/status", "patch"),
        ("actions.github.com", "autoscalinglisteners/finalizers", "update"),
        *(("", "serviceaccounts", v) for v in ("get", "create", "delete")),
        *(("rbac.authorization.k8s.io", "roles", v) for v in ("get", "create", "patch", "delete")),
        *(("rbac.authorization.k8s.io", "rolebindings", v) for v in ("get", "create", "delete")),
        *(("", "secrets", v) for v in ("get", "list", "create", "patch", "delete")),
        ("", "configmaps", "get"),
        *(("", "events", v) for v in ("create", "patch")),
        ("apiextensions.k8s.io", "customresourcedefinitions", "get"),
    }
    assert core == expected
    # The start-up check reads the CRDs by name, no other.
    assert {n for g, r, v, n in granted if r == "customresourcedefinitions"} == {
        (
            "ephemeralrunnersets.actions.github.com",
            "ephemeralrunners.actions.github.com",
            "autoscalingrunnersets.actions.github.com",
            "autoscalinglisteners.actions.github.com",
        )
    }
    # Secrets are never watched (cached); listed only by label, for container mode.
    assert "watch" not in {v for g, r, v in core if r == "secrets"}
    leases = one(rendered, "Role", "gha-scaleset-leader-election")
    assert leases["metadata"]["namespace"] == "gha-scaleset"
    assert {(g, r, v) for g, r, v, _ in grants(leases["rules"])} == {
        ("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")
    }


def container(deployment: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any]
    (found,) = deployment["spec"]["template"]["spec"]["containers"]
    return found


def test_the_controller_runs_two_leader_elected_replicas_with_probes_and_resources(
    rendered: list[dict[str, Any]],
) -> None:
    deployment = one(rendered, "Deployment", "ersctl")
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "ersctl"
    main = container(deployment)
    assert main["args"][:2] == ["ersctl", "reconcile"]
    assert "--leader-elect" in main["args"]
    assert "--runner-controller" in main["args"]  # runner Pods need the ER controller
    (port,) = main["ports"]
    assert f"--metrics-addr=:{port['containerPort']}" in main["args"]
    assert main["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": port["name"]}
    assert main["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": port["name"]}
    env = {e["name"]: e for e in main["env"]}
    assert env["POD_NAMESPACE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert main["resources"]["requests"] and main["resources"]["limits"]["memory"]


@pytest.mark.parametrize("name", ["ersctl", "arc-runners-listener"])
def test_every_pod_runs_unprivileged(rendered: list[dict[str, Any]], name: str) -> None:
    pod = one(rendered, "Deployment", name)["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    ctx = container(one(rendered, "Deployment", name))["securityContext"]
    assert ctx["allowPrivilegeEscalation"] is False
    assert ctx["readOnlyRootFilesystem"] is True
    assert ctx["capabilities"]["drop"] == ["ALL"]


def test_one_listener_per_scale_set_reads_its_config_from_a_secret(
    rendered: list[dict[str, Any]], tmp_path: Path
) -> None:
    deployment = one(rendered, "Deployment", "arc-runners-listener")
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"]["type"] == "Recreate"
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "arc-runners-listener"
    main = container(deployment)
    assert main["args"] == ["ghalistener", "run"]
    env = {e["name"]: e["value"] for e in main["env"]}
    (volume,) = pod["volumes"]
    (mount,) = main["volumeMounts"]
    assert mount["name"] == volume["name"]
    assert env["LISTENER_CONFIG_PATH"] == f"{mount['mountPath']}/config.json"
    secret = one(rendered, "Secret", volume["secret"]["secretName"])
    config = yaml.safe_load(secret["stringData"]["config.json"])
    # the listener's own parser accepts the template as the pod will read it
    path = tmp_path / "config.json"
    path.write_text(secret["stringData"]["config.json"], encoding="utf-8")
    parsed = load_listener_config(path=None, env={"LISTENER_CONFIG_PATH": str(path)})
    assert parsed.runner_scale_set_id == config["runner_scale_set_id"]
    ers = by_kind(rendered, "EphemeralRunnerSet")[0]
    assert config["ephemeral_runner_set_namespace"] == ers["metadata"]["namespace"]
    assert config["ephemeral_runner_set_name"] == ers["metadata"]["name"]
    assert config["runner_scale_set_id"] == ers["spec"]["ephemeralRunnerSpec"]["runnerScaleSetId"]


def test_the_listener_is_probed_on_its_metrics_port(rendered: list[dict[str, Any]]) -> None:
    main = container(one(rendered, "Deployment", "arc-runners-listener"))
    (volume,) = one(rendered, "Deployment", "arc-runners-listener")["spec"]["template"]["spec"][
        "volumes"
    ]
    secret = one(rendered, "Secret", volume["secret"]["secretName"])
    config = yaml.safe_load(secret["stringData"]["config.json"])
    (port,) = main["ports"]
    # the probes reach the server that metrics_addr opens (it serves /healthz, /readyz)
    assert config["metrics_addr"].rpartition(":")[2] == str(port["containerPort"])
    assert main["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": port["name"]}
    assert main["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": port["name"]}


def test_the_sample_set_names_the_credentials_secret_template(
    rendered: list[dict[str, Any]],
) -> None:
    ers = by_kind(rendered, "EphemeralRunnerSet")[0]
    secret = one(rendered, "Secret", ers["spec"]["ephemeralRunnerSpec"]["githubConfigSecret"])
    assert secret["metadata"]["namespace"] == ers["metadata"]["namespace"]
    assert set(secret["stringData"]) == {"github_token"}
    containers = ers["spec"]["ephemeralRunnerSpec"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["runner"]


def test_the_image_is_multi_stage_slim_and_runs_as_a_non_root_user() -> None:
    stages = dockerfile_stages(ROOT / "Dockerfile")
    assert len(stages) >= 2
    final = stages[-1]
    arg = re.search(r"ARG PYTHON_IMAGE=(\S+)", (ROOT / "Dockerfile").read_text())
    assert arg and re.fullmatch(r"python:3\.1[1-9][-.\w]*-slim[-\w]*", arg.group(1))
    users = [line.split()[1] for line in final if line.upper().startswith("USER ")]
    assert users and users[-1].split(":")[0] not in {"0", "root"}
    assert users[-1].split(":")[0].isdigit()  # numeric, so runAsNonRoot can verify it
    final_text = " ".join(final)
    for build_tool in ("pip install", "apt-get install", "gcc", "build-essential"):
        assert build_tool not in final_text
    assert any(line.startswith("COPY --from=") for line in final)


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), "--request-timeout=20s", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


PLURALS = {
    "Namespace": "namespaces",
    "CustomResourceDefinition": "customresourcedefinitions",
    "ServiceAccount": "serviceaccounts",
    "Role": "roles",
    "RoleBinding": "rolebindings",
    "ClusterRole": "clusterroles",
    "ClusterRoleBinding": "clusterrolebindings",
    "Secret": "secrets",
    "Deployment": "deployments",
    "EphemeralRunnerSet": "ephemeralrunnersets",
}


@pytest.mark.embedded_only("applies cluster-scoped objects and fixed-name namespaces")
def test_kubectl_applies_the_rendered_base_to_the_embedded_api_server(
    rendered: list[dict[str, Any]], tmp_path: Path
) -> None:
    # The README's order: the CRDs first (a single apply cannot create a custom resource
    # whose CRD it creates: kubectl maps kinds before it sends anything), then the base,
    # both server-side: like ARC's, the CRDs exceed the annotation a client-side apply
    # writes, and a real API server refuses that (so does this one, checked below).
    crds = subprocess.run(
        ["kubectl", "kustomize", str(ROOT / "ersctl" / "crds")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    with ApiServer(crds=False) as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        kubectl(kubeconfig, "apply", "--server-side", "--force-conflicts", "-f", "-", stdin=crds)
        out = kubectl(kubeconfig, "apply", "--server-side", "-k", str(BASE))
        assert len(out.strip().splitlines()) == len(rendered)
        for doc in rendered:
            meta = doc["metadata"]
            stored = server.get_object(
                PLURALS[doc["kind"]], meta.get("namespace", ""), meta["name"]
            )
            assert stored is not None, (doc["kind"], meta["name"])
            for field in ("spec", "rules", "roleRef", "subjects"):
                if field in doc:  # the server may default more (a Namespace's spec)
                    assert stored.get(field) == doc[field], (doc["kind"], meta["name"], field)
        # Applying again changes nothing (a server-side apply reports every object
        # "serverside-applied", so the stored versions tell).
        versions = {
            (plural, o["metadata"].get("namespace", ""), o["metadata"]["name"]): o["metadata"][
                "resourceVersion"
            ]
            for plural in set(PLURALS.values())
            for o in server.list_objects(plural)
        }
        again = kubectl(kubeconfig, "apply", "--server-side", "-k", str(BASE))
        assert all(line.endswith("serverside-applied") for line in again.strip().splitlines())
        for (plural, namespace, name), version in versions.items():
            after = server.get_object(plural, namespace, name)
            assert after is not None and after["metadata"]["resourceVersion"] == version, name
        client_side = subprocess.run(
            ["kubectl", "--kubeconfig", str(kubeconfig), "apply", "-k", str(BASE)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert client_side.returncode != 0
        assert "metadata.annotations: Too long" in client_side.stderr


def test_every_option_the_controller_deployment_passes_exists_in_ersctl_reconcile(
    rendered: list[dict[str, Any]],
) -> None:
    args = container(one(rendered, "Deployment", "ersctl"))["args"]
    command = ersctl_main.commands["reconcile"]
    accepted = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
    given = {arg.split("=", 1)[0] for arg in args[2:] if arg.startswith("--")}
    assert given and given <= accepted
    # and the arguments parse: a typo in a value fails here, not in a crash-looping pod
    command.make_context("reconcile", list(args[2:]))
