"""The machine's kubectl as a user drives it, validation on (its default): apply (client-
and server-side) of our CRDs, a set and the built-in kinds the deploy base uses, get,
explain, merge patches (one with a stale resourceVersion), status patch, delete with a
finalizer, watch, and sorted events. Against the test's Kubernetes API; the tests of
``python -m ersctl.testing.apiserver`` itself run it as a subprocess."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from ersctl import api
from ersctl.crds import CRD_FILES
from ersctl.testing.apiserver.semantics import TOTAL_ANNOTATION_SIZE_LIMIT
from tests.certificates import server_certificates
from tests.kubeapi import KubeApi, fresh_name
from tests.kubectl import Kubectl, needs_kubectl
from tests.standalone import Standalone

EXAMPLES = Path(__file__).parents[4] / "examples"
SAMPLE = EXAMPLES / "ephemeralrunnerset.yaml"

pytestmark = needs_kubectl


def sample(**changes: Any) -> str:
    """examples/ephemeralrunnerset.yaml without its namespace (the test's is the
    default), ``changes`` merged into its spec."""
    doc = yaml.safe_load(SAMPLE.read_text())
    del doc["metadata"]["namespace"]
    doc["spec"].update(changes)
    return yaml.safe_dump(doc)


def test_kubectl_applies_the_crds_and_a_set_with_client_side_validation_on(
    kubectl: Kubectl,
) -> None:
    # No --validate=false: kubectl finds the fieldValidation parameter in /openapi/v3
    # and has the server check the objects strictly. The CRDs go server-side, as the
    # README installs them: like ARC's, they exceed the client-side annotation limit.
    applied = kubectl("apply", "--server-side", "--force-conflicts", "-f", f"{EXAMPLES / 'crds'}/")
    created = kubectl("apply", "-f", "-", stdin=sample())
    misspelt = kubectl("apply", "-f", "-", stdin=sample(bogus=2), check=False)

    assert applied.stdout.count("customresourcedefinition.apiextensions.k8s.io/") == len(CRD_FILES)
    assert "ephemeralrunnerset.actions.github.com/arc-runners created" in created.stdout
    assert misspelt.returncode != 0
    assert 'unknown field "spec.bogus"' in misspelt.stderr


def test_kubectl_drives_a_set_through_its_whole_lifecycle(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=sample())

    listing = kubectl("get", "ers").stdout
    assert "arc-runners" in listing and "PATCHID" in listing

    before = kubectl.json("get", "ers", "arc-runners")["metadata"]["resourceVersion"]
    kubectl(
        "patch", "ers", "arc-runners", "--type=merge", "-p", '{"spec":{"replicas":3,"patchID":1}}'
    )
    stale = kubectl(
        "patch",
        "ers",
        "arc-runners",
        "--type=merge",
        "-p",
        json.dumps({"metadata": {"resourceVersion": before}, "spec": {"replicas": 9}}),
        check=False,
    )
    assert stale.returncode != 0
    assert "Conflict" in stale.stderr
    assert kubectl.json("get", "ers", "arc-runners")["spec"]["replicas"] == 3

    kubectl(
        "patch",
        "ers",
        "arc-runners",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"phase":"Running","currentReplicas":0},"spec":{"replicas":0}}',
    )
    patched = kubectl.json("get", "ers", "arc-runners")
    assert patched["status"] == {"phase": "Running", "currentReplicas": 0}
    assert patched["spec"]["replicas"] == 3

    kubectl(
        "patch",
        "ers",
        "arc-runners",
        "--type=merge",
        "-p",
        json.dumps({"metadata": {"finalizers": [api.ERS_FINALIZER]}}),
    )
    kubectl("delete", "ers", "arc-runners", "--dry-run=server")
    assert "deletionTimestamp" not in kubectl.json("get", "ers", "arc-runners")["metadata"]
    kubectl("delete", "ers", "arc-runners", "--wait=false")
    assert kubectl.json("get", "ers", "arc-runners")["metadata"]["deletionTimestamp"]

    watcher = subprocess.Popen(
        kubectl.command("--request-timeout=2s", "get", "ers", "-w", "--output-watch-events"),
        env=kubectl.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert watcher.stdout is not None
    first = watcher.stdout.readline()  # the header: the list is done, the watch starts
    kubectl("patch", "ers", "arc-runners", "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    out = watcher.stdout.read()  # until kubectl ends the watch at its request timeout
    watcher.stdout.close()
    watcher.wait(timeout=15)

    lines = [line for line in (first + out).splitlines() if line.strip()]
    assert lines[0].split()[:2] == ["EVENT", "NAME"]
    events = [line.split()[0] for line in lines[1:]]
    assert events == ["ADDED", "DELETED"]
    gone = kubectl("get", "ers", "arc-runners", check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr


def test_kubectl_server_side_apply_creates_merges_and_answers_a_conflict(
    kubectl: Kubectl,
) -> None:
    first = kubectl("apply", "--server-side", "-f", "-", stdin=sample())
    kubectl("patch", "ers", "arc-runners", "--type=merge", "-p", '{"spec":{"replicas":3}}')
    conflict = kubectl("apply", "--server-side", "-f", "-", stdin=sample(), check=False)
    forced = kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=sample())

    assert "arc-runners serverside-applied" in first.stdout
    assert conflict.returncode != 0
    assert 'conflict with "kubectl-patch"' in conflict.stderr
    assert ".spec.replicas" in conflict.stderr
    assert "serverside-applied" in forced.stdout
    stored = kubectl.json("get", "ers", "arc-runners", "--show-managed-fields")
    assert stored["spec"]["replicas"] == 0
    owners = {(e["manager"], e["operation"]) for e in stored["metadata"]["managedFields"]}
    assert ("kubectl", "Apply") in owners


BUILT_IN = """
apiVersion: v1
kind: ServiceAccount
metadata: {name: ersctl}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {mode: test}
---
apiVersion: v1
kind: Secret
metadata: {name: github-credentials}
stringData: {github_token: t0ken}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader}
rules: [{apiGroups: [""], resources: [secrets], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects: [{kind: ServiceAccount, name: ersctl}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: ersctl}
spec:
  replicas: 0
  selector: {matchLabels: {app: ersctl}}
  template:
    metadata: {labels: {app: ersctl}}
    spec:
      schedulerName: gha-scaleset-tests-no-scheduler
      containers:
        - {name: ersctl, image: "gha-scaleset:0.1.0", args: [reconcile]}
"""


def test_kubectl_server_side_apply_of_the_built_in_kinds_merges_lists_by_key(
    kubectl: Kubectl,
) -> None:
    applied = kubectl("apply", "--server-side", "-f", "-", stdin=BUILT_IN)
    # Another manager adds an environment variable to the same container: the container
    # list merges by name, so both managers' fields are kept.
    env = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "ersctl"},
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "ersctl", "env": [{"name": "A", "value": "1"}]}]}
            }
        },
    }
    kubectl("apply", "--server-side", "--field-manager=env", "-f", "-", stdin=json.dumps(env))
    again = kubectl("apply", "--server-side", "-f", "-", stdin=BUILT_IN)

    assert applied.stdout.count("serverside-applied") == 6
    assert again.stdout.count("serverside-applied") == 6
    (container,) = kubectl.json("get", "deployment", "ersctl")["spec"]["template"]["spec"][
        "containers"
    ]
    assert container["image"] == "gha-scaleset:0.1.0" and container["args"] == ["reconcile"]
    assert container["env"] == [{"name": "A", "value": "1"}]
    assert kubectl.json("get", "secret", "github-credentials")["data"] == {
        "github_token": "dDBrZW4="
    }


def _big_crd(group: str) -> dict[str, Any]:
    """A CRD as large as ARC's: its descriptions alone exceed the annotation limit."""
    words = "Describes a field of a very large custom resource, as ARC's do. " * 40
    properties = {f"field{i}": {"type": "string", "description": words} for i in range(120)}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"bigs.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": "Big", "listKind": "BigList", "plural": "bigs", "singular": "big"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": {"type": "object", "properties": properties}},
                        }
                    },
                }
            ],
        },
    }


@pytest.fixture
def big_crd(kubectl: Kubectl) -> Iterator[dict[str, Any]]:
    crd = _big_crd(f"{fresh_name('t')}.gha-scaleset.test")
    yield crd
    kubectl("delete", "crd", crd["metadata"]["name"], "--ignore-not-found", check=False)


def test_a_client_side_apply_whose_last_applied_annotation_is_too_long_is_refused(
    kubectl: Kubectl, big_crd: dict[str, Any]
) -> None:
    manifest = json.dumps(big_crd)
    assert TOTAL_ANNOTATION_SIZE_LIMIT == 256 * 1024, "kube-apiserver's TotalAnnotationSizeLimitB"
    assert len(manifest) > TOTAL_ANNOTATION_SIZE_LIMIT

    client_side = kubectl("apply", "-f", "-", stdin=manifest, check=False)
    server_side = kubectl("apply", "--server-side", "-f", "-", stdin=manifest)

    assert client_side.returncode != 0
    assert "metadata.annotations: Too long" in client_side.stderr
    assert str(TOTAL_ANNOTATION_SIZE_LIMIT) in client_side.stderr
    assert "serverside-applied" in server_side.stdout


def test_kubectl_sorts_events_by_a_field_of_the_full_objects_in_the_table(
    kubectl: Kubectl, kube: KubeApi
) -> None:
    # --sort-by asks for the table with includeObject=Object and sorts by the objects.
    for name, reason, at in (("b", "Second", "02"), ("a", "First", "01")):
        kube.create_object(
            "events",
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": name},
                "involvedObject": {"kind": "Pod", "name": "p", "namespace": kube.namespace},
                "reason": reason,
                "message": "m",
                "type": "Normal",
                "count": 1,
                "firstTimestamp": f"2026-01-01T00:00:{at}Z",
                "lastTimestamp": f"2026-01-01T00:00:{at}Z",
            },
        )

    listed = kubectl("get", "events", "--sort-by=.lastTimestamp").stdout

    reasons = [line.split()[2] for line in listed.splitlines()[1:]]
    assert reasons == ["First", "Second"]


def test_kubectl_explain_describes_our_kinds_from_the_openapi_documents(
    kubectl: Kubectl,
) -> None:
    spec = kubectl("explain", "ers.spec.replicas").stdout
    labels = kubectl("explain", "er.metadata.labels").stdout

    assert "KIND:       EphemeralRunnerSet" in spec
    assert "The number of EphemeralRunners wanted" in spec
    assert "map[string]string" in labels


def test_kubectl_create_of_built_in_types_sends_protobuf_that_is_understood(
    kubectl: Kubectl, kube: KubeApi
) -> None:
    namespace = fresh_name("created")
    kube.clean_up_namespace(namespace)
    kubectl("create", "namespace", namespace)
    kubectl(
        "create",
        "secret",
        "generic",
        "github-credentials",
        "-n",
        namespace,
        "--from-literal=github_token=t0ken",
    )
    kubectl("create", "configmap", "settings", "-n", namespace, "--from-literal=mode=test")
    kubectl("create", "serviceaccount", "ersctl", "-n", namespace)
    kubectl("label", "secret", "github-credentials", "-n", namespace, "team=ci")

    secret = kubectl.json("get", "secret", "github-credentials", "-n", namespace)
    config = kubectl.json("get", "configmap", "settings", "-n", namespace)
    phase = kubectl("get", "namespace", namespace, "-o", "jsonpath={.status.phase}").stdout

    assert secret["data"] == {"github_token": "dDBrZW4="}
    assert (secret["type"], secret["metadata"]["labels"]) == ("Opaque", {"team": "ci"})
    assert config["data"] == {"mode": "test"}
    assert phase == "Active"
    accounts = kubectl("get", "sa", "ersctl", "-n", namespace, "-o", "name").stdout.split()
    assert accounts == ["serviceaccount/ersctl"]


# -- python -m ersctl.testing.apiserver ---------------------------------------------


STANDALONE = pytest.mark.embedded_only("runs the embedded server's own command line")


@STANDALONE
def test_the_standalone_server_serves_kubectl_with_validation_on(tmp_path: Path) -> None:
    server = Standalone(tmp_path, "--no-crds")
    try:
        kubectl = server.kubectl
        crds = kubectl("apply", "--server-side", "-f", f"{EXAMPLES / 'crds'}/")
        created = kubectl("apply", "-f", str(SAMPLE))
        resources = kubectl("api-resources", "--api-group", api.GROUP).stdout
        raw = kubectl("get", "--raw", f"/apis/{api.GROUP}/{api.VERSION}").stdout
        version = kubectl("version", "-o", "json").stdout
    finally:
        assert server.stop() == 0

    assert server.ready_line.startswith("ready http://127.0.0.1:")
    assert crds.stdout.count("serverside-applied") == len(CRD_FILES)
    assert "created" in created.stdout
    rows = {line.split()[0]: line.split() for line in resources.splitlines()[1:]}
    assert set(rows) == {
        "ephemeralrunners",
        "ephemeralrunnersets",
        "autoscalingrunnersets",
        "autoscalinglisteners",
    }
    assert (rows["ephemeralrunners"][1], rows["ephemeralrunnersets"][1]) == ("er", "ers")
    names = {r["name"] for r in json.loads(raw)["resources"]}
    assert {"ephemeralrunnersets/status", "ephemeralrunners/status"} <= names
    assert json.loads(version)["serverVersion"]["minor"] == "32"


@STANDALONE
def test_the_standalone_server_exits_cleanly_on_sigint(tmp_path: Path) -> None:
    server = Standalone(tmp_path)

    code = server.stop(signal.SIGINT)

    assert server.ready_line.startswith("ready http://127.0.0.1:")
    assert "current-context: ersctl-testing" in server.kubectl.kubeconfig.read_text()
    assert code == 0


@STANDALONE
def test_the_standalone_server_names_a_port_it_cannot_bind_and_exits_1(tmp_path: Path) -> None:
    first = Standalone(tmp_path / "first")
    port = first.ready_line.rsplit(":", 1)[1]
    try:
        second = subprocess.run(
            [sys.executable, "-m", "ersctl.testing.apiserver", "--port", port],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    finally:
        first.stop()

    assert second.returncode == 1
    assert second.stdout == ""
    assert second.stderr.strip().splitlines() == [
        f"error: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]


@STANDALONE
def test_the_standalone_server_serves_https_and_asks_for_the_token_it_was_given(
    tmp_path: Path,
) -> None:
    tls = server_certificates(tmp_path)
    (tmp_path / "ca.pem").write_text(tls.root_pem)
    server = Standalone(
        tmp_path,
        "--tls-cert-file", str(tmp_path / "leaf.pem"),
        "--tls-private-key-file", str(tmp_path / "leaf.key"),
        "--tls-ca-file", str(tmp_path / "ca.pem"),
        "--token", "t0ken",
    )  # fmt: skip
    try:
        listed = server.kubectl("get", "namespaces", "-o", "name")
        url = server.ready_line.removeprefix("ready ")
        anonymous = httpx.get(f"{url}/api/v1/namespaces", verify=False)  # noqa: S501
    finally:
        assert server.stop() == 0

    assert server.ready_line.startswith("ready https://127.0.0.1:")
    assert "namespace/default" in listed.stdout.splitlines()
    assert anonymous.status_code == 401
