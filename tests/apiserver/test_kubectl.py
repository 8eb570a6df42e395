"""The machine's kubectl against the standalone server (a subprocess), as a user
would drive it: apply CRDs and a sample, get, merge patches (one with a stale
resourceVersion), status patch, delete with a finalizer, and watch."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ersctl import api
from ersctl.crds import crd_paths

KUBECTL = shutil.which("kubectl")
SAMPLE = Path(__file__).parents[2] / "examples" / "ephemeralrunnerset.yaml"

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


class Standalone:
    """``python -m ersctl.testing.apiserver`` in a subprocess, and kubectl against it."""

    def __init__(self, tmp_path: Path, *extra: str) -> None:
        self.kubeconfig = tmp_path / "kubeconfig"
        self.cache = tmp_path / "kube-cache"
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ersctl.testing.apiserver",
                "--port",
                "0",
                "--kubeconfig",
                str(self.kubeconfig),
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.ready_line = self.process.stdout.readline().strip()

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        result = subprocess.run(
            [str(KUBECTL), f"--cache-dir={self.cache}", "--request-timeout=10s", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=30,
            check=False,
        )
        if check:
            assert result.returncode == 0, result.stderr
        return result

    def ers(self, name: str = "arc-runners") -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(self.kubectl("get", "ers", name, "-o", "json").stdout)
        return doc

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout=10)
        finally:
            for stream in (self.process.stdout, self.process.stderr):
                if stream is not None:
                    stream.close()


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[Standalone]:
    server = Standalone(tmp_path, "--no-crds")
    yield server
    server.stop()


def test_kubectl_drives_the_standalone_server_through_the_whole_lifecycle(
    standalone: Standalone,
) -> None:
    assert standalone.ready_line.startswith("ready http://127.0.0.1:")
    for path in crd_paths():
        standalone.kubectl("apply", "--validate=false", "-f", str(path))
    standalone.kubectl("apply", "--validate=false", "-f", str(SAMPLE))

    listing = standalone.kubectl("get", "ers", "-A").stdout
    assert "arc-runners" in listing and "PATCHID" in listing

    before = standalone.ers()["metadata"]["resourceVersion"]
    standalone.kubectl(
        "patch", "ers", "arc-runners", "--type=merge", "-p", '{"spec":{"replicas":3,"patchID":1}}'
    )
    stale = standalone.kubectl(
        "patch",
        "ers",
        "arc-runners",
        "--type=merge",
        "-p",
        json.dumps({"metadata": {"resourceVersion": before}, "spec": {"replicas": 9}}),
        check=False,
    )
    assert stale.returncode != 0
    assert "Conflict" in stale.stderr
    assert standalone.ers()["spec"]["replicas"] == 3

    standalone.kubectl(
        "patch",
        "ers",
        "arc-runners",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"phase":"Running","currentReplicas":0},"spec":{"replicas":0}}',
    )
    patched = standalone.ers()
    assert patched["status"] == {"phase": "Running", "currentReplicas": 0}
    assert patched["spec"]["replicas"] == 3

    standalone.kubectl(
        "patch",
        "ers",
        "arc-runners",
        "--type=merge",
        "-p",
        json.dumps({"metadata": {"finalizers": [api.ERS_FINALIZER]}}),
    )
    standalone.kubectl("delete", "ers", "arc-runners", "--dry-run=server")
    assert "deletionTimestamp" not in standalone.ers()["metadata"]
    standalone.kubectl("delete", "ers", "arc-runners", "--wait=false")
    assert standalone.ers()["metadata"]["deletionTimestamp"]

    watcher = subprocess.Popen(
        [
            str(KUBECTL),
            f"--cache-dir={standalone.cache}",
            "--request-timeout=2s",
            "get",
            "ers",
            "-w",
            "--output-watch-events",
        ],
        env={**os.environ, "KUBECONFIG": str(standalone.kubeconfig)},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert watcher.stdout is not None
    first = watcher.stdout.readline()  # the header: the list is done, the watch starts
    standalone.kubectl(
        "patch", "ers", "arc-runners", "--type=merge", "-p", '{"metadata":{"finalizers":null}}'
    )
    out = watcher.stdout.read()  # until kubectl ends the watch at its request timeout
    watcher.stdout.close()
    watcher.wait(timeout=15)

    lines = [line for line in (first + out).splitlines() if line.strip()]
    assert lines[0].split()[:2] == ["EVENT", "NAME"]
    events = [line.split()[0] for line in lines[1:]]
    assert events == ["ADDED", "DELETED"]
    gone = standalone.kubectl("get", "ers", "arc-runners", check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr


def test_kubectl_discovery_lists_short_names_and_the_status_subresource(tmp_path: Path) -> None:
    server = Standalone(tmp_path)
    try:
        resources = server.kubectl("api-resources", "--api-group", api.GROUP).stdout
        raw = server.kubectl("get", "--raw", f"/apis/{api.GROUP}/{api.VERSION}").stdout
        version = server.kubectl("version", "-o", "json").stdout
    finally:
        assert server.stop() == 0

    assert {line.split()[0]: line.split()[1] for line in resources.splitlines()[1:]} == {
        "ephemeralrunners": "er",
        "ephemeralrunnersets": "ers",
    }
    names = {r["name"] for r in json.loads(raw)["resources"]}
    assert {"ephemeralrunnersets/status", "ephemeralrunners/status"} <= names
    assert json.loads(version)["serverVersion"]["minor"] == "32"


def test_the_standalone_server_exits_cleanly_on_sigint(tmp_path: Path) -> None:
    server = Standalone(tmp_path)

    code = server.stop(signal.SIGINT)

    assert server.ready_line.startswith("ready http://127.0.0.1:")
    assert "current-context: ersctl-testing" in server.kubeconfig.read_text()
    assert code == 0


def test_the_standalone_server_names_a_port_it_cannot_bind_and_exits_1(tmp_path: Path) -> None:
    first = Standalone(tmp_path / "first")
    port = first.ready_line.rsplit(":", 1)[1]
    try:
        second = subprocess.run(
            [sys.executable, "-m", "ersctl.testing.apiserver", "--port", port],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    finally:
        first.stop()

    assert second.returncode == 1
    assert second.stdout == ""
    assert second.stderr.strip().splitlines() == [
        f"error: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]


def test_kubectl_create_of_built_in_types_sends_protobuf_that_is_understood(
    standalone: Standalone,
) -> None:
    standalone.kubectl("create", "namespace", "arc-runners")
    standalone.kubectl(
        "create",
        "secret",
        "generic",
        "github-credentials",
        "-n",
        "arc-runners",
        "--from-literal=github_token=t0ken",
    )
    standalone.kubectl(
        "create", "configmap", "settings", "-n", "arc-runners", "--from-literal=mode=test"
    )
    standalone.kubectl("create", "serviceaccount", "ersctl", "-n", "arc-runners")
    standalone.kubectl("label", "secret", "github-credentials", "-n", "arc-runners", "team=ci")

    secret = json.loads(
        standalone.kubectl(
            "get", "secret", "github-credentials", "-n", "arc-runners", "-o", "json"
        ).stdout
    )
    config = json.loads(
        standalone.kubectl("get", "configmap", "settings", "-n", "arc-runners", "-o", "json").stdout
    )
    phase = standalone.kubectl(
        "get", "namespace", "arc-runners", "-o", "jsonpath={.status.phase}"
    ).stdout

    assert secret["data"] == {"github_token": "dDBrZW4="}
    assert (secret["type"], secret["metadata"]["labels"]) == ("Opaque", {"team": "ci"})
    assert config["data"] == {"mode": "test"}
    assert phase == "Active"
    assert standalone.kubectl("get", "sa", "-n", "arc-runners", "-o", "name").stdout.split() == [
        "serviceaccount/ersctl"
    ]
