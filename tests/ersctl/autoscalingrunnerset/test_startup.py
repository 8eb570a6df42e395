"""``ersctl reconcile`` and the AutoscalingRunnerSet CRD: with the ARS controller on (the
default) a cluster that does not serve the CRD is refused at start-up, naming the CRD
and both fixes; with it off, the same cluster starts as before."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ersctl import api
from ersctl.crds import load_crds
from ersctl.testing.apiserver import ApiServer
from ersctl.testing.ports import unused_port
from tests import local_http
from tests.ersctl.autoscalingrunnerset.conftest import Env
from tests.ersctl.ephemeralrunnerset.objects import ers_doc
from tests.polling import eventually, run_until

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


def _metrics_of_a_running_reconcile(command: list[str]) -> str:
    """Start ``command`` (an ``ersctl reconcile``), wait until ready, and return its
    /metrics; stop it (exit 0)."""
    port = unused_port()
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
                return (
                    local_http.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200
                )
            except httpx.TransportError:
                return False

        eventually(ready, timeout=30, what="the controller ready")
        return local_http.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0


def _per_controller(metrics: str, name: str) -> dict[str, float]:
    """``name{controller="..."} value`` samples of ``metrics``, by controller."""
    prefix = f'{name}{{controller="'
    return {
        line[len(prefix) :].split('"', 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith(prefix)
    }


def _controllers_of_a_running_reconcile(command: list[str]) -> set[str]:
    """The controllers a running ``command``'s /metrics shows a work queue for."""
    metrics = _metrics_of_a_running_reconcile(command)
    return set(_per_controller(metrics, "ersctl_workqueue_depth"))


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


@pytest.mark.embedded_only("a server of its own, refusing CRD reads")
def test_where_crds_may_not_be_read_it_starts_with_one_warning_naming_what_is_unchecked(
    tmp_path: Path,
) -> None:
    # ARC's Helm chart grants the controller no customresourcedefinitions get.
    with ApiServer() as server:
        server.inject_fault(verb="get", resource="customresourcedefinitions", code=403, times=-1)
        server.create_object(api.ERS_PLURAL, ers_doc("runners", namespace="default"))
        command = [*_command(server, tmp_path), "--listener-image", "img:1", "--metrics-addr", "0"]
        code, stderr = run_until(
            command,
            lambda: (
                (server.get_object(api.ERS_PLURAL, "default", "runners") or {})
                .get("metadata", {})
                .get("finalizers")
            ),
            timeout=30,
            what="the set taken over",
        )
    assert code == 0, stderr
    (warning,) = [line for line in stderr.splitlines() if "WARNING" in line]
    assert "cannot read the CRDs (Forbidden): not checked whether they keep the guard's" in warning


@pytest.mark.embedded_only("a server of its own")
def test_each_controller_runs_the_workers_its_option_asks_for(tmp_path: Path) -> None:
    # ARC 0.15's per-controller max-concurrent-reconciles flags, under the same names.
    with ApiServer() as server:
        command = [
            *_command(server, tmp_path),
            "--runner-controller",
            "--listener-image", "img:1",
            "--workers", "7",
            "--ephemeral-runner-max-concurrent-reconciles", "3",
            "--ephemeral-runner-set-max-concurrent-reconciles", "4",
            "--autoscaling-runner-set-max-concurrent-reconciles", "5",
            "--autoscaling-listener-max-concurrent-reconciles", "6",
        ]  # fmt: skip
        workers = _per_controller(
            _metrics_of_a_running_reconcile(command), "ersctl_max_concurrent_reconciles"
        )
    assert workers == {
        "ephemeralrunner": 3,
        "ephemeralrunnerset": 4,
        "autoscalingrunnerset": 5,
        "autoscalinglistener": 6,
    }


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
