"""The GitHub client through an explicit proxy: a real CONNECT proxy on loopback in
front of the simulator served over TLS with a CA the test made.

The simulator answers as ``ghes.test``, a name only the proxy resolves: a call that
reaches it went through the proxy. Its actions service is advertised as ``0.0.0.0``,
which Go's rules do not count as loopback (so only ``noProxy`` keeps it off the proxy)
and which Linux connects to this host: a call that reaches it directly bypassed it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ersctl.platform.redaction import REDACTOR
from ghalistener.actions.auth import PatCredentials
from ghalistener.actions.client import ActionsClient
from ghalistener.actions.errors import RequestError
from ghalistener.actions.proxy import ProxySettings, proxy_server
from ghalistener.actions.retry import RetryPolicy
from ghalistener.testing import GitHubSimulator, SimulatorServer
from ghalistener.testing.server import serve
from tests.certificates import server_certificates
from tests.connect_proxy import ConnectProxy

USER = "proxy-user"
PASSWORD = "pr0xy:p@ss/w0rd"  # every character net/url escapes in userinfo


@dataclass
class Ghes:
    server: SimulatorServer
    ca: str
    proxy: ConnectProxy

    @property
    def config_url(self) -> str:
        return f"https://ghes.test:{self.server.port}/my-org"

    def client(self, settings: ProxySettings) -> ActionsClient:
        return ActionsClient(
            config_url=self.config_url,
            credentials=PatCredentials(token="ghp_proxy_test"),
            root_ca=self.ca,
            proxy=settings,
            retry=RetryPolicy(max_retries=0),
        )

    def settings(self, *no_proxy: str, password: str = PASSWORD) -> ProxySettings:
        server = proxy_server(self.proxy.url, username=USER, password=password)
        return ProxySettings(https=server, no_proxy=no_proxy)


@pytest.fixture
def ghes(tmp_path: Path) -> Iterator[Ghes]:
    certificates = server_certificates(tmp_path, hosts=("ghes.test", "0.0.0.0"))
    simulator = GitHubSimulator(hold_seconds=0.0)
    simulator.create_scale_set("arc-runners")
    with (
        serve(simulator, tls=certificates.server, url_host="0.0.0.0") as server,
        ConnectProxy(hosts={"ghes.test": "127.0.0.1"}, credentials=(USER, PASSWORD)) as proxy,
    ):
        yield Ghes(server=server, ca=certificates.root_pem, proxy=proxy)


def test_calls_go_through_the_https_proxy_with_its_credentials(ghes: Ghes) -> None:
    with ghes.client(ghes.settings()) as client:
        assert client.get_runner_scale_set_by_id(1).name == "arc-runners"

    tunnels = ghes.proxy.tunnels()
    port = ghes.server.port
    assert {t.target for t in tunnels} == {f"ghes.test:{port}", f"0.0.0.0:{port}"}
    assert {t.credentials for t in tunnels} == {(USER, PASSWORD)}


def test_a_no_proxy_host_is_reached_directly(ghes: Ghes) -> None:
    with ghes.client(ghes.settings("0.0.0.0")) as client:
        assert client.get_runner_scale_set_by_id(1).name == "arc-runners"

    assert {t.host for t in ghes.proxy.tunnels()} == {"ghes.test"}, "the service went direct"


def test_the_environments_proxy_variables_give_way_to_explicit_settings(
    ghes: Ghes, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ARC hands a set's proxy function to its client: the process environment is not asked.
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "ghes.test")
    with ghes.client(ghes.settings()) as client:
        assert client.get_runner_scale_set_by_id(1).name == "arc-runners"

    assert ghes.proxy.tunnels()


def test_a_refused_proxy_password_is_an_error_that_does_not_show_it(ghes: Ghes) -> None:
    with (
        ghes.client(ghes.settings(password="wr0ng:p@ss/w0rd")) as client,
        pytest.raises(RequestError) as caught,
    ):
        client.get_runner_scale_set_by_id(1)

    text = f"{caught.value} {vars(caught.value)}"
    assert "407" in text
    for secret in ("wr0ng:p@ss/w0rd", "wr0ng%3Ap%40ss%2Fw0rd", PASSWORD):
        assert secret not in text


def test_the_proxy_password_is_redacted_from_log_lines_once_a_client_has_it(
    ghes: Ghes,
) -> None:
    password = "n3w-pr0xy-passw0rd/x"
    with ghes.client(ghes.settings(password=password)):
        pass

    line = REDACTOR(f"dialing http://{USER}:n3w-pr0xy-passw0rd%2Fx@proxy and {password}")
    assert "n3w-pr0xy" not in line
