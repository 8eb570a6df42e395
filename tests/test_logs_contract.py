"""Both programs log alike: one JSON schema, and a configured secret in no line.

``ghalistener run`` and ``ersctl reconcile --runner-controller`` run as subprocesses
with ``json`` logs against the embedded API server and the GitHub simulator, with one
credential (a token, in the listener's file and in the set's credentials Secret). The
simulator then answers one call of each with an error body that echoes the token, as a
misbehaving proxy or service might; both programs log that error and carry on. Every
line either prints is one JSON object with the same keys, the token appears in none,
and the words around it are intact.
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ersctl.api import ERS_PLURAL
from ghalistener.testing.model import GitHubSimulator
from ghalistener.testing.server import SimulatorServer, serve
from tests.kubeapi import KubeApi
from tests.polling import eventually

TOKEN = "s3cr3tValue9731"  # not shaped like a GitHub token: only registration hides it
ECHO = f"credential {TOKEN} was revoked by policy"
REDACTED_ECHO = "credential [REDACTED] was revoked by policy"
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$")
LEVELS = {"debug", "info", "warning", "error", "critical"}
WAIT = 30.0


@pytest.fixture
def github(sim: GitHubSimulator) -> Iterator[SimulatorServer]:
    with serve(sim) as server:
        yield server


@pytest.fixture
def sim() -> GitHubSimulator:
    return GitHubSimulator(hold_seconds=0.5)


@pytest.fixture
def scale_set(sim: GitHubSimulator, github: SimulatorServer, kube: KubeApi) -> int:
    scale_set_id = int(sim.create_scale_set(name="arc-runners")["id"])
    kube.create_object(
        "secrets",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "github-config"},
            "data": {"github_token": base64.b64encode(TOKEN.encode()).decode()},
        },
    )
    spec = {
        "githubConfigUrl": f"{github.url}/my-org",
        "githubConfigSecret": "github-config",
        "runnerScaleSetId": scale_set_id,
        "spec": {"containers": [{"name": "runner", "image": "runner:latest"}]},
    }
    kube.create_object(
        ERS_PLURAL,
        {
            "apiVersion": "actions.github.com/v1alpha1",
            "kind": "EphemeralRunnerSet",
            "metadata": {"name": "runners"},
            "spec": {"replicas": 1, "patchID": 1, "ephemeralRunnerSpec": spec},
        },
    )
    return scale_set_id


def start(command: list[str]) -> subprocess.Popen[str]:
    env = {
        k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")
    }
    return subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
    )


def stop(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=WAIT)
    assert process.returncode == 0, err[-3000:]
    return err


def fault_consumed(sim: GitHubSimulator) -> bool:
    return not sim.state()["faults"]


def records(stderr: str) -> list[dict[str, Any]]:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines
    return [json.loads(line) for line in lines]  # every line is one JSON object


def assert_one_schema(docs: list[dict[str, Any]]) -> None:
    for doc in docs:
        assert {"time", "level", "logger", "msg"} <= doc.keys(), doc
        assert TIME.match(doc["time"]), doc["time"]
        assert doc["level"] in LEVELS, doc
        assert not {"ts", "exc"} & doc.keys(), doc  # the old second schema's keys


def test_both_programs_write_one_json_schema_and_no_configured_secret(
    kube: KubeApi, sim: GitHubSimulator, github: SimulatorServer, scale_set: int,
    tmp_path: Path,
) -> None:  # fmt: skip
    kubeconfig = str(kube.write_kubeconfig(tmp_path / "kubeconfig"))

    # The controller: its first JIT registration is answered with the echoing error.
    sim.inject_fault(endpoint="generate_jit_config", status=400, body=ECHO)
    controller = start([
        sys.executable, "-m", "ersctl", "reconcile", "--runner-controller", "--no-leader-elect",
        "--metrics-addr", "0", "--log-format", "json", "--namespace", kube.namespace,
        "--kubeconfig", kubeconfig,
    ])  # fmt: skip
    try:
        eventually(
            lambda: fault_consumed(sim) and sim.state()["runners"],
            timeout=WAIT,
            what="the echoing fault answered and a runner registered",
        )
    finally:
        controller_err = stop(controller)

    # The listener: its first long poll is answered with the echoing error (a 404, after
    # which it replaces the session).
    config = tmp_path / "listener.json"
    config.write_text(json.dumps({
        "configure_url": f"{github.url}/my-org", "github_token": TOKEN,
        "ephemeral_runner_set_namespace": kube.namespace, "ephemeral_runner_set_name": "runners",
        "runner_scale_set_id": scale_set, "log_format": "json",
    }))  # fmt: skip
    sim.inject_fault(endpoint="get_message", status=404, body=ECHO)
    listener = start([
        sys.executable, "-m", "ghalistener", "run", "--config", str(config),
        "--kubeconfig", kubeconfig,
    ])  # fmt: skip
    try:
        eventually(
            lambda: (
                fault_consumed(sim) and sum(e["kind"] == "session.created" for e in sim.events) == 2
            ),
            timeout=WAIT,
            what="the echoing fault answered and the session replaced",
        )
    finally:
        listener_err = stop(listener)

    for program, stderr in (("ersctl", controller_err), ("ghalistener", listener_err)):
        docs = records(stderr)
        assert_one_schema(docs)
        assert TOKEN not in stderr, program
        assert any(REDACTED_ECHO in json.dumps(doc) for doc in docs), (program, stderr)
    schema = {
        name: records(err)[0].keys() for name, err in (("a", controller_err), ("b", listener_err))
    }
    assert list(schema["a"])[:4] == list(schema["b"])[:4] == ["time", "level", "logger", "msg"]
    assert_objects_are_fields(records(controller_err), records(listener_err), kube.namespace)


def assert_objects_are_fields(
    controller: list[dict[str, Any]], listener: list[dict[str, Any]], namespace: str
) -> None:
    """The object a line is about is in its kind, namespace and name fields (in both
    programs), and a reconcile's lines share one reconcileID, new to each reconcile."""
    the_set = ("EphemeralRunnerSet", namespace, "runners")
    reconciled = [d for d in controller if d["msg"].startswith("reconciled: ")]
    assert reconciled, controller
    for doc in reconciled:
        assert (doc["kind"], doc["namespace"], doc["name"]) == the_set, doc
        assert f"{namespace}/runners" not in doc["msg"], doc  # not packed into the message
    assert len({d["reconcileID"] for d in reconciled}) == len(reconciled)
    (registered, *_) = [d for d in controller if d["msg"].startswith("registered runner")]
    assert (registered["kind"], registered["namespace"]) == ("EphemeralRunner", namespace)
    assert registered["name"].startswith("runners-"), registered
    assert registered["reconcileID"] not in {d["reconcileID"] for d in reconciled}
    # The listener serves one set: every line names it, as the controller's lines do.
    for doc in listener:
        assert (doc["kind"], doc["namespace"], doc["name"]) == the_set, doc
