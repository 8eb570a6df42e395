"""``ersctl reconcile`` runs the listener controller by default, with the image its flag
names, and ``--no-listener-controller`` switches it off (the real command, a
subprocess, against the test's Kubernetes API)."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from ersctl.api import AL_CRD, AL_FINALIZER, ERS_FINALIZER, INSTALL_CRDS_COMMAND
from ersctl.crds import load_crds
from ersctl.testing.apiserver import ApiServer
from tests.ersctl.autoscalinglistener.conftest import CREDENTIALS, RUNNER_SET, b64, listener_body
from tests.ghalistener.arc_configs import PAT
from tests.kubeapi import KubeApi
from tests.polling import eventually

WAIT = 60.0
IMAGE = "registry.example.com/gha-scaleset:from-the-flag"


@contextmanager
def reconcile(kube: KubeApi, tmp_path: Path, *options: str) -> Iterator[None]:
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
    log = tmp_path / "controller.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ersctl",
                "reconcile",
                "--kubeconfig",
                str(kubeconfig),
                "--namespace",
                kube.namespace,
                "--no-leader-elect",
                "--metrics-addr",
                "0",
                *options,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            yield
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=WAIT)
    assert process.returncode == 0, log.read_text(errors="replace")[-3000:]


def scale_set(kube: KubeApi, *, listener: bool = True) -> dict[str, Any]:
    """The credentials, a set (whose finalizer shows the controller is working) and a
    listener for it, all in the test's namespace."""
    ns = kube.namespace
    kube.create_object(
        "secrets",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": CREDENTIALS, "namespace": ns},
            "data": {"github_token": b64(PAT)},
        },
    )
    kube.create_object(
        "ephemeralrunnersets",
        {
            "apiVersion": "actions.github.com/v1alpha1",
            "kind": "EphemeralRunnerSet",
            "metadata": {"name": RUNNER_SET, "namespace": ns},
            "spec": {
                "replicas": 0,
                "patchID": 0,
                "ephemeralRunnerSpec": {
                    "githubConfigUrl": "https://github.com/my-org",
                    "githubConfigSecret": CREDENTIALS,
                    "runnerScaleSetId": 1,
                    "spec": {"containers": [{"name": "runner", "image": "runner"}]},
                },
            },
        },
    )
    if not listener:
        return {}
    return kube.create_object("autoscalinglisteners", listener_body(ns, ns))


def finalizers(kube: KubeApi, plural: str, name: str) -> list[str]:
    doc = kube.get_object(plural, kube.namespace, name) or {}
    return list(doc.get("metadata", {}).get("finalizers") or [])


def test_the_listener_controller_runs_by_default_with_the_flags_image(
    kube: KubeApi, tmp_path: Path
) -> None:
    listener = scale_set(kube)
    name = listener["metadata"]["name"]
    with reconcile(kube, tmp_path, "--listener-image", IMAGE):
        pod = eventually(
            lambda: kube.get_object("pods", kube.namespace, name), timeout=WAIT, what="the pod"
        )
    assert finalizers(kube, "autoscalinglisteners", name) == [AL_FINALIZER]
    assert pod is not None
    (container,) = pod["spec"]["containers"]
    assert container["image"] == IMAGE


def test_no_listener_controller_leaves_listeners_alone(kube: KubeApi, tmp_path: Path) -> None:
    listener = scale_set(kube)
    name = listener["metadata"]["name"]
    with reconcile(kube, tmp_path, "--no-listener-controller", "--listener-image", IMAGE):
        # the set controller has had its turn: the listener controller would have had its
        eventually(
            lambda: finalizers(kube, "ephemeralrunnersets", RUNNER_SET) == [ERS_FINALIZER],
            timeout=WAIT,
        )
    assert finalizers(kube, "autoscalinglisteners", name) == []
    assert kube.get_object("pods", kube.namespace, name) is None


@pytest.mark.embedded_only("a server of its own, without the AutoscalingListener CRD")
def test_without_the_listener_crd_it_refuses_to_start_naming_it_unless_switched_off(
    tmp_path: Path,
) -> None:
    with ApiServer(crds=False) as server:
        for crd in load_crds():
            if crd["metadata"]["name"] != AL_CRD:
                server.create_object("customresourcedefinitions", crd)
        kube = KubeApi.for_embedded(server)
        try:
            command = [
                sys.executable,
                "-m",
                "ersctl",
                "reconcile",
                "--kubeconfig",
                str(kube.write_kubeconfig(tmp_path / "kubeconfig")),
                "--no-leader-elect",
                "--metrics-addr",
                "0",
            ]
            done = subprocess.run(command, capture_output=True, text=True, timeout=WAIT)
            assert done.returncode == 2, done.stderr
            (line,) = done.stderr.strip().splitlines()
            assert f"{AL_CRD} lacks status.listenerRestarts, status.lastListenerExitTime" in line
            assert INSTALL_CRDS_COMMAND in line
            scale_set(kube, listener=False)
            with reconcile(
                kube,
                tmp_path,
                "--no-listener-controller",
                "--no-autoscaling-runner-set-controller",
            ):
                eventually(
                    lambda: finalizers(kube, "ephemeralrunnersets", RUNNER_SET) == [ERS_FINALIZER],
                    timeout=WAIT,
                )
        finally:
            kube.close(clean_up=False)
