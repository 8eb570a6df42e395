"""The configuration ARC's controller generates runs ``ghalistener run`` unchanged
(the files: ``tests.ghalistener.arc_configs``), against the GitHub simulator and the
test's Kubernetes API."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as kube_client
from prometheus_client.parser import text_string_to_metric_families

from ersctl.api import ERS_PLURAL, GROUP, VERSION
from ersctl.testing.ports import unused_port
from ghalistener.testing.model import GitHubSimulator
from ghalistener.testing.server import SimulatorServer, serve
from ghalistener.testing.state import JobState
from tests import local_http
from tests.ghalistener.arc_configs import (
    PAT,
    SELECTED,
    app_config_metrics_on,
    pat_config_metrics_off,
    rsa_private_key,
)
from tests.ghalistener.processes import start_listener
from tests.ghalistener.test_cli_subprocess import ERS_NAME, create_ers
from tests.kubeapi import KubeApi
from tests.kubeclient import json_object
from tests.polling import eventually

pytestmark = pytest.mark.slow


@pytest.fixture
def cluster(
    kube: KubeApi, tmp_path: Path
) -> Iterator[tuple[GitHubSimulator, SimulatorServer, Path]]:
    """The GitHub simulator (in this process) with scale set 1, and a kubeconfig of the
    test's Kubernetes API whose namespace holds the EphemeralRunnerSet."""
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    create_ers(kube)
    simulator = GitHubSimulator(hold_seconds=30)
    simulator.create_scale_set(name="arc-runners")
    with serve(simulator, port=0) as github:
        yield simulator, github, kubeconfig


def ers_spec(kube: KubeApi) -> dict[str, Any]:
    custom = kube_client.CustomObjectsApi(kube.api_client())
    obj = custom.get_namespaced_custom_object(GROUP, VERSION, kube.namespace, ERS_PLURAL, ERS_NAME)
    return dict(json_object(obj)["spec"])


def stop(listener: subprocess.Popen[str]) -> tuple[int, str]:
    listener.send_signal(signal.SIGTERM)
    try:
        code = listener.wait(timeout=10)
    finally:
        if listener.poll() is None:
            listener.kill()
    return code, listener.stderr.read() if listener.stderr else ""


def test_arcs_pat_config_with_metrics_off_starts_and_scales(
    cluster: tuple[GitHubSimulator, SimulatorServer, Path], kube: KubeApi, tmp_path: Path
) -> None:
    simulator, github, kubeconfig = cluster
    listener = start_listener(
        pat_config_metrics_off(f"{github.url}/octo", kube.namespace), tmp_path, kubeconfig
    )
    try:
        eventually(lambda: simulator.state()["sessions"], what="a session", timeout=15)
        simulator.enqueue_job(1)
        eventually(lambda: ers_spec(kube)["replicas"] == 1, what="replicas 1", timeout=15)
    finally:
        code, stderr = stop(listener)
    assert code == 0, stderr
    # No warning about the config ARC's controller wrote (its runner_scale_set_name
    # drew one on every start); a transient GitHub read error retried on a loaded machine
    # is a warning of the client's, not the config's: seen once in CI.
    assert [line for line in stderr.splitlines() if " WARNING ghalistener.cli " in line] == []
    assert [line for line in stderr.splitlines() if " ERROR " in line] == []
    assert PAT not in stderr


def test_arcs_app_config_with_a_metrics_block_exports_exactly_the_selected_series(
    cluster: tuple[GitHubSimulator, SimulatorServer, Path], kube: KubeApi, tmp_path: Path
) -> None:
    simulator, github, kubeconfig = cluster
    private_key, port = rsa_private_key(), unused_port()
    config = app_config_metrics_on(f"{github.url}/octo", kube.namespace, private_key, port)
    listener = start_listener(config, tmp_path, kubeconfig)
    try:
        eventually(lambda: simulator.state()["sessions"], what="a session", timeout=15)
        ran, never_ran = simulator.enqueue_job(1), simulator.enqueue_job(1)
        eventually(
            lambda: simulator.jobs[ran].state is JobState.ASSIGNED, what="assigned", timeout=15
        )
        simulator.cancel_job(never_ran, requeue=False)  # no runner ever had it
        jit = simulator.generate_jit_config(1, "arc-runners-runner-1")
        runner = simulator.connect_runner(jit["encodedJITConfig"])
        simulator.start_job(int(runner["id"]), ran)
        simulator.complete_job(ran)

        def counted() -> str:
            text = local_http.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
            return text if 'job_result="succeeded"' in text else ""

        text = eventually(counted, what="the completed job counted", timeout=15)
    finally:
        code, stderr = stop(listener)
    assert code == 0, stderr
    families = {family.name: family for family in text_string_to_metric_families(text)}
    # prometheus-client's parser names a counter family without its _total.
    assert set(families) == {name.removesuffix("_total") for name in SELECTED}
    for name, labels in SELECTED.items():
        for sample in families[name.removesuffix("_total")].samples:
            assert set(sample.labels) - {"le"} == labels, sample
    (completed,) = families["gha_completed_jobs"].samples  # the canceled job is not counted
    assert completed.labels == {
        "repository": "my-repo",
        "job_workflow_name": "ci",
        "job_workflow_target": "heads/main",
        "job_result": "succeeded",
    }
    buckets = [
        s.labels["le"]
        for s in families["gha_job_execution_duration_seconds"].samples
        if s.name.endswith("_bucket")
    ]
    assert buckets == ["1.0", "10.0", "60.0", "+Inf"]
    assert "_created" not in text
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    assert [line["msg"] for line in lines if line["level"] == "warning"] == []
    assert "PRIVATE KEY" not in stderr
