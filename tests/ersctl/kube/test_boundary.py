"""The error boundary (``ersctl.kube.calls``, shared by both programs) and the event recorder."""

from __future__ import annotations

import logging
import socket
import threading
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from ersctl.api import ERS_PLURAL, EphemeralRunnerSet
from ersctl.arcclient.reader import ApiReader
from ersctl.kube.calls import translate
from ersctl.kube.client import Reader
from ersctl.kube.connect import limit_requests
from ersctl.kube.errors import ConflictError, ForbiddenError, GoneError, KubeError, NotFoundError
from ersctl.kube.events import EventRecorder
from ersctl.reasons import Reason
from ersctl.testing.apiserver import ApiServer
from tests.ersctl.kube.conftest import ers_body
from tests.kubeapi import KubeApi
from tests.kubeclient import SentRequests
from tests.polling import eventually


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        pytest.param(403, ForbiddenError, id="403"),
        pytest.param(404, NotFoundError, id="404"),
        pytest.param(409, ConflictError, id="409"),
        pytest.param(410, GoneError, id="410"),
        pytest.param(500, KubeError, id="500"),
    ],
)
def test_api_exceptions_become_one_tree_with_the_servers_reason(status: int, kind: type) -> None:
    exc = ApiException(status=status, reason="X")
    exc.body = '{"kind":"Status","reason":"Because","message":"' + "m" * 600 + '"}'

    error = translate(exc, action="get things/ns/a")

    assert type(error) is kind and error.status == status and error.reason == "Because"
    assert str(error).startswith(f"get things/ns/a: HTTP {status} Because: mmm")
    assert len(str(error)) < 320  # the body is cut


def test_a_refused_connection_is_a_kube_error_not_a_library_exception() -> None:
    configuration = client.Configuration()
    configuration.host = "http://127.0.0.1:9"  # discard port: nothing listens
    configuration.retries = 0
    reader = ApiReader(Reader(client.ApiClient(configuration)))

    with pytest.raises(KubeError) as caught:
        reader.get_ers("ns", "a")

    assert caught.value.status is None  # "no response", as in the GitHub client's errors
    assert not isinstance(caught.value, ApiException)
    assert str(caught.value) == (
        "get ephemeralrunnersets/ns/a: no response from http://127.0.0.1:9: "
        "[Errno 111] Connection refused"
    )


@pytest.mark.embedded_only("fault injection, the request log")
def test_errors_never_carry_the_clients_bearer_token(apiserver: ApiServer) -> None:
    configuration = client.Configuration()
    configuration.host = apiserver.url
    configuration.api_key = {"authorization": "Bearer s3cr3t-t0ken"}
    reader = ApiReader(Reader(client.ApiClient(configuration)))
    apiserver.inject_fault(verb="get", resource="secrets", code=500)

    with pytest.raises(KubeError) as caught:
        reader.get_secret("default", "github-secret")

    assert "s3cr3t" not in str(caught.value) and "s3cr3t" not in repr(caught.value.__dict__)
    assert any(r.verb == "get" and r.resource == "secrets" for r in apiserver.request_log.records())


def events(kube: KubeApi) -> list[dict[str, Any]]:
    return kube.list_objects("events", kube.namespace)


def test_repeats_of_one_reason_on_one_object_update_one_events_count(kube: KubeApi) -> None:
    ers = EphemeralRunnerSet(kube.create_object(ERS_PLURAL, ers_body("web")))
    recorder = EventRecorder(kube.api_client(), heartbeat=0.0)

    for patch_id in (4, 5, 6):
        recorder.event(
            ers, type="Normal", reason=Reason.SCALE_UP_SUPPRESSED, message=f"patch {patch_id}"
        )
    recorder.event(ers, type="Warning", reason=Reason.INVALID_SPEC, message="spec.replicas: bad")

    by_reason = {e["reason"]: e for e in events(kube)}
    assert sorted(by_reason) == ["InvalidSpec", "ScaleUpSuppressed"]
    suppressed = by_reason["ScaleUpSuppressed"]
    assert suppressed["count"] == 3 and suppressed["type"] == "Normal"
    assert suppressed["message"] == "patch 6"  # the latest occurrence
    assert suppressed["involvedObject"]["uid"] == ers.uid
    assert suppressed["involvedObject"]["kind"] == "EphemeralRunnerSet"
    assert by_reason["InvalidSpec"]["count"] == 1


def test_repeats_within_a_heartbeat_cost_one_write_sent_by_the_heartbeat(kube: KubeApi) -> None:
    ers = EphemeralRunnerSet(kube.create_object(ERS_PLURAL, ers_body("web")))
    api_client = kube.api_client()
    sent = SentRequests(api_client)
    recorder = EventRecorder(api_client, heartbeat=0.5)

    for n in range(10):
        recorder.event(ers, type="Normal", reason=Reason.SCALED_UP, message=f"created {n}")

    def counted() -> bool:
        return [e["count"] for e in events(kube)] == [10]

    eventually(counted, timeout=10)
    writes = [(r.verb, r.resource) for r in sent.records()]
    assert writes == [("create", "events"), ("patch", "events")]


def test_flush_writes_a_pending_count_before_its_heartbeat(kube: KubeApi) -> None:
    ers = EphemeralRunnerSet(kube.create_object(ERS_PLURAL, ers_body("web")))
    recorder = EventRecorder(kube.api_client(), heartbeat=3600.0)
    recorder.event(ers, type="Normal", reason=Reason.SCALED_UP, message="created 1")
    recorder.event(ers, type="Normal", reason=Reason.SCALED_UP, message="created 2")
    assert [e["count"] for e in events(kube)] == [1]

    recorder.flush()

    assert [(e["count"], e["message"]) for e in events(kube)] == [(2, "created 2")]


def test_new_events_beyond_the_per_object_burst_are_dropped(kube: KubeApi) -> None:
    web = EphemeralRunnerSet(kube.create_object(ERS_PLURAL, ers_body("web")))
    api = EphemeralRunnerSet(kube.create_object(ERS_PLURAL, ers_body("api")))
    recorder = EventRecorder(kube.api_client(), burst=2, refill_every=3600.0)

    for reason in (Reason.SCALED_UP, Reason.SCALED_DOWN, Reason.SCALE_UP_SUPPRESSED):
        recorder.event(web, type="Normal", reason=reason, message="m")
    recorder.event(api, type="Normal", reason=Reason.SCALED_UP, message="m")

    written = sorted((e["involvedObject"]["name"], e["reason"]) for e in events(kube))
    assert written == [("api", "ScaledUp"), ("web", "ScaledDown"), ("web", "ScaledUp")]


@pytest.mark.embedded_only("fault injection")
def test_an_event_that_cannot_be_written_is_dropped_without_raising(
    apiserver: ApiServer, kube: KubeApi
) -> None:
    ers = EphemeralRunnerSet(kube.create_object(ERS_PLURAL, ers_body("web")))
    apiserver.inject_fault(verb="create", resource="events", code=500)

    EventRecorder(kube.api_client()).event(
        ers, type="Warning", reason=Reason.RECONCILE_FAILED, message="m"
    )

    assert events(kube) == []


def test_a_fenced_recorder_stays_silent(kube: KubeApi) -> None:
    ers = EphemeralRunnerSet(kube.create_object(ERS_PLURAL, ers_body("web")))
    EventRecorder(kube.api_client(), fence=lambda: False).event(
        ers, type="Normal", reason=Reason.RECONCILE_FAILED, message="m"
    )
    assert events(kube) == []


def test_a_body_cut_short_is_a_kube_error_not_a_library_exception() -> None:
    # The body of a raw response is read after the call returned: a connection that
    # breaks mid-body must still leave as a KubeError (an informer's list once escaped as
    # urllib3's ProtocolError, logged without the server).
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]

        def answer_half() -> None:
            conn, _ = listener.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: 100\r\n\r\n{\"items\": [")  # fmt: skip

        server = threading.Thread(target=answer_half, daemon=True)
        server.start()
        configuration = client.Configuration()
        configuration.host = f"http://127.0.0.1:{port}"
        configuration.retries = 0
        reader = ApiReader(Reader(client.ApiClient(configuration)))
        with pytest.raises(KubeError) as caught:
            reader.list_ers("ns")
        server.join(5)
    assert caught.value.status is None
    assert f"http://127.0.0.1:{port}" in str(caught.value)


@pytest.mark.embedded_only("fault injection")
def test_where_rbac_forbids_events_one_warning_then_they_go_to_the_log_without_a_request(
    apiserver: ApiServer, kube: KubeApi, caplog: pytest.LogCaptureFixture
) -> None:
    # ARC's Helm chart grants its controller no events create.
    ers = EphemeralRunnerSet(kube.create_object(ERS_PLURAL, ers_body("web")))
    apiserver.inject_fault(verb="create", resource="events", code=403, times=-1)
    recorder = EventRecorder(kube.api_client())

    with caplog.at_level(logging.INFO, logger="ersctl.kube.events"):
        recorder.event(
            ers, type="Warning", reason=Reason.RECONCILE_FAILED, message="the set is stuck"
        )
        apiserver.request_log.clear()
        recorder.event(ers, type="Normal", reason=Reason.SCALED_UP, message="created 1")

    assert apiserver.request_log.records() == [], "no request once forbidden"
    logged = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert logged == [
        ("WARNING", "cannot record Events (Forbidden): this controller's RBAC grants no "
         "events create; Events go to the log instead"),
        # INFO even for a Warning Event: the failed reconcile logs its own WARNING.
        ("INFO", "event Warning ReconcileFailed on " + ers.key + ": the set is stuck"),
        ("INFO", "event Normal ScaledUp on " + ers.key + ": created 1"),
    ]  # fmt: skip


@pytest.mark.embedded_only("the request log")
def test_a_rate_limited_client_spaces_its_requests_beyond_the_burst(
    apiserver: ApiServer, kube: KubeApi
) -> None:
    # ARC's --k8s-client-rate-limiter-qps/-burst: 10 a second after 2 at once, so the
    # 6th of six requests waits at least 0.4 s (a lower bound: load only adds to it).
    api_client = kube.api_client()
    limit_requests(api_client, qps=10, burst=2)
    core = client.CoreV1Api(api_client)
    apiserver.request_log.clear()
    for _ in range(6):
        core.read_namespace(kube.namespace)
    times = [r.at for r in apiserver.request_log.records() if r.resource == "namespaces"]
    assert len(times) == 6
    assert times[-1] - times[0] >= 0.35
