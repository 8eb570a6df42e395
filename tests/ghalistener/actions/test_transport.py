"""Transport settings: long-poll timeout, custom root CA, proxies from the environment."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ersctl.platform.redaction import Redactor
from ghalistener.actions.auth import PatCredentials
from ghalistener.actions.client import ActionsClient
from ghalistener.actions.errors import ActionsError, MessageParseError, RequestError
from ghalistener.actions.proxy import ProxyServer, ProxySettings
from ghalistener.actions.retry import RetryPolicy
from ghalistener.actions.session import MessageSession
from ghalistener.actions.transport import HttpSender
from ghalistener.testing import GitHubSimulator, SimulatorServer
from ghalistener.testing.respx_adapter import mock_transport
from ghalistener.testing.server import serve
from tests.certificates import server_certificates
from tests.ghalistener.actions.conftest import QUEUE_URL, GitHubMock, session_json


def test_the_long_poll_reads_longer_than_the_services_hold(
    github: GitHubMock, client: ActionsClient
) -> None:
    github.service(
        "POST", "_apis/runtime/runnerscalesets/7/sessions"
    ).return_value = httpx.Response(200, json=session_json())
    github.service(
        "DELETE", "_apis/runtime/runnerscalesets/7/sessions/s-1"
    ).return_value = httpx.Response(204)
    poll = github.router.get(url__startswith=QUEUE_URL.split("?")[0])
    poll.return_value = httpx.Response(202)
    with MessageSession.open(client, scale_set_id=7, owner_name="h") as session:
        session.get_message(last_message_id=0, max_capacity=1)
    poll_timeout = poll.calls.last.request.extensions["timeout"]
    assert poll_timeout["read"] > 50
    create = github.router.calls[2].request  # registration, admin, then the session create
    assert create.extensions["timeout"]["read"] <= 50


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[SimulatorServer, str]]:
    certificates = server_certificates(tmp_path)
    simulator = GitHubSimulator(hold_seconds=0.0)
    simulator.create_scale_set("arc-runners")
    with serve(simulator, tls=certificates.server) as server:
        yield server, certificates.root_pem


def test_a_cookie_the_service_sets_is_never_sent_back(
    github: GitHubMock, client: ActionsClient
) -> None:
    # ARC's client (Go's http.Client without a jar) keeps no cookies: neither do we.
    github.service(
        "POST", "_apis/runtime/runnerscalesets/7/sessions"
    ).return_value = httpx.Response(
        200, json=session_json(), headers={"Set-Cookie": "affinity=node-3; Path=/"}
    )
    github.service(
        "DELETE", "_apis/runtime/runnerscalesets/7/sessions/s-1"
    ).return_value = httpx.Response(204)
    poll = github.router.get(url__startswith=QUEUE_URL.split("?")[0])
    poll.return_value = httpx.Response(202, headers={"Set-Cookie": "queue=q-1; Path=/"})
    with MessageSession.open(client, scale_set_id=7, owner_name="h") as session:
        session.get_message(last_message_id=0, max_capacity=1)
        session.get_message(last_message_id=0, max_capacity=1)
    sent = [call.request for call in github.router.calls]
    assert len(sent) >= 5  # registration, admin, session, two polls, the session delete
    assert all("cookie" not in request.headers for request in sent)


def test_a_custom_root_ca_lets_the_client_trust_a_private_server(
    tls_server: tuple[SimulatorServer, str],
) -> None:
    server, ca_pem = tls_server
    assert server.url.startswith("https://")
    with ActionsClient(
        config_url=server.config_url(),
        credentials=PatCredentials(token="ghp_tls_test"),
        root_ca=ca_pem,
        retry=RetryPolicy(max_retries=0),
    ) as client:
        assert client.get_runner_scale_set_by_id(1).name == "arc-runners"


def test_without_the_root_ca_the_private_server_is_not_trusted_and_not_retried(
    tls_server: tuple[SimulatorServer, str],
) -> None:
    server, _ = tls_server
    waits: list[float] = []
    with (
        ActionsClient(
            config_url=server.config_url(),
            credentials=PatCredentials(token="ghp_tls_test"),
            retry=RetryPolicy(sleep=waits.append),
        ) as client,
        pytest.raises(RequestError) as caught,
    ):
        client.get_runner_scale_set_by_id(1)
    assert caught.value.status is None
    assert "CERTIFICATE_VERIFY_FAILED" in str(caught.value)
    assert waits == []


def test_a_bundle_holding_only_the_intermediate_ca_is_trusted_as_gos_client_trusts_it(
    tmp_path: Path,
) -> None:
    # ARC's Go client takes any certificate of the bundle as a trust anchor; OpenSSL wanted
    # the chain up to a self-signed root: "unable to get issuer certificate".
    certificates = server_certificates(tmp_path, intermediate=True)
    simulator = GitHubSimulator(hold_seconds=0.0)
    simulator.create_scale_set("arc-runners")
    with (
        serve(simulator, tls=certificates.server) as server,
        ActionsClient(
            config_url=server.config_url(),
            credentials=PatCredentials(token="ghp_tls_test"),
            root_ca=certificates.intermediate_pem,
            retry=RetryPolicy(max_retries=0),
        ) as client,
    ):
        assert client.get_runner_scale_set_by_id(1).name == "arc-runners"


@pytest.mark.parametrize(
    "root_ca",
    [
        pytest.param(
            "-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n", id="bad PEM"
        ),
        pytest.param("caf\u00e9", id="not ASCII"),
    ],
)
def test_a_root_ca_that_is_no_certificate_is_a_clear_error(root_ca: str) -> None:
    with pytest.raises(ActionsError, match="server_root_ca") as caught:
        ActionsClient(
            config_url="https://github.com/o",
            credentials=PatCredentials(token="ghp_x_123456"),
            root_ca=root_ca,
        )
    assert not str(caught.value).endswith("None"), "the reason is named, not 'None'"


@pytest.fixture
def proxy() -> Iterator[SimulatorServer]:
    """The simulator also answers absolute-form requests, so it can act as the proxy."""
    simulator = GitHubSimulator(hold_seconds=0.0)
    simulator.create_scale_set("arc-runners")
    with serve(simulator) as server:
        yield server


def _proxied_client() -> ActionsClient:
    return ActionsClient(
        config_url="http://ghes.proxied.invalid/my-org",
        credentials=PatCredentials(token="ghp_proxy_test"),
        retry=RetryPolicy(max_retries=0),
    )


def test_requests_go_through_the_proxy_named_in_the_environment(
    proxy: SimulatorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with _proxied_client() as client:
        # ghes.proxied.invalid does not resolve: only the proxy can answer.
        assert client.get_runner_scale_set_by_id(1).id == 1


def test_no_proxy_bypasses_the_proxy(
    proxy: SimulatorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("NO_PROXY", "ghes.proxied.invalid")
    with _proxied_client() as client, pytest.raises(RequestError) as caught:
        client.get_runner_scale_set_by_id(1)
    assert caught.value.status is None


def test_a_proxy_password_never_reaches_the_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://user:pr0xyPassw0rd@127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with _proxied_client() as client, pytest.raises(RequestError) as caught:
        client.get_runner_scale_set_by_id(1)
    assert caught.value.status is None
    assert "pr0xyPassw0rd" not in f"{caught.value} {vars(caught.value)}"


def test_an_injected_httpx_transport_carries_every_request() -> None:
    simulator = GitHubSimulator(hold_seconds=0.0)
    simulator.create_scale_set("arc-runners")
    # ghes.mock does not resolve and no respx router is active: only the transport answers.
    with ActionsClient(
        config_url="https://ghes.mock/my-org",
        credentials=PatCredentials(token="ghp_mock_transport"),
        transport=mock_transport(simulator, base_url="https://ghes.mock"),
    ) as client:
        assert client.get_runner_scale_set_by_id(1).id == 1
    kinds = [e["kind"] for e in simulator.events]
    assert kinds.count("token.issued") == 1 and kinds.count("admin.connected") == 1


# --- httpx errors never escape the client --------------------------------------------


def test_a_body_that_fails_to_decode_is_a_request_error(
    github: GitHubMock, client: ActionsClient
) -> None:
    # httpx raises DecodingError while reading a bad gzip body; it used to escape the
    # client and reach the CLI as a traceback, past the log redactor.
    github.service("GET", "_apis/runtime/runnerscalesets/7").return_value = httpx.Response(
        200, headers={"Content-Encoding": "gzip"}, stream=httpx.ByteStream(b"this is not gzip")
    )
    with pytest.raises(RequestError) as caught:
        client.get_runner_scale_set_by_id(7)
    assert caught.value.status is None
    assert "DecodingError" in str(caught.value)
    assert isinstance(caught.value.__cause__, httpx.DecodingError)


def test_senders_built_one_after_another_load_each_ca_bundle_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A controller builds a sender per scale set (and per credentials rotation): each
    # used to load the CA bundle again, ~20 ms of CPU.
    root_pem = server_certificates(tmp_path).root_pem
    loads: list[object] = []
    load = ssl.SSLContext.load_verify_locations

    def counted(context: ssl.SSLContext, *args: Any, **kwargs: Any) -> None:
        loads.append(args or kwargs)
        load(context, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    # Direct and through proxies: ProxyRoutes makes a transport per proxy.
    proxies = ProxySettings(
        http=ProxyServer(url="http://proxy.test:3128"),
        https=ProxyServer(url="https://proxy.test:3129"),
    )
    for _ in range(3):
        for root_ca in (None, root_pem):
            for proxy in (None, proxies):
                HttpSender(
                    user_agent="test",
                    retry=RetryPolicy(sleep=lambda _: None),
                    redactor=Redactor(),
                    root_ca=root_ca,
                    proxy=proxy,
                )
    # At most once each: httpx's bundle and the one with root_ca (none when another
    # test of this process made them already).
    assert len(loads) <= 2, loads


def test_too_many_redirects_is_a_request_error(github: GitHubMock, client: ActionsClient) -> None:
    route = github.service("GET", "_apis/runtime/runnerscalesets/7")
    route.side_effect = httpx.TooManyRedirects("Exceeded maximum allowed redirects.")
    with pytest.raises(RequestError, match="TooManyRedirects") as caught:
        client.get_runner_scale_set_by_id(7)
    assert isinstance(caught.value.__cause__, httpx.TooManyRedirects)


def test_an_invalid_url_is_a_request_error_without_its_credentials() -> None:
    sender = HttpSender(
        user_agent="test", retry=RetryPolicy(sleep=lambda _: None), redactor=Redactor()
    )
    with pytest.raises(RequestError, match="InvalidURL") as caught:
        sender.send("GET", "https://user:pw-SECRET@host.test:port/x", headers={})
    assert "pw-SECRET" not in str(caught.value)
    assert isinstance(caught.value.__cause__, httpx.InvalidURL)


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        pytest.param(
            {"url": "https://svc.test:port/", "token": "t" * 20},
            "admin connection: field 'url' is not a valid URL",
            id="admin connection URL",
        ),
    ],
)
def test_a_service_url_httpx_cannot_parse_is_a_parse_error(
    github: GitHubMock, client: ActionsClient, answer: dict[str, str], problem: str
) -> None:
    github.admin.side_effect = None
    github.admin.return_value = httpx.Response(200, json=answer)
    with pytest.raises(MessageParseError, match=problem):
        client.get_runner_scale_set_by_id(7)


def test_a_session_whose_queue_url_httpx_cannot_parse_is_a_parse_error(
    github: GitHubMock, client: ActionsClient
) -> None:
    github.service(
        "POST", "_apis/runtime/runnerscalesets/7/sessions"
    ).return_value = httpx.Response(
        200, json={**session_json(), "messageQueueUrl": "https://b.test:port/q"}
    )
    with pytest.raises(MessageParseError, match="'messageQueueUrl' is not a valid URL"):
        MessageSession.open(client, scale_set_id=7, owner_name="h")
