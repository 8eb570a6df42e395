"""Two controller processes against one server: only the lease holder reconciles."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

from ersctl import api
from ersctl.testing.apiserver import ApiServer
from ersctl.testing.ports import unused_port
from tests import local_http
from tests.ersctl.ephemeralrunnerset.github import PAT
from tests.ersctl.ephemeralrunnerset.objects import ers_doc
from tests.leases import refused_campaigns
from tests.polling import eventually

NAMESPACE = "arc"
LEASE = "ersctl-leader"


WAIT = 20.0  # seconds: two controller processes on a shared 2-core machine


@pytest.fixture
def server(apiserver: ApiServer) -> ApiServer:
    apiserver.create_object("namespaces", {"metadata": {"name": NAMESPACE}})
    token = base64.b64encode(PAT.encode()).decode()
    apiserver.create_object(
        "secrets",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "github-config", "namespace": NAMESPACE},
            "data": {"github_token": token},
        },
    )
    return apiserver


@pytest.fixture
def controllers(server: ApiServer, tmp_path: Path) -> Iterator[Callable[[], Controller]]:
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
    processes: list[subprocess.Popen[bytes]] = []
    logs: list[IO[bytes]] = []

    def start() -> Controller:
        port = unused_port()
        command = [sys.executable, "-m", "ersctl", "reconcile", "--kubeconfig", str(kubeconfig)]
        command += ["--namespace", NAMESPACE, "--metrics-addr", f"127.0.0.1:{port}"]
        command += ["--lease-duration", "2"]
        command += ["--renew-deadline", "1.5", "--retry-period", "1"]
        # The set controller's election alone: no runner registrations (nothing answers
        # for GitHub here) and no ARS controller.
        command += ["--no-runner-controller", "--no-autoscaling-runner-set-controller"]
        log = open(tmp_path / f"controller-{len(processes)}.log", "wb")  # noqa: SIM115
        logs.append(log)
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=os.environ)
        processes.append(process)
        return Controller(process, port)

    yield start
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
    for log in logs:
        log.close()


@dataclass(frozen=True)
class Controller:
    process: subprocess.Popen[bytes]
    port: int

    def reconciles(self) -> float:
        """How many reconciles this process ran, from its own /metrics."""
        try:
            text = local_http.get(f"http://127.0.0.1:{self.port}/metrics", timeout=2).text
        except httpx.TransportError:
            return -1.0
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("ersctl_reconcile_total{")
        )


def holder(server: ApiServer) -> str:
    lease = server.get_object("leases", NAMESPACE, LEASE) or {}
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def live_runners(server: ApiServer) -> list[dict[str, Any]]:
    return [
        r
        for r in server.list_objects(api.ER_PLURAL, NAMESPACE)
        if not r["metadata"].get("deletionTimestamp")
    ]


def scaled_up_by(server: ApiServer) -> set[str]:
    return {
        str(e.get("reportingInstance"))
        for e in server.list_objects("events", NAMESPACE)
        if e.get("reason") == "ScaledUp"
    }


def publish(server: ApiServer, *, replicas: int, patch_id: int) -> None:
    spec = {"replicas": replicas, "patchID": patch_id}
    server.patch_object(api.ERS_PLURAL, NAMESPACE, "runners", {"spec": spec})


@pytest.mark.slow
@pytest.mark.embedded_only("the request log")
def test_only_the_lease_holder_reconciles_and_the_other_takes_over_when_it_stops(
    server: ApiServer, controllers: Callable[[], Controller]
) -> None:
    first = controllers()
    leader = eventually(lambda: holder(server), timeout=WAIT)
    second = controllers()
    server.create_object(
        api.ERS_PLURAL, ers_doc("runners", replicas=2, patch_id=1, finalizers=[api.ERS_FINALIZER])
    )

    eventually(lambda: len(live_runners(server)) == 2, timeout=WAIT)
    eventually(lambda: scaled_up_by(server), timeout=WAIT)
    eventually(lambda: second.reconciles() >= 0, timeout=WAIT)  # its metrics answer: it is up
    # The second replica saw the set and its runners come (it campaigns only once its
    # caches synced) and has campaigned since, refused: a second reconciler would have
    # acted by then.
    since = len(server.request_log.records())
    eventually(
        lambda: refused_campaigns(server.request_log, LEASE, since=since),
        timeout=WAIT,
        what="a refused campaign of the second replica",
    )

    assert len(live_runners(server)) == 2
    assert scaled_up_by(server) == {leader}
    assert holder(server) == leader
    assert first.reconciles() > 0
    assert second.reconciles() == 0, "the replica without the lease reconciled"

    first.process.send_signal(signal.SIGTERM)
    assert first.process.wait(timeout=10) == 0
    successor = eventually(lambda: (h := holder(server)) and h != leader and h, timeout=WAIT)
    publish(server, replicas=3, patch_id=2)

    eventually(lambda: len(live_runners(server)) == 3, timeout=WAIT)
    eventually(lambda: scaled_up_by(server) == {leader, successor}, timeout=WAIT)
    assert second.reconciles() > 0
