"""Bad input answered with metav1.Status JSON, no stack traces, and the server keeps
serving. Raw HTTP (httpx, with the official client's credentials) because the official
client cannot send malformed bodies."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import httpx
import pytest

from ersctl import api
from ersctl.testing.apiserver import ApiServer
from tests.kubeapi import KubeApi

ERS = "/apis/actions.github.com/v1alpha1/namespaces/{ns}/ephemeralrunnersets"
MERGE = {"Content-Type": "application/merge-patch+json"}
# What only the emulator answers so: a real server decodes all of protobuf, and routes
# a POST to an object or a PUT to a collection by its own rules.
EMULATOR_ONLY = pytest.mark.embedded_only("answers of the emulator's own request parsing")
# The k8s protobuf magic, then runtime.Unknown{typeMeta: {apiVersion: v1, kind: Pod}}.
PROTOBUF_POD = b"k8s\x00\x0a\x09\x0a\x02v1\x12\x03Pod\x12\x00"


@pytest.fixture
def http(kube: KubeApi) -> Iterator[httpx.Client]:
    with kube.http() as http_client:
        yield http_client


@pytest.fixture
def ers_path(kube: KubeApi) -> str:
    return ERS.format(ns=kube.namespace)


def create_set(http: httpx.Client, ers_path: str, name: str = "a") -> None:
    body = {
        "apiVersion": api.API_VERSION,
        "kind": api.ERS_KIND,
        "metadata": {"name": name},
        "spec": {"patchID": 0},
    }
    assert http.post(ers_path, json=body).status_code == 201


@pytest.mark.parametrize(
    ("method", "path", "body", "content_type", "code", "reason"),
    [
        pytest.param(
            "POST",
            ERS,
            b'{"metadata": {',
            "application/json",
            400,
            "BadRequest",
            id="malformed JSON on create",
        ),
        pytest.param(
            "PATCH",
            f"{ERS}/a",
            b"{nope",
            "application/merge-patch+json",
            400,
            "BadRequest",
            id="malformed JSON on patch",
        ),
        pytest.param(
            "PATCH",
            f"{ERS}/a",
            b'{"spec": {"replicas": NaN}}',
            "application/merge-patch+json",
            400,
            "BadRequest",
            id="NaN, which is no JSON, on patch",
        ),
        pytest.param(
            "POST",
            ERS,
            b"[1, 2]",
            "application/json",
            400,
            "BadRequest",
            id="body is not an object",
        ),
        pytest.param(
            "POST",
            ERS,
            b'{"kind": "Pod", "metadata": {"name": "x"}}',
            "application/json",
            400,
            "BadRequest",
            id="wrong kind",
        ),
        pytest.param("GET", f"{ERS}/a/scale", b"", "", 404, "NotFound", id="unknown subresource"),
        pytest.param(
            "POST",
            f"{ERS}/a",
            b"{}",
            "application/json",
            405,
            "MethodNotAllowed",
            id="POST to an object",
            marks=EMULATOR_ONLY,
        ),
        pytest.param(
            "PUT",
            ERS,
            b"{}",
            "application/json",
            405,
            "MethodNotAllowed",
            id="PUT to a collection",
            marks=EMULATOR_ONLY,
        ),
        pytest.param(
            "PATCH",
            f"{ERS}/a",
            b"{}",
            "text/plain",
            415,
            "UnsupportedMediaType",
            id="unknown patch type",
        ),
        pytest.param(
            "POST",
            "/api/v1/namespaces/{ns}/pods",
            PROTOBUF_POD,
            "application/vnd.kubernetes.protobuf",
            415,
            "UnsupportedMediaType",
            id="protobuf for a kind the server cannot decode",
            marks=EMULATOR_ONLY,
        ),
        pytest.param(
            "POST",
            "/api/v1/namespaces/{ns}/secrets",
            b"k8s\x00\x0a\x7f",
            "application/vnd.kubernetes.protobuf",
            415,
            "UnsupportedMediaType",
            id="truncated protobuf",
            marks=EMULATOR_ONLY,
        ),
        pytest.param(
            "GET",
            f"{ERS}?labelSelector=a%20in%20",
            b"",
            "",
            400,
            "BadRequest",
            id="bad label selector",
        ),
        pytest.param(
            "GET",
            f"{ERS}?fieldSelector=spec.replicas%3D1",
            b"",
            "",
            400,
            "BadRequest",
            id="unsupported field selector",
        ),
    ],
)
def test_bad_requests_get_a_status_and_the_server_keeps_serving(
    kube: KubeApi,
    http: httpx.Client,
    ers_path: str,
    method: str,
    path: str,
    body: bytes,
    content_type: str,
    code: int,
    reason: str,
) -> None:
    create_set(http, ers_path)
    headers = {"Content-Type": content_type} if content_type else {}

    response = http.request(method, path.format(ns=kube.namespace), content=body, headers=headers)

    assert response.status_code == code
    status = response.json()
    assert status["kind"] == "Status" and status["status"] == "Failure"
    assert (status["code"], status["reason"]) == (code, reason)
    assert "Traceback" not in response.text
    assert http.get(f"{ers_path}/a").status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/apis/actions.github.com/v1alpha1/namespaces/{ns}/widgets", id="resource"),
        pytest.param("/apis/nothing.example.com/v1/things", id="group"),
        pytest.param("/apis/nothing.example.com", id="group itself"),
        pytest.param("/nothing", id="outside the APIs"),
    ],
)
def test_a_path_no_api_serves_is_the_muxs_plain_text_404(
    kube: KubeApi, http: httpx.Client, path: str
) -> None:
    # An unknown group, or a resource a group of custom resources does not have: no
    # API handler claims the path, and the real server's mux answers in plain text.
    response = http.get(path.format(ns=kube.namespace))

    assert response.status_code == 404
    assert response.headers["content-type"].startswith("text/plain")
    assert response.text == "404 page not found\n"


def test_an_unknown_resource_of_a_built_in_api_is_a_status_404(
    kube: KubeApi, http: httpx.Client
) -> None:
    # The built-in APIs' REST framework claims every path under their group version.
    response = http.get(f"/api/v1/namespaces/{kube.namespace}/widgets")

    assert response.status_code == 404
    status = response.json()
    assert (status["kind"], status["reason"]) == ("Status", "NotFound")
    assert status["message"] == "the server could not find the requested resource"


@pytest.mark.embedded_only("fault injection")
def test_injected_faults_fail_only_matching_requests_and_change_nothing(
    apiserver: ApiServer, http: httpx.Client, ers_path: str
) -> None:
    create_set(http, ers_path)
    apiserver.inject_fault(verb="patch", resource="ephemeralrunnersets", code=503, times=2)
    patch = json.dumps({"spec": {"replicas": 3}})

    codes = [
        http.patch(f"{ers_path}/a", content=patch, headers=MERGE).status_code for _ in range(3)
    ]

    assert codes == [503, 503, 200]
    assert http.get(f"{ers_path}/a").status_code == 200
    assert [r.status for r in apiserver.request_log.records() if r.verb == "patch"] == codes


@pytest.mark.embedded_only("fault injection")
def test_a_fault_armed_until_cleared_fails_every_matching_request_until_cleared(
    apiserver: ApiServer, http: httpx.Client, ers_path: str
) -> None:
    create_set(http, ers_path)
    apiserver.inject_fault(verb="patch", resource="ephemeralrunnersets", code=503, times=-1)
    patch = json.dumps({"spec": {"replicas": 3}})

    def patch_code() -> int:
        return http.patch(f"{ers_path}/a", content=patch, headers=MERGE).status_code

    armed = [patch_code() for _ in range(5)]
    apiserver.clear_faults()

    assert (armed, patch_code()) == ([503] * 5, 200)


@pytest.mark.embedded_only("a raw socket to its plain-HTTP port")
def test_a_body_with_broken_framing_is_400_and_other_clients_are_served(
    apiserver: ApiServer, http: httpx.Client, ers_path: str
) -> None:
    host, port = apiserver.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as raw:
        raw.sendall(
            b"POST " + ers_path.encode() + b" HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"zz\r\n{}\r\n0\r\n\r\n"
        )
        # The server closes the connection: the rest of its framing is lost.
        reply = b"".join(iter(lambda: raw.recv(65536), b"")).decode()

    assert reply.startswith("HTTP/1.1 400")
    assert '"reason":"BadRequest"' in reply
    assert http.get(ers_path).status_code == 200


def test_a_yaml_body_is_accepted_like_json(http: httpx.Client, ers_path: str) -> None:
    body = (
        f"apiVersion: {api.API_VERSION}\nkind: {api.ERS_KIND}\n"
        "metadata:\n  name: from-yaml\nspec:\n  replicas: 2\n  patchID: 0\n"
    ).encode()

    response = http.post(ers_path, content=body, headers={"Content-Type": "application/yaml"})

    assert response.status_code == 201
    stored = http.get(f"{ers_path}/from-yaml").json()
    assert stored["spec"]["replicas"] == 2
