"""``ersctl reconcile`` and the AutoscalingRunnerSet CRD: with the ARS controller on (the
default) a cluster that does not serve the CRD is refused at start-up, naming the CRD
and both fixes; with it off, the same cluster starts as before."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ersctl import api
from ersctl.crds import load_crds
from ersctl.testing.apiserver import ApiServer
from tests.ars.conftest import Env
from tests.polling import eventually

OWN_SERVER = pytest.mark.embedded_only("a server of its own without the ARS CRD")


@pytest.fixture
def without_ars_crd() -> Iterator[ApiServer]:
    with ApiServer(crds=False) as server:
        for crd in load_crds():
            if crd["metadata"]["name"] != api.ARS_CRD:
                server.create_object("customresourcedefinitions", crd)
        yield server


def _command(server: ApiServer, tmp_path: Path, *options: str) -> list[str]:
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
    return [
        sys.executable, "-m", "ersctl", "reconcile", "--kubeconfig", str(kubeconfig),
        "--no-leader-elect", "--no-runner-controller", *options,
    ]  # fmt: skip


@OWN_SERVER
def test_without_the_ars_crd_the_ars_controller_refuses_to_start(
    without_ars_crd: ApiServer, tmp_path: Path
) -> None:
    done = subprocess.run(
        [*_command(without_ars_crd, tmp_path), "--metrics-addr", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("ersctl: invalid configuration: --autoscaling-runner-set-controller: ")
    assert api.ARS_CRD in line
    assert "--no-autoscaling-runner-set-controller" in line
    assert api.INSTALL_CRDS_COMMAND in line


def _controllers_of_a_running_reconcile(command: list[str]) -> set[str]:
    """Start ``command`` (an ``ersctl reconcile``), wait until ready, and return the
    controllers its /metrics shows a work queue for; stop it (exit 0)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    process = subprocess.Popen(
        [*command, "--metrics-addr", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:

        def ready() -> bool:
            assert process.poll() is None, process.stdout.read() if process.stdout else ""
            try:
                return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200
            except httpx.TransportError:
                return False

        eventually(ready, timeout=30, what="the controller ready")
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    prefix = 'ersctl_workqueue_depth{controller="'
    return {
        line[len(prefix) :].split('"', 1)[0]
        for line in text.splitlines()
        if line.startswith(prefix)
    }


@OWN_SERVER
def test_without_the_ars_crd_the_other_controllers_start_when_it_is_off(
    without_ars_crd: ApiServer, tmp_path: Path
) -> None:
    command = _command(without_ars_crd, tmp_path, "--no-autoscaling-runner-set-controller")
    assert _controllers_of_a_running_reconcile(command) == {
        "ephemeralrunnerset",
        "autoscalinglistener",
    }


@pytest.mark.embedded_only("a server of its own")
def test_every_controller_runs_by_default(tmp_path: Path) -> None:
    with ApiServer() as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        command = [
            sys.executable, "-m", "ersctl", "reconcile", "--kubeconfig", str(kubeconfig),
            "--no-leader-elect",
        ]  # fmt: skip
        assert _controllers_of_a_running_reconcile(command) >= {
            "ephemeralrunnerset",
            "ephemeralrunner",
            "autoscalingrunnerset",
            "autoscalinglistener",
        }


def test_a_listener_namespace_outside_the_watched_namespace_is_refused() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ersctl", "reconcile", "--namespace", "runners",
         "--listener-namespace", "elsewhere", "--metrics-addr", "0"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("ersctl: invalid configuration: --listener-namespace: 'elsewhere'")


def test_in_a_pod_listeners_go_to_its_namespace_as_arcs_do(env: Env, tmp_path: Path) -> None:
    # ARC's controller looks its listeners up in its own namespace: ours puts them
    # there too, so a switch back finds the listener rather than making a second one.
    controller_namespace = env.kube.create_namespace("arc-systems")
    env.create_secret()
    env.create_ars("arc")
    kubeconfig = env.kube.write_kubeconfig(tmp_path / "kubeconfig")
    process = subprocess.Popen(
        [sys.executable, "-m", "ersctl", "reconcile", "--kubeconfig", str(kubeconfig),
         "--no-leader-elect", "--no-runner-controller", "--no-listener-controller",
         "--metrics-addr", "0"],
        env={**os.environ, "POD_NAMESPACE": controller_namespace},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        eventually(
            lambda: env.kube.list_objects(api.AL_PLURAL, controller_namespace),
            what="the listener in the controller's namespace",
            timeout=30,
        )
        assert env.listeners() == []
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
