"""The deployment's RBAC against what the controller really sends.

``ersctl reconcile --runner-controller --leader-elect`` runs as a subprocess against the
embedded API server and the GitHub simulator (GitHub Enterprise Server over TLS with a
private CA, behind a proxy that wants credentials, as the set's ``githubServerTLS`` and
``proxy`` say) while the test takes a scale set through a whole runner life: scale up,
Pod running, proxy password rotated, runner done, cleanup, set deleted; then an
AutoscalingRunnerSet through its life (registered, its set and listener made, min
changed, deleted top-down, releasing what ARC's chart protected). Every
request the controller sent (the server's request log; the test itself writes through
the server's direct API, which is not logged) must be allowed by the rules in
examples/deploy (sufficient), and every rule must have been needed (least privilege).
The listener's Role is the one the listener controller generates, checked the same way
in tests/ersctl/autoscalinglistener/test_listener_rbac.py (these helpers run ``ghalistener run``).
"""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ersctl.testing.apiserver import ApiServer
from ghalistener.testing.model import GitHubSimulator
from ghalistener.testing.server import serve
from tests.arc_chart import protected_rbac, rbac_object
from tests.certificates import server_certificates
from tests.connect_proxy import ConnectProxy
from tests.deploy.rbac import Grant, grant_for, grants, request_of
from tests.deploy.test_deploy import SCALE_SET, render
from tests.ersctl.ephemeralrunner.test_runner_controller import RUNNING, terminated
from tests.polling import eventually

pytestmark = pytest.mark.skipif(not Path("/usr/bin/kubectl").exists(), reason="kubectl absent")

NS = "arc-runners"
CONTROLLER_NS = "gha-scaleset"

# Events are aggregated: a repeat is a patch of the first. One life does not repeat one.
# The finalizers grants are checked by an admission plugin (OwnerReferencesPermission-
# Enforcement) when an ownerReference blocks its owner's deletion; no request uses them.
NOT_EXERCISED_BY_ONE_LIFE = {
    ("", "events", "patch", ""),
    ("actions.github.com", "ephemeralrunnersets/finalizers", "update", ""),
    ("actions.github.com", "ephemeralrunners/finalizers", "update", ""),
    ("actions.github.com", "autoscalingrunnersets/finalizers", "update", ""),
    ("actions.github.com", "autoscalinglisteners/finalizers", "update", ""),
    # The runner controller reads runners from its cache; a GET is left only where the
    # set controller asks whether a runner it created long ago and never saw still
    # exists (ersctl.ephemeralrunnerset.expectations), which one life never reaches.
    ("actions.github.com", "ephemeralrunners", "get", ""),
}
CONTROLLER_IMAGE = "registry.example.com/gha-scaleset:rbac"
WAIT = 60.0  # generous: subprocesses on a shared 2-core machine
PROXY_USER, PROXY_PASSWORD, ROTATED = "rbac", "pr0xy-passw0rd-rbac", "r0tated-passw0rd-rbac"


def rbac() -> tuple[set[Grant], set[Grant]]:
    """(cluster-wide grants, grants in the controller's namespace) of the controller."""
    docs = render()
    cluster = next(
        d
        for d in docs
        if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "gha-scaleset-controller"
    )
    local = next(
        d
        for d in docs
        if d["kind"] == "Role" and d["metadata"]["name"] == "gha-scaleset-leader-election"
    )
    assert local["metadata"]["namespace"] == CONTROLLER_NS
    return grants(cluster["rules"]), grants(local["rules"])


def sample_set(config_url: str, scale_set: int) -> dict[str, Any]:
    """A set with the runner template of the overlay's sample AutoscalingRunnerSet, its
    runners in Kubernetes container mode (so their deletion cleans up what the container
    hooks made: the one use of listing Secrets)."""
    (ars,) = [d for d in render(SCALE_SET) if d["kind"] == "AutoscalingRunnerSet"]
    template = ars["spec"]["template"]
    (runner,) = [c for c in template["spec"]["containers"] if c["name"] == "runner"]
    hooks = {"name": "ACTIONS_RUNNER_CONTAINER_HOOKS", "value": "/home/runner/k8s/index.js"}
    runner["env"] = [*runner.get("env", []), hooks]
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunnerSet",
        "metadata": {"name": "arc-runners", "namespace": NS},
        "spec": {
            "replicas": 0,
            "patchID": 0,
            "ephemeralRunnerSpec": {
                "githubConfigUrl": config_url,
                "githubConfigSecret": ars["spec"]["githubConfigSecret"],
                "runnerScaleSetId": scale_set,
                "spec": template["spec"],
            },
        },
    }


def behind_proxy(ers: dict[str, Any], proxy_url: str) -> dict[str, Any]:
    """``ers`` with an https proxy needing the credentials Secret ``proxy-credentials``
    and the CA of ConfigMap ``ghes-ca``: configmaps get and secrets patch exercised."""
    ers["spec"]["ephemeralRunnerSpec"] |= {
        "proxy": {"https": {"url": proxy_url, "credentialSecretRef": "proxy-credentials"}},
        "githubServerTLS": {
            "certificateFrom": {"configMapKeyRef": {"name": "ghes-ca", "key": "ca.crt"}}
        },
    }
    return ers


def proxy_credentials(password: str) -> dict[str, str]:
    """The ``data`` of the proxy's credentials Secret."""
    values = {"username": PROXY_USER, "password": password}
    return {key: base64.b64encode(value.encode()).decode() for key, value in values.items()}


@pytest.mark.embedded_only("the request log")
@pytest.mark.slow
def test_the_controller_needs_every_permission_the_deployment_grants_and_no_other(
    apiserver: ApiServer, sim: GitHubSimulator, tmp_path: Path
) -> None:
    certificates = server_certificates(tmp_path, hosts=("ghes.test",))
    github = serve(sim, port=0, tls=certificates.server, url_host="ghes.test")
    proxy = ConnectProxy(hosts={"ghes.test": "127.0.0.1"}, credentials=(PROXY_USER, PROXY_PASSWORD))
    scale_set = int(sim.create_scale_set(name="arc-runners")["id"])
    for ns in (NS, CONTROLLER_NS):
        apiserver.create_object("namespaces", {"metadata": {"name": ns}})
    token = base64.b64encode(b"ghp_rbac").decode()
    apiserver.create_object(
        "secrets",
        {
            "metadata": {"name": "github-credentials", "namespace": NS},
            "data": {"github_token": token},
        },
    )
    apiserver.create_object(
        "secrets",
        {
            "metadata": {"name": "proxy-credentials", "namespace": NS},
            "data": proxy_credentials(PROXY_PASSWORD),
        },
    )
    apiserver.create_object(
        "configmaps",
        {
            "metadata": {"name": "ghes-ca", "namespace": NS},
            "data": {"ca.crt": certificates.root_pem},
        },
    )
    ers = behind_proxy(sample_set(f"{github.url}/my-org", scale_set), proxy.url)
    apiserver.create_object("ephemeralrunnersets", ers)

    def rotate_proxy_password() -> None:
        proxy.credentials = (PROXY_USER, ROTATED)
        apiserver.patch_object(
            "secrets", NS, "proxy-credentials", {"data": proxy_credentials(ROTATED)}
        )

    # The controller's own Pod, whose image its listeners run (POD_NAME below).
    apiserver.create_object(
        "pods",
        {
            "metadata": {"name": "ersctl-0", "namespace": CONTROLLER_NS},
            "spec": {"containers": [{"name": "ersctl", "image": CONTROLLER_IMAGE}]},
        },
    )
    kubeconfig = apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    apiserver.request_log.clear()
    log = tmp_path / "controller.log"
    with log.open("wb") as out:
        controller = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ersctl",
                "reconcile",
                "--kubeconfig",
                str(kubeconfig),
                "--runner-controller",
                "--leader-elect",
                "--retry-period",
                "1",
                "--metrics-addr",
                "0",
                "--log-level",
                "debug",
            ],
            env={**os.environ, "POD_NAMESPACE": CONTROLLER_NS, "POD_NAME": "ersctl-0"},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            one_listener_life(apiserver, f"{github.url}/my-org", scale_set)
            with proxy:
                jit = one_runner_life(apiserver, rotate_proxy_password)
                one_scale_set_life(apiserver, f"{github.url}/my-org", ers, sim)
        finally:
            controller.send_signal(signal.SIGTERM)
            controller.wait(timeout=WAIT)
            github.stop()
    output = log.read_text(errors="replace")
    assert controller.returncode == 0, output[-3000:]
    # even at debug level, no credential and no JIT config reaches the log
    assert "registered runner" in output
    encoded = base64.b64encode(jit.encode()).decode()  # as the Secret holds it
    for value in (jit, encoded, "ghp_rbac", token, PROXY_PASSWORD, ROTATED):
        assert value not in output
    # Every GitHub call went through the proxy, with the password of its time.
    passwords = [t.credentials for t in proxy.tunnels()]
    assert passwords[0] == (PROXY_USER, PROXY_PASSWORD) and passwords[-1] == (PROXY_USER, ROTATED)
    assert {t.host for t in proxy.tunnels()} == {"ghes.test"}

    cluster_wide, in_controller_ns = rbac()
    used: set[Grant] = set()
    for record in apiserver.request_log.records():
        if not record.verb:
            continue  # discovery and /version need no RBAC rule
        grant = grant_for(record, cluster_wide)
        if grant is None and record.namespace == CONTROLLER_NS:
            grant = grant_for(record, in_controller_ns)
        assert grant, f"not allowed by examples/deploy RBAC: {record.method} {record.path}"
        used.add(grant)
    unused = (cluster_wide | in_controller_ns) - used - NOT_EXERCISED_BY_ONE_LIFE
    assert not unused, f"granted but never needed: {sorted(unused)}"


def one_listener_life(server: ApiServer, config_url: str, scale_set: int) -> None:
    """Drive one AutoscalingListener (in the controller's namespace, as ARC puts it)
    from creation through a drifted Role and a listener exit to its deletion."""
    name = "arc-runners-listener"

    def pod() -> dict[str, Any] | None:
        return server.get_object("pods", CONTROLLER_NS, name)

    server.create_object(
        "autoscalinglisteners",
        {
            "apiVersion": "actions.github.com/v1alpha1",
            "kind": "AutoscalingListener",
            "metadata": {"name": name, "namespace": CONTROLLER_NS},
            "spec": {
                "githubConfigUrl": config_url,
                "githubConfigSecret": "github-credentials",
                "runnerScaleSetId": scale_set,
                "autoscalingRunnerSetNamespace": NS,
                "autoscalingRunnerSetName": "arc-runners",
                "ephemeralRunnerSetName": "arc-runners",
                "maxRunners": 10,
            },
        },
    )
    first = eventually(pod, timeout=WAIT, what="the listener pod")
    assert first is not None
    uid = first["metadata"]["uid"]
    (container,) = first["spec"]["containers"]
    assert container["image"] == CONTROLLER_IMAGE, "the controller's own image by default"
    (role,) = server.list_objects("roles", NS)
    drifted = {"metadata": {"labels": {"role-policy-rules-hash": "from-an-older-version"}}}
    server.patch_object("roles", NS, role["metadata"]["name"], drifted)
    status = {
        "phase": "Failed",
        "containerStatuses": [
            {"name": "listener", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}
        ],
    }
    server.patch_object("pods", CONTROLLER_NS, name, {"status": status}, subresource="status")
    # exited, counted, and back after its backoff (5 s)
    eventually(lambda: (pod() or first)["metadata"]["uid"] != uid, timeout=WAIT)
    (role,) = server.list_objects("roles", NS)
    assert role["metadata"]["labels"]["role-policy-rules-hash"] != "from-an-older-version"
    server.delete_object("autoscalinglisteners", CONTROLLER_NS, name)
    eventually(
        lambda: server.get_object("autoscalinglisteners", CONTROLLER_NS, name) is None, timeout=WAIT
    )
    assert server.list_objects("roles", NS) == []
    assert server.list_objects("rolebindings", NS) == []


def one_runner_life(server: ApiServer, rotate_proxy_password: Callable[[], None]) -> str:
    """Drive one runner from scale-up to the set's deletion, rotating the proxy password
    while it runs; returns its JIT config."""

    def runners() -> list[dict[str, Any]]:
        return server.list_objects("ephemeralrunners", NS)

    def patch_set(replicas: int, patch_id: int) -> None:
        spec = {"spec": {"replicas": replicas, "patchID": patch_id}}
        server.patch_object("ephemeralrunnersets", NS, "arc-runners", spec)

    eventually(
        lambda: (
            "ephemeralrunnerset.actions.github.com/finalizer"
            in (server.get_object("ephemeralrunnersets", NS, "arc-runners") or {})
            .get("metadata", {})
            .get("finalizers", [])
        ),
        timeout=WAIT,
    )
    patch_set(1, 1)
    eventually(lambda: len(server.list_objects("pods", NS)) == 1, timeout=WAIT)
    (pod,) = server.list_objects("pods", NS)
    name = pod["metadata"]["name"]
    secret = server.get_object("secrets", NS, name)
    assert secret is not None
    jit = base64.b64decode(secret["data"]["jitToken"]).decode()
    server.patch_object("pods", NS, name, {"status": RUNNING}, subresource="status")
    idle = [("Pending", True)]  # online, no job yet
    eventually(
        lambda: [(r["status"].get("phase"), r["status"].get("ready")) for r in runners()] == idle,
        timeout=WAIT,
    )
    job = {"status": {"jobId": "job-1", "jobRequestId": 1}}  # the listener, on JobStarted
    server.patch_object("ephemeralrunners", NS, name, job, subresource="status")
    eventually(lambda: [r["status"].get("phase") for r in runners()] == ["Running"], timeout=WAIT)
    rotate_proxy_password()
    server.patch_object("pods", NS, name, {"status": terminated(0)}, subresource="status")
    eventually(lambda: [r["status"].get("phase") for r in runners()] == ["Succeeded"], timeout=WAIT)
    eventually(lambda: not server.list_objects("pods", NS), timeout=WAIT)
    hook_secret = {"name": "job-env", "namespace": NS, "labels": {"runner-pod": name}}
    server.create_object("secrets", {"metadata": hook_secret})  # made by the hooks
    patch_set(0, 2)  # a fresh patch: the finished runner is cleaned up
    eventually(lambda: not runners(), timeout=WAIT)
    (proxy_secret,) = [
        s for s in server.list_objects("secrets", NS) if "runner-proxy" in s["metadata"]["name"]
    ]
    https_proxy = base64.b64decode(proxy_secret["data"]["https_proxy"]).decode()
    assert f":{ROTATED}@" in https_proxy, "the proxy Secret follows the rotated password"
    assert server.get_object("secrets", NS, "job-env") is None
    server.delete_object("ephemeralrunnersets", NS, "arc-runners")
    eventually(
        lambda: server.get_object("ephemeralrunnersets", NS, "arc-runners") is None, timeout=WAIT
    )
    return jit


def one_scale_set_life(
    server: ApiServer, config_url: str, ers: dict[str, Any], sim: GitHubSimulator
) -> None:
    """Drive an AutoscalingRunnerSet from creation to deletion: registration, its set
    and listener, a min change (the listener patched), teardown. It carries the
    cleanup annotations of ARC's chart (containerMode kubernetes, and the no-permission
    ServiceAccount of the other modes), naming objects the chart protected with ARC's
    finalizer, which the teardown takes off (patch on each kind)."""
    runner_spec = ers["spec"]["ephemeralRunnerSpec"]
    protected = protected_rbac("arc-scale")
    for plural, name in protected.values():
        server.create_object(plural, rbac_object(plural, name, NS))
    ars = {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "AutoscalingRunnerSet",
        "metadata": {
            "name": "arc-scale",
            "namespace": NS,
            "annotations": {annotation: name for annotation, (_, name) in protected.items()},
        },
        "spec": {
            "githubConfigUrl": config_url,
            "githubConfigSecret": "github-credentials",
            "proxy": runner_spec["proxy"],
            "githubServerTLS": runner_spec["githubServerTLS"],
            "template": {"spec": runner_spec["spec"]},
        },
    }
    server.create_object("autoscalingrunnersets", ars)

    def listeners() -> list[dict[str, Any]]:
        # In the controller's namespace (its Pod's), where ARC's controller looks too.
        return server.list_objects("autoscalinglisteners", CONTROLLER_NS)

    eventually(lambda: len(listeners()) == 1, timeout=WAIT)
    server.patch_object("autoscalingrunnersets", NS, "arc-scale", {"spec": {"minRunners": 1}})
    eventually(lambda: listeners()[0]["spec"]["minRunners"] == 1, timeout=WAIT)
    server.delete_object("autoscalingrunnersets", NS, "arc-scale")
    eventually(
        lambda: server.get_object("autoscalingrunnersets", NS, "arc-scale") is None, timeout=WAIT
    )
    assert not listeners() and [s.name for s in sim.scale_sets.values()] == ["arc-runners"]
    for plural, name in protected.values():
        assert (server.get_object(plural, NS, name) or {})["metadata"].get("finalizers") == []


def listener_through_one_job(
    server: ApiServer,
    sim: GitHubSimulator,
    *,
    scale_set: int,
    runner: str,
    namespace: str,
    set_name: str,
    config: Path,
    kubeconfig: Path,
    log: Path,
) -> str:
    """Run ``ghalistener run`` from ``config`` (``LISTENER_CONFIG_PATH``, as in its Pod)
    while a job is assigned, started on ``runner`` and completed, until it publishes a
    fresh patch for set ``set_name``; stop it; return its output (exit 0 asserted)."""

    def published() -> bool:
        spec = (server.get_object("ephemeralrunnersets", namespace, set_name) or {}).get("spec", {})
        return spec.get("replicas") == 0 and int(spec.get("patchID", 0)) > 0

    with log.open("wb") as out:
        listener = subprocess.Popen(
            [sys.executable, "-m", "ghalistener", "run", "--kubeconfig", str(kubeconfig)],
            env={**os.environ, "LISTENER_CONFIG_PATH": str(config)},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            runner_id = int(sim.generate_jit_config(scale_set, runner)["runner"]["id"])
            request = sim.enqueue_job(scale_set)
            eventually(
                lambda: any(j["state"] == "assigned" for j in sim.state()["jobs"]), timeout=WAIT
            )
            sim.start_job(runner_id, request)
            eventually(
                lambda: (
                    (server.get_object("ephemeralrunners", namespace, runner) or {})
                    .get("status", {})
                    .get("jobId")
                ),
                timeout=WAIT,
            )
            sim.complete_job(request)
            # the completed job makes it publish a fresh, non-zero patch ID with 0 replicas
            eventually(published, timeout=WAIT, what="a fresh patch after the job")
        finally:
            listener.send_signal(signal.SIGTERM)
            listener.wait(timeout=WAIT)
    output = log.read_text(errors="replace")
    assert listener.returncode == 0, output[-3000:]
    return output


def assert_requests_need_exactly(server: ApiServer, granted: set[Grant], *, namespace: str) -> None:
    """Every request in the server's log is allowed by ``granted``, all in
    ``namespace``, and every grant was used."""
    used = set()
    for record in server.request_log.records():
        if not record.verb:
            continue
        group, resource, verb = request_of(record)
        assert record.namespace == namespace, record.path
        match = {(group, resource, verb, record.name or ""), (group, resource, verb, "")}
        assert match & granted, f"not allowed by the Role: {record.method} {record.path}"
        used |= match & granted
    assert used == granted
