"""``ghalistener run`` as a real process serves /healthz and /readyz beside its metrics:
not ready while it cannot open a message session (live: the 409 wait is a documented
waiting state), ready once a session is open and a desired count published, live while
it polls."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import httpx
import pytest

from ersctl.testing.ports import unused_port
from tests import local_http
from tests.ghalistener.processes import ready_server, sim, start_listener
from tests.ghalistener.test_cli_subprocess import create_ers, listener_config
from tests.kubeapi import KubeApi
from tests.polling import eventually

pytestmark = pytest.mark.slow


def probe(port: int, path: str) -> httpx.Response | None:
    try:
        return local_http.get(f"http://127.0.0.1:{port}{path}", timeout=5)
    except httpx.TransportError:
        return None  # not listening yet


def test_readyz_turns_200_once_a_session_is_open_and_healthz_stays_200_while_polling(
    tmp_path: Path,
    kube: KubeApi,
) -> None:
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    with (
        ready_server(
            "ghalistener.testing.github", "--port", "0", "--hold", "0.2", "--scale-set", "runners"
        ) as github,
    ):
        create_ers(kube)
        # Another listener holds the session, as far as this one can tell: every create
        # answers 409 until the fault is cleared.
        sim(github, "POST", "/faults", {"endpoint": "create_session", "status": 409, "times": -1})
        port = unused_port()
        config = listener_config(
            github,
            kube.namespace,
            metrics_addr=f"127.0.0.1:{port}",
            session_retry_interval=0.1,
            session_retry_attempts=1000,
        )
        listener = start_listener(config, tmp_path, kubeconfig)
        try:
            eventually(
                lambda: probe(port, "/readyz") is not None, what="the probe server", timeout=15
            )
            time.sleep(0.3)  # a few 409 attempts
            unready = probe(port, "/readyz")
            assert unready is not None and unready.status_code == 503
            assert unready.text == "no message session open\n"
            waiting = probe(port, "/healthz")
            assert waiting is not None and waiting.status_code == 200

            sim(github, "DELETE", "/faults")
            eventually(
                lambda: getattr(probe(port, "/readyz"), "status_code", 0) == 200,
                what="/readyz 200",
                timeout=15,
            )
            assert sim(github, "GET", "/state")["sessions"]
            for _ in range(3):  # across several 0.2 s long polls
                time.sleep(0.25)
                polling = probe(port, "/healthz")
                assert polling is not None and polling.status_code == 200
                assert polling.text == "ok\n"
            assert getattr(probe(port, "/readyz"), "status_code", 0) == 200
        finally:
            listener.send_signal(signal.SIGTERM)
            try:
                listener.wait(timeout=10)
            finally:
                if listener.poll() is None:
                    listener.kill()
        assert listener.returncode == 0, listener.stderr.read() if listener.stderr else ""
