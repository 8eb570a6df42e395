"""The metrics and probe server both programs run: what it serves, and a port in use."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Counter

from ersctl.platform.errors import ConfigError
from ersctl.platform.probes import Verdict
from ersctl.platform.serving import AddressInUseError, ProbeServer
from tests import local_http


def get(url: str) -> tuple[int, str]:
    resp = local_http.get(url, timeout=2)
    return resp.status_code, resp.text


@pytest.fixture
def registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    Counter("things", "Things.", registry=registry).inc(3)
    return registry


def test_metrics_health_and_readiness_share_one_server(registry: CollectorRegistry) -> None:
    ready = Verdict(ok=False, reason="caches not synced")
    server = ProbeServer(
        registry, option="--metrics-addr", address=("127.0.0.1", 0), ready=lambda: ready
    )
    server.start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        assert get(f"{base}/healthz") == (200, "ok\n")
        assert get(f"{base}/readyz") == (503, "caches not synced\n")
        ready = Verdict(ok=True)
        assert get(f"{base}/readyz") == (200, "ok\n")
        status, text = get(f"{base}/metrics")
        assert status == 200 and "things_total 3.0" in text
        assert get(f"{base}/nope")[0] == 404
    finally:
        server.stop()


def test_the_metrics_endpoint_is_configurable_and_alone(registry: CollectorRegistry) -> None:
    server = ProbeServer(
        registry, option="metrics_addr", address=("127.0.0.1", 0), endpoint="/custom"
    )
    server.start()
    try:
        assert server.url.endswith("/custom")
        assert get(server.url)[0] == 200
        assert get(server.url.replace("/custom", "/metrics"))[0] == 404
    finally:
        server.stop()


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_a_port_in_use_names_the_option_and_the_address(
    registry: CollectorRegistry, taken_port: int
) -> None:
    server = ProbeServer(registry, option="metrics_addr", address=("127.0.0.1", taken_port))
    with pytest.raises(AddressInUseError) as caught:
        server.start()
    assert str(caught.value) == (
        f"metrics_addr: cannot listen on '127.0.0.1:{taken_port}': Address already in use"
    )
    assert caught.value.exit_code == 1


def test_an_address_this_host_cannot_listen_on_is_a_config_error(
    registry: CollectorRegistry,
) -> None:
    server = ProbeServer(registry, option="--metrics-addr", address=("192.0.2.1", 0))
    with pytest.raises(ConfigError, match=r"--metrics-addr: cannot listen on '192.0.2.1:0'"):
        server.start()


def test_without_a_registry_it_serves_the_probes_alone() -> None:
    # controller-runtime's --health-probe-bind-address: /healthz and /readyz, no /metrics.
    server = ProbeServer(None, option="--health-probe-bind-address", address=("127.0.0.1", 0))
    server.start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        assert get(f"{base}/healthz") == (200, "ok\n")
        assert get(f"{base}/readyz") == (200, "ok\n")
        assert get(f"{base}/metrics")[0] == 404
    finally:
        server.stop()
