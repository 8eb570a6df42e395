"""The install in examples/deploy and the scale-set overlay in examples/deploy/scale-set:
they render, every object is valid for the Kubernetes version we document, the RBAC is
least-privilege and lets the controller grant the listener's Role, the Dockerfile keeps
its promises, and no manifest holds an object or field a controller writes, so that
re-applying them (the upgrade path) changes nothing live: the issue this layout fixes
is a re-apply that reset a live EphemeralRunnerSet's replicas, patchID and URL.

Schemas: built-in kinds are validated with ``kubernetes-validate`` against Kubernetes
**v1.32** (the kubectl on the build machines, and the version the README documents),
in strict mode so a misspelt field fails; custom resources against the
``openAPIV3Schema`` of the CRD rendered alongside them.
"""

from __future__ import annotations

import copy
import functools
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from ersctl import api
from ersctl.autoscalinglistener import rbac as listener_rbac
from ersctl.autoscalingrunnerset.desired import validate as validate_ars
from ersctl.cli import main as ersctl_main
from ersctl.crds import SAFE_LOADER, load_crds
from ersctl.testing.apiserver import ApiServer
from ghalistener.testing.model import GitHubSimulator
from ghalistener.testing.server import serve
from tests.deploy.image import dockerfile_stages
from tests.kubeclient import unlike
from tests.polling import eventually

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "examples" / "deploy"
SCALE_SET = BASE / "scale-set"
KUBERNETES_VERSION = "1.32"
CONTROLLER_NS = "gha-scaleset"
SET_NS = "arc-runners"
WAIT = 60.0  # generous: subprocesses on a shared 2-core machine

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is absent")


def kustomize(path: Path) -> str:
    """``kubectl kustomize path``: what ``kubectl apply -k path`` sends."""
    return subprocess.run(
        ["kubectl", "kustomize", str(path)], check=True, capture_output=True, text=True
    ).stdout


@functools.cache
def install() -> str:
    """The install (examples/deploy) as ``kubectl apply -k`` sends it, kustomized once per
    test process: it holds the four CRDs (2.7 MB), and kubectl takes about 1.5 CPU-s to
    kustomize them, which every ``apply -k`` of the install paid again. No test edits
    the shipped files (they edit copies), so one rendering serves them all."""
    return kustomize(BASE)


def render(path: Path = BASE) -> list[dict[str, Any]]:
    out = install() if path == BASE else kustomize(path)
    return [doc for doc in yaml.load_all(out, Loader=SAFE_LOADER) if doc]


@pytest.fixture(scope="module")
def rendered_once() -> list[dict[str, Any]]:
    return render()


@pytest.fixture
def rendered(rendered_once: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A fresh copy per test: tests change documents to check that validation bites."""
    return copy.deepcopy(rendered_once)


@pytest.fixture(scope="module")
def overlay() -> list[dict[str, Any]]:
    return render(SCALE_SET)


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


def assert_valid(docs: list[dict[str, Any]], schemas: dict[tuple[str, str], Any]) -> None:
    """Every document valid for Kubernetes 1.32 (strict) or its CRD's schema."""
    for doc in docs:
        key = (doc["apiVersion"], doc["kind"])
        if key in schemas:
            jsonschema.Draft202012Validator(schemas[key]).validate(doc)
        else:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_the_install_renders_the_crds_the_controller_and_its_rbac_only(
    rendered: list[dict[str, Any]],
) -> None:
    kinds = {doc["kind"] for doc in rendered}
    assert kinds == {
        "Namespace",
        "CustomResourceDefinition",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Deployment",
    }
    assert {doc["metadata"].get("namespace", "") for doc in rendered} == {"", CONTROLLER_NS}


def test_the_overlay_renders_one_scale_set_and_its_credentials(
    overlay: list[dict[str, Any]],
) -> None:
    assert sorted(doc["kind"] for doc in overlay) == [
        "AutoscalingRunnerSet",
        "Namespace",
        "Secret",
        "ServiceAccount",
    ]
    ars = by_kind(overlay, "AutoscalingRunnerSet")[0]
    spec = ars["spec"]
    secret = one(overlay, "Secret", spec["githubConfigSecret"])
    assert secret["metadata"]["namespace"] == ars["metadata"]["namespace"] == SET_NS
    assert set(secret["stringData"]) == {"github_token"}
    pod = spec["template"]["spec"]
    assert [c["name"] for c in pod["containers"]] == ["runner"]
    # its runners use the account the overlay makes, which no Role is bound to
    one(overlay, "ServiceAccount", pod["serviceAccountName"])


# Kinds and fields only a controller writes. A manifest that holds one is reset by every
# apply: the listener's replicas and patchID, a runner's registration, the scale set id.
CONTROLLER_KINDS = {"EphemeralRunnerSet", "EphemeralRunner", "AutoscalingListener", "Pod"}


def assert_holds_nothing_a_controller_writes(docs: list[dict[str, Any]]) -> None:
    for doc in docs:
        what = (doc["kind"], doc["metadata"]["name"])
        assert doc["kind"] not in CONTROLLER_KINDS, what
        assert "status" not in doc, what
        # finalizers: the ARS's own, ARC's cleanup-protection on its credentials Secret
        assert "finalizers" not in doc["metadata"], what
        if doc["kind"] == "AutoscalingRunnerSet":
            # the scale set id, name, runner group and labels; the GitHub URL's labels
            for field in ("annotations", "labels"):
                written = [k for k in doc["metadata"].get(field, {}) if k.startswith("actions.")]
                assert not written, (what, field, written)


def test_no_manifest_holds_an_object_or_field_a_controller_writes(
    rendered: list[dict[str, Any]], overlay: list[dict[str, Any]]
) -> None:
    assert_holds_nothing_a_controller_writes(rendered)
    assert_holds_nothing_a_controller_writes(overlay)


def test_every_rendered_object_is_valid_for_the_documented_kubernetes_version(
    rendered: list[dict[str, Any]], overlay: list[dict[str, Any]]
) -> None:
    assert_valid(rendered + overlay, crd_schemas(rendered))


def test_the_validation_rejects_a_misspelt_field(
    rendered: list[dict[str, Any]], overlay: list[dict[str, Any]]
) -> None:
    # Guards the test above against validating nothing (e.g. a schema lookup that
    # silently accepts everything).
    deployment = one(rendered, "Deployment", "ersctl")
    deployment["spec"]["replicaz"] = 2
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)
    ars = copy.deepcopy(by_kind(overlay, "AutoscalingRunnerSet")[0])
    ars["spec"]["maxRunners"] = "ten"
    with pytest.raises(jsonschema.ValidationError):
        assert_valid([ars], crd_schemas(rendered))


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
    assert len(rendered_crds) == 4


def test_the_placeholders_are_refused_naming_the_field(overlay: list[dict[str, Any]]) -> None:
    # Applied unedited, the set gets a Warning Event naming the field (shown end to end
    # in the re-apply test below) rather than a scale set registered at a wrong URL.
    ars = api.AutoscalingRunnerSet(by_kind(overlay, "AutoscalingRunnerSet")[0])
    with pytest.raises(api.FieldError, match=r"spec\.githubConfigUrl"):
        validate_ars(ars)


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


def test_the_controller_holds_every_permission_of_the_listener_role_it_grants(
    rendered: list[dict[str, Any]],
) -> None:
    # Kubernetes refuses to create a Role (or bind one) granting more than its creator
    # holds, unless it has `escalate`/`bind`, which the controller does not get: each
    # listener's Role must fit inside the controller's ClusterRole, or no listener starts.
    held = grants(one(rendered, "ClusterRole", "gha-scaleset-controller")["rules"])
    unrestricted = {(g, r, v) for g, r, v, names in held if not names}
    listener = api.AutoscalingListener(
        {
            "apiVersion": "actions.github.com/v1alpha1",
            "kind": "AutoscalingListener",
            "metadata": {"name": "arc-runners-754b578d-listener", "namespace": SET_NS},
            "spec": {
                "githubConfigUrl": "https://github.com/my-org",
                "githubConfigSecret": "github-credentials",
                "runnerScaleSetId": 1,
                "autoscalingRunnerSetNamespace": SET_NS,
                "autoscalingRunnerSetName": "arc-runners",
                "ephemeralRunnerSetName": "arc-runners-x7k2p",
            },
        }
    )
    granted = grants(listener_rbac.listener_rules(listener))
    assert granted
    for group, resource, verb, names in granted:
        assert (group, resource, verb) in unrestricted or (group, resource, verb, names) in held, (
            f"the listener Role grants {verb} {resource} the controller does not hold"
        )


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
        *(("", "pods", v) for v in ("get", "list", "watch", "create", "patch", "delete")),
        *(
            ("actions.github.com", "autoscalinglisteners", v)
            for v in ("get", "list", "watch", "patch")
        ),
        ("actions.github.com", "autoscalinglisteners/status", "patch"),
        ("actions.github.com", "autoscalinglisteners/finalizers", "update"),
        *(("", "serviceaccounts", v) for v in ("get", "create", "patch", "delete")),
        *(("rbac.authorization.k8s.io", "roles", v) for v in ("get", "create", "patch", "delete")),
        *(
            ("rbac.authorization.k8s.io", "rolebindings", v)
            for v in ("get", "create", "patch", "delete")
        ),
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
    assert leases["metadata"]["namespace"] == CONTROLLER_NS
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
    # every controller: no scale set works without the ARS, listener and runner ones
    assert not [a for a in main["args"] if a.startswith("--no-") and a.endswith("-controller")]
    (port,) = main["ports"]
    assert f"--metrics-addr=:{port['containerPort']}" in main["args"]
    assert main["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": port["name"]}
    assert main["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": port["name"]}
    env = {e["name"]: e for e in main["env"]}
    assert env["POD_NAMESPACE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    # the listener Pods run the controller's own image, read from its Pod
    assert not [a for a in main["args"] if a.startswith("--listener-image")]
    assert env["POD_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert main["resources"]["requests"] and main["resources"]["limits"]["memory"]


def test_the_controller_runs_unprivileged(rendered: list[dict[str, Any]]) -> None:
    pod = one(rendered, "Deployment", "ersctl")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    ctx = container(one(rendered, "Deployment", "ersctl"))["securityContext"]
    assert ctx["allowPrivilegeEscalation"] is False
    assert ctx["readOnlyRootFilesystem"] is True
    assert ctx["capabilities"]["drop"] == ["ALL"]


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


# -- kubectl against the embedded API server -------------------------------------------


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


def apply_install(kubeconfig: Path, *options: str) -> str:
    """``kubectl apply --server-side -k examples/deploy`` (the README's), with the
    install's one rendering (:func:`install`) as ``-f -``."""
    return kubectl(kubeconfig, "apply", "--server-side", *options, "-f", "-", stdin=install())


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
    "AutoscalingRunnerSet": "autoscalingrunnersets",
}
# What the controllers make besides: all of it must survive a re-apply untouched.
WRITTEN_BY_CONTROLLERS = (
    "autoscalinglisteners",
    "ephemeralrunnersets",
    "ephemeralrunners",
    "pods",
    "configmaps",
    "leases",
)


def versions(server: ApiServer) -> dict[tuple[str, str, str], str]:
    """(plural, namespace, name) -> resourceVersion of every object the test can see."""
    return {
        (plural, o["metadata"].get("namespace", ""), o["metadata"]["name"]): o["metadata"][
            "resourceVersion"
        ]
        for plural in {*PLURALS.values(), *WRITTEN_BY_CONTROLLERS}
        for o in server.list_objects(plural)
    }


def assert_unchanged(server: ApiServer, before: dict[tuple[str, str, str], str]) -> None:
    after = versions(server)
    changed = sorted(
        key for key in before.keys() | after.keys() if before.get(key) != after.get(key)
    )
    assert not changed, f"changed by the re-apply: {changed}"


@pytest.mark.embedded_only("applies cluster-scoped objects and fixed-name namespaces")
@pytest.mark.slow
def test_kubectl_applies_the_install_and_the_overlay_to_the_embedded_api_server(
    rendered: list[dict[str, Any]], overlay: list[dict[str, Any]], tmp_path: Path
) -> None:
    # The install holds no custom resource, so one server-side apply takes the CRDs and
    # the rest (kubectl maps every kind before it creates anything: an ARS in the same
    # apply would fail); server-side because, like ARC's, the CRDs exceed the annotation
    # a client-side apply writes, and a real API server refuses that (so does this one,
    # checked below). The overlay comes second.
    with ApiServer(crds=False) as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        out = kubectl(kubeconfig, "apply", "--server-side", "-k", str(BASE))
        assert len(out.strip().splitlines()) == len(rendered)
        out = kubectl(kubeconfig, "apply", "--server-side", "-k", str(SCALE_SET))
        assert len(out.strip().splitlines()) == len(overlay)
        for doc in rendered + overlay:
            meta = doc["metadata"]
            stored = server.get_object(
                PLURALS[doc["kind"]], meta.get("namespace", ""), meta["name"]
            )
            assert stored is not None, (doc["kind"], meta["name"])
            for field in ("spec", "rules", "roleRef", "subjects"):
                if field in doc:  # the server fills in defaults beside (a Pod template's)
                    assert unlike(doc[field], stored.get(field)) == [], (doc["kind"], field)
        # Applying again changes nothing (a server-side apply reports every object
        # "serverside-applied", so the stored versions tell). The same manifests from
        # here on, rendered once (the first apply above ran kubectl's own kustomize).
        before = versions(server)
        again = apply_install(kubeconfig)
        assert all(line.endswith("serverside-applied") for line in again.strip().splitlines())
        assert_unchanged(server, before)
        client_side = subprocess.run(
            ["kubectl", "--kubeconfig", str(kubeconfig), "apply", "-f", "-"],
            input=install(),
            capture_output=True,
            text=True,
            check=False,
        )
        assert client_side.returncode != 0
        assert "metadata.annotations: Too long" in client_side.stderr


def edited_overlay(tmp_path: Path, config_url: str) -> Path:
    """The overlay as a user edits it: the real URL and token in place of REPLACE_ME
    (a kustomization around it, so the files under test are the shipped ones)."""
    root = tmp_path / "my-scale-set"
    root.mkdir()
    ars = {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "AutoscalingRunnerSet",
        "metadata": {"name": "arc-runners", "namespace": SET_NS},
        "spec": {"githubConfigUrl": config_url},
    }
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "github-credentials", "namespace": SET_NS},
        "stringData": {"github_token": "ghp_deployREALtoken0123456789"},
    }
    kustomization = {
        "resources": [os.path.relpath(SCALE_SET, root)],
        "patches": [{"patch": yaml.safe_dump(ars)}, {"patch": yaml.safe_dump(secret)}],
    }
    (root / "kustomization.yaml").write_text(yaml.safe_dump(kustomization), encoding="utf-8")
    return root


def controller_command(rendered: list[dict[str, Any]], kubeconfig: Path) -> list[str]:
    """The Deployment's own arguments (its metrics port closed: tests run in parallel)."""
    args = container(one(rendered, "Deployment", "ersctl"))["args"]
    assert args[0] == "ersctl"
    kept = [a for a in args[1:] if not a.startswith("--metrics-addr")]
    return [
        sys.executable,
        "-m",
        "ersctl",
        *kept,
        "--metrics-addr",
        "0",
        "--kubeconfig",
        str(kubeconfig),
    ]


def warnings_about(server: ApiServer, name: str) -> list[str]:
    return [
        f"{e.get('reason')}: {e.get('message')}"
        for e in server.list_objects("events", SET_NS)
        if e.get("type") == "Warning" and e["involvedObject"]["name"] == name
    ]


@pytest.mark.embedded_only("applies cluster-scoped objects and fixed-name namespaces")
@pytest.mark.slow
@pytest.mark.parametrize("apply", [["--server-side"], []], ids=["server-side", "client-side"])
def test_reapplying_the_manifests_changes_nothing_the_controllers_wrote(
    rendered: list[dict[str, Any]], tmp_path: Path, apply: list[str]
) -> None:
    """Install, apply the overlay unedited (refused, naming the field), then edited; the
    controller (run with the Deployment's arguments) registers the scale set and makes
    its set and listener; a listener's publish is stood in for by a patch; then the
    install and the overlay are applied again and no object in the cluster changed."""
    sim = GitHubSimulator()
    github = serve(sim, port=0)
    config_url = f"{github.url}/my-org"
    log = tmp_path / "controller.log"
    with ApiServer(crds=False) as server, log.open("wb") as out:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        apply_install(kubeconfig)
        kubectl(kubeconfig, "apply", *apply, "-k", str(SCALE_SET))
        # The controller's own Pod, whose image its listeners run (POD_NAME below).
        server.create_object(
            "pods",
            {
                "metadata": {"name": "ersctl-0", "namespace": CONTROLLER_NS},
                "spec": {"containers": [{"name": "ersctl", "image": "gha-scaleset:0.1.0"}]},
            },
        )
        controller = subprocess.Popen(
            controller_command(rendered, kubeconfig),
            env={**os.environ, "POD_NAMESPACE": CONTROLLER_NS, "POD_NAME": "ersctl-0"},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            refused = eventually(
                lambda: warnings_about(server, "arc-runners"), timeout=WAIT, what="a Warning"
            )
            assert "spec.githubConfigUrl" in refused[0], refused
            assert not server.list_objects("ephemeralrunnersets", SET_NS) and not sim.scale_sets

            edited = edited_overlay(tmp_path, config_url)
            kubectl(kubeconfig, "apply", *apply, "-k", str(edited))

            def ars() -> dict[str, Any]:
                found = server.get_object("autoscalingrunnersets", SET_NS, "arc-runners")
                assert found is not None
                return found

            eventually(lambda: ars().get("status", {}).get("phase") == "Running", timeout=WAIT)
            (ers,) = server.list_objects("ephemeralrunnersets", SET_NS)
            # A listener's publish (no kubelet runs the listener Pod here).
            patch = {"spec": {"replicas": 2, "patchID": 123}}
            server.patch_object("ephemeralrunnersets", SET_NS, ers["metadata"]["name"], patch)
            eventually(
                lambda: len(server.list_objects("ephemeralrunners", SET_NS)) == 2, timeout=WAIT
            )
            eventually(lambda: len(server.list_objects("pods", SET_NS)) == 2, timeout=WAIT)
            # The listener's, in the controller's namespace (its Pod's), as ARC's, next
            # to the controller's own.
            eventually(lambda: len(server.list_objects("pods", CONTROLLER_NS)) == 2, timeout=WAIT)
        finally:
            controller.send_signal(signal.SIGTERM)
            controller.wait(timeout=WAIT)
            github.stop()
            sim.close()
        assert controller.returncode == 0, log.read_text(errors="replace")[-3000:]
        assert server.list_objects("autoscalinglisteners", CONTROLLER_NS)
        written = ars()
        assert api.ARS_FINALIZER in written["metadata"]["finalizers"]
        assert written["metadata"]["annotations"][api.RUNNER_SCALE_SET_ID_ANNOTATION]
        before = versions(server)

        apply_install(kubeconfig)
        kubectl(kubeconfig, "apply", *apply, "-k", str(edited))

        assert_unchanged(server, before)
        (ers,) = server.list_objects("ephemeralrunnersets", SET_NS)
        assert (ers["spec"]["replicas"], ers["spec"]["patchID"]) == (2, 123)
        assert ers["spec"]["ephemeralRunnerSpec"]["githubConfigUrl"] == config_url
        assert ars()["metadata"] == written["metadata"]
        assert ars()["status"] == written["status"]
