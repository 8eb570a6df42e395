"""The test suite's Kubernetes access (tests/kubeapi.py) against a cluster: whatever
credentials the kubeconfig carries (a token, an exec plugin's token, a client
certificate) reach the server through the official client and through the raw HTTP
client some tests use; the cleanup after a test releases every finalizer the project
puts anywhere and leaves no namespace behind, with or without a namespace controller;
the end-of-run check names a namespace that stayed. Embedded servers play the cluster
(over HTTPS, answering 401 to a request without credentials, where that matters)."""

from __future__ import annotations

import base64
import json
import ssl
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from ersctl import api
from ersctl.testing.apiserver import ApiServer, Authentication, ServerTLS
from tests.certificates import client_certificate, server_certificates
from tests.kubeapi import KubeApi, NamespaceLedger

TOKEN = "a-token-the-server-asks-for"


def _data(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _exec_plugin(tmp_path: Path) -> dict[str, Any]:
    """A client-go exec credential plugin that hands out TOKEN, as EKS's, GKE's and
    AKS's kubeconfigs run one."""
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": TOKEN},
    }
    script = tmp_path / "credential.py"
    script.write_text(f"print({json.dumps(json.dumps(credential))})\n")
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(script)],
            "interactiveMode": "Never",
        }
    }


@pytest.fixture(params=["token", "exec-plugin", "client-certificate"])
def kubeconfig(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """A kubeconfig of an HTTPS server that authenticates by what the parameter names."""
    tls = server_certificates(tmp_path)
    user: dict[str, Any]
    if request.param == "client-certificate":
        client = client_certificate(tmp_path)
        tls.server.load_verify_locations(cadata=client.ca_pem)
        tls.server.verify_mode = ssl.CERT_OPTIONAL
        authentication = Authentication(client_certificates=True)
        user = {
            "client-certificate-data": _data(client.cert_file.read_text()),
            "client-key-data": _data(client.key_file.read_text()),
        }
    else:
        authentication = Authentication(token=TOKEN)
        user = {"token": TOKEN} if request.param == "token" else _exec_plugin(tmp_path)
    server = ApiServer(
        tls=ServerTLS(context=tls.server, ca_pem=tls.root_pem), authentication=authentication
    )
    with server:
        doc = server.kubeconfig()
        doc["users"][0]["user"] = user
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(doc))
        yield path


def test_the_raw_http_client_and_the_official_one_send_the_kubeconfigs_credentials(
    kubeconfig: Path,
) -> None:
    # Its namespace is made through the official client.
    kube = KubeApi.for_cluster(kubeconfig, controllers=True)
    try:
        with kube.http() as http:
            listed = http.get("/api/v1/namespaces")
            created = http.post(
                f"/api/v1/namespaces/{kube.namespace}/configmaps",
                json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
            )
        with httpx.Client(base_url=kube.url, verify=False) as anonymous:  # noqa: S501
            refused = anonymous.get("/api/v1/namespaces")
    finally:
        kube.close(clean_up=True)

    assert listed.status_code == 200, listed.text
    assert kube.namespace in [ns["metadata"]["name"] for ns in listed.json()["items"]]
    assert created.status_code == 201, created.text
    assert (refused.status_code, refused.json()["reason"]) == (401, "Unauthorized")


def _held_objects(namespace: str) -> list[tuple[str, dict[str, Any]]]:
    """One object of each kind the project puts a finalizer on, with that finalizer."""
    meta = {"namespace": namespace}
    ars_spec = {"githubConfigUrl": "https://github.com/o", "githubConfigSecret": "s"}
    return [
        ("secrets", {"apiVersion": "v1", "kind": "Secret",
                     "metadata": {**meta, "name": "s", "finalizers": [api.CLEANUP_PROTECTION_FINALIZER]}}),
        ("serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount",
                             "metadata": {**meta, "name": "a", "finalizers": [api.CLEANUP_PROTECTION_FINALIZER]}}),
        (api.ARS_PLURAL, {"apiVersion": api.API_VERSION, "kind": api.ARS_KIND, "spec": ars_spec,
                          "metadata": {**meta, "name": "arc", "finalizers": [api.ARS_FINALIZER]}}),
        (api.ERS_PLURAL, {"apiVersion": api.API_VERSION, "kind": api.ERS_KIND, "spec": {"patchID": 0},
                          "metadata": {**meta, "name": "set", "finalizers": [api.ERS_FINALIZER]}}),
    ]  # fmt: skip


@pytest.mark.parametrize("controllers", [False, True], ids=["bare", "with-controllers"])
def test_the_cleanup_releases_every_finalizer_and_leaves_no_namespace_behind(
    controllers: bool, tmp_path: Path
) -> None:
    ledger = NamespaceLedger()
    with ApiServer(gc=controllers) as server:
        kube = KubeApi.for_cluster(
            server.write_kubeconfig(tmp_path / "kc"), ledger=ledger, controllers=controllers
        )
        for plural, obj in _held_objects(kube.namespace):
            kube.create_object(plural, obj)

        kube.close(clean_up=True)

        assert ledger.left_behind(timeout=10) == []


def test_the_ledger_names_a_namespace_left_behind_and_what_holds_it(tmp_path: Path) -> None:
    ledger = NamespaceLedger()
    with ApiServer(gc=False) as server:
        kube = KubeApi.for_cluster(
            server.write_kubeconfig(tmp_path / "kc"), ledger=ledger, controllers=False
        )
        plural, secret = _held_objects(kube.namespace)[0]
        kube.create_object(plural, secret)
        kube.delete_object("namespaces", "", kube.namespace)

        (left,) = ledger.left_behind(timeout=0)

    assert (
        left == f"{kube.namespace} (Terminating): secrets/s ['{api.CLEANUP_PROTECTION_FINALIZER}']"
    )
