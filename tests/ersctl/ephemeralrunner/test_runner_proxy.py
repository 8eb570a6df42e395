"""A runner's ``proxy`` and ``githubServerTLS`` honoured by the controller's GitHub calls.

GitHub Enterprise Server here is the simulator over TLS with a CA the test made (in a
ConfigMap, as ARC's ``githubServerTLS`` names it), behind a real CONNECT proxy that
wants basic credentials (from the ``credentialSecretRef`` Secret). Its API answers as
``ghes.test``, a name only the proxy resolves, so a registration that succeeds went
through the proxy; its actions service is advertised as ``0.0.0.0``, which Go's rules
do not count as loopback but Linux connects to this host, so ``noProxy`` alone decides
whether the service calls use the proxy.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ersctl.api import FieldError
from ghalistener.testing.server import serve
from tests.certificates import server_certificates
from tests.connect_proxy import ConnectProxy
from tests.ersctl.ephemeralrunner.conftest import Harness, b64
from tests.ersctl.ephemeralrunner.test_runner_credentials import is_closed

USER = "proxy-user"
PASSWORD = "pr0xy:p@ss/w0rd-one"
ROTATED = "pr0xy:p@ss/w0rd-two"
PROXY_SECRET = "proxy-credentials"
CA_MAP = "ghes-ca"


@dataclass
class Ghes:
    """The simulator behind the proxy, and the runner spec fields that reach it."""

    h: Harness
    proxy: ConnectProxy
    port: int
    ca: str

    def spec(self, **proxy: Any) -> dict[str, Any]:
        """``githubConfigUrl``, ``proxy`` (``https`` through the proxy with credentials,
        then ``proxy``'s keys) and ``githubServerTLS`` of a runner."""
        https = {"url": self.proxy.url, "credentialSecretRef": PROXY_SECRET}
        return {
            "githubConfigUrl": f"https://ghes.test:{self.port}/my-org",
            "proxy": {"https": https, **proxy},
            "githubServerTLS": {
                "certificateFrom": {"configMapKeyRef": {"name": CA_MAP, "key": "ca.crt"}}
            },
        }

    def set_password(self, password: str) -> None:
        """Rotate the proxy's password: the proxy wants it, the Secret holds it."""
        self.proxy.credentials = (USER, password)
        self.h.kube.patch_object(
            "secrets", self.h.namespace, PROXY_SECRET, {"data": {"password": b64(password)}}
        )

    def set_ca(self, pem: str) -> None:
        self.h.kube.patch_object("configmaps", self.h.namespace, CA_MAP, {"data": {"ca.crt": pem}})

    def warnings(self) -> list[str]:
        return [e["message"] for e in self.h.events("InvalidRunner")]


@pytest.fixture
def ghes(h: Harness, tmp_path: Path) -> Iterator[Ghes]:
    certificates = server_certificates(tmp_path, hosts=("ghes.test", "0.0.0.0"))
    h.kube.create_object(
        "secrets",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": PROXY_SECRET, "namespace": h.namespace},
            "data": {"username": b64(USER), "password": b64(PASSWORD)},
        },
    )
    h.kube.create_object(
        "configmaps",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": CA_MAP, "namespace": h.namespace},
            "data": {"ca.crt": certificates.root_pem},
        },
    )
    with (
        serve(h.sim, tls=certificates.server, url_host="0.0.0.0") as server,
        ConnectProxy(hosts={"ghes.test": "127.0.0.1"}, credentials=(USER, PASSWORD)) as proxy,
    ):
        yield Ghes(h=h, proxy=proxy, port=server.port, ca=certificates.root_pem)


def test_a_runner_registers_through_its_proxy_with_the_credentials_trusting_its_ca(
    ghes: Ghes, h: Harness
) -> None:
    h.create_runner(**ghes.spec())
    h.settle()

    assert list(h.sim_runners()) == ["arc-runner-abcde"]
    tunnels = ghes.proxy.tunnels()
    assert {t.target for t in tunnels} == {f"ghes.test:{ghes.port}", f"0.0.0.0:{ghes.port}"}
    assert {t.credentials for t in tunnels} == {(USER, PASSWORD)}


def test_no_proxy_hosts_are_reached_directly(ghes: Ghes, h: Harness) -> None:
    h.create_runner(**ghes.spec(noProxy=["0.0.0.0"]))
    h.settle()

    assert list(h.sim_runners()) == ["arc-runner-abcde"]
    assert {t.host for t in ghes.proxy.tunnels()} == {"ghes.test"}, "the service went direct"


def test_a_rotated_proxy_password_is_used_at_the_next_call(ghes: Ghes, h: Harness) -> None:
    h.create_runner(**ghes.spec())
    h.settle()
    seen = len(ghes.proxy.tunnels())
    ghes.set_password(ROTATED)

    h.kube.delete_object("ephemeralrunners", h.namespace, "arc-runner-abcde")
    h.settle()

    assert h.runner() is None and h.sim_runners() == {}, "removed from GitHub"
    assert {t.credentials for t in ghes.proxy.tunnels()[seen:]} == {(USER, ROTATED)}
    old, new = h.clients
    assert is_closed(old) and not is_closed(new)


def test_unchanged_settings_reuse_the_client(ghes: Ghes, h: Harness) -> None:
    for name in ("arc-runner-1", "arc-runner-2"):
        h.create_runner(name, **ghes.spec())
        h.settle(name)

    assert len(h.clients) == 1


def test_runners_sharing_secrets_but_not_proxy_settings_keep_their_own_clients(
    ghes: Ghes, h: Harness
) -> None:
    # Same credentials Secret, URL, proxy Secret and CA: only noProxy differs.
    h.create_runner("arc-runner-direct", **ghes.spec(noProxy=["0.0.0.0"]))
    h.settle("arc-runner-direct")
    h.create_runner("arc-runner-proxied", **ghes.spec())
    h.settle("arc-runner-proxied")

    assert sorted(h.sim_runners()) == ["arc-runner-direct", "arc-runner-proxied"]
    assert len(h.clients) == 2
    assert f"0.0.0.0:{ghes.port}" in {t.target for t in ghes.proxy.tunnels()}


def test_a_replaced_ca_is_trusted_at_the_next_call(ghes: Ghes, h: Harness, tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    ghes.set_ca(server_certificates(tmp_path / "other", hosts=("ghes.test",)).root_pem)
    h.create_runner(**ghes.spec())
    with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED"):
        h.reconcile()
    ghes.set_ca(ghes.ca)

    h.settle()

    assert list(h.sim_runners()) == ["arc-runner-abcde"]
    assert len(h.clients) == 2


def no_secret(ghes: Ghes) -> None:
    ghes.h.kube.delete_object("secrets", ghes.h.namespace, PROXY_SECRET)


def no_config_map(ghes: Ghes) -> None:
    ghes.h.kube.delete_object("configmaps", ghes.h.namespace, CA_MAP)


def no_key(ghes: Ghes) -> None:
    ghes.h.kube.delete_object("configmaps", ghes.h.namespace, CA_MAP)
    ghes.h.kube.create_object(
        "configmaps",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": CA_MAP, "namespace": ghes.h.namespace},
            "data": {},
        },
    )


def not_pem(ghes: Ghes) -> None:
    ghes.set_ca("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n")


@pytest.mark.parametrize(
    ("break_it", "spec", "message"),
    [
        pytest.param(
            no_secret,
            {},
            "spec.proxy.https.credentialSecretRef: Secret {namespace}/proxy-credentials not found",
            id="no credentials Secret",
        ),
        pytest.param(
            None,
            {"http": {"url": "socks5://proxy.corp:1080"}},
            "spec.proxy.http.url: must be an http:// or https:// URL, not socks5://",
            id="a proxy URL the client cannot use",
        ),
        pytest.param(
            no_config_map,
            {},
            "spec.githubServerTLS.certificateFrom.configMapKeyRef: ConfigMap {namespace}/ghes-ca not found",
            id="no CA ConfigMap",
        ),
        pytest.param(
            no_key,
            {},
            "spec.githubServerTLS.certificateFrom.configMapKeyRef: "
            "ConfigMap {namespace}/ghes-ca has no key 'ca.crt'",
            id="no CA key",
        ),
        pytest.param(
            not_pem,
            {},
            "spec.githubServerTLS.certificateFrom.configMapKeyRef: "
            "ConfigMap {namespace}/ghes-ca key 'ca.crt' is not a PEM certificate",
            id="a CA that is no PEM",
        ),
    ],
)
def test_unusable_settings_are_a_warning_naming_the_field_and_no_change(
    ghes: Ghes, h: Harness, break_it: Any, spec: dict[str, Any], message: str
) -> None:
    if break_it is not None:
        break_it(ghes)
    h.create_runner(**ghes.spec(**spec))

    with pytest.raises(FieldError):
        h.reconcile()

    (warning,) = ghes.warnings()
    assert warning.startswith(message.format(namespace=h.namespace))
    assert h.sim_runners() == {} and h.pod() is None and h.secret() is None
    assert ghes.proxy.tunnels() == []


def test_no_proxy_password_reaches_a_log_line(
    ghes: Ghes, h: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    h.create_runner(**ghes.spec())
    h.settle()
    ghes.set_password(ROTATED)
    ghes.proxy.credentials = (USER, "the-proxy-wants-another")  # every call now fails
    h.kube.delete_object("ephemeralrunners", h.namespace, "arc-runner-abcde")
    with pytest.raises(Exception, match="407"):
        h.reconcile()

    assert "407" in caplog.text, "the refusal was logged"
    for password in (PASSWORD, ROTATED):
        escaped = password.replace(":", "%3A").replace("@", "%40").replace("/", "%2F")
        for form in (password, escaped, base64.b64encode(password.encode()).decode()):
            assert form not in caplog.text


def test_the_runner_pod_takes_the_proxy_variables_from_the_sets_proxy_secret(
    ghes: Ghes, h: Harness
) -> None:
    h.create_runner(**ghes.spec(noProxy=["0.0.0.0"]), proxySecretRef="arc-bcdfghjk-runner-proxy")
    h.settle()

    pod = h.pod()
    assert pod is not None
    (runner,) = pod["spec"]["containers"]
    proxy_env = {e["name"]: e for e in runner["env"] if e["name"].endswith("_proxy")}
    assert proxy_env == {
        name: {
            "name": name,
            "valueFrom": {"secretKeyRef": {"name": "arc-bcdfghjk-runner-proxy", "key": name}},
        }
        for name in ("https_proxy", "no_proxy")
    }
