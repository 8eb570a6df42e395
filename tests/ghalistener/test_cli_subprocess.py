"""``ghalistener run`` as a real process, against the GitHub simulator's HTTP server and
the test's Kubernetes API: it scales the ERS, serves metrics, logs no secret, and a
SIGTERM during a long poll deletes its session and exits 0 within 2 s."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as kube_client
from prometheus_client.parser import text_string_to_metric_families

from ersctl.api import ERS_PLURAL, GROUP, VERSION
from ersctl.testing.apiserver import ApiServer
from ersctl.testing.ports import unused_port
from ghalistener.testing.model import GitHubSimulator
from ghalistener.testing.server import SimulatorServer, serve
from tests import local_http
from tests.ghalistener.processes import Server, ready_server, sim, start_listener
from tests.kubeapi import KubeApi
from tests.kubeclient import json_object
from tests.polling import eventually

TOKEN = "ghp_subprocessSECRETtoken0123456789"
ERS_NAME = "runners"

pytestmark = pytest.mark.slow


def create_ers(kube: KubeApi) -> kube_client.CustomObjectsApi:
    """The set the listener publishes to, in the test's namespace."""
    custom = kube_client.CustomObjectsApi(kube.api_client())
    custom.create_namespaced_custom_object(
        GROUP,
        VERSION,
        kube.namespace,
        ERS_PLURAL,
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "EphemeralRunnerSet",
            "metadata": {"name": ERS_NAME},
            "spec": {
                "replicas": 0,
                "patchID": 0,
                "ephemeralRunnerSpec": {
                    "githubConfigUrl": "http://example/octo",
                    "githubConfigSecret": "creds",
                    "runnerScaleSetId": 1,
                    "spec": {"containers": [{"name": "runner", "image": "runner"}]},
                },
            },
        },
    )
    return custom


def held_polls(simulator: GitHubSimulator) -> int:
    """How many long polls the simulator holds open right now."""
    return sum(session.polls for session in list(simulator.sessions.values()))


def listener_config(
    github: Server | SimulatorServer, namespace: str, **more: Any
) -> dict[str, Any]:
    return {
        "configure_url": f"{github.url}/octo",
        "github_token": TOKEN,
        "ephemeral_runner_set_namespace": namespace,
        "ephemeral_runner_set_name": ERS_NAME,
        "runner_scale_set_id": 1,
        "min_runners": 0,
        "max_runners": 5,
        "log_level": "debug",
        "log_format": "json",
        **more,
    }


def test_run_scales_the_ers_and_a_sigterm_in_a_long_poll_deletes_the_session(
    tmp_path: Path,
    kube: KubeApi,
) -> None:
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    # In this process, so the test sees the long polls it holds.
    simulator = GitHubSimulator(hold_seconds=30)
    scale_set = int(simulator.create_scale_set(name="runners")["id"])
    with (
        serve(simulator, port=0) as github,
    ):
        custom = create_ers(kube)
        metrics_port = unused_port()
        config = listener_config(github, kube.namespace, metrics_addr=f"127.0.0.1:{metrics_port}")
        listener = start_listener(config, tmp_path, kubeconfig)
        try:

            def spec() -> dict[str, Any]:
                obj = custom.get_namespaced_custom_object(
                    GROUP, VERSION, kube.namespace, ERS_PLURAL, ERS_NAME
                )
                return dict(json_object(obj)["spec"])

            eventually(lambda: simulator.state()["sessions"], what="a session", timeout=15)
            request_ids = [simulator.enqueue_job(scale_set) for _ in range(3)]
            eventually(lambda: spec()["replicas"] == 3, what="replicas 3", timeout=15)
            simulator.cancel_job(request_ids[2], requeue=False)
            eventually(lambda: spec()["replicas"] == 2, what="replicas 2", timeout=15)
            assert spec()["patchID"] > 0

            scrape = local_http.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).text
            # No runner ever had the canceled job: as in ARC, it is no completed job.
            # (test_arc_config shows a counted one, and no *_created beside it.)
            assert "gha_completed_jobs_total{" not in scrape
            gauges = {
                sample.name: (sample.labels, sample.value)
                for family in text_string_to_metric_families(scrape)
                for sample in family.samples
            }
            labels, assigned = gauges["gha_assigned_jobs"]
            assert assigned == 2
            assert labels == {
                "name": ERS_NAME,
                "namespace": kube.namespace,
                "organization": "octo",
                "repository": "",
                "enterprise": "",
            }
            assert gauges["gha_desired_runners"][1] == 2

            # It published 2 after the poll that brought the cancellation returned: a poll
            # held now is the next one, 30 s long.
            eventually(lambda: held_polls(simulator), what="a long poll held", timeout=15)
            stopped_at = time.monotonic()
            listener.send_signal(signal.SIGTERM)
            code = listener.wait(timeout=10)
            elapsed = time.monotonic() - stopped_at
        finally:
            if listener.poll() is None:
                listener.kill()
        stderr = listener.stderr.read() if listener.stderr else ""
        assert code == 0, stderr
        assert elapsed < 2.0, f"took {elapsed:.2f} s to stop"
        kinds = [event["kind"] for event in simulator.events]
        assert "session.deleted" in kinds
        assert simulator.state()["sessions"] == []
        assert TOKEN not in stderr
        lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
        scaling = [line for line in lines if line["msg"] == "published desired runner count"]
        assert scaling and {"replicas", "patch_id", "assigned_jobs", "scale_set_id"} <= set(
            scaling[-1]
        )


def test_a_second_listener_gives_up_when_the_session_stays_held(
    tmp_path: Path, kube: KubeApi
) -> None:
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    with (
        ready_server(
            "ghalistener.testing.github", "--port", "0", "--hold", "30", "--scale-set", "runners"
        ) as github,
    ):
        create_ers(kube)
        first = start_listener(listener_config(github, kube.namespace), tmp_path, kubeconfig)
        try:
            eventually(
                lambda: bool(sim(github, "GET", "/state")["sessions"]), what="a session", timeout=15
            )
            (tmp_path / "second").mkdir()
            second = start_listener(
                listener_config(
                    github, kube.namespace, session_retry_interval=0.05, session_retry_attempts=3
                ),
                tmp_path / "second",
                kubeconfig,
            )
            _, stderr = second.communicate(timeout=30)
        finally:
            first.send_signal(signal.SIGTERM)
            try:
                first.wait(timeout=10)
            except subprocess.TimeoutExpired:
                first.kill()
        assert second.returncode == 1
        assert (
            "another listener holds the message session of scale set 1" in stderr.splitlines()[-1]
        )


@pytest.mark.embedded_only("injects a 503 into the listener's start-up patch")
def test_a_5xx_answering_the_start_up_check_is_tried_again_not_a_crash(
    tmp_path: Path, kube: KubeApi, apiserver: ApiServer
) -> None:
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    simulator = GitHubSimulator(hold_seconds=30)
    simulator.create_scale_set(name="runners")
    create_ers(kube)
    apiserver.inject_fault(verb="patch", resource=ERS_PLURAL, name=ERS_NAME, code=503)
    with serve(simulator, port=0) as github:
        listener = start_listener(listener_config(github, kube.namespace), tmp_path, kubeconfig)
        try:
            eventually(lambda: simulator.state()["sessions"], what="a session", timeout=30)
            listener.send_signal(signal.SIGTERM)
            code = listener.wait(timeout=10)
        finally:
            if listener.poll() is None:
                listener.kill()
    stderr = listener.stderr.read() if listener.stderr else ""
    assert code == 0, stderr
    retries = [json.loads(line) for line in stderr.splitlines() if "start-up check" in line]
    assert len(retries) == 1 and "HTTP 503" in retries[0]["msg"], stderr
