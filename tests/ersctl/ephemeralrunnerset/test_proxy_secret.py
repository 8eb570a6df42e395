"""A set's proxy: its proxy Secret for the runners' Pods (ARC's ``<set>-<hash>-runner-proxy``),
kept in step with the set and its credential Secret, and the set's own GitHub calls
through the proxy."""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import respx

from ersctl import api
from ersctl.ephemeralrunnerset.expectations import Expectations
from ersctl.kube.reconcile import Request
from ersctl.naming import proxy_secret_name
from ghalistener.testing.model import GitHubSimulator
from ghalistener.testing.server import serve
from tests.certificates import server_certificates
from tests.connect_proxy import ConnectProxy
from tests.ersctl.ephemeralrunnerset.github import FakeGitHub
from tests.ersctl.ephemeralrunnerset.harness import Cluster
from tests.ersctl.ephemeralrunnerset.objects import RUNNER_SPEC
from tests.kubeapi import KubeApi
from tests.polling import eventually

USER, PASSWORD, ROTATED = "svc user", "pr0xy:p@ss/w0rd", "r0tated:p@ss/w0rd"
PROXY = {
    "http": {"url": "http://proxy.corp:3128", "credentialSecretRef": "proxy-credentials"},
    "https": {"url": "proxy.corp:3129", "credentialSecretRef": "proxy-credentials"},
    "noProxy": ["internal.corp", "10.0.0.0/8"],
}


def test_the_proxy_secret_is_named_as_arc_names_it() -> None:
    # ARC's name for set "runners" in namespace "arc": FNV-1a of "arc", safe-encoded, 8 long.
    assert proxy_secret_name("arc", "runners") == "runners-fd47b7ff-runner-proxy"


def secret_name(cluster: Cluster) -> str:
    return proxy_secret_name(cluster.namespace, "runners")


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def credentials(cluster: Cluster, password: str = PASSWORD) -> None:
    """Create or replace the proxy credentials Secret (a new resourceVersion)."""
    data = {"username": b64(USER), "password": b64(password)}
    if cluster.kube.get_object("secrets", cluster.namespace, "proxy-credentials") is None:
        meta = {"name": "proxy-credentials", "namespace": cluster.namespace}
        body = {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": data}
        cluster.kube.create_object("secrets", body)
    else:
        cluster.kube.patch_object("secrets", cluster.namespace, "proxy-credentials", {"data": data})


def with_proxy(proxy: dict[str, Any] | None = None) -> dict[str, Any]:
    return {**RUNNER_SPEC, "proxy": PROXY if proxy is None else proxy}


def proxy_values(cluster: Cluster) -> dict[str, str] | None:
    secret = cluster.kube.get_object("secrets", cluster.namespace, secret_name(cluster))
    if secret is None:
        return None
    return {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}


def secret_writes(cluster: Cluster) -> list[str]:
    return [
        r.verb
        for r in cluster.sent.records()
        if r.resource == "secrets" and r.verb in ("create", "patch", "delete")
    ]


def test_a_set_with_a_proxy_gets_arcs_proxy_secret_before_its_runners(cluster: Cluster) -> None:
    credentials(cluster)
    labels = {"actions.github.com/scale-set-name": "arc-runners"}
    ers = cluster.create_ers(replicas=2, patch_id=1, runner_spec=with_proxy(), labels=labels)
    cluster.sent.clear()

    assert cluster.reconcile().action == "scale-up"

    escaped = "svc%20user:pr0xy%3Ap%40ss%2Fw0rd"
    assert proxy_values(cluster) == {
        "http_proxy": f"http://{escaped}@proxy.corp:3128",
        "https_proxy": f"http://{escaped}@proxy.corp:3129",
        "no_proxy": "internal.corp,10.0.0.0/8",
    }
    secret = cluster.kube.get_object("secrets", cluster.namespace, secret_name(cluster))
    assert secret is not None
    assert secret["metadata"]["labels"] == {
        "actions.github.com/scale-set-name": "arc-runners",
        "actions.github.com/scale-set-namespace": "",
    }
    (owner,) = secret["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == (
        api.ERS_KIND,
        ers["metadata"]["uid"],
        True,
    )
    assert {r.spec.get("proxySecretRef") for r in cluster.runners()} == {secret_name(cluster)}
    creates = [r.resource for r in cluster.sent.records() if r.verb == "create"]
    assert creates[0] == "secrets", "the Secret exists before any runner could start a Pod"


def test_a_set_without_a_proxy_gets_no_secret_and_its_runners_no_reference(
    cluster: Cluster,
) -> None:
    cluster.create_ers(replicas=1, patch_id=1)

    cluster.reconcile()

    assert proxy_values(cluster) is None
    assert [r.spec.get("proxySecretRef") for r in cluster.runners()] == [None]


def test_a_rotated_proxy_password_reaches_the_secret_at_the_next_reconcile(
    cluster: Cluster,
) -> None:
    credentials(cluster)
    cluster.create_ers(replicas=0, patch_id=0, runner_spec=with_proxy())
    cluster.reconcile()
    credentials(cluster, ROTATED)

    cluster.reconcile()

    values = proxy_values(cluster)
    assert values is not None
    assert values["https_proxy"] == "http://svc%20user:r0tated%3Ap%40ss%2Fw0rd@proxy.corp:3129"


def test_a_changed_proxy_setting_reaches_the_secret(cluster: Cluster) -> None:
    credentials(cluster)
    cluster.create_ers(replicas=0, patch_id=0, runner_spec=with_proxy())
    cluster.reconcile()
    cluster.patch_ers("runners", {"ephemeralRunnerSpec": {"proxy": {"noProxy": ["ghes.corp"]}}})

    cluster.reconcile()

    assert (proxy_values(cluster) or {}).get("no_proxy") == "ghes.corp"


def test_a_proxy_secret_holding_bytes_that_are_no_text_is_rewritten(cluster: Cluster) -> None:
    credentials(cluster)
    cluster.create_ers(replicas=0, patch_id=0, runner_spec=with_proxy())
    cluster.reconcile()
    garbage = base64.b64encode(b"\xff\xfe").decode()
    cluster.kube.patch_object(
        "secrets", cluster.namespace, secret_name(cluster), {"data": {"no_proxy": garbage}}
    )

    assert cluster.reconcile().action != "invalid"

    assert (proxy_values(cluster) or {}).get("no_proxy") == "internal.corp,10.0.0.0/8"


def test_an_unchanged_proxy_secret_is_not_written_again(cluster: Cluster) -> None:
    credentials(cluster)
    cluster.create_ers(replicas=0, patch_id=0, runner_spec=with_proxy())
    cluster.reconcile()
    cluster.sent.clear()

    cluster.reconcile()

    assert secret_writes(cluster) == []


def test_the_secret_goes_when_the_set_drops_its_proxy_and_is_not_asked_for_again(
    cluster: Cluster,
) -> None:
    credentials(cluster)
    cluster.create_ers(replicas=0, patch_id=0, runner_spec=with_proxy())
    cluster.reconcile()
    cluster.patch_ers("runners", {"ephemeralRunnerSpec": {"proxy": None}})

    cluster.reconcile()
    assert proxy_values(cluster) is None
    cluster.sent.clear()
    cluster.reconcile()

    assert cluster.requests(verb="get", resource="secrets") == []


@pytest.mark.needs_gc("the Secret is collected with its set")
def test_the_proxy_secret_goes_with_its_set(cluster: Cluster) -> None:
    credentials(cluster)
    cluster.create_ers(replicas=0, patch_id=0, runner_spec=with_proxy())
    cluster.reconcile()
    assert proxy_values(cluster) is not None
    cluster.kube.delete_object(api.ERS_PLURAL, cluster.namespace, "runners")

    assert cluster.reconcile().action == "finalizer-removed"

    eventually(lambda: proxy_values(cluster) is None, what="the Secret collected")


@pytest.mark.parametrize(
    ("owned", "deleted"),
    [
        pytest.param(True, True, id="the set's own: deleted"),
        pytest.param(False, False, id="somebody else's: kept"),
    ],
)
def test_a_restarted_controller_deletes_a_proxy_secret_the_set_no_longer_needs(
    cluster: Cluster, owned: bool, deleted: bool
) -> None:
    ers = cluster.create_ers(replicas=0, patch_id=0)
    owner = {"apiVersion": api.API_VERSION, "kind": api.ERS_KIND, "name": "runners",
             "uid": ers["metadata"]["uid"], "controller": True}  # fmt: skip
    meta = {"name": secret_name(cluster), "namespace": cluster.namespace,
            "ownerReferences": [owner] if owned else []}  # fmt: skip
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": {"x": b64("y")}}
    cluster.kube.create_object("secrets", body)
    restarted = cluster.reconciler_with(Expectations())
    cluster.sync()

    restarted.reconcile_with_outcome(Request(cluster.namespace, "runners"))

    assert (proxy_values(cluster) is None) is deleted


def test_a_missing_credential_secret_is_invalid_spec_and_changes_nothing(
    cluster: Cluster,
) -> None:
    cluster.create_ers(replicas=2, patch_id=1, runner_spec=with_proxy())

    assert cluster.reconcile().action == "invalid"

    (event,) = cluster.events("InvalidSpec")
    assert event["message"] == (
        "spec.ephemeralRunnerSpec.proxy.http.credentialSecretRef: "
        f"Secret {cluster.namespace}/proxy-credentials not found"
    )
    assert cluster.runners() == [] and proxy_values(cluster) is None


def test_no_proxy_password_reaches_a_log_line(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    credentials(cluster)
    cluster.create_ers(replicas=1, patch_id=1, runner_spec=with_proxy())
    cluster.reconcile()
    credentials(cluster, ROTATED)
    cluster.reconcile()

    assert proxy_values(cluster) is not None
    for password in (PASSWORD, ROTATED):
        escaped = password.replace(":", "%3A").replace("@", "%40").replace("/", "%2F")
        for form in (password, escaped, b64(password)):
            assert form not in caplog.text


@pytest.fixture
def unmocked(kube: KubeApi) -> Iterator[Cluster]:
    """The cluster harness with GitHub unmocked: its FakeGitHub is never installed."""
    harness = Cluster(kube, FakeGitHub(respx.MockRouter()))
    try:
        yield harness
    finally:
        harness.close()


def test_the_sets_scale_down_removes_runners_from_github_through_its_proxy(
    unmocked: Cluster, tmp_path: Path
) -> None:
    cluster = unmocked  # GitHub: the simulator over TLS, behind a real proxy
    certificates = server_certificates(tmp_path, hosts=("ghes.test", "0.0.0.0"))
    cluster.kube.create_object(
        "configmaps",
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "ghes-ca", "namespace": cluster.namespace},
         "data": {"ca.crt": certificates.root_pem}},
    )  # fmt: skip
    credentials(cluster)
    sim = GitHubSimulator(hold_seconds=0.0)
    scale_set = int(sim.create_scale_set("arc-runners")["id"])
    ids = [int(sim.generate_jit_config(scale_set, f"r-{i}")["runner"]["id"]) for i in (1, 2)]
    with (
        serve(sim, tls=certificates.server, url_host="0.0.0.0") as server,
        ConnectProxy(hosts={"ghes.test": "127.0.0.1"}, credentials=(USER, PASSWORD)) as proxy,
    ):
        runner_spec = {
            **RUNNER_SPEC,
            "githubConfigUrl": f"https://ghes.test:{server.port}/my-org",
            "runnerScaleSetId": scale_set,
            "proxy": {
                "https": {"url": proxy.url, "credentialSecretRef": "proxy-credentials"},
                "noProxy": ["0.0.0.0"],
            },
            "githubServerTLS": {
                "certificateFrom": {"configMapKeyRef": {"name": "ghes-ca", "key": "ca.crt"}}
            },
        }
        cluster.create_ers(replicas=0, patch_id=0, runner_spec=runner_spec)
        for runner_id in ids:
            cluster.add_runner(phase="Running", runner_id=runner_id)

        assert cluster.reconcile().action == "scale-down"

        assert sim.state()["runners"] == []
        tunnels = proxy.tunnels()
        assert {t.target for t in tunnels} == {f"ghes.test:{server.port}"}, "noProxy: direct"
        assert {t.credentials for t in tunnels} == {(USER, PASSWORD)}
