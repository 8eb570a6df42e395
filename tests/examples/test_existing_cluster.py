"""The simulation on an existing cluster (``--kubeconfig``): the same system, the real
programs reaching the API server through the simulation's recording proxy, its
kubelets playing the listener and runner Pods through the API, the same report; and
nothing left on the cluster afterwards. The cluster is the one the suite runs against
(``GHA_SCALESET_TEST_KUBECONFIG``), else a separately started embedded API server."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ersctl.kube import connect
from ersctl.testing.objects import ApiObjects
from tests.standalone import Standalone

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def cluster(cluster_kubeconfig: Path | None, tmp_path: Path) -> Iterator[Path]:
    """The kubeconfig of the cluster to run on."""
    if cluster_kubeconfig is not None:
        yield cluster_kubeconfig
        return
    server = Standalone(tmp_path / "cluster")
    try:
        yield server.kubectl.kubeconfig
    finally:
        server.stop()


def _simulate(*args: str, workdir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / "simulate.py"), "--quiet", "--workdir", str(workdir),
         "--seed", "3", "--rate", "0.5", "--window", "6", "--burst", "1:5", *args],
        capture_output=True,
        text=True,
        timeout=200,
        check=False,
    )  # fmt: skip


def test_simulate_runs_on_an_existing_cluster_reports_and_leaves_nothing_behind(
    cluster: Path, tmp_path: Path
) -> None:
    objects = ApiObjects(lambda: connect.api_client(str(cluster)))
    before = {n["metadata"]["name"] for n in objects.list_objects("namespaces")}

    run = _simulate("--kubeconfig", str(cluster), "--json", str(tmp_path / "report.json"),
                    workdir=tmp_path / "run")  # fmt: skip

    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["jobs_queued"] >= 5
    assert report["jobs_completed"] == report["jobs_queued"]
    assert report["busy_runner_deletions"] == 0 and report["back_at_min"]
    assert report["api_requests"] > 0  # the programs' requests, as the proxy saw them
    namespace, left = report["cluster"]
    assert namespace.startswith("gha-simulate-") and left == []
    assert report["teardown_left"] == []  # the AutoscalingRunnerSet's own teardown
    lines = run.stdout.splitlines()
    assert f"cluster         the run's namespace {namespace} removed: nothing left" in lines
    # The listener ran from the Pod the controller made, as the simulation's kubelet
    # found it through the API.
    (listener_log,) = (tmp_path / "run" / "listener-pods").glob("*.log")
    assert "message session open" in listener_log.read_text()
    after = {n["metadata"]["name"] for n in objects.list_objects("namespaces")}
    objects.close()
    assert [n for n in after - before if n.startswith("gha-simulate-")] == []


def test_a_kubeconfig_that_names_no_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    run = _simulate("--kubeconfig", str(tmp_path / "missing"), workdir=tmp_path / "run")

    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        f"simulate.py: argument --kubeconfig: no such file: '{tmp_path / 'missing'}'"
    ]
