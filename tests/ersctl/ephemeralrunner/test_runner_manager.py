"""The runner controller running on the runtime's manager (watch-driven, no test-driven
reconciles), and ``ersctl reconcile --runner-controller`` as users start it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from ersctl.api import ER_FINALIZER, ER_REGISTRATION_FINALIZER
from ersctl.arcclient.reader import ApiReader
from ersctl.ephemeralrunner.controller import (
    CONTROLLER_NAME,
    POD_METADATA_READ,
    PODS,
    add_runner_controller,
)
from ersctl.ephemeralrunner.defaults import DEFAULT_WORKERS
from ersctl.ephemeralrunner.phases import FailurePolicy, PodState
from ersctl.ephemeralrunner.pods import DISRUPTION_ANNOTATIONS, RUNNER_POD_LABEL
from ersctl.ephemeralrunnerset.metrics import LISTENER_SELECTOR
from ersctl.kube.manager import Manager
from ersctl.scaleset.clients import SecretRunnerServices
from ersctl.testing.podsim import RunnerPods
from ersctl.testing.ports import unused_port
from tests import local_http
from tests.ersctl.ephemeralrunner.conftest import NO_SCHEDULER, Harness, actions_client
from tests.ersctl.ephemeralrunner.test_runner_controller import RUNNING, online_a_while_ago
from tests.kubeclient import SentRequests
from tests.polling import eventually

RUNNER = "arc-runner-abcde"


def phase(h: Harness) -> str | None:
    runner = h.runner()
    return runner.phase if runner is not None else None


def idle_and_online(h: Harness) -> bool:
    runner = h.runner()
    return runner is not None and (runner.phase, runner.ready) == ("Pending", True)


@pytest.fixture
def manager_sent() -> SentRequests:
    """What the manager's client sends (its informers' watches included)."""
    return SentRequests()


@pytest.fixture
def manager(h: Harness, manager_sent: SentRequests) -> Iterator[Manager]:
    with running_manager(h, manager_sent) as manager:
        yield manager


@contextmanager
def running_manager(
    h: Harness, sent: SentRequests, *, workers: int = 2, runner_workers: int = DEFAULT_WORKERS
) -> Iterator[Manager]:
    """A manager running the runner controller, stopped when the block ends."""
    api_client = h.kube.api_client()
    sent.attach(api_client)
    manager = Manager(api_client, namespace=h.namespace, workers=workers)
    services = SecretRunnerServices(
        get_secret=ApiReader(manager.api_reader).get_secret,
        get_configmap=ApiReader(manager.api_reader).get_configmap,
        client_factory=actions_client,
        fence=manager.is_leading,
    )
    add_runner_controller(
        manager,
        api_client,
        services=services,
        policy=FailurePolicy(max_failures=3),
        workers=runner_workers,
    )
    stop = threading.Event()
    thread = threading.Thread(target=manager.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield manager
    finally:
        stop.set()
        thread.join(timeout=10)
        services.close()
        api_client.close()  # type: ignore[no-untyped-call]


def test_the_manager_takes_a_runner_through_a_real_job_on_watch_events(
    h: Harness, manager: Manager
) -> None:
    pods = RunnerPods(h.kube, namespace=h.namespace, connect=h.sim.connect_runner)
    h.create_runner()
    eventually(lambda: h.pod() is not None, timeout=10)
    # The runner connects with the JIT config it was given (online a while: ready at once).
    runner_id = pods.start(RUNNER, started_at=online_a_while_ago())
    runner = h.runner()
    assert runner is not None and runner.runner_id == runner_id
    eventually(lambda: idle_and_online(h), timeout=10)  # online without a job is Pending, ready

    request = h.sim.enqueue_job(h.scale_set_id)
    session = h.sim.create_session(h.scale_set_id, "listener")
    h.sim.acquire_jobs(h.scale_set_id, session.queue_token, [request])
    h.sim.start_job(runner_id, request)
    # The listener's job fields are the only change: their watch event alone must bring
    # the reconcile that makes the runner Running (the resync is 10 minutes away).
    h.record_job_started(f"job-{request}")
    eventually(lambda: phase(h) == "Running", timeout=10)
    h.sim.complete_job(request)  # an ephemeral runner deregisters after its one job
    pods.exit(RUNNER, 0)
    eventually(
        lambda: phase(h) == "Succeeded" and h.pod() is None and h.secret() is None, timeout=10
    )

    h.kube.delete_object("ephemeralrunners", h.namespace, RUNNER)
    eventually(lambda: h.runner() is None, timeout=10)
    assert h.sim_runners() == {}
    reconciles = manager.metrics.value(
        "ersctl_reconcile_total", {"controller": CONTROLLER_NAME, "result": "success"}
    )
    assert reconciles >= 4


@pytest.mark.embedded_only("holds Secret creates at the server")
def test_the_runner_controller_registers_runners_with_workers_of_its_own(h: Harness) -> None:
    # One worker for the other controllers, three for runners: three new runners are
    # registered at once (each waits on GitHub for its JIT config on a real cluster, so
    # sharing the others' count would register a burst two at a time).
    release = threading.Event()
    held = h.server.inject_fault(verb="create", resource="secrets", hold=release, times=3)
    names = [f"arc-runner-{i}" for i in range(3)]
    for name in names:
        h.create_runner(name)

    with running_manager(h, SentRequests(), workers=1, runner_workers=3):
        try:
            # All three JIT Secret creates are in flight together.
            eventually(lambda: held.remaining == 0, timeout=10)
        finally:
            release.set()
        eventually(lambda: all(h.pod(name) is not None for name in names), timeout=10)


def no_new_requests(sent: SentRequests, *, polls: int = 5) -> Callable[[], bool]:
    """A check that holds once ``polls`` polls in a row saw no new request (watches
    aside): the reconciles the last writes' events brought have run."""
    counts: list[int] = []

    def check() -> bool:
        counts.append(sum(1 for r in sent.records() if r.verb != "watch"))
        return len(counts) >= polls and counts[-polls] == counts[-1]

    return check


def successful_reconciles(manager: Manager) -> float:
    """Reconciles that did not raise: done, or done with a timed look to come (an idle
    runner's online deadline)."""
    return sum(
        manager.metrics.value(
            "ersctl_reconcile_total", {"controller": CONTROLLER_NAME, "result": result}
        )
        for result in ("success", "requeue_after")
    )


def test_runner_pods_are_cached_with_only_what_the_controller_reads(h: Harness) -> None:
    # The controller reads a Pod's key, uid, deletion, owner and the state PodState takes;
    # the rest (the spec above all: a whole runner template per Pod) was most of the
    # cache's memory. One Pod arrives by the first list, the other by the watch.
    listed = h.kube.create_object("pods", runner_pod("arc-runner-listed"))
    h.kube.patch_object(
        "pods", h.namespace, "arc-runner-listed", {"status": STUCK}, subresource="status"
    )
    h.kube.create_object("pods", runner_pod("arc-runner-unscheduled"))
    h.kube.patch_object(
        "pods", h.namespace, "arc-runner-unscheduled", {"status": UNSCHEDULED}, subresource="status"
    )
    with running_manager(h, SentRequests()) as manager:
        cache = manager.store(PODS)
        eventually(lambda: cache.get(h.namespace, "arc-runner-listed") is not None, timeout=10)
        h.kube.create_object("pods", runner_pod("arc-runner-watched"))
        h.kube.patch_object(
            "pods", h.namespace, "arc-runner-watched", {"status": EXITED}, subresource="status"
        )
        eventually(
            lambda: (
                (cache.get(h.namespace, "arc-runner-watched") or {}).get("status", {}).get("phase")
                == "Failed"
            ),
            timeout=10,
        )

        for name in ("arc-runner-listed", "arc-runner-unscheduled", "arc-runner-watched"):
            cached, served = cache.get(h.namespace, name), h.pod(name)
            assert cached is not None and served is not None and "spec" in served
            assert "spec" not in cached and "labels" not in cached["metadata"]
            assert PodState.from_pod(cached) == PodState.from_pod(served)
            assert cached["metadata"]["annotations"] == DISRUPTION_ANNOTATIONS
            for field in POD_METADATA_READ:
                assert cached["metadata"].get(field) == served["metadata"].get(field)
        exited = PodState.from_pod(h.pod("arc-runner-watched") or {})
        assert exited.runner_exit_code == 3 and exited.protected and exited.created_at
        stuck = PodState.from_pod(h.pod("arc-runner-listed") or {})
        assert (stuck.waiting_reason, stuck.init_failure) == (
            "ImagePullBackOff",
            "init container setup exited with code 1 (Error)",
        )
        assert stuck.not_ready_since is not None
        unscheduled = PodState.from_pod(h.pod("arc-runner-unscheduled") or {})
        assert (unscheduled.waiting_reason, unscheduled.waiting_message) == (
            "Unschedulable",
            "0/3 nodes are available: 3 Insufficient cpu.",
        )
    assert listed["metadata"]["uid"]


EXITED = {
    "phase": "Failed",
    "reason": "Error",
    "message": "the runner failed",
    "conditions": [
        {"type": "PodScheduled", "status": "True"},
        {"type": "Ready", "status": "False", "reason": "PodFailed"},
    ],
    "containerStatuses": [
        {"name": "sidecar", "ready": False, "state": {"running": {}}},
        {"name": "runner", "ready": False, "state": {"terminated": {"exitCode": 3}}},
    ],
}


STUCK = {
    "phase": "Pending",
    "conditions": [
        {"type": "PodScheduled", "status": "True"},
        {"type": "Initialized", "status": "False"},
        {"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"},
    ],
    "initContainerStatuses": [
        {"name": "setup", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}
    ],
    "containerStatuses": [
        {"name": "dind", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "no"}}},
        {"name": "other", "state": {"waiting": {"reason": "PodInitializing"}}},
        {"name": "runner", "state": {"waiting": {"reason": "PodInitializing"}}},
    ],
}
"""A Pod that cannot start: its init container failed, a sidecar's image does not pull."""
UNSCHEDULED = {
    "phase": "Pending",
    "conditions": [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/3 nodes are available: 3 Insufficient cpu.",
        }
    ],
}


def runner_pod(name: str) -> dict[str, Any]:
    """A Pod the runner Pod informer selects (no runner owns it: none is reconciled),
    annotated as a busy runner's is, and with an annotation nobody reads."""
    annotations = {**DISRUPTION_ANNOTATIONS, "example.com/unread": "x"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {RUNNER_POD_LABEL: "True"},
            "annotations": annotations,
        },
        "spec": {
            "schedulerName": NO_SCHEDULER,
            "containers": [{"name": "runner", "image": "ghcr.io/actions/actions-runner"}],
        },
    }


def test_a_resync_of_steady_runners_sends_no_request(
    h: Harness, manager: Manager, manager_sent: SentRequests
) -> None:
    # One idle runner online with its Pod, one whose job is done (Pod and Secret deleted,
    # waiting for its set to delete it): the two states a runner rests in.
    pods = RunnerPods(h.kube, namespace=h.namespace, connect=h.sim.connect_runner)
    h.create_runner()
    h.create_runner("arc-runner-done")
    eventually(lambda: h.pod() is not None and h.pod("arc-runner-done") is not None, timeout=10)
    pods.start(RUNNER, started_at=online_a_while_ago())
    pods.start("arc-runner-done")
    eventually(lambda: idle_and_online(h), timeout=10)
    pods.exit("arc-runner-done", 0)

    def done_and_cleaned() -> bool:
        done = h.runner("arc-runner-done")
        gone = h.pod("arc-runner-done") is None and h.secret("arc-runner-done") is None
        return done is not None and done.phase == "Succeeded" and gone

    eventually(done_and_cleaned, timeout=10)
    eventually(no_new_requests(manager_sent), timeout=10, interval=0.1, what="the manager idle")
    settled = successful_reconciles(manager)
    manager_sent.clear()

    manager.resync()

    eventually(lambda: successful_reconciles(manager) >= settled + 2, timeout=10)
    sent = [(r.verb, r.resource, r.name) for r in manager_sent.records() if r.verb != "watch"]
    assert sent == [], "a steady runner is judged from the caches alone"


@pytest.mark.embedded_only("the watch delay keeps the Pod out of the cache for a while")
def test_a_runner_reaches_its_pod_in_five_requests_while_the_pod_cache_lags(
    h: Harness, manager: Manager, manager_sent: SentRequests
) -> None:
    # The runner's status write is seen long before its Pod: the reconcile that write's
    # event brings must not read the Secret and create the Pod a second time.
    h.server.set_watch_delay("pods", 2.0)
    manager_sent.clear()
    body = h.runner_body()
    # As the set controller creates runners: with both finalizers.
    body["metadata"]["finalizers"] = [ER_FINALIZER, ER_REGISTRATION_FINALIZER]
    h.kube.create_object("ephemeralrunners", body)
    eventually(lambda: h.pod() is not None, timeout=10)
    eventually(no_new_requests(manager_sent, polls=30), timeout=15, interval=0.1)

    sent = sorted(
        (r.verb, r.resource, r.subresource, r.status)
        for r in manager_sent.records()
        if r.verb not in ("watch", "list")
    )
    assert sent == [
        ("create", "pods", None, 201),
        ("create", "secrets", None, 201),
        ("get", "secrets", None, 200),  # the credentials (Secrets are not watched)
        ("get", "secrets", None, 404),  # the JIT Secret: never register a runner twice
        ("patch", "ephemeralrunners", "status", 200),  # runnerId, runnerName, Pending
    ]


def ready(port: int) -> bool:
    try:
        return local_http.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


@pytest.mark.embedded_only("the request log")
def test_ersctl_reconcile_runs_the_runner_controller_when_asked(h: Harness, tmp_path: Path) -> None:
    kubeconfig = h.kube.write_kubeconfig(tmp_path / "kubeconfig")
    h.create_runner()
    args = [
        sys.executable,
        "-m",
        "ersctl",
        "reconcile",
        "--kubeconfig",
        str(kubeconfig),
        "--namespace",
        h.namespace,
        "--no-leader-elect",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    log = tmp_path / "controller.log"
    with log.open("wb") as out:
        port = unused_port()
        without = subprocess.Popen(
            [*args, "--no-runner-controller", "--metrics-addr", f"127.0.0.1:{port}"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            # Ready = caches synced, a runner controller's Pod cache among them (readiness
            # covers that informer): by then it would have listed Pods. This one never did.
            eventually(lambda: ready(port), timeout=60)
            # Its only Pod reads are the listener Pods' (ARC's running-listeners gauge).
            pod_reads = [r for r in h.server.request_log.records() if r.resource == "pods"]
            assert {r.query.get("labelSelector", [""])[0] for r in pod_reads} <= {LISTENER_SELECTOR}
            assert h.pod() is None  # off: nothing touches runner Pods
        finally:
            without.send_signal(signal.SIGTERM)
            without.wait(timeout=10)
        port = unused_port()
        with_runner = subprocess.Popen(
            [*args, "--runner-controller", "--metrics-addr", f"127.0.0.1:{port}"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            eventually(lambda: h.pod() is not None, timeout=60)
            assert ready(port)  # readiness covers the runner Pod informer too
            h.set_pod_status(RUNNING)
            eventually(lambda: idle_and_online(h), timeout=10)
            metrics = local_http.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
            assert f'ersctl_runner_pods_created_total{{namespace="{h.namespace}"}} 1.0' in metrics
        finally:
            with_runner.send_signal(signal.SIGTERM)
            with_runner.wait(timeout=15)
    assert with_runner.returncode == 0, log.read_text(errors="replace")[-2000:]
