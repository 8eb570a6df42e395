"""The Python-side test hooks: request log, fault injection, direct object access.
All are the embedded server's own (marked ``embedded_only``), but for what every
server serves."""

from __future__ import annotations

import itertools
import json
import logging
import time
from typing import Any, cast

import pytest
import urllib3
from kubernetes import client
from kubernetes.client import ApiException

from ersctl import api
from ersctl.crds import load_crds
from ersctl.testing.apiserver import ApiServer, StatusError
from ersctl.testing.objects import request
from tests.ersctl.ephemeralrunner.conftest import NO_SCHEDULER
from tests.ersctl.testing.apiserver.objects import RUNNING, Objects, ers_body
from tests.kubeclient import json_object, status_of

CRDS_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@pytest.mark.embedded_only("the request log")
def test_the_request_log_records_what_the_client_sent(apiserver: ApiServer, ers: Objects) -> None:
    ers.create(ers_body("a"))
    apiserver.request_log.clear()

    ers.patch("a", {"spec": {"replicas": 2}}, status=False)
    ers.patch("a", {"status": RUNNING}, status=True)

    records = apiserver.request_log.records()
    assert [
        (r.method, r.verb, r.resource, r.namespace, r.name, r.subresource, r.status)
        for r in records
    ] == [
        ("PATCH", "patch", "ephemeralrunnersets", ers.namespace, "a", None, 200),
        ("PATCH", "patch", "ephemeralrunnersets", ers.namespace, "a", "status", 200),
    ]
    assert records[0].content_type == "application/merge-patch+json"
    assert json.loads(records[1].body) == {"status": RUNNING}
    assert records[1].path.endswith("/ephemeralrunnersets/a/status")


@pytest.mark.embedded_only("the request log")
def test_the_request_log_keeps_query_parameters(apiserver: ApiServer, ers: Objects) -> None:
    ers.list(label_selector="a=b")

    record = apiserver.request_log.records()[-1]

    assert (record.verb, record.query["labelSelector"]) == ("list", ["a=b"])


@pytest.mark.embedded_only("fault injection")
def test_a_fault_matches_verb_resource_name_and_subresource(
    apiserver: ApiServer, ers: Objects
) -> None:
    ers.create(ers_body("a"))
    ers.create(ers_body("b"))
    apiserver.inject_fault(
        verb="patch", resource="ephemeralrunnersets", name="a", subresource="status", code=409
    )

    ers.patch("b", {"status": RUNNING}, status=True)
    ers.patch("a", {"spec": {"replicas": 2}})
    with pytest.raises(ApiException) as caught:
        ers.patch("a", {"status": RUNNING}, status=True)
    ers.patch("a", {"status": RUNNING}, status=True)

    assert caught.value.status == 409
    assert status_of(caught.value)["reason"] == "Conflict"


@pytest.mark.embedded_only("fault injection")
def test_a_latency_fault_delays_and_then_serves(apiserver: ApiServer, ers: Objects) -> None:
    apiserver.inject_fault(verb="list", latency=0.3)

    started = time.monotonic()
    listed = ers.list()
    elapsed = time.monotonic() - started

    assert listed["items"] == []
    assert elapsed >= 0.3


@pytest.mark.embedded_only("direct object access")
def test_direct_access_has_the_same_semantics_as_http(apiserver: ApiServer, ers: Objects) -> None:
    ns = ers.namespace
    created = apiserver.create_object(
        "ephemeralrunnersets", ers_body("a", namespace=ns) | {"status": RUNNING}
    )
    assert "status" not in created and created["metadata"]["generation"] == 1

    apiserver.patch_object(
        "ephemeralrunnersets",
        ns,
        "a",
        {"status": RUNNING},
        subresource="status",
    )
    patched = apiserver.patch_object("ephemeralrunnersets", ns, "a", {"spec": {"replicas": 4}})
    assert patched["metadata"]["generation"] == 2
    assert ers.get("a") == patched == apiserver.get_object("ephemeralrunnersets", ns, "a")

    with pytest.raises(StatusError) as caught:
        apiserver.patch_object(
            "ephemeralrunnersets",
            ns,
            "a",
            {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}},
        )
    assert caught.value.code == 409

    apiserver.delete_object("ephemeralrunnersets", ns, "a")
    assert apiserver.get_object("ephemeralrunnersets", ns, "a") is None
    assert apiserver.list_objects("ephemeralrunnersets") == []


@pytest.mark.embedded_only("direct object access")
def test_direct_reads_return_copies(apiserver: ApiServer) -> None:
    apiserver.create_object("ephemeralrunnersets", ers_body("a", namespace="default"))

    read = apiserver.get_object("ephemeralrunnersets", "default", "a")
    assert read is not None
    read["spec"]["replicas"] = 99

    again = apiserver.get_object("ephemeralrunnersets", "default", "a")
    assert again is not None and again["spec"]["replicas"] == 1


def test_core_resources_and_leases_are_served(kube_client: object, namespace: str) -> None:
    core = client.CoreV1Api(kube_client)
    leases = client.CoordinationV1Api(kube_client)

    core.create_namespaced_secret(
        namespace,
        client.V1Secret(metadata=client.V1ObjectMeta(name="s"), string_data={"token": "x"}),
    )
    core.create_namespaced_pod(
        namespace,
        client.V1Pod(
            metadata=client.V1ObjectMeta(name="p"),
            spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="i")]),
        ),
    )
    core.create_namespaced_event(
        namespace,
        client.CoreV1Event(
            metadata=client.V1ObjectMeta(name="e"),
            involved_object=client.V1ObjectReference(kind="Pod", name="p", namespace=namespace),
            reason="Test",
            message="hello",
        ),
    )
    lease = leases.create_namespaced_lease(
        namespace,
        client.V1Lease(
            metadata=client.V1ObjectMeta(name="l"), spec=client.V1LeaseSpec(holder_identity="me")
        ),
    )

    pod = core.read_namespaced_pod("p", namespace)
    assert pod.status is not None and pod.status.phase == "Pending"
    assert [e.reason for e in core.list_namespaced_event(namespace).items] == ["Test"]
    assert lease.spec is not None and lease.spec.holder_identity == "me"
    namespaces = {ns.metadata.name if ns.metadata else None for ns in core.list_namespace().items}
    assert {"default", namespace} <= namespaces
    secret = core.read_namespaced_secret("s", namespace)
    assert secret.data == {"token": "eA=="} and secret.string_data is None
    assert secret.type == "Opaque"


@pytest.mark.embedded_only("a server without the project's CRDs")
def test_creating_a_crd_starts_serving_its_resource() -> None:
    with ApiServer(crds=False) as server:
        api_client = server.api_client()
        extensions = client.ApiextensionsV1Api(api_client)
        custom = client.CustomObjectsApi(api_client)
        with pytest.raises(ApiException) as before:
            custom.list_namespaced_custom_object(api.GROUP, api.VERSION, "default", api.ERS_PLURAL)

        for crd in load_crds():
            # The client sends a plain dict body as it is; its annotation names the model.
            extensions.create_custom_resource_definition(
                cast(client.V1CustomResourceDefinition, crd)
            )
        custom.create_namespaced_custom_object(
            api.GROUP, api.VERSION, "default", api.ERS_PLURAL, ers_body("a")
        )
        listed = json_object(
            custom.list_namespaced_custom_object(api.GROUP, api.VERSION, "default", api.ERS_PLURAL)
        )
        crd_status = extensions.read_custom_resource_definition(
            f"{api.ERS_PLURAL}.{api.GROUP}"
        ).status
        api_client.close()

    assert before.value.status == 404
    assert [item["metadata"]["name"] for item in listed["items"]] == ["a"]
    assert crd_status is not None
    conditions = crd_status.conditions or []
    assert any(c.type == "Established" and c.status == "True" for c in conditions)


@pytest.mark.embedded_only("servers of its own")
def test_every_server_starts_with_the_project_crds_as_created_each_its_own() -> None:
    # A server starts with copies of CRDs prepared once per process: each copy must be
    # what a create stores and serves, with its own identity, and stay its own.
    identity = ("uid", "creationTimestamp", "resourceVersion")
    names = [crd["metadata"]["name"] for crd in load_crds()]
    with ApiServer() as first, ApiServer() as second, ApiServer(crds=False) as created:
        for crd in load_crds():
            created.create_object("customresourcedefinitions", crd)
        first.patch_object(
            "customresourcedefinitions", "", names[0], {"spec": {"names": {"shortNames": ["x"]}}}
        )
        served = {}
        for name, server in (("first", first), ("second", second), ("created", created)):
            with server.api_client() as api_client:
                served[name] = [request(api_client, "GET", f"{CRDS_PATH}/{crd}") for crd in names]

    def without_identity(crd: dict[str, Any]) -> dict[str, Any]:
        meta = {k: v for k, v in crd["metadata"].items() if k not in identity}
        return {**crd, "metadata": meta}

    assert [without_identity(crd) for crd in served["second"]] == [
        without_identity(crd) for crd in served["created"]
    ]
    uids = [{crd["metadata"]["uid"] for crd in served[name]} for name in served]
    assert all(len(a & b) == 0 for a, b in itertools.combinations(uids, 2)), uids
    assert served["first"][0]["spec"]["names"]["shortNames"] == ["x"]
    assert served["second"][0]["spec"]["names"] == served["created"][0]["spec"]["names"]


@pytest.mark.embedded_only("its log")
def test_secret_values_never_reach_the_log(
    apiserver: ApiServer, kube_client: object, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    core = client.CoreV1Api(kube_client)
    token = "ghp_NotARealTokenButSecret123"

    core.create_namespaced_secret(
        namespace,
        client.V1Secret(
            metadata=client.V1ObjectMeta(name="creds"), string_data={"github_token": token}
        ),
    )
    core.patch_namespaced_secret("creds", namespace, {"stringData": {"github_token": token + "2"}})
    core.read_namespaced_secret("creds", namespace)

    assert caplog.records, "the server logs requests at debug level"
    assert token not in caplog.text


@pytest.mark.embedded_only("its Python API")
def test_an_unknown_resource_name_in_the_python_api_says_what_is_served(
    apiserver: ApiServer,
) -> None:
    with pytest.raises(StatusError) as caught:
        apiserver.set_watch_delay("ephemeralrunnerset", 1.0)

    assert caught.value.code == 404
    assert "'ephemeralrunnerset'" in caught.value.message
    assert "ephemeralrunnersets" in caught.value.message


@pytest.mark.embedded_only("fault injection")
def test_an_injected_410_on_a_watch_arrives_as_an_error_event(
    apiserver: ApiServer, kube_client: object, namespace: str
) -> None:
    custom = client.CustomObjectsApi(kube_client)
    apiserver.inject_fault(verb="watch", resource="ephemeralrunnersets", code=410)

    # Unread (_preload_content=False), the client returns the urllib3 response.
    response = cast(
        urllib3.BaseHTTPResponse,
        custom.list_namespaced_custom_object(
            api.GROUP,
            api.VERSION,
            namespace,
            "ephemeralrunnersets",
            watch=True,
            resource_version="1",
            _preload_content=False,
        ),
    )
    lines = response.data.decode().splitlines()

    assert response.status == 200
    assert [json.loads(line)["type"] for line in lines] == ["ERROR"]
    assert json.loads(lines[0])["object"]["code"] == 410


@pytest.mark.embedded_only("dropping watches")
def test_dropped_watches_end_only_the_named_resources_streams(
    apiserver: ApiServer, kube_client: object, namespace: str
) -> None:
    custom = client.CustomObjectsApi(kube_client)
    core = client.CoreV1Api(kube_client)

    def open_watch(list_call: object, *args: str) -> urllib3.BaseHTTPResponse:
        return cast(
            urllib3.BaseHTTPResponse,
            list_call(*args, watch=True, timeout_seconds=30, _preload_content=False),  # type: ignore[operator]
        )

    runners = open_watch(
        custom.list_namespaced_custom_object, api.GROUP, api.VERSION, namespace, "ephemeralrunners"
    )
    pods = open_watch(core.list_namespaced_pod, namespace)
    started = time.monotonic()

    apiserver.drop_watches("ephemeralrunners")

    assert runners.data == b""  # the stream ended at once, well before its 30 s
    assert time.monotonic() - started < 10
    core.create_namespaced_pod(  # another resource's watch goes on: it sees this Pod
        namespace,
        client.V1Pod(
            metadata=client.V1ObjectMeta(name="still-watched"),
            spec=client.V1PodSpec(
                scheduler_name=NO_SCHEDULER,
                containers=[client.V1Container(name="c", image="busybox")],
            ),
        ),
    )
    event = json.loads(pods.readline())
    pods.close()
    assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "still-watched")
